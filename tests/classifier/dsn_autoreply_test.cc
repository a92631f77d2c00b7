// dsn_autoreply_test.cc: auto-replies (RFC 3834 vacation and out-of-office replies, helpdesk
// acknowledgements) and feedback reports (RFC 5965 ARF, Hotmail's older complaints) from
// systems and languages the accuracy corpus does not have (it holds 2 auto-replies and 12
// reports). Each message in tests/data/dsn/autoreply is written the way its system sends it,
// from public facts about its headers and wording (README.md there names the source of each);
// expected.tsv says, per message, its kind and its one recipient's address, category and
// hard_bounce. An auto-reply must never suppress anyone: its recipient is the replier (its
// From); a complaint's is the complainer (the original recipient).
// Reads tests/data/dsn/autoreply only; writes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "classifier/dsn_parser.h"
#include "classifier/result.h"
#include "classifier/result_json.h"
#include "classifier/rules.h"
#include "tests/read_file.h"
#include "tests/sample_dir.h"

namespace bounced::testing {
namespace {

std::filesystem::path Dir() {
  return std::filesystem::path(BOUNCED_TEST_DATA) / "dsn" / "autoreply";
}

const RuleSet& Rules() {
  static std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  return *rules;
}

// One row of expected.tsv: the message's kind and its one recipient.
struct Expected {
  std::string kind;
  std::string recipient;
  std::string category;
  bool hard = false;
};

std::map<std::string, Expected> ReadExpectations() {
  std::map<std::string, Expected> out;
  EXPECT_TRUE(std::filesystem::exists(Dir() / "expected.tsv"));
  for (std::vector<std::string>& f : TsvRows(Dir() / "expected.tsv")) {
    EXPECT_EQ(f.size(), 5u) << f[0];
    f.resize(5);
    EXPECT_EQ(out.count(f[0]), 0u) << f[0] << " has two rows";
    out[f[0]] = Expected{f[1], f[2], f[3], f[4] == "1"};
  }
  return out;
}

std::vector<std::string> Messages() { return EmlFiles(Dir()); }

TEST(AutoReplyAndFeedback, EveryMessageHasExpectationsAndASource) {
  std::map<std::string, Expected> expected = ReadExpectations();
  std::string readme = ReadFile(Dir() / "README.md");
  std::vector<std::string> messages = Messages();
  EXPECT_GE(messages.size(), 25u);
  int auto_replies = 0;
  int reports = 0;
  for (const std::string& m : messages) {
    auto it = expected.find(m);
    EXPECT_TRUE(it != expected.end()) << m << " has no row in expected.tsv";
    EXPECT_NE(readme.find(m), std::string::npos) << m << " is not described in README.md";
    if (it == expected.end()) continue;
    auto_replies += it->second.kind == "auto_reply";
    reports += it->second.kind == "feedback_report";
  }
  for (const auto& [file, row] : expected) {
    EXPECT_TRUE(std::find(messages.begin(), messages.end(), file) != messages.end())
        << file << " in expected.tsv does not exist";
  }
  EXPECT_GE(auto_replies, 15);
  EXPECT_GE(reports, 10);
}

TEST(AutoReplyAndFeedback, EveryMessageReadAsItsSystemMeansIt) {
  int checked = 0;
  for (const auto& [file, e] : ReadExpectations()) {
    std::string bytes = ReadFile(Dir() / file);
    ASSERT_FALSE(bytes.empty()) << file;
    ParsedBounce p = ParseBounce(bytes, Rules());
    SCOPED_TRACE(file + ": " + p.error);
    EXPECT_EQ(ToString(p.kind), e.kind);
    ASSERT_EQ(p.recipients.size(), 1u);
    const Result& r = p.recipients[0];
    EXPECT_EQ(r.recipient, e.recipient);
    EXPECT_EQ(ToString(r.category), e.category);
    EXPECT_EQ(r.hard_bounce(), e.hard);
    if (p.kind == MessageKind::kAutoReply) {
      // Someone who answers is there: an auto-reply never suppresses them (one that says the
      // inbox is no longer in use counts against it as a disabled mailbox).
      EXPECT_NE(r.action(), Action::kSuppress);
    }
    ++checked;
  }
  EXPECT_GE(checked, 25);
}

// A bounce whose subject or headers look like an auto-reply's is still a bounce (the mailer
// daemon's, or one whose subject says it returns an auto-reply), and cron's mail
// (Auto-Submitted: auto-generated, from root) is no auto-reply.
TEST(AutoReplyAndFeedback, BouncesAndCronAreNoAutoReplies) {
  std::string cron =
      "From: root@host-example.org (Cron Daemon)\n"
      "To: root@host-example.org\n"
      "Subject: Cron <root@host> /usr/local/bin/backup\n"
      "Auto-Submitted: auto-generated\n"
      "Content-Type: text/plain\n"
      "\n"
      "backup finished\n";
  EXPECT_EQ(ParseBounce(cron, Rules()).kind, MessageKind::kNotBounce);

  std::string bounce =
      "From: Mail Delivery System <MAILER-DAEMON@mx.shop-example.com>\n"
      "To: orders@shop-example.com\n"
      "Subject: Undelivered Mail Returned to Sender\n"
      "Auto-Submitted: auto-replied\n"
      "Content-Type: text/plain\n"
      "\n"
      "I'm sorry to have to inform you that your message could not\n"
      "be delivered to one or more recipients.\n"
      "\n"
      "<nobody@receiver-example.com>: host mx.receiver-example.com[192.0.2.9] said:\n"
      "    550 5.1.1 <nobody@receiver-example.com>: Recipient address rejected: User\n"
      "    unknown in virtual mailbox table (in reply to RCPT TO command)\n";
  ParsedBounce p = ParseBounce(bounce, Rules());
  EXPECT_EQ(p.kind, MessageKind::kNonStandardBounce);
  ASSERT_EQ(p.recipients.size(), 1u);
  EXPECT_EQ(p.recipients[0].recipient, "nobody@receiver-example.com");
  EXPECT_EQ(ToString(p.recipients[0].category), "user_unknown");

  // A provider's notice (no mailer-daemon sender) that returns someone's out-of-office reply.
  std::string returned_reply =
      "From: Email Notification <notify@isp-example.net>\n"
      "To: orders@shop-example.com\n"
      "Subject: Undeliverable: Automatic reply: Your order 4471\n"
      "Content-Type: text/plain\n"
      "\n"
      "Your message could not be delivered to the following recipient:\n"
      "\n"
      "  <gone.user@isp-example.net>: 550 5.1.1 <gone.user@isp-example.net>: Recipient address\n"
      "  rejected: User unknown\n";
  p = ParseBounce(returned_reply, Rules());
  EXPECT_EQ(p.kind, MessageKind::kNonStandardBounce);
  ASSERT_EQ(p.recipients.size(), 1u);
  EXPECT_EQ(p.recipients[0].recipient, "gone.user@isp-example.net");
  EXPECT_EQ(ToString(p.recipients[0].category), "user_unknown");
}

// Line ends are no part of a system's wording.
// A complaint's provider code is the feedback type its report states (lower-case), "abuse" when
// it states none (Hotmail's older complaints): the suppression policy reads it, as not-spam and
// auth-failure reports never suppress by default (storage/store.h). The result's action says
// the same: none for those two, the category's "suppress" for the others.
TEST(AutoReplyAndFeedback, ComplaintsCarryTheirFeedbackTypeAsProviderCode) {
  struct Case {
    const char* file;
    const char* code;
    Action action;
  };
  const Case cases[] = {{"arf-authfailure-01.eml", "auth-failure", Action::kNone},
                        {"arf-notspam-01.eml", "not-spam", Action::kNone},
                        {"arf-fraud-01.eml", "fraud", Action::kSuppress},
                        {"arf-optout-01.eml", "opt-out", Action::kSuppress},
                        {"arf-yahoo-01.eml", "abuse", Action::kSuppress},
                        {"hotmail-complaint-01.eml", "abuse", Action::kSuppress}};
  for (const auto& [file, code, action] : cases) {
    ParsedBounce p = ParseBounce(ReadFile(Dir() / file), Rules());
    ASSERT_EQ(p.recipients.size(), 1u) << file << ": " << p.error;
    const Result& r = p.recipients[0];
    EXPECT_EQ(r.category, Category::kComplaint) << file;
    EXPECT_EQ(r.provider_code, code) << file;
    EXPECT_EQ(r.action(), action) << file;
    // Both JSON writers carry it.
    std::string line;
    AppendJson(r, &line);
    EXPECT_EQ(nlohmann::json::parse(line)["action"], ToString(action)) << file;
    EXPECT_EQ(ToJson(r)["action"], ToString(action)) << file;
  }
  // SES complaints state theirs as complaintFeedbackType.
  const std::string ses =
      "From: no-reply@sns.amazonaws.com\nSubject: AWS Notification Message\n\n"
      "{\"notificationType\":\"Complaint\",\"complaint\":{\"complaintFeedbackType\":"
      "\"Not-Spam\",\"complainedRecipients\":[{\"emailAddress\":\"user@example.org\"}]}}\n";
  ParsedBounce p = ParseBounce(ses, Rules());
  ASSERT_EQ(p.recipients.size(), 1u) << p.error;
  EXPECT_EQ(p.recipients[0].category, Category::kComplaint);
  EXPECT_EQ(p.recipients[0].provider_code, "not-spam");
}

TEST(AutoReplyAndFeedback, LineEndsDoNotChangeTheReading) {
  for (const std::string& m : Messages()) {
    std::string bytes = ReadFile(Dir() / m);
    ParsedBounce a = ParseBounce(LfLineEnds(bytes), Rules());
    ParsedBounce b = ParseBounce(CrlfLineEnds(bytes), Rules());
    EXPECT_EQ(a.kind, b.kind) << m;
    ASSERT_EQ(a.recipients.size(), b.recipients.size()) << m;
    for (size_t i = 0; i < a.recipients.size(); ++i) {
      EXPECT_EQ(a.recipients[i].recipient, b.recipients[i].recipient) << m;
      EXPECT_EQ(a.recipients[i].category, b.recipients[i].category) << m;
    }
  }
}

}  // namespace
}  // namespace bounced::testing
