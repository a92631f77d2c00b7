// dsn_parser_test.cc: the DSN parser (classifier/dsn_parser.h) on real bounces: the DSNs a real
// Postfix 3.7 generated for each captured scenario (tests/data/dsn/postfix), a selection of
// real-world bounces from Sisimai's BSD-licensed set-of-emails (tests/data/dsn/corpus, with
// expected.tsv), and malformed input that must never crash or hang.
#include "classifier/dsn_parser.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "classifier/dsn_mime.h"
#include "classifier/dsn_text.h"
#include "classifier/rules.h"

namespace bounced {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Data(const std::string& rel) { return std::string(BOUNCED_TEST_DATA) + "/dsn/" + rel; }

const RuleSet& Rules() {
  static std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  return *rules;
}

ParsedBounce ParseFile(const std::string& rel) { return ParseBounce(ReadFile(Data(rel)), Rules()); }

// --- Postfix-generated DSNs, one per captured scenario ---------------------------------

struct Scenario {
  const char* file;
  const char* recipient;
  Category category;
  const char* status;
  const char* provider_code;  // "" when the scenario has none
};

class PostfixScenario : public ::testing::TestWithParam<Scenario> {};

TEST_P(PostfixScenario, ClassifiesAsTheScenarioSays) {
  const Scenario& s = GetParam();
  ParsedBounce p = ParseFile(std::string("postfix/") + s.file);
  ASSERT_EQ(p.kind, MessageKind::kDsn) << p.error;
  ASSERT_EQ(p.recipients.size(), 1u);
  const Result& r = p.recipients[0];
  EXPECT_EQ(r.recipient, s.recipient);
  EXPECT_EQ(ToString(r.category), ToString(s.category)) << r.diagnostic;
  EXPECT_EQ(r.status, s.status);
  if (*s.provider_code) {
    EXPECT_EQ(r.provider_code, s.provider_code);
  }
  EXPECT_FALSE(p.postfix_queue_id.empty());
  EXPECT_EQ(p.reporting_mta, "mta.testbed.local");
}

INSTANTIATE_TEST_SUITE_P(
    Captured, PostfixScenario,
    ::testing::Values(
        Scenario{"cs01-04.eml", "cs01@icloud.com", Category::kPolicyRejection, "5.7.1", "CS01"},
        Scenario{"cs01-rcpt-05.eml", "cs01-rcpt@icloud.com", Category::kPolicyRejection, "5.7.1",
                 "CS01"},
        Scenario{"cs02-07.eml", "cs02@me.com", Category::kPolicyRejection, "5.7.1", "CS02"},
        Scenario{"hm08-06.eml", "hm08@mac.com", Category::kAuthFailure, "5.7.1", "HM08"},
        Scenario{"icloud-unknown-09.eml", "icloud-unknown@icloud.com", Category::kUserUnknown,
                 "5.1.1", ""},
        Scenario{"icloud-full-08.eml", "icloud-full@icloud.com", Category::kMailboxFull, "5.2.2",
                 ""},
        Scenario{"gmail-unknown-01.eml", "gmail-unknown@gmail.com", Category::kUserUnknown, "5.1.1",
                 ""},
        Scenario{"gmail-spam-02.eml", "gmail-spam@gmail.com", Category::kSpamContent, "5.7.1", ""},
        Scenario{"gmail-unauth-03.eml", "gmail-unauth@gmail.com", Category::kAuthFailure, "5.7.26",
                 ""},
        Scenario{"gmail-full-19.eml", "gmail-full@gmail.com", Category::kMailboxFull, "4.2.2", ""},
        Scenario{"gmail-rate-18.eml", "gmail-rate@gmail.com", Category::kRateLimited, "4.7.28", ""},
        Scenario{"yahoo-policy-10.eml", "yahoo-policy@yahoo.com", Category::kPolicyRejection,
                 "5.7.9", ""},
        Scenario{"yahoo-unknown-11.eml", "yahoo-unknown@yahoo.com", Category::kUserUnknown, "5.0.0",
                 ""},
        Scenario{"tss04-30.eml", "tss04@yahoo.com", Category::kRateLimited, "4.7.0", "TSS04"},
        Scenario{"ms-spam-13.eml", "ms-spam@outlook.com", Category::kSpamContent, "5.7.350", ""},
        Scenario{"ms-notfound-12.eml", "ms-notfound@outlook.com", Category::kUserUnknown, "5.1.10",
                 ""},
        Scenario{"ms-unknown-15.eml", "ms-unknown@hotmail.com", Category::kUserUnknown, "5.5.0",
                 ""},
        Scenario{"ms-block-14.eml", "ms-block@outlook.com", Category::kReputationBlock, "5.7.1",
                 "S3150"},
        Scenario{"full-16.eml", "full@example.org", Category::kMailboxFull, "5.2.2", ""},
        Scenario{"unknown-17.eml", "unknown@example.org", Category::kUserUnknown, "5.1.1", ""},
        Scenario{"down-31.eml", "someone@down.example", Category::kNetworkError, "4.4.1", ""},
        Scenario{"down-46.eml", "someone@down.example", Category::kExpired, "4.4.1", ""},
        Scenario{"greet421-54.eml", "someone@greet421.example", Category::kExpired, "4.7.0", ""},
        Scenario{"gmail-full-41.eml", "gmail-full@gmail.com", Category::kMailboxFull, "4.2.2", ""},
        Scenario{"tss04-49.eml", "tss04@yahoo.com", Category::kExpired, "4.7.0", "TSS04"}));

TEST(PostfixDsn, ICloudPolicyCodesNeverSuppress) {
  for (const char* f : {"cs01-04.eml", "cs01-rcpt-05.eml", "cs02-07.eml", "hm08-06.eml"}) {
    ParsedBounce p = ParseFile(std::string("postfix/") + f);
    ASSERT_EQ(p.recipients.size(), 1u) << f;
    EXPECT_EQ(p.recipients[0].provider, "icloud") << f;
    EXPECT_FALSE(p.recipients[0].hard_bounce()) << f;
    EXPECT_NE(p.recipients[0].action(), Action::kSuppress) << f;
  }
}

// The same bounce for other recipients (results are remembered per reply and recipient
// domain): each gets its own recipient and original recipient.
TEST(PostfixDsn, RepeatedBounceForOtherRecipients) {
  const std::string dsn = ReadFile(Data("postfix/cs01-04.eml"));
  auto with = [&](const std::string& address) {
    std::string text = dsn;
    for (size_t at = text.find("cs01@icloud.com"); at != std::string::npos;
         at = text.find("cs01@icloud.com", at + address.size())) {
      text.replace(at, 15, address);
    }
    ParsedBounce p = ParseBounce(text, Rules());
    EXPECT_EQ(p.recipients.size(), 1u) << address;
    return p.recipients.empty() ? Result() : p.recipients[0];
  };
  Result first = with("cs01@icloud.com");
  Result again = with("cs01@icloud.com");
  Result other = with("someone@icloud.com");
  Result elsewhere = with("someone@example.org");
  EXPECT_EQ(first.recipient, "cs01@icloud.com");
  EXPECT_EQ(other.recipient, "someone@icloud.com");
  EXPECT_EQ(other.original_recipient, "someone@icloud.com");
  EXPECT_EQ(elsewhere.recipient, "someone@example.org");
  for (const Result* r : {&again, &other}) {
    EXPECT_EQ(r->category, first.category);
    EXPECT_EQ(r->provider, "icloud");
    EXPECT_EQ(r->provider_code, "CS01");
    EXPECT_EQ(r->diagnostic, first.diagnostic);
  }
  EXPECT_EQ(again.recipient, first.recipient);
  EXPECT_EQ(elsewhere.category, first.category);
  EXPECT_EQ(elsewhere.provider, "icloud");  // the [CS01] code names the provider
}

TEST(PostfixDsn, MultiRecipientKeepsTheReportOrderAndStages) {
  ParsedBounce p = ParseFile("postfix/multi-64.eml");
  ASSERT_EQ(p.recipients.size(), 3u);
  EXPECT_EQ(p.recipients[0].recipient, "unknown@example.org");
  EXPECT_EQ(p.recipients[1].recipient, "gmail-unknown@gmail.com");
  EXPECT_EQ(p.recipients[2].recipient, "full@yahoo.com");
  EXPECT_EQ(p.recipients[0].category, Category::kUserUnknown);
  EXPECT_EQ(p.recipients[1].category, Category::kUserUnknown);
  EXPECT_EQ(p.recipients[2].category, Category::kMailboxFull);
  for (const Result& r : p.recipients) {
    EXPECT_EQ(r.stage, "rcpt") << r.recipient;
    EXPECT_EQ(r.dsn_action, "failed");
    EXPECT_EQ(r.remote_mta, "127.0.0.1");
  }
  EXPECT_EQ(p.postfix_queue_id, "19BB0A74A1F");
  EXPECT_EQ(p.original_message_id, "20261129170957.029217@vm");
}

TEST(PostfixDsn, FoldedGmailDiagnosticIsOneLine) {
  ParsedBounce p = ParseFile("postfix/gmail-unknown-01.eml");
  ASSERT_EQ(p.recipients.size(), 1u);
  const std::string& d = p.recipients[0].diagnostic;
  EXPECT_EQ(d.find('\n'), std::string::npos);
  EXPECT_NE(d.find("does not exist. Please try 550-5.1.1 double-checking"), std::string::npos) << d;
  EXPECT_NE(d.find("gsmtp"), std::string::npos);
  EXPECT_EQ(p.recipients[0].reply_code, "550");
}

TEST(PostfixDsn, DataStageRejectionHitsEveryRecipient) {
  ParsedBounce p = ParseFile("postfix/dsn-ext-66.eml");
  ASSERT_EQ(p.recipients.size(), 2u);
  EXPECT_EQ(p.recipients[0].recipient, "ok-cc@gmail.com");
  EXPECT_EQ(p.recipients[1].recipient, "cs01@icloud.com");
  for (const Result& r : p.recipients) {
    EXPECT_EQ(r.category, Category::kPolicyRejection) << r.recipient;
    EXPECT_EQ(r.stage, "eom");
  }
}

TEST(PostfixDsn, SuccessNotificationIsDelivered) {
  ParsedBounce p = ParseFile("postfix/dsn-success-65.eml");
  ASSERT_EQ(p.recipients.size(), 1u);
  EXPECT_EQ(p.recipients[0].category, Category::kDelivered);
  EXPECT_EQ(p.recipients[0].dsn_action, "relayed");
  EXPECT_EQ(p.recipients[0].status.substr(0, 2), "2.");
}

TEST(PostfixDsn, DelayedAndExpiredConnectFailures) {
  ParsedBounce delayed = ParseFile("postfix/unmatched-down-20.eml");
  ASSERT_EQ(delayed.recipients.size(), 1u);
  EXPECT_EQ(delayed.recipients[0].dsn_action, "delayed");
  EXPECT_EQ(delayed.recipients[0].fault(), Fault::kTransient);
  ParsedBounce expired = ParseFile("postfix/unmatched-greet421-43.eml");
  ASSERT_EQ(expired.recipients.size(), 1u);
  EXPECT_EQ(expired.recipients[0].category, Category::kExpired);
}

// --- Real-world bounces of many MTAs (Sisimai's set-of-emails, BSD 2-Clause) -----------------

TEST(CorpusBounces, MatchExpectedCategoryStatusAndReplyCode) {
  std::ifstream in(Data("corpus/expected.tsv"));
  ASSERT_TRUE(in.good());
  std::string line;
  std::getline(in, line);  // header
  std::map<std::string, ParsedBounce> cache;
  int rows = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, '\t')) f.push_back(cell);
    f.resize(6);
    auto it = cache.find(f[0]);
    if (it == cache.end()) it = cache.emplace(f[0], ParseFile("corpus/" + f[0])).first;
    const ParsedBounce& p = it->second;
    size_t index = std::stoul(f[1]) - 1;
    ASSERT_LT(index, p.recipients.size()) << f[0] << " " << p.error;
    const Result& r = p.recipients[index];
    EXPECT_EQ(ToString(r.category), f[2]) << f[0] << ": " << r.diagnostic;
    if (!f[3].empty()) {
      EXPECT_EQ(r.status, f[3]) << f[0];
    }
    if (!f[4].empty()) {
      EXPECT_EQ(r.reply_code, f[4]) << f[0];
    }
    EXPECT_EQ(r.hard_bounce(), f[5] == "1") << f[0];
    ++rows;
  }
  EXPECT_GT(rows, 50);
}

