// session_test.cc: the milter's decisions without libmilter (milter/session.h, milter.h config).
#include "milter/session.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "milter/milter.h"

namespace bounced::milter_internal {
namespace {

MilterSuppression UserUnknownSince2026() {
  MilterSuppression s;
  s.category = Category::kUserUnknown;
  s.reason = "bounce";
  s.since_unix = 1795977408;  // 2026-11-29
  return s;
}

Expected<std::optional<MilterSuppression>> Hit() {
  return std::optional<MilterSuppression>(UserUnknownSince2026());
}
Expected<std::optional<MilterSuppression>> Miss() { return std::optional<MilterSuppression>(); }
Expected<std::optional<MilterSuppression>> Outage() { return Status::Error("store closed"); }

TEST(MilterPath, NonSmtpdIsCleanupsEmulatedLocalhostPortZero) {
  EXPECT_EQ(ClassifyPath("localhost", AF_INET, "127.0.0.1", 0), MailPath::kNonSmtpd);
  // Real SMTP clients always have a source port, even from loopback.
  EXPECT_EQ(ClassifyPath("localhost", AF_INET, "127.0.0.1", 41234), MailPath::kSmtpd);
  EXPECT_EQ(ClassifyPath("[127.0.0.1]", AF_INET, "127.0.0.1", 41234), MailPath::kSmtpd);
  EXPECT_EQ(ClassifyPath("mx.example.org", AF_INET, "192.0.2.1", 25), MailPath::kSmtpd);
  // No address at all (smtpd on a non-inet socket): the safe, SMTP reading.
  EXPECT_EQ(ClassifyPath("localhost", 0, "", 0), MailPath::kSmtpd);
}

TEST(MilterRcpt, RejectsSuppressedRecipientAtRcptWithDefaultReply) {
  MilterConfig c;
  RcptDecision d = DecideRcpt(c, MailPath::kSmtpd, false, "gone@example.org", Hit());
  EXPECT_EQ(d.kind, RcptDecision::Kind::kReject);
  EXPECT_EQ(d.reply.code, "550");
  EXPECT_EQ(d.reply.xcode, "5.1.1");
  EXPECT_EQ(d.reply.text,
            "<gone@example.org>: recipient suppressed since 2026-11-29 (user_unknown); not sent");
  ASSERT_TRUE(d.record);
  EXPECT_EQ(*d.record, EnforcementKind::kRejected);
  EXPECT_FALSE(d.remove_at_eom);
}

TEST(MilterRcpt, LetsUnsuppressedRecipientThrough) {
  MilterConfig c;
  RcptDecision d = DecideRcpt(c, MailPath::kSmtpd, false, "ok@example.org", Miss());
  EXPECT_EQ(d.kind, RcptDecision::Kind::kContinue);
  EXPECT_FALSE(d.record);
  EXPECT_FALSE(d.hit);
}

TEST(MilterRcpt, PerCategoryTempfailAndLogActions) {
  MilterConfig c;
  c.category_actions[static_cast<int>(Category::kUserUnknown)] = RcptAction::kTempfail;
  RcptDecision t = DecideRcpt(c, MailPath::kSmtpd, false, "a@example.org", Hit());
  EXPECT_EQ(t.kind, RcptDecision::Kind::kTempfail);
  EXPECT_EQ(t.reply.code, "450");
  EXPECT_EQ(t.reply.xcode, "4.2.1");
  EXPECT_EQ(*t.record, EnforcementKind::kTempfailed);

  c.category_actions[static_cast<int>(Category::kUserUnknown)] = RcptAction::kLog;
  RcptDecision l = DecideRcpt(c, MailPath::kSmtpd, false, "a@example.org", Hit());
  EXPECT_EQ(l.kind, RcptDecision::Kind::kContinue);  // dry run: nothing refused ...
  ASSERT_TRUE(l.record);
  EXPECT_EQ(*l.record, EnforcementKind::kLogged);  // ... but recorded
}

TEST(MilterRcpt, SendmailPathRemovesAtEndOfMessageInsteadOfRejecting) {
  MilterConfig c;
  RcptDecision d = DecideRcpt(c, MailPath::kNonSmtpd, false, "gone@example.org", Hit());
  EXPECT_EQ(d.kind, RcptDecision::Kind::kContinue);  // Postfix forbids rejecting here
  EXPECT_TRUE(d.remove_at_eom);
  EXPECT_FALSE(d.record);  // recorded when actually removed

  c.default_action = RcptAction::kTempfail;  // would lose the recipient: only recorded
  RcptDecision t = DecideRcpt(c, MailPath::kNonSmtpd, false, "gone@example.org", Hit());
  EXPECT_FALSE(t.remove_at_eom);
  EXPECT_EQ(*t.record, EnforcementKind::kLogged);
}

TEST(MilterRcpt, NeverRefusesRecipientsOfABounce) {
  MilterConfig c;
  RcptDecision d = DecideRcpt(c, MailPath::kSmtpd, true, "gone@example.org", Hit());
  EXPECT_EQ(d.kind, RcptDecision::Kind::kContinue);
  EXPECT_FALSE(d.record);
  EXPECT_FALSE(d.remove_at_eom);
}

TEST(MilterRcpt, StorageOutageAcceptsByDefaultAndTempfailsWhenConfigured) {
  MilterConfig c;
  RcptDecision a = DecideRcpt(c, MailPath::kSmtpd, false, "x@example.org", Outage());
  EXPECT_TRUE(a.storage_error);
  EXPECT_EQ(a.kind, RcptDecision::Kind::kContinue);

  c.on_storage_error = StorageErrorPolicy::kTempfail;
  RcptDecision t = DecideRcpt(c, MailPath::kSmtpd, false, "x@example.org", Outage());
  EXPECT_EQ(t.kind, RcptDecision::Kind::kTempfail);
  EXPECT_EQ(t.reply.code, "451");
  EXPECT_EQ(t.reply.xcode, "4.3.0");
}

TEST(MilterReply, TemplatePlaceholdersAndEscaping) {
  MilterSuppression s = UserUnknownSince2026();
  s.reason = "manual";
  Reply r =
      RenderReply("550 5.7.1 {addr} blocked ({reason}, {category}, {since}) 100%", "a%b@x", s);
  EXPECT_EQ(r.code, "550");
  EXPECT_EQ(r.xcode, "5.7.1");
  EXPECT_EQ(r.text, "a%%b@x blocked (manual, user_unknown, 2026-11-29) 100%%");
  // Control characters never reach the SMTP reply.
  Reply c = RenderReply("550 5.1.1 <{addr}>", "a\r\nb@x", s);
  EXPECT_EQ(c.text, "<a??b@x>");
  // A manual entry without category shows its reason.
  s.category = Category::kUndetermined;
  EXPECT_EQ(RenderReply("550 5.1.1 ({category})", "a@x", s).text, "(manual)");
}

TEST(MilterReply, TemplateValidation) {
  EXPECT_TRUE(CheckReplyTemplate("550 5.1.1 <{addr}> gone", '5').ok());
  EXPECT_FALSE(CheckReplyTemplate("450 4.2.1 x", '5').ok());
  EXPECT_FALSE(CheckReplyTemplate("550 4.1.1 x", '5').ok());
  EXPECT_FALSE(CheckReplyTemplate("550 x", '5').ok());
  EXPECT_FALSE(CheckReplyTemplate("55 5.1.1 x", '5').ok());
  Status unknown = CheckReplyTemplate("550 5.1.1 {address}", '5');
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.message().find("unknown placeholder"), std::string::npos);
}

TEST(MilterConfigCheck, DefaultsAreValidAndBadValuesNameTheKey) {
  MilterConfig c;
  EXPECT_TRUE(ValidateMilterConfig(c).ok());
  c.socket = "inet:8895@127.0.0.1";
  EXPECT_TRUE(ValidateMilterConfig(c).ok());
  c.socket = "unix:/run/bounced/milter.sock";
  EXPECT_TRUE(ValidateMilterConfig(c).ok());
  c.socket = "inet:99999@127.0.0.1";
  EXPECT_NE(ValidateMilterConfig(c).message().find("milter.socket"), std::string::npos);
  c.socket = "unix:relative.sock";
  EXPECT_NE(ValidateMilterConfig(c).message().find("absolute"), std::string::npos);
  c.socket = "";
  c.tempfail_reply = "550 5.1.1 x";
  EXPECT_NE(ValidateMilterConfig(c).message().find("milter.tempfail_reply"), std::string::npos);
  c = MilterConfig{};
  c.bounces = BounceDisposition::kQuarantine;
  c.quarantine_dir = "";
  EXPECT_NE(ValidateMilterConfig(c).message().find("milter.quarantine_dir"), std::string::npos);
  c = MilterConfig{};
  c.removed_header = "Bad Header:";
  EXPECT_FALSE(ValidateMilterConfig(c).ok());
}

TEST(MilterConfigCheck, NamesRoundTrip) {
  for (auto a : {RcptAction::kReject, RcptAction::kTempfail, RcptAction::kLog}) {
    EXPECT_EQ(RcptActionFromName(ToString(a)), a);
  }
  for (auto d :
       {BounceDisposition::kKeep, BounceDisposition::kDiscard, BounceDisposition::kQuarantine}) {
    EXPECT_EQ(BounceDispositionFromName(ToString(d)), d);
  }
  EXPECT_EQ(StorageErrorPolicyFromName("accept"), StorageErrorPolicy::kAccept);
  EXPECT_EQ(StorageErrorPolicyFromName("tempfail"), StorageErrorPolicy::kTempfail);
  EXPECT_FALSE(RcptActionFromName("bounce"));
}

TEST(MilterConfigCheck, OnlyABounceReadWholeLeavesTheMailStream) {
  for (bool captured : {false, true}) {
    for (bool read : {false, true}) {
      EXPECT_FALSE(MayRemoveBounce(BounceDisposition::kKeep, captured, read));
      // The quarantined copy holds what the parser left unread; a part capture would not.
      EXPECT_EQ(MayRemoveBounce(BounceDisposition::kQuarantine, captured, read), captured);
      EXPECT_EQ(MayRemoveBounce(BounceDisposition::kDiscard, captured, read), captured && read);
    }
  }
}

TEST(MilterBounceSniffer, RecognisesBounceCandidates) {
  BounceSniffer null_sender(true);
  EXPECT_TRUE(null_sender.candidate());

  BounceSniffer report(false);
  report.Header("Content-Type", " multipart/report; report-type=delivery-status;");
  EXPECT_TRUE(report.candidate());

  BounceSniffer arf(false);
  arf.Header("content-type", "Multipart/Report; report-type=feedback-report");
  EXPECT_TRUE(arf.candidate());

  BounceSniffer vacation(false);
  vacation.Header("Auto-Submitted", "auto-replied (vacation)");
  EXPECT_TRUE(vacation.candidate());

  BounceSniffer normal(false);
  normal.Header("Content-Type", "text/plain; charset=utf-8");
  normal.Header("Auto-Submitted", "no");
  normal.Header("Subject", "Undelivered Mail Returned to Sender");
  EXPECT_FALSE(normal.candidate());
}

TEST(MilterMessageBuffer, CapsCaptureAndMarksTruncation) {
  MessageBuffer b(64);
  b.Header("Subject", "hello");
  b.EndOfHeaders();
  EXPECT_EQ(b.bytes(), "Subject: hello\r\n\r\n");
  b.Body(std::string(100, 'x'));
  EXPECT_EQ(b.bytes().size(), 64u);
  EXPECT_TRUE(b.truncated());
  b.Body("more");
  EXPECT_EQ(b.bytes().size(), 64u);
}

TEST(MilterRemoval, HeaderNamesRemovedRecipients) {
  std::vector<PendingRemoval> r = {{"a@x", "a@x", UserUnknownSince2026()},
                                   {"<b@y>", "b@y", UserUnknownSince2026()}};
  r[1].suppression.category = Category::kComplaint;
  EXPECT_EQ(RemovalHeaderValue(r), "a@x (user_unknown), b@y (complaint)");
}

TEST(MilterDedupKey, PostfixBounceKeepsItsKeyAcrossRegeneration) {
  ParsedBounce p;
  p.kind = MessageKind::kDsn;
  p.message_id = "<20261129.AAA@mta>";
  p.postfix_queue_id = "00C38A72214";
  p.reporting_mta = "mta.e2e.test";
  Result r;
  r.dsn_action = "failed";
  p.recipients.push_back(r);
  std::string k1 = BounceDedupKey(p, "raw one");
  p.message_id = "<20261129.BBB@mta>";  // regenerated after "bounce failed"
  EXPECT_EQ(BounceDedupKey(p, "raw two"), k1);
  // A delay notice about the same message is a different event.
  p.recipients[0].dsn_action = "delayed";
  EXPECT_NE(BounceDedupKey(p, "raw two"), k1);
  // Remote bounces: the Message-ID; without one, the bytes.
  ParsedBounce remote;
  remote.kind = MessageKind::kDsn;
  remote.message_id = "<x@remote>";
  EXPECT_EQ(BounceDedupKey(remote, "a"), "msgid:<x@remote>");
  remote.message_id.clear();
  EXPECT_EQ(BounceDedupKey(remote, "a"), BounceDedupKey(remote, "a"));
  EXPECT_NE(BounceDedupKey(remote, "a"), BounceDedupKey(remote, "b"));
}

TEST(MilterQuarantine, WritesWholeMessageAtomically) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("bounced-q-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto path = WriteQuarantine(dir.string(), "postfix:x/1/dsn/failed", "From: a\r\n\r\nbody\r\n");
  ASSERT_TRUE(path.ok()) << path.error();
  std::ifstream in(path.value());
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "From: a\r\n\r\nbody\r\n");
  EXPECT_EQ(std::filesystem::status(path.value()).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto bad = WriteQuarantine((dir / "missing").string(), "k", "x");
  EXPECT_FALSE(bad.ok());
  std::filesystem::remove_all(dir);
}

TEST(MilterStatsQuantile, FromHistogram) {
  MilterStats s;
  s.rcpt_latency.assign(MilterStats::kRcptBuckets, 0);
  s.rcpt_latency[3] = 98;  // 0.75-1.0 us
  s.rcpt_latency[40] = 2;  // 10-10.25 us
  EXPECT_EQ(s.RcptLatencyQuantileNs(0.5), 4 * MilterStats::kRcptBucketNs);
  EXPECT_EQ(s.RcptLatencyQuantileNs(0.99), 41 * MilterStats::kRcptBucketNs);
}

}  // namespace
}  // namespace bounced::milter_internal
