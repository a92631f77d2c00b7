// rules_engine_test.cc: how the rules engine matches (classifier/rules.cc), apart from what the
// shipped rules say: bounded windows (".{0,N}") must match exactly as the pattern reads, the
// literal prefilter must never hide a match, patterns run without RE2 ("simple" ones) must match
// exactly where RE2 does (checked against RE2 itself, also after they switch to RE2 in steady
// use), code patterns are checked at load, and the shared classification memo must give the
// same results as a fresh classification, per recipient and per rule set.
#include <gtest/gtest.h>
#include <re2/re2.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

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

// Patterns without a literal go to the RE2::Set, which is skipped on ASCII text when each of
// them needs a character outside ASCII: the answers must be as if it ran.
TEST(RulesLiterals, SetSkippedOnlyWhenNoPatternCanMatchAscii) {
  auto non_ascii_only = Compile(R"(
[[rule]]
id = "jp"
category = "user_unknown"
pattern = '\x{30C7}\d'
)");
  ASSERT_TRUE(non_ascii_only);
  EXPECT_EQ(Of(*non_ascii_only,
               "550 \xE3\x83\x87"
               "1"),
            Category::kUserUnknown);
  EXPECT_NE(Of(*non_ascii_only, "550 d1"), Category::kUserUnknown);
  auto mixed = Compile(R"(
[[rule]]
id = "jp"
category = "user_unknown"
pattern = '\x{30C7}\d'

[[rule]]
id = "optional"
category = "mailbox_full"
pattern = '(?:\x{30C7})?\d\d[!#]'

[[rule]]
id = "flags"
category = "rate_limited"
pattern = '(?i)\x{212A}#'
)");
  ASSERT_TRUE(mixed);
  EXPECT_EQ(Of(*mixed,
               "550 \xE3\x83\x87"
               "1"),
            Category::kUserUnknown);
  EXPECT_EQ(Of(*mixed, "550 42!"), Category::kMailboxFull);
  EXPECT_EQ(Of(*mixed, "550 k# then"), Category::kRateLimited);  // KELVIN SIGN folds to k
  EXPECT_EQ(Of(*mixed, "550 d1 x"), Category::kUndetermined);
}

// A character outside ASCII written as it is (two bytes: too short to be found as a literal)
// keeps the pattern on the Set, which ASCII replies skip; it still matches both cases.
TEST(RulesLiterals, ShortNonAsciiPatternMatchesBothCasesAndNoAscii) {
  auto rules = Compile(R"(
[[rule]]
id = "cyrillic"
category = "user_unknown"
pattern = 'ж\d'
)");
  ASSERT_TRUE(rules);
  EXPECT_EQ(Of(*rules, "550 ж1"), Category::kUserUnknown);
  EXPECT_EQ(Of(*rules, "550 Ж2"), Category::kUserUnknown);
  EXPECT_EQ(Of(*rules, "550 d1"), Category::kUndetermined);
  EXPECT_EQ(Of(*rules, "550 ж x"), Category::kUndetermined);
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
      {"\\141bc zzz", "Abc zzz", true},  // octal escape: the literal is "bc zzz"
      {"\\Qa+b\\E zzz", "a+b zzz", true},
      {"\\Qa+b\\E zzz", "ab zzz", false},
      {"(?:user|mailbox) (?:is )?disabled", "MAILBOX is disabled", true},
      {"(?:user|mailbox) (?:is )?disabled", "account is disabled", false},
  };
  for (const Case& c : kCases) {
    auto rules = Compile(std::string("[[rule]]\nid = \"t\"\ncategory = \"spam_content\"\n") +
                         "pattern = '" + c.pattern + "'\n");
    ASSERT_TRUE(rules) << c.pattern;
    EXPECT_EQ(Of(*rules, c.text) == Category::kSpamContent, c.match)
        << "pattern " << c.pattern << " on " << c.text;
  }
}

// What RE2 says: the pattern anywhere in the text, case-insensitive.
bool Re2Matches(const std::string& pattern, const std::string& text) {
  RE2::Options options;
  options.set_case_sensitive(false);
  options.set_log_errors(false);
  RE2 re(pattern, options);
  EXPECT_TRUE(re.ok()) << pattern;
  return RE2::PartialMatch(text, re);
}