TEST(CorpusBounces, FeedbackReportIsComplaintWithRecipient) {
  ParsedBounce p = ParseFile("corpus/arf-02.eml");
  EXPECT_EQ(p.kind, MessageKind::kFeedbackReport);
  ASSERT_EQ(p.recipients.size(), 1u);
  EXPECT_EQ(p.recipients[0].category, Category::kComplaint);
  EXPECT_EQ(p.recipients[0].recipient, "this-local-part-does-not-exist-on-yahoo@yahoo.com");
}

TEST(CorpusBounces, EximTextBounceFindsRecipientAndStage) {
  ParsedBounce p = ParseFile("corpus/lhost-exim-05.eml");
  EXPECT_EQ(p.kind, MessageKind::kNonStandardBounce);
  ASSERT_EQ(p.recipients.size(), 1u);
  EXPECT_EQ(p.recipients[0].recipient, "kijitora@neko.example.co.jp");
  EXPECT_EQ(p.recipients[0].stage, "rcpt");
  EXPECT_EQ(p.recipients[0].remote_mta, "mx49.neko.example.co.jp");
  EXPECT_EQ(p.recipients[0].category, Category::kUserUnknown);
}

// --- Line ends ------------------------------------------------------------------------------

std::string WithLineEnds(const std::string& s, const std::string& eol) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += eol;
    } else {
      out += c;
    }
  }
  return out;
}

