// dsn_limits_test.cc: large bounces (classifier/dsn_parser.h). Postfix lists every bounced
// recipient of a queue file in one DSN, and a list message can have thousands: each must come
// out, in order. Past the parser's limits (there for hostile input) what was read still comes
// out, and ParsedBounce::warnings says what was not; an ordinary bounce has no warning.
#include <gtest/gtest.h>

#include <string>

#include "classifier/dsn_fields.h"
#include "classifier/dsn_mime.h"
#include "classifier/dsn_parser.h"
#include "classifier/dsn_text.h"
#include "classifier/rules.h"
#include "tests/base64_lines.h"
#include "tests/large_bounce.h"

namespace bounced {
namespace {

const RuleSet& Rules() {
  static std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  return *rules;
}

using testing::LargeEximBounce;
using testing::LargePostfixDsn;

std::string Address(size_t i) { return testing::NumberedAddress(i); }

void ExpectAllUnknownInOrder(const ParsedBounce& p, size_t n) {
  ASSERT_EQ(p.recipients.size(), n) << p.error;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(p.recipients[i].recipient, Address(i)) << i;
    ASSERT_EQ(ToString(p.recipients[i].category), "user_unknown") << i;
  }
}

TEST(LargeBounce, PostfixDsnWithThousandsOfRecipientsIsReadWhole) {
  // 5,000 recipients: ~2.2 MB, its report part alone more than a megabyte.
  ParsedBounce p = ParseBounce(LargePostfixDsn(5000), Rules());
  EXPECT_EQ(p.kind, MessageKind::kDsn);
  ExpectAllUnknownInOrder(p, 5000);
  EXPECT_TRUE(p.warnings.empty()) << p.warnings.front();
}

TEST(LargeBounce, ProseBounceWithHundredsOfRecipientsIsReadWhole) {
  ParsedBounce p = ParseBounce(LargeEximBounce(1500), Rules());
  EXPECT_EQ(p.kind, MessageKind::kNonStandardBounce);
  ExpectAllUnknownInOrder(p, 1500);
  EXPECT_TRUE(p.warnings.empty()) << p.warnings.front();
}

TEST(LargeBounce, ReportPastItsGroupLimitKeepsTheFirstAndWarns) {
  std::string m =
      "From: MAILER-DAEMON@mx.example.org\nSubject: Undelivered Mail Returned to Sender\n"
      "Content-Type: multipart/report; report-type=delivery-status; boundary=\"B\"\n\n"
      "--B\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.example.org\n\n";
  const size_t n = dsn::kMaxRecipientGroups + 5;
  for (size_t i = 0; i < n; ++i)
    m += "Final-Recipient: rfc822; " + Address(i) + "\nAction: failed\nStatus: 5.1.1\n\n";
  m += "--B--\n";
  ParsedBounce p = ParseBounce(m, Rules());
  ASSERT_EQ(p.recipients.size(), dsn::kMaxRecipientGroups);
  EXPECT_EQ(p.recipients.back().recipient, Address(dsn::kMaxRecipientGroups - 1));
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("only the first " + std::to_string(dsn::kMaxRecipientGroups)),
            std::string::npos)
      << p.warnings[0];
}

TEST(LargeBounce, MessagePastTheSizeLimitIsCutAtALineAndWarns) {
  // Recipients up to and past the limit: the one whose group the cut runs through keeps its
  // whole address (the cut falls after the last whole line), and the warning says so.
  std::string m = LargePostfixDsn(0);
  m.resize(m.size() - std::string("--B--\n").size());
  for (size_t i = 0; m.size() <= kMaxMessageBytes + 4096; ++i) {
    m += "Final-Recipient: rfc822; " + Address(i) + "\nAction: failed\nStatus: 5.1.1\n\n";
  }
  ParsedBounce p = ParseBounce(m, Rules());
  ASSERT_FALSE(p.recipients.empty());
  for (const Result& r : p.recipients) ASSERT_TRUE(r.recipient.ends_with("@example.net"));
  ASSERT_FALSE(p.warnings.empty());
  EXPECT_NE(p.warnings[0].find("longer than 16 MiB"), std::string::npos) << p.warnings[0];
  // Exactly at the limit: no cut, no warning.
  std::string at = LargePostfixDsn(2);
  at += std::string(kMaxMessageBytes - at.size(), '\n');
  EXPECT_TRUE(ParseBounce(at, Rules()).warnings.empty());
}

TEST(LargeBounce, ProseLongerThanItsLimitWarns) {
  ParsedBounce p = ParseBounce(LargeEximBounce(3000), Rules());  // ~450 KB of text
  ASSERT_GT(p.recipients.size(), 1000u);
  EXPECT_EQ(p.recipients[0].recipient, Address(0));
  bool text_cut = false;
  for (const std::string& w : p.warnings) text_cut |= w.find("text is longer") != std::string::npos;
  EXPECT_TRUE(text_cut);
}

TEST(LargeBounce, DigestOfMoreBouncesThanAreOpenedWarns) {
  // A forward of many bounces, each its own message/rfc822 part (Exim's, in prose: each is read
  // as a message of its own): the first ones are read.
  const size_t n = dsn::kMaxAttachedMessages + 3;
  std::string m =
      "From: Helpdesk <helpdesk@example.com>\nTo: news@example.com\nSubject: Fwd: bounces\n"
      "Content-Type: multipart/mixed; boundary=\"F\"\n\n--F\nContent-Type: text/plain\n\n"
      "The bounces of last week, forwarded.\n";
  for (size_t i = 0; i < n; ++i) {
    std::string one = LargeEximBounce(1);
    const std::string first = Address(0);
    for (size_t at = one.find(first); at != std::string::npos; at = one.find(first, at + 1))
      one.replace(at, first.size(), Address(i));
    m += "--F\nContent-Type: message/rfc822\n\n" + one;
  }
  m += "--F--\n";
  ParsedBounce p = ParseBounce(m, Rules());
  ASSERT_EQ(p.recipients.size(), dsn::kMaxAttachedMessages);
  EXPECT_EQ(p.recipients.back().recipient, Address(dsn::kMaxAttachedMessages - 1));
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("attaches 3 more messages"), std::string::npos) << p.warnings[0];
}