// Most patterns are matched without RE2 (see SimplePattern in rules.cc), on ASCII text; the
// others, and every pattern on other text, by RE2. Either way the answer must be RE2's.
TEST(RulesSimplePatterns, MatchWhereRe2Matches) {
  const std::vector<std::string> patterns = {
      "doesn.t exist",
      "(?:user|mailbox) (?:is )?(?:unknown|disabled)",
      "\\bcs01\\b.{0,10}local policy",
      "from \\S+ deferred",
      "\\[(?:cs|hm)\\d\\d\\]",
      "^(?:5\\d\\d[ -])?(?:rejected|denied)\\.?$",
      "e-?mail address (?:is )?invalid",
      "[^a-z ]{2,3}-box",
      "no (?:a )?(?:valid )?(?:ptr|rdns)\\b",
      "x{3}y",
      "(?:ab){2,3}c",
      "ma\\Bil\\b",
      "spam|",
      "try again in \\d+ (?:seconds|minutes)",
      "\\w*able ips?",
      ".*final$",
      "[-_.]{2}sep",
      "(?:a|b|)c{1,2}d",
      "[\\d.]+ blocked",
      "\\x61bc ok",
      "caf\\x{E9} closed",
      "\\pL+ over quota",
      "(mail)(?:box)?\\s+full",
      // Characters outside ASCII: simple on ASCII text (where they match nothing), folded on
      // other text as RE2 folds them.
      "buz[o\xc3\xb3]n lleno",
      "\xd0\xbf\xd0\xbe\xd0\xbb\xd1\x8c\xd0\xb7\xd0\xbe\xd0\xb2\xd0\xb0\xd1\x82\xd0\xb5"
      "\xd0\xbb\xd1\x8c \xd0\xbd\xd0\xb5",
      "bo[i\xc3\xae]te (?:aux lettres )?pleine",
      "\xc3\xb3+k",
      "(?:\xc3\xa9)?tat",
      "[^\xc3\xa9]x\\b",
      "[\xc3\xa9\xc3\xa8]t\\b",
      "\xce\xb4\xce\xb5\xce\xbd \\w+",
  };
  std::vector<std::string> texts = {
      "550 user doesn't exist",
      "550 user doesnt exist",
      "550 5.1.1 mailbox is unknown here",
      "550 5.2.1 USER DISABLED",
      "554 5.7.1 [CS01] Message rejected due to local policy",
      "554 5.7.1 CS01 and a long way on to local policy",
      "451 messages from 192.0.2.1 temporarily deferred",
      "451 from deferred",
      "554 [HM08] rejected",
      "550 rejected.",
      "550-denied",
      "denied",
      "not rejected",
      "550 e-mail address is invalid",
      "550 email address invalid",
      "550 --box ##-box 12-box",
      "550 no valid PTR record",
      "550 no a valid rdnsx",
      "xxxy xxy",
      "ababc abc ababababc",
      "mail mail",
      "maIl box",
      "please try again in 30 minutes",
      "unverifiable ip and unreliable ips",
      "this is final",
      "final words",
      "._sep -sep",
      "cd bccd acd ccd",
      "192.0.2.1 blocked",
      "Abc ok",
      "caf\xc3\xa9 closed",
      "Caf\xc3\xa9 closed",
      "mailbox over quota",
      "mailbox   full",
      "MAILBOX FULL \xe2\x86\x92 try later",
      "550 user unknown \xe6\x97\xa5\xe6\x9c\xac",
      "552 Buzon lleno",
      "552 BUZ\xc3\x93N LLENO",
      "552 buz\xc3\xb3n lleno",
      "550 \xd0\x9f\xd0\xbe\xd0\xbb\xd1\x8c\xd0\xb7\xd0\xbe\xd0\xb2\xd0\xb0\xd1\x82\xd0\xb5\xd0\xbb"
      "\xd1\x8c \xd0\x9d\xd0\x95 \xd0\xbd\xd0\xb0\xd0\xb9\xd0\xb4\xd0\xb5\xd0\xbd",
      "552 BO\xc3\x8eTE AUX LETTRES PLEINE",
      "552 boite pleine",
      "ok \xc3\xb3\xc3\xb3k \xc3\x93K",
      "tat \xc3\x89TAT",
      "ax \xc3\xa9x",
      "\xc3\xa9x",
      "\xc3\x89T et",
      "\xce\x94\xce\x95\xce\x9d ok",
  };
  // A long reply is left to RE2 (the search without it grows with the length).
  texts.push_back(std::string(1100, 'z') +
                  " 550 mailbox is unknown, from a.example deferred final");
  for (const std::string& pattern : patterns) {
    auto rules =
        Compile("[[rule]]\nid = \"t\"\ncategory = \"spam_content\"\npattern = '" + pattern + "'\n");
    ASSERT_TRUE(rules) << pattern;
    for (const std::string& text : texts) {
      EXPECT_EQ(Of(*rules, text) == Category::kSpamContent, Re2Matches(pattern, text))
          << "pattern " << pattern << " on " << text;
    }
  }
}