TEST(LineEnds, CrlfAndBareCrParseLikeLf) {
  std::string lf = ReadFile(Data("postfix/multi-64.eml"));
  ParsedBounce a = ParseBounce(lf, Rules());
  for (const char* eol : {"\r\n", "\r"}) {
    ParsedBounce b = ParseBounce(WithLineEnds(lf, eol), Rules());
    ASSERT_EQ(b.recipients.size(), a.recipients.size()) << int(eol[1]);
    for (size_t i = 0; i < a.recipients.size(); ++i) {
      EXPECT_EQ(b.recipients[i].recipient, a.recipients[i].recipient);
      EXPECT_EQ(b.recipients[i].category, a.recipients[i].category);
      EXPECT_EQ(b.recipients[i].diagnostic, a.recipients[i].diagnostic);
      EXPECT_EQ(b.recipients[i].stage, a.recipients[i].stage);
    }
  }
}

// An MTA that relays a remote reply's CRLF lines inside its own CRLF text ends them "\r\r\n"
// (DragonFly's dma does): that is one line end, or the reply's lines fall apart into paragraphs
// and the diagnostic stops after the first.
TEST(LineEnds, CrRunsBeforeLfAreOneLineEnd) {
  const std::string text =
      "From: MAILER-DAEMON <>\r\n"
      "To: sender@example.jp\r\n"
      "Subject: Mail delivery failed\r\n\r\n"
      "There was an error delivering your mail to <user@example.org>.\r\n\r\n"
      "mx.example.org [192.0.2.1] did not like our RCPT TO:\r\n"
      "550-5.1.1 The email account that you tried to reach does not exist. Please try\r\r\n"
      "550-5.1.1 double-checking the recipient's email address for typos or\r\r\n"
      "550 5.1.1 unnecessary spaces.\r\n\r\n"
      "Message headers follow.\r\n";
  std::string single = text;
  for (size_t at; (at = single.find("\r\r\n")) != std::string::npos;) single.erase(at, 1);
  ParsedBounce doubled = ParseBounce(text, Rules());
  ParsedBounce plain = ParseBounce(single, Rules());
  ASSERT_EQ(doubled.recipients.size(), 1u) << doubled.error;
  ASSERT_EQ(plain.recipients.size(), 1u) << plain.error;
  EXPECT_EQ(doubled.recipients[0].diagnostic, plain.recipients[0].diagnostic);
  EXPECT_NE(doubled.recipients[0].diagnostic.find("unnecessary spaces"), std::string::npos)
      << doubled.recipients[0].diagnostic;
  EXPECT_EQ(doubled.recipients[0].category, Category::kUserUnknown);
  // (CR-only text, where "\r\r" is a blank line, is CrlfAndBareCrParseLikeLf's.)
}

