// rules_engine_test.cc: how the rules engine matches (classifier/rules.cc), apart from what the
// shipped rules say: bounded windows (".{0,N}", held in the Set as fragments and confirmed as
// written) must match exactly as the pattern reads, and the per-thread classification memo
// must give the same results as a fresh classification, per recipient and per rule set.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "classifier/result.h"
#include "classifier/rules.h"

namespace bounced {
namespace {

std::shared_ptr<const RuleSet> Compile(const std::string& toml) {
  auto rules = RuleSet::Compile({RulesSource{"test.toml", toml}});
  EXPECT_TRUE(rules.ok()) << (rules.ok() ? "" : rules.error());
  return rules.ok() ? rules.value() : nullptr;
}

Category Of(const RuleSet& rules, std::string_view text, std::string_view recipient = "") {
  ReplyInput in;
  in.diagnostic = text;
  in.recipient = recipient;
  in.status = "";  // no RFC 3463 fallback: only a rule decides
  return rules.Classify(in).category;
}

TEST(RulesWindow, MatchesExactlyAsWritten) {
  auto rules = Compile(R"(
[[rule]]
id = "win"
category = "policy_rejection"
pattern = 'CS01.{0,10}local policy'
)");
  ASSERT_TRUE(rules);
  EXPECT_EQ(Of(*rules, "[CS01] by local policy"), Category::kPolicyRejection);
  // Both fragments occur, but too far apart, or in the wrong order: not a match.
  EXPECT_NE(Of(*rules, "CS01 and then a long way on to local policy"), Category::kPolicyRejection);
  EXPECT_NE(Of(*rules, "local policy says no to CS01"), Category::kPolicyRejection);
  // A second, distant occurrence of the first fragment does not hide a close pair.
  EXPECT_EQ(Of(*rules, "CS01 far far away from it ... CS01: local policy"),
            Category::kPolicyRejection);
}

TEST(RulesWindow, WindowsInGroupsAndAlternations) {
  auto rules = Compile(R"(
[[rule]]
id = "alt"
category = "spam_content"
pattern = 'spam detected|score .{0,12}too high'
[[rule]]
id = "group"
category = "virus_detected"
pattern = 'virus (?:found.{0,9}in|in .{0,9}attachment)'
)");
  ASSERT_TRUE(rules);
  EXPECT_EQ(Of(*rules, "550 spam detected"), Category::kSpamContent);
  EXPECT_EQ(Of(*rules, "550 score 12.5 is too high"), Category::kSpamContent);
  EXPECT_NE(Of(*rules, "550 score 12.5 of 5.0 allowed is far too high"), Category::kSpamContent);
  EXPECT_EQ(Of(*rules, "554 virus found: EICAR in message"), Category::kVirusDetected);
  EXPECT_EQ(Of(*rules, "554 virus in the attachment"), Category::kVirusDetected);
  EXPECT_NE(Of(*rules, "554 virus in this message, not its attachment"), Category::kVirusDetected);
}

TEST(RulesWindow, BadWindowedPatternIsRefusedAtItsLine) {
  auto rules = RuleSet::Compile({RulesSource{"bad.toml", R"([[rule]]
id = "ok"
category = "spam_content"
pattern = 'spam'

[[rule]]
id = "bad"
category = "spam_content"
pattern = 'score.{0,20}(too high'
)"}});
  ASSERT_FALSE(rules.ok());
  EXPECT_NE(rules.error().find("bad.toml:9:"), std::string::npos) << rules.error();
  EXPECT_NE(rules.error().find("bad regular expression"), std::string::npos) << rules.error();
}

// The engine runs a pattern only when the literals it needs occur in the text. These patterns
// exercise how those literals are found (optional and repeated characters, escapes, groups,
// classes, alternations with and without a usable literal); each must match exactly when the
// pattern does.
TEST(RulesLiterals, PrefilterNeverHidesAMatch) {
  struct Case {
    const char* pattern;
    const char* text;
    bool match;
  };
  const Case kCases[] = {
      {"colou?r blind", "COLOR BLIND", true},
      {"colou?r blind", "colour blind", true},
      {"colou?r blind", "colr blind", false},
      {"no+pe here", "nooope here", true},
      {"ab{0,3}cde fgh", "acde fgh", true},
      {"ab{2}cdefg", "abbcdefg", true},
      {"ab{2}cdefg", "abcdefg", false},
      {"\\[cs01\\] stop", "554 [CS01] stop", true},
      {"mail(?:box)? (?:is )?full", "Mail full", true},
      {"mail(?:box)? (?:is )?full", "mailbox is full", true},
      {"x|quota exceeded", "box x here", true},  // a branch without a literal: the Set has it
      {"x|quota exceeded", "over QUOTA EXCEEDED", true},
      {"x|quota exceeded", "nothing", false},
      {"[a-z]+ unknown user", "bob unknown user", true},
      {"user (?:unknown|not found)", "USER NOT FOUND", true},
      {"^550 no such", "550 no such user", true},
      {"^550 no such", "said 550 no such user", false},
      {"\\bdmarc\\b.{0,20}reject", "DMARC policy: reject", true},
      {"\\bdmarc\\b.{0,20}reject", "xdmarc policy: reject", false},
      {"5\\.7\\.1 denied", "550 5.7.1 denied", true},
      {"5\\.7\\.1 denied", "550 5x7x1 denied", false},
      {"\\x61bc defg", "abc defg", true},
      {"\\pL+ rejected here", "mail rejected here", true},
      {"a.c rejected", "abc rejected", true},
  };
  for (const Case& c : kCases) {
    auto rules = Compile(std::string("[[rule]]\nid = \"t\"\ncategory = \"spam_content\"\n") +
                         "pattern = '" + c.pattern + "'\n");
    ASSERT_TRUE(rules) << c.pattern;
    EXPECT_EQ(Of(*rules, c.text) == Category::kSpamContent, c.match)
        << "pattern " << c.pattern << " on " << c.text;
  }
}

TEST(RulesMemo, SameTextOtherRecipientGetsItsOwnRecipient) {
  auto rules = RuleSet::Default();
  ReplyInput in;
  in.diagnostic = "550 5.1.1 <a@example.org>: Recipient address rejected: User unknown";
  in.status = "5.1.1";
  in.recipient = "a@example.org";
  Result first = rules->Classify(in);
  in.recipient = "B@Example.org";
  Result second = rules->Classify(in);
  EXPECT_EQ(first.recipient, "a@example.org");
  EXPECT_EQ(second.recipient, "B@example.org");
  EXPECT_EQ(first.category, second.category);
  EXPECT_EQ(first.diagnostic, second.diagnostic);
  // The provider follows the recipient's domain, which is part of what is remembered.
  in.recipient = "c@icloud.com";
  EXPECT_EQ(rules->Classify(in).provider, "icloud");
  in.recipient = "d@example.org";
  EXPECT_EQ(rules->Classify(in).provider, "");
}

TEST(RulesMemo, ANewRuleSetIsNotAnsweredFromTheOldOnesMemo) {
  const std::string text = "550 too many hops here";
  auto spam = Compile("[[rule]]\nid = \"x\"\ncategory = \"spam_content\"\npattern = 'hops'\n");
  ASSERT_TRUE(spam);
  EXPECT_EQ(Of(*spam, text), Category::kSpamContent);
  spam.reset();  // a new set may be allocated where the old one was
  auto loop = Compile("[[rule]]\nid = \"y\"\ncategory = \"system_error\"\npattern = 'hops'\n");
  ASSERT_TRUE(loop);
  EXPECT_EQ(Of(*loop, text), Category::kSystemError);
}

TEST(RulesMemo, ThreadsClassifyTheSameTextAlike) {
  auto rules = RuleSet::Default();
  const std::string text = "554 5.7.1 [CS01] Message rejected due to local policy.";
  Category want = Of(*rules, text, "x@icloud.com");
  Category got[4];
  std::thread threads[4];
  for (int t = 0; t < 4; ++t) {
    threads[t] = std::thread([&, t] {
      for (int i = 0; i < 200; ++i) got[t] = Of(*rules, text, "x@icloud.com");
    });
  }
  for (auto& th : threads) th.join();
  for (Category c : got) EXPECT_EQ(c, want);
  EXPECT_EQ(want, Category::kPolicyRejection);
}

}  // namespace
}  // namespace bounced