// Random patterns and texts mixing ASCII with letters outside it, in both cases: the engine
// (simple programs on ASCII text, RE2 on lower-cased other text) answers as RE2 does on the
// text as it is, case-insensitively.
TEST(RulesSimplePatterns, NonAsciiLettersMatchWhereRe2Matches) {
  // Written as UTF-8: ó é ж and their capitals Ó É Ж.
  const std::vector<std::string> atoms = {"a",        "b",   " ",    "ó",     "é",
                                          "ж",        ".",   "[aó]", "[^é ]", "(?:a|ó)",
                                          "(?:жb|x)", "\\b", "\\w",  "\\S"};
  const std::vector<std::string> quantifiers = {"", "", "", "?", "+", "*", "{1,2}"};
  const std::vector<std::string> letters = {"a", "A", "b", "x", "-", "ó", "Ó", "é", "É", "ж", "Ж"};
  std::mt19937 rng(20261202);
  auto pick = [&](const std::vector<std::string>& from) { return from[rng() % from.size()]; };
  std::vector<std::string> texts;
  for (int t = 0; t < 40; ++t) {
    std::string text;
    for (int n = 1 + static_cast<int>(rng() % 8); n > 0; --n) text += pick(letters);
    texts.push_back(text);
  }
  for (int round = 0; round < 150; ++round) {
    std::string pattern;
    for (int n = 1 + static_cast<int>(rng() % 4); n > 0; --n) {
      std::string atom = pick(atoms);
      pattern += atom;
      if (atom != "\\b") pattern += pick(quantifiers);
    }
    auto rules =
        Compile("[[rule]]\nid = \"t\"\ncategory = \"spam_content\"\npattern = '" + pattern + "'\n");
    ASSERT_TRUE(rules) << pattern;
    for (const std::string& text : texts) {
      // Behind a code, as replies come (no space in the text: the engine folds runs of them).
      const std::string reply = "550 " + text;
      EXPECT_EQ(Of(*rules, reply) == Category::kSpamContent, Re2Matches(pattern, reply))
          << "pattern " << pattern << " on " << reply;
    }
  }
}

// A simple pattern in steady use is compiled after a while and matched by RE2: same answers.
TEST(RulesSimplePatterns, SameAnswersBeforeAndAfterTheSwitchToRe2) {
  const std::string pattern = "from \\S+ (?:temporarily )?deferred";
  auto rules =
      Compile("[[rule]]\nid = \"t\"\ncategory = \"rate_limited\"\npattern = '" + pattern + "'\n");
  ASSERT_TRUE(rules);
  for (int i = 0; i < 1000; ++i) {
    std::string text = "451 messages from " + (i % 3 == 0 ? std::string() : "host") +
                       std::to_string(i) + (i % 2 ? " temporarily" : "") + " deferred";
    if (i % 5 == 0) text = "451 from  deferred " + std::to_string(i);
    EXPECT_EQ(Of(*rules, text) == Category::kRateLimited, Re2Matches(pattern, text)) << text;
  }
}

TEST(RulesSimplePatterns, CodePatternsAreCheckedAtLoad) {
  auto rules = Compile(
      "[[rule]]\nid = \"t\"\ncategory = \"policy_rejection\"\npattern = 'local policy'\n"
      "code_pattern = '\\[(cs\\d\\d)\\]'\n");
  ASSERT_TRUE(rules);
  ReplyInput in;
  in.diagnostic = "554 5.7.1 [CS01] Message rejected due to local policy";
  EXPECT_EQ(rules->Classify(in).provider_code, "CS01");

  auto no_group = RuleSet::Compile({RulesSource{
      "c.toml",
      "[[rule]]\nid = \"t\"\ncategory = \"policy_rejection\"\npattern = 'local policy'\n"
      "code_pattern = '\\[cs\\d\\d\\]'\n"}});
  ASSERT_FALSE(no_group.ok());
  EXPECT_EQ(no_group.error(), "c.toml:5: 'code_pattern' needs a capture group (...) for the code");

  auto bad = RuleSet::Compile({RulesSource{
      "c.toml",
      "[[rule]]\nid = \"t\"\ncategory = \"policy_rejection\"\npattern = 'local policy'\n"
      "code_pattern = '(cs\\d\\d'\n"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "c.toml:5: bad regular expression: missing ): (cs\\d\\d");
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

// The memo is shared by the threads: they insert into it, and clear it when it is full (more
// distinct replies than it keeps), while the others read it; every answer must still be the one
// a fresh rule set gives.
TEST(RulesMemo, ThreadsFillAndClearTheSharedMemo) {
  auto rules = RuleSet::Default();
  auto fresh = RuleSet::Default();
  auto text = [](int i) {
    static const char* kReplies[] = {"550 5.1.1 user %d unknown", "452 4.2.2 mailbox %d full",
                                     "554 5.7.1 [CS01] rejected %d", "421 4.7.0 try again %d"};
    char buf[64];
    std::snprintf(buf, sizeof buf, kReplies[i % 4], i);
    return std::string(buf);
  };
  constexpr int kTexts = 6000;  // more than the memo keeps
  std::vector<Category> want(kTexts);
  for (int i = 0; i < kTexts; ++i) want[i] = Of(*fresh, text(i), "x@icloud.com");
  std::atomic<int> wrong{0};
  std::thread threads[3];
  for (int t = 0; t < 3; ++t) {
    threads[t] = std::thread([&, t] {
      for (int round = 0; round < 2; ++round) {
        for (int i = t; i < kTexts; i += 2) {
          if (Of(*rules, text(i), "x@icloud.com") != want[i]) ++wrong;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace bounced