// --- Encodings ------------------------------------------------------------------------------

TEST(Encodings, Base64DeliveryStatusAndRfc2047Subject) {
  const std::string msg =
      "From: MAILER-DAEMON@mx.example.net\n"
      "Subject: =?UTF-8?B?VW5kZWxpdmVyZWQgTWFpbA==?=\n"
      "MIME-Version: 1.0\n"
      "Content-Type: multipart/report; report-type=delivery-status; boundary=\"B\"\n\n"
      "--B\nContent-Type: text/plain\n\nSorry.\n"
      "--B\nContent-Type: message/delivery-status\nContent-Transfer-Encoding: base64\n\n"
      // "Reporting-MTA: dns; mx.example.net\n\nFinal-Recipient: rfc822; a@example.org\n
      //  Action: failed\nStatus: 5.1.1\nDiagnostic-Code: smtp; 550 5.1.1 no such user\n"
      "UmVwb3J0aW5nLU1UQTogZG5zOyBteC5leGFtcGxlLm5ldAoKRmluYWwtUmVjaXBpZW50OiByZmM4MjI7\n"
      "IGFAZXhhbXBsZS5vcmcKQWN0aW9uOiBmYWlsZWQKU3RhdHVzOiA1LjEuMQpEaWFnbm9zdGljLUNvZGU6\n"
      "IHNtdHA7IDU1MCA1LjEuMSBubyBzdWNoIHVzZXIK\n"
      "--B--\n";
  ParsedBounce p = ParseBounce(msg, Rules());
  ASSERT_EQ(p.recipients.size(), 1u) << p.error;
  EXPECT_EQ(p.recipients[0].recipient, "a@example.org");
  EXPECT_EQ(p.recipients[0].status, "5.1.1");
  EXPECT_EQ(p.recipients[0].category, Category::kUserUnknown);
  EXPECT_EQ(p.reporting_mta, "mx.example.net");
}