// The part limit warns only when a text part is left out: other parts past it (an image) are
// no loss. A report glued after the first one passes its own cuts on.
TEST(LargeBounce, PartsPastTheLimitWarnOnlyWhenTextIsLeftOut) {
  auto report_with = [](size_t text_parts, const std::string& last_part) {
    std::string m =
        "From: MAILER-DAEMON@mx.example.org\nSubject: Undelivered Mail Returned to Sender\n"
        "Content-Type: multipart/report; report-type=delivery-status; boundary=\"B\"\n\n"
        "--B\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.example.org\n\n"
        "Final-Recipient: rfc822; " +
        Address(0) + "\nAction: failed\nStatus: 5.1.1\n\n";
    for (size_t i = 0; i < text_parts; ++i) m += "--B\nContent-Type: text/plain\n\nnote\n";
    return m + "--B\n" + last_part + "--B--\n";
  };
  const std::string image = "Content-Type: image/png\nContent-Transfer-Encoding: base64\n\niVBO\n";
  const std::string text = "Content-Type: text/plain\n\nnote\n";
  ParsedBounce full = ParseBounce(report_with(dsn::kMaxMimeParts - 1, image), Rules());
  ASSERT_EQ(full.recipients.size(), 1u);
  EXPECT_TRUE(full.warnings.empty()) << full.warnings.front();
  ParsedBounce over = ParseBounce(report_with(dsn::kMaxMimeParts - 1, text), Rules());
  ASSERT_EQ(over.recipients.size(), 1u);
  ASSERT_EQ(over.warnings.size(), 1u);
  EXPECT_NE(over.warnings[0].find("text parts"), std::string::npos) << over.warnings[0];
}

// A message cut short (the milter's capture stopped at max_bounce_bytes): a line the cut runs
// through is not read, even where the cut falls between two base64 lines whose text goes on
// (an address cut to "user18@example.ne" would be a wrong address), and a report's last group
// left without its Status is not read either.
TEST(CutShort, AnEncodedPartStopsAtItsLastWholeLineOfText) {
  const std::string prose = LargeEximBounce(30);
  const size_t blank = prose.find("\n\n");
  const std::string encoded = testing::Base64Lines(prose.substr(blank + 2));
  const std::string message = prose.substr(0, blank) +
                              "\nMIME-Version: 1.0\nContent-Type: text/plain; charset=us-ascii\n"
                              "Content-Transfer-Encoding: base64\n\n" +
                              encoded;
  ASSERT_EQ(ParseBounce(message, Rules()).recipients.size(), 30u);
  // Cut after each whole base64 line: the text stops inside a line each time. Every recipient
  // read is one of the bounce's, whole and in order (before the first one is whole, the bounce
  // may still give one without an address).
  const size_t start = message.find("\n\n") + 2;
  size_t cuts = 0;
  for (size_t at = message.find('\n', start); at != std::string::npos;
       at = message.find('\n', at + 1)) {
    ParsedBounce p = ParseBounce(std::string_view(message).substr(0, at + 1), Rules(), true);
    size_t next = 0;
    for (const Result& r : p.recipients) {
      if (r.recipient.empty()) continue;
      ASSERT_EQ(r.recipient, Address(next)) << "cut at " << at;
      ++next;
    }
    ++cuts;
  }
  EXPECT_GT(cuts, 80u);
}

TEST(CutShort, AReportGroupLeftWithoutItsStatusIsNotRead) {
  const std::string dsn = LargePostfixDsn(10);
  const std::string group = "Final-Recipient: rfc822; " + Address(7) + "\n";
  const size_t at = dsn.find(group);
  ASSERT_NE(at, std::string::npos);
  // Cut after user7's Final-Recipient (and its Original-Recipient and Action): not read.
  for (const char* after : {"Final-Recipient", "Original-Recipient", "Action"}) {
    const size_t end = dsn.find('\n', dsn.find(after, at)) + 1;
    ParsedBounce p = ParseBounce(std::string_view(dsn).substr(0, end), Rules(), true);
    ASSERT_EQ(p.recipients.size(), 7u) << after;
    EXPECT_EQ(p.recipients.back().recipient, Address(6));
  }
  // Cut after its Status: read, with its status.
  const size_t end = dsn.find('\n', dsn.find("Status", at)) + 1;
  ParsedBounce p = ParseBounce(std::string_view(dsn).substr(0, end), Rules(), true);
  ASSERT_EQ(p.recipients.size(), 8u);
  EXPECT_EQ(p.recipients.back().recipient, Address(7));
  EXPECT_EQ(p.recipients.back().status, "5.1.1");
}

TEST(LargeBounce, OrdinaryBouncesHaveNoWarning) {
  EXPECT_TRUE(ParseBounce(LargePostfixDsn(1), Rules()).warnings.empty());
  EXPECT_TRUE(ParseBounce(LargeEximBounce(3), Rules()).warnings.empty());
}

}  // namespace
}  // namespace bounced