TEST(Encodings, QuotedPrintableTextBounceInLatin1) {
  const std::string msg =
      "From: Mail Delivery System <MAILER-DAEMON@mx.example.de>\n"
      "Subject: Mail delivery failed: returning message to sender\n"
      "MIME-Version: 1.0\n"
      "Content-Type: text/plain; charset=iso-8859-1\n"
      "Content-Transfer-Encoding: quoted-printable\n\n"
      "This message was created automatically by mail delivery software.\n\n"
      "A message that you sent could not be delivered to one or more of its\n"
      "recipients. This is a permanent error. The following address(es) failed:\n\n"
      "  m=FCller@example.de\n"
      "    SMTP error from remote mail server after RCPT TO:<m=FCller@example.de>:\n"
      "    host mx.example.de [192.0.2.1]: 550 5.1.1 Benutzer unbekannt, user unkn=\n"
      "own\n";
  ParsedBounce p = ParseBounce(msg, Rules());
  ASSERT_EQ(p.recipients.size(), 1u) << p.error;
  EXPECT_EQ(p.recipients[0].status, "5.1.1");
  EXPECT_EQ(p.recipients[0].reply_code, "550");
  EXPECT_EQ(p.recipients[0].stage, "rcpt");
  EXPECT_NE(p.recipients[0].diagnostic.find("user unknown"), std::string::npos)
      << p.recipients[0].diagnostic;
}

// --- Shapes of older MTAs' bounces (wording from Sisimai's set-of-emails) -----------------

TEST(TextBounces, NonDeliveryNoticeGaveUpAndWarningKeepsTrying) {
  const std::string failed =
      "From: Mail Delivery Subsystem <MAILER-DAEMON@mx.example.jp>\n"
      "Subject: Returned mail: see transcript for details\n\n"
      "The original message was received at 06 Jan 2025 22:22:29 +0900\n"
      "---The following addresses had delivery errors---\n"
      "u@example.go.jp [Connection timed out]\n";
  ParsedBounce p = ParseBounce(failed, Rules());
  ASSERT_EQ(p.recipients.size(), 1u) << p.error;
  EXPECT_EQ(p.recipients[0].dsn_action, "failed");
  EXPECT_EQ(p.recipients[0].category, Category::kExpired);

  const std::string warning =
      "From: Mail Delivery System <Mailer-Daemon@mx.example.com>\n"
      "Subject: Warning: message 1abc-000 delayed 24 hours\n\n"
      "This message was created automatically by mail delivery software.\n"
      "A message that you sent has not yet been delivered to one or more of its\n"
      "recipients after more than 24 hours on the queue on mx.example.com.\n\n"
      "  u@example.org\n"
      "    Delay reason: connect to mx.example.org: Connection timed out\n\n"
      "No action is required on your part. Delivery attempts will continue.\n";
  p = ParseBounce(warning, Rules());
  ASSERT_EQ(p.recipients.size(), 1u) << p.error;
  EXPECT_EQ(p.recipients[0].dsn_action, "delayed");
  EXPECT_EQ(p.recipients[0].category, Category::kNetworkError);
  // A failure notice keeps the original subject: its own words come first.
  std::string renamed = failed;
  renamed.replace(renamed.find("Returned mail: see transcript for details"),
                  std::string_view("Returned mail: see transcript for details").size(),
                  "Returned mail: Your order is delayed");
  p = ParseBounce(renamed, Rules());
  ASSERT_EQ(p.recipients.size(), 1u) << p.error;
  EXPECT_EQ(p.recipients[0].dsn_action, "failed");
}

// A report whose text part carries what its fields leave out.
std::string ReportWithText(std::string_view text, std::string_view fields) {
  return "From: MAILER-DAEMON@mx.example.jp\n"
         "Subject: Returned mail\n"
         "MIME-Version: 1.0\n"
         "Content-Type: multipart/report; report-type=delivery-status; boundary=\"B\"\n\n"
         "--B\nContent-Type: text/plain\n\n" +
         std::string(text) +
         "\n--B\nContent-Type: message/delivery-status\n\n"
         "Reporting-MTA: dns; mx.example.jp\n\n" +
         std::string(fields) + "\n--B--\n";
}

TEST(TextBounces, LocalProgramExitCodeIsReadable) {
  ParsedBounce p = ParseBounce(
      ReportWithText("Delivery to u@example.jp is delayed.",
                     "Final-Recipient: RFC822; u@example.jp\nAction: delayed\nStatus: 4.5.0\n"
                     "Diagnostic-Code: X-Unix; 71\n"),
      Rules());
  ASSERT_EQ(p.recipients.size(), 1u) << p.error;
  EXPECT_TRUE(p.recipients[0].diagnostic.ends_with("71 (local delivery program: system error)"))
      << p.recipients[0].diagnostic;
  EXPECT_EQ(p.recipients[0].category, Category::kSystemError);
}

TEST(TextBounces, SendmailTranscriptLinesAndRecipientHeadings) {
  // The local mailer's own line in the transcript says why; the summary reply does not.
  ParsedBounce p = ParseBounce(
      ReportWithText("   ----- The following addresses had permanent fatal errors -----\n"
                     "<u@example.net>\n\n"
                     "   ----- Transcript of session follows -----\n"
                     "mail.local: unknown user: u\n"
                     "554 <u@example.net>... Service unavailable\n",
                     "Final-Recipient: RFC822; <u@example.net>\nAction: failed\nStatus: 5.5.0\n"),
      Rules());
  ASSERT_EQ(p.recipients.size(), 1u) << p.error;
  EXPECT_EQ(p.recipients[0].category, Category::kUserUnknown);
  // au heads the recipients of one reason with a line of its own.
  p = ParseBounce(
      ReportWithText("The user(s) account is disabled.\n\n\n"
                     "<u@ezweb.ne.jp>: 550 user unknown (in reply to RCPT TO command)\n",
                     "Final-Recipient: rfc822; u@ezweb.ne.jp\nAction: failed\n"
                     "Status: 5.0.0\n"),
      Rules());
  ASSERT_EQ(p.recipients.size(), 1u) << p.error;
  EXPECT_EQ(p.recipients[0].category, Category::kMailboxDisabled);
}

TEST(TextBounces, QmailNamesTheFailedStep) {
  const std::string msg =
      "From: MAILER-DAEMON@mx.example.net\n"
      "To: s@example.com\n"
      "Subject: failure notice\n\n"
      "Hi. This is the qmail-send program at mx.example.net.\n"
      "I'm afraid I wasn't able to deliver your message to the following addresses.\n"
      "This is a permanent error; I've given up. Sorry it didn't work out.\n\n"
      "<u@example.org>:\n"
      "192.0.2.1 does not like recipient.\n"
      "Remote host said: 550 User unknown\n"
      "Giving up on 192.0.2.1.\n\n"
      "--- Below this line is a copy of the message.\n\n"
      "From: s@example.com\n";
  ParsedBounce p = ParseBounce(msg, Rules());
  ASSERT_EQ(p.recipients.size(), 1u) << p.error;
  EXPECT_EQ(p.recipients[0].stage, "rcpt");
  // Refused at RCPT: the address is what the server does not know.
  EXPECT_EQ(p.recipients[0].category, Category::kUserUnknown);
}

TEST(TextBounces, GmailRelayStateGivesTheStage) {
  auto bounce = [](std::string_view reply) {
    return "From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>\n"
           "To: s@gmail.com\n"
           "Subject: Delivery Status Notification (Failure)\n\n"
           "Delivery to the following recipient failed permanently:\n\n"
           "     u@example.jp\n\n"
           "Technical details of permanent failure:\n"
           "Google tried to deliver your message, but it was rejected by the recipient domain. "
           "The error that the other server returned was:\n" +
           std::string(reply) + "\n";
  };
  ParsedBounce rcpt =
      ParseBounce(bounce("550 550 <u@example.jp>: User unknown (state 14)."), Rules());
  ASSERT_EQ(rcpt.recipients.size(), 1u) << rcpt.error;
  EXPECT_EQ(rcpt.recipients[0].stage, "rcpt");
  EXPECT_EQ(rcpt.recipients[0].category, Category::kUserUnknown);
  ParsedBounce data = ParseBounce(bounce("550 550 Unknown user u@example.jp (state 18)."), Rules());
  ASSERT_EQ(data.recipients.size(), 1u) << data.error;
  EXPECT_EQ(data.recipients[0].stage, "data");
  EXPECT_EQ(data.recipients[0].category, Category::kFiltered);
}

TEST(TextBounces, AuSpamFilterHeaderMeansFiltered) {
  const std::string msg =
      "From: <Postmaster@ezweb.ne.jp>\n"
      "To: <s@example.or.jp>\n"
      "Subject: Mail System Error - Returned Mail\n"
      "X-SPASIGN: NG\n\n"
      "<u@ezweb.ne.jp>\n\n"
      "Each of the following recipients was rejected by a remote mail server.\n";
  ParsedBounce p = ParseBounce(msg, Rules());
  ASSERT_EQ(p.recipients.size(), 1u) << p.error;
  EXPECT_EQ(p.recipients[0].category, Category::kFiltered);
  EXPECT_EQ(p.recipients[0].rule, "kddi-spasign");
}

TEST(TextBounces, OldSendmailSummaryLineTakesItsSession) {
  const std::string msg =
      "From: Mail Delivery Subsystem <MAILER-DAEMON@mx8.example.com>\n"
      "To: s@example.co.jp\n"
      "Subject: Returned mail: Remote protocol error\n\n"
      "   ----- Transcript of session follows -----\n"
      "While talking to mailin1.example.org:\n"
      ">>> MAIL From:<s@example.co.jp>\n"
      "<<< 501 <s@example.co.jp>... no access from mail server [192.0.2.55] which is an open "
      "relay.\n"
      "554 <u@example.org>... Remote protocol error\n"
      "550 example.org (smtp)... 550 Host unknown\n"
      "554 <v@example.org>... 550 Host unknown (Authoritative answer from name server)\n"
      "   ----- Unsent message follows -----\n"
      "From: s@example.co.jp\n";
  ParsedBounce p = ParseBounce(msg, Rules());
  ASSERT_EQ(p.recipients.size(), 2u) << p.error;
  EXPECT_EQ(p.recipients[0].recipient, "u@example.org");
  EXPECT_EQ(p.recipients[0].category, Category::kReputationBlock);
  EXPECT_EQ(p.recipients[0].stage, "mail");
  EXPECT_EQ(p.recipients[1].category, Category::kDomainUnknown);
}

// --- Hostile and broken input: never crash, never hang, clear error ------------------------

TEST(Malformed, EmptyAndWhitespaceAreNotBounces) {
  for (const char* s : {"", "\n", "   \r\n\t"}) {
    ParsedBounce p = ParseBounce(s, Rules());
    EXPECT_EQ(p.kind, MessageKind::kNotBounce);
    EXPECT_TRUE(p.recipients.empty());
    EXPECT_FALSE(p.error.empty());
  }
}

TEST(Malformed, OrdinaryMailIsNotABounce) {
  ParsedBounce p = ParseBounce(
      "From: alice@example.org\nTo: bob@example.net\nSubject: lunch\n\nSee you at noon.\n",
      Rules());
  EXPECT_EQ(p.kind, MessageKind::kNotBounce);
  EXPECT_TRUE(p.recipients.empty());
}

TEST(Malformed, BinaryGarbage) {
  std::string junk;
  uint32_t x = 12345;
  for (int i = 0; i < 200000; ++i) {
    x = x * 1103515245 + 12345;
    junk.push_back(static_cast<char>(x >> 16));
  }
  ParsedBounce p = ParseBounce(junk, Rules());
  for (const Result& r : p.recipients) EXPECT_LE(r.diagnostic.size(), 4096u);
}

TEST(Malformed, TruncatedDsnStillYieldsWhatItHas) {
  std::string full = ReadFile(Data("postfix/multi-64.eml"));
  size_t cut = full.find("Final-Recipient: rfc822; full@yahoo.com");
  ASSERT_NE(cut, std::string::npos);
  ParsedBounce p = ParseBounce(full.substr(0, cut + 20), Rules());
  ASSERT_GE(p.recipients.size(), 2u);
  EXPECT_EQ(p.recipients[0].recipient, "unknown@example.org");
  for (size_t n = 0; n < full.size(); n += 97) ParseBounce(full.substr(0, n), Rules());
}

TEST(Malformed, MissingBoundaryFallsBackToText) {
  const std::string msg =
      "From: Mail Delivery Subsystem <MAILER-DAEMON@mx.example.edu>\n"
      "Subject: Returned mail: User unknown\n"
      "Content-Type: multipart/report; report-type=delivery-status; boundary=\"NOPE\"\n\n"
      "   ----- The following addresses had permanent fatal errors -----\n"
      "<kijitora@example.edu>\n\n"
      "   ----- Transcript of session follows -----\n"
      "550 5.1.1 <kijitora@example.edu>... User unknown\n\n"
      "Reporting-MTA: dns; mx.example.edu\n\n"
      "Final-Recipient: RFC822; kijitora@example.edu\n"
      "Action: failed\nStatus: 5.1.1\n";
  ParsedBounce p = ParseBounce(msg, Rules());
  ASSERT_EQ(p.recipients.size(), 1u) << p.error;
  EXPECT_EQ(p.recipients[0].recipient, "kijitora@example.edu");
  EXPECT_EQ(p.recipients[0].status, "5.1.1");
}

TEST(Malformed, BadBase64AndUnknownCharset) {
  const std::string msg =
      "From: MAILER-DAEMON@mx.example.net\nSubject: Undelivered Mail Returned to Sender\n"
      "Content-Type: multipart/report; report-type=delivery-status; boundary=\"B\"\n\n"
      "--B\nContent-Type: text/plain; charset=x-no-such-charset\n"
      "Content-Transfer-Encoding: base64\n\n!!!!****@@@@====\xff\xfe\n"
      "--B\nContent-Type: message/delivery-status\nContent-Transfer-Encoding: base64\n\n"
      "not base64 at all \x01\x02\n"
      "--B--\n";
  ParsedBounce p = ParseBounce(msg, Rules());
  for (const Result& r : p.recipients) EXPECT_TRUE(r.diagnostic.size() < 4096);
}

TEST(Malformed, DeepNestingAndManyParts) {
  std::string msg = "From: MAILER-DAEMON@x.example\nSubject: Undeliverable\n";
  std::string tail;
  for (int i = 0; i < 200; ++i) {
    msg += "Content-Type: multipart/mixed; boundary=\"b" + std::to_string(i) + "\"\n\n--b" +
           std::to_string(i) + "\n";
    tail = "\n--b" + std::to_string(i) + "--\n" + tail;
  }
  msg += "Content-Type: text/plain\n\nuser unknown: a@b.example\n" + tail;
  ParseBounce(msg, Rules());
  std::string many =
      "From: MAILER-DAEMON@x.example\nSubject: Undeliverable\n"
      "Content-Type: multipart/report; report-type=delivery-status; boundary=\"B\"\n\n";
  for (int i = 0; i < 5000; ++i) {
    many += "--B\nContent-Type: message/delivery-status\n\nFinal-Recipient: rfc822; u" +
            std::to_string(i) + "@example.org\nAction: failed\nStatus: 5.1.1\n\n";
  }
  // A report a part: the parts past kMaxMimeParts are not read, and the warning says so.
  ParsedBounce p = ParseBounce(many, Rules());
  EXPECT_EQ(p.recipients.size(), dsn::kMaxMimeParts);
  ASSERT_FALSE(p.warnings.empty());
  EXPECT_NE(p.warnings[0].find("text parts"), std::string::npos) << p.warnings[0];
}

TEST(Malformed, HugeInputIsCappedAndLongLinesAreFine) {
  std::string big = "From: MAILER-DAEMON@x.example\nSubject: Undelivered\n\n";
  big += "user unknown: a@b.example\n";
  big += std::string(kMaxMessageBytes + 1000, 'A');
  ParsedBounce p = ParseBounce(big, Rules());
  for (const Result& r : p.recipients) EXPECT_LE(r.diagnostic.size(), 4096u);
}

TEST(Malformed, ManyAddressesInOneTextBounce) {
  std::string msg = "From: MAILER-DAEMON@x.example\nSubject: Undelivered Mail\n\n";
  msg += "The following addresses had permanent fatal errors:\n";
  for (int i = 0; i < 20000; ++i) msg += "<u" + std::to_string(i) + "@example.org>\n";
  ParsedBounce p = ParseBounce(msg, Rules());
  EXPECT_EQ(p.recipients.size(), dsn::kMaxTextRecipients);
  EXPECT_FALSE(p.warnings.empty());
}

}  // namespace
}  // namespace bounced
