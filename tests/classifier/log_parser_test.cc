// log_parser_test.cc: ParseLogLine and ParseLogTimestamp on real Postfix line shapes (classic
// syslog, RFC 3339, postlog, other syslog_names, long queue ids), and the LogCorrelator's
// bookkeeping (state dropped on "removed", the table cap, expiry without known recipients).
#include "classifier/log_parser.h"

#include <gtest/gtest.h>

#include "classifier/log_reply.h"
#include "tests/classifier/log_test_util.h"

namespace bounced {
namespace {

using testing_log::Correlate;
using testing_log::LogRun;
using testing_log::ReadTestFile;

constexpr std::string_view kCs01 =
    "Nov 29 17:09:53 mta postfix-tb/smtp[28967]: 8D0E3A74992: to=<cs01@icloud.com>, "
    "relay=127.0.0.1[127.0.0.1]:2526, delay=0.05, delays=0.05/0/0/0, dsn=5.7.1, status=bounced "
    "(host 127.0.0.1[127.0.0.1] said: 554 5.7.1 [CS01] Message rejected due to local policy. "
    "Please visit https://support.apple.com/en-us/HT204137 (in reply to end of DATA command))";

TEST(ParseLogLine, ClassicDeliveryLine) {
  ParsedLogLine p;
  ASSERT_EQ(ParseLogLine(kCs01, &p), LogLineKind::kDelivery);
  EXPECT_EQ(p.timestamp, "Nov 29 17:09:53");
  EXPECT_EQ(p.host, "mta");
  EXPECT_EQ(p.program, "postfix-tb/smtp");
  EXPECT_EQ(p.daemon, "smtp");
  EXPECT_EQ(p.queue_id, "8D0E3A74992");
  EXPECT_EQ(p.recipient, "cs01@icloud.com");
  EXPECT_EQ(p.relay, "127.0.0.1[127.0.0.1]:2526");
  EXPECT_EQ(p.dsn, "5.7.1");
  EXPECT_EQ(p.status, "bounced");
  EXPECT_FALSE(p.reason_cut);
  EXPECT_EQ(p.reason.substr(0, 34), "host 127.0.0.1[127.0.0.1] said: 55");
  EXPECT_EQ(p.reason.back(), ')');  // "(in reply to end of DATA command)"
}

TEST(ParseLogLine, Rfc3339LongQueueIdSubmissionServiceAndOrigTo) {
  ParsedLogLine p;
  std::string_view line =
      "2026-11-29T17:09:53.123456+01:00 mx1 postfix/submission/smtp[77]: 4Yx3Lk0wYtzJrGX: "
      "to=<User@Example.COM>, orig_to=<alias@example.net>, relay=mx.example.com[192.0.2.1]:25, "
      "conn_use=3, delay=0.4, delays=0.1/0/0.1/0.2, dsn=2.0.0, status=sent (250 2.0.0 Ok: queued "
      "as 123)";
  ASSERT_EQ(ParseLogLine(line, &p), LogLineKind::kDelivery);
  EXPECT_EQ(p.timestamp, "2026-11-29T17:09:53.123456+01:00");
  EXPECT_EQ(p.program, "postfix/submission/smtp");
  EXPECT_EQ(p.daemon, "smtp");
  EXPECT_EQ(p.queue_id, "4Yx3Lk0wYtzJrGX");
  EXPECT_EQ(p.recipient, "User@Example.COM");
  EXPECT_EQ(p.orig_recipient, "alias@example.net");
  EXPECT_EQ(p.relay, "mx.example.com[192.0.2.1]:25");
  EXPECT_EQ(p.status, "sent");
  EXPECT_EQ(p.reason, "250 2.0.0 Ok: queued as 123");
}

TEST(ParseLogLine, QmgrExpiredMessageIdNotificationRemoved) {
  ParsedLogLine p;
  EXPECT_EQ(ParseLogLine("Nov 29 17:11:12 mta postfix-tb/qmgr[28946]: 09DE9A74B41: "
                         "from=<sender@testbed.local>, size=555, nrcpt=1 (queue active)",
                         &p),
            LogLineKind::kQueued);
  EXPECT_EQ(p.sender, "sender@testbed.local");
  EXPECT_EQ(p.size, 555);
  EXPECT_EQ(p.nrcpt, 1);
  EXPECT_EQ(ParseLogLine("Nov 29 17:11:12 mta postfix-tb/qmgr[28946]: 09DE9A74B41: from=<>, "
                         "status=expired, returned to sender",
                         &p),
            LogLineKind::kExpired);
  EXPECT_EQ(p.sender, "");
  EXPECT_EQ(ParseLogLine("Nov 29 17:11:12 mta postfix-tb/cleanup[1]: 6567FA74893: "
                         "message-id=<20261129171112.6567FA74893@mta.testbed.local>",
                         &p),
            LogLineKind::kMessageId);
  EXPECT_EQ(p.message_id, "<20261129171112.6567FA74893@mta.testbed.local>");
  EXPECT_EQ(ParseLogLine("Nov 29 17:11:12 mta postfix-tb/bounce[29375]: 09DE9A74B41: sender "
                         "non-delivery notification: 6567FA74893",
                         &p),
            LogLineKind::kNotification);
  EXPECT_EQ(p.notification, "sender non-delivery");
  EXPECT_EQ(p.notification_queue_id, "6567FA74893");
  EXPECT_EQ(ParseLogLine("Nov 29 17:11:12 mta postfix-tb/qmgr[28946]: 09DE9A74B41: removed", &p),
            LogLineKind::kRemoved);
}

TEST(ParseLogLine, OtherProgramsAndNoiseAreOther) {
  ParsedLogLine p;
  for (std::string_view line : {
           "Nov 28 00:00:00 mail01 opendkim[812]: 318C829797E: DKIM-Signature field added",
           "Nov 28 00:00:00 mail01 postfix/smtpd[23240]: connect from app03[10.20.0.13]",
           "Nov 28 00:00:00 mail01 postfix/smtpd[1]: NOQUEUE: reject: RCPT from x[1.2.3.4]: 550 "
           "5.7.1 blocked; from=<a@b> to=<c@d> proto=ESMTP helo=<x>",
           "Nov 28 00:00:00 mail01 postfix/smtpd[1]: warning: hostname does not resolve",
           "Nov 28 00:00:00 mail01 postfix/bounce[1]: warning: zero result in delay template",
           "Nov 28 00:00:00 mail01 postfix/qmgr[1]: 36D3DA747F2: status=deferred (bounce failed)",
           "Nov 28 00:00:00 mail01 postfix/smtp[1]: 36D3DA747F2: host x[1.2.3.4] said: 421 busy "
           "(in reply to MAIL FROM command)",
       }) {
    EXPECT_EQ(ParseLogLine(line, &p), LogLineKind::kOther) << line;
  }
}

TEST(ParseLogLine, GarbageTruncatedAndBlank) {
  ParsedLogLine p;
  EXPECT_EQ(ParseLogLine("", &p), LogLineKind::kBlank);
  EXPECT_EQ(ParseLogLine("   \t", &p), LogLineKind::kBlank);
  for (std::string_view line :
       {"hello world", "Nov 29", "Nov 29 17:09:53", "Nov 29 17:09:53 mta",
        "Nov 29 17:09:53 mta postfix/smtp[12", "Foo 29 17:09:53 a b: c",
        "2026-11-29 17:09:53 host postfix/smtp[1]: x", "\x01\x02\xff\xfe", "# comment"}) {
    EXPECT_EQ(ParseLogLine(line, &p), LogLineKind::kGarbage) << line;
  }
  for (std::string_view line : {
           "Nov 29 17:09:53 mta postfix/smtp[1]: 8D0E3A74992: to=<cs01@icl",
           "Nov 29 17:09:53 mta postfix/smtp[1]: 8D0E3A74992: to=<cs01@icloud.com>, relay=127.0.0",
           "Nov 29 17:09:53 mta postfix/smtp[1]: 8D0E3A74992: to=<a@b.c>, relay=x, delay=1, dsn=5.",
           "Nov 29 17:09:53 mta postfix/qmgr[1]: 8D0E3A74992: from=<a@b.c",
           "Nov 29 17:09:53 mta postfix/bounce[1]: 8D0E3A74992: sender non-delivery notification: "
           "9AE",
       }) {
    EXPECT_EQ(ParseLogLine(line, &p), LogLineKind::kTruncated) << line;
  }
}

TEST(ParseLogLine, ReasonCutShortIsStillADelivery) {
  ParsedLogLine p;
  std::string_view line =
      "Nov 29 17:09:53 mta postfix/smtp[1]: 8D0E3A74992: to=<a@icloud.com>, relay=x[1.2.3.4]:25, "
      "delay=1, delays=1/0/0/0, dsn=5.7.1, status=bounced (host x[1.2.3.4] said: 554 5.7.1 [CS0";
  ASSERT_EQ(ParseLogLine(line, &p), LogLineKind::kDelivery);
  EXPECT_TRUE(p.reason_cut);
  EXPECT_EQ(p.reason, "host x[1.2.3.4] said: 554 5.7.1 [CS0");
}

TEST(ParseLogLine, PriorityPrefixAndSpacePaddedDay) {
  ParsedLogLine p;
  EXPECT_EQ(ParseLogLine("<22>Nov  9 07:09:53 mta postfix/qmgr[1]: 8D0E3A74992: removed", &p),
            LogLineKind::kRemoved);
  EXPECT_EQ(p.timestamp, "Nov  9 07:09:53");
}

TEST(ParseLogTimestamp, ClassicRfc3339AndJournalForms) {
  int64_t t = 0;
  std::string s;
  ASSERT_TRUE(ParseLogTimestamp("Nov 29 17:09:53", 2026, 0, &t, &s));
  EXPECT_EQ(t, 1795972193);
  EXPECT_EQ(s, "2026-11-29T17:09:53+00:00");
  ASSERT_TRUE(ParseLogTimestamp("Jan  2 03:04:05", 2027, 3600, &t, &s));
  EXPECT_EQ(s, "2027-01-02T03:04:05+01:00");
  EXPECT_EQ(t, 1798859045 - 3600);
  ASSERT_TRUE(ParseLogTimestamp("2026-11-29T17:09:53.123456+01:00", 0, 0, &t, &s));
  EXPECT_EQ(t, 1795972193 - 3600);
  EXPECT_EQ(s, "2026-11-29T17:09:53.123456+01:00");
  ASSERT_TRUE(ParseLogTimestamp("2026-11-29T17:09:53+0000", 0, 0, &t, &s));
  EXPECT_EQ(t, 1795972193);
  ASSERT_TRUE(ParseLogTimestamp("2026-11-29T17:09:53Z", 0, 0, &t, &s));
  EXPECT_EQ(t, 1795972193);
  EXPECT_FALSE(ParseLogTimestamp("Nov 99 17:09:53", 2026, 0, &t, &s));
  EXPECT_FALSE(ParseLogTimestamp("2026-13-29T17:09:53Z", 0, 0, &t, &s));
  EXPECT_FALSE(ParseLogTimestamp("yesterday", 2026, 0, &t, &s));
}

TEST(LogReply, AnalyzesPostfixExplanations) {
  using log_internal::AnalyzeReason;
  auto said = AnalyzeReason(
      "host mx01.mail.icloud.com[17.42.251.41] said: 452 4.2.2 <a@icloud.com>: user is over "
      "quota (in reply to RCPT TO command)");
  EXPECT_EQ(said.remote_host, "mx01.mail.icloud.com");
  EXPECT_EQ(said.reply, "452 4.2.2 <a@icloud.com>: user is over quota");
  EXPECT_EQ(said.stage, "rcpt");
  auto refused = AnalyzeReason(
      "delivery temporarily suspended: host 127.0.0.1[127.0.0.1] refused to talk to me: 421 "
      "4.7.0 [TSS04] Messages from 127.0.0.1 temporarily deferred");
  EXPECT_TRUE(refused.suspended);
  EXPECT_EQ(refused.remote_host, "127.0.0.1");
  EXPECT_EQ(refused.stage, "connect");
  EXPECT_EQ(refused.reply.substr(0, 9), "421 4.7.0");
  auto conn = AnalyzeReason("connect to mail.example.com[192.0.2.7]:25: Connection timed out");
  EXPECT_EQ(conn.remote_host, "mail.example.com");
  EXPECT_EQ(conn.stage, "connect");
  auto lost = AnalyzeReason(
      "lost connection with mx.example.com[192.0.2.7] while receiving the initial server "
      "greeting");
  EXPECT_EQ(lost.remote_host, "mx.example.com");
  EXPECT_EQ(lost.stage, "connect");
  auto own = AnalyzeReason(
      "Host or domain name not found. Name service error for name=nx.example type=MX: Host not "
      "found");
  EXPECT_EQ(own.remote_host, "");
  EXPECT_EQ(own.reply.substr(0, 12), "Host or doma");
}

TEST(LogReply, KeyMasksPerMessageNoiseOnly) {
  std::string a, b, c;
  log_internal::BuildReplyKey(
      "gmail", "5.1.1", "failed",
      "host gmail-smtp-in.l.google.com[142.250.27.26] said: 550-5.1.1 The email account does not "
      "exist. https://support.google.com/mail/?p=NoSuchUser d9443c01a7336-21c9f1b2a3bsi123456ad.12 "
      "- gsmtp (in reply to RCPT TO command)",
      &a);
  log_internal::BuildReplyKey(
      "gmail", "5.1.1", "failed",
      "host gmail-smtp-in.l.google.com[142.250.27.27] said: 550-5.1.1 The email account does not "
      "exist. https://support.google.com/mail/?p=NoSuchUser 0123456789abc-aaaaaaaaaaaaasi98765ed.3 "
      "- gsmtp (in reply to RCPT TO command)",
      &b);
  EXPECT_EQ(a, b);
  log_internal::BuildReplyKey("gmail", "5.1.1", "failed",
                              "host x[1.2.3.4] said: 550 5.7.1 (S3150) blocked", &c);
  EXPECT_NE(c.find("(S3150)"), std::string::npos);
  EXPECT_NE(a, c);
}

TEST(LogCorrelator, RemovedDropsStateAndTheCapEvictsTheOldest) {
  std::string log;
  for (int i = 0; i < 50; ++i) {
    char qid[16];
    snprintf(qid, sizeof qid, "%011X", 0xA0000 + i);
    log += std::string("Nov 29 17:09:53 mta postfix/cleanup[1]: ") + qid + ": message-id=<m" +
           std::to_string(i) + "@x>\n";
    log += std::string("Nov 29 17:09:53 mta postfix/qmgr[1]: ") + qid +
           ": from=<s@x.example>, size=1, nrcpt=1 (queue active)\n";
    if (i % 2 == 0)
      log += std::string("Nov 29 17:09:53 mta postfix/qmgr[1]: ") + qid + ": removed\n";
  }
  LogRun run = Correlate(log);
  EXPECT_EQ(run.stats.tracked_queue_ids, 25u);
  EXPECT_EQ(run.stats.evicted_queue_ids, 0u);

  size_t evicted = 0;
  LogCorrelator c(RuleSet::Default(), nullptr);
  c.set_max_tracked_queue_ids(10);
  LogLineSplitter splitter;
  splitter.Push(log, [&c](std::string_view line) { c.Feed(line); });
  evicted = c.stats().evicted_queue_ids;
  EXPECT_EQ(c.stats().tracked_queue_ids, 10u);
  EXPECT_EQ(c.stats().max_tracked_queue_ids, 10u);
  EXPECT_EQ(evicted, 15u);
}

// Queue facts: what changed since the last take, and which handed-out ids were forgotten
// (removed or evicted); given back to a new correlator, they complete its events.
TEST(LogCorrelator, QueueFactsAreHandedOutOnceAndForgottenWhenRemoved) {
  std::vector<DeliveryEvent> events;
  LogCorrelator c(RuleSet::Default(), [&](const DeliveryEvent& e) { events.push_back(e); });
  c.set_track_queue_facts(true);
  auto take = [&c] {
    std::vector<QueueFacts> changed;
    std::vector<std::string> forgotten;
    c.TakeQueueFacts(&changed, &forgotten);
    std::string out;
    for (const QueueFacts& f : changed) {
      out += "+" + f.queue_id + "(" + f.sender + "," + f.message_id + "," +
             std::to_string(f.nrcpt) + "," + f.bounce_queue_id + ")";
    }
    for (const std::string& id : forgotten) out += "-" + id;
    return out;
  };
  const std::string p = "Nov 29 17:09:53 mta postfix/";
  c.Feed(p + "cleanup[1]: AAAA0000001: message-id=<a@x>");
  c.Feed(p + "qmgr[1]: AAAA0000001: from=<s@x.example>, size=10, nrcpt=1 (queue active)");
  c.Feed(p + "cleanup[1]: BBBB0000002: message-id=<b@x>");
  c.Feed(p + "qmgr[1]: BBBB0000002: removed");  // came and went: in neither list
  EXPECT_EQ(take(), "+AAAA0000001(s@x.example,<a@x>,1,)");
  EXPECT_EQ(take(), "");
  c.Feed(p + "bounce[2]: AAAA0000001: sender non-delivery notification: CCCC0000003");
  EXPECT_EQ(take(), "+AAAA0000001(s@x.example,<a@x>,1,CCCC0000003)");
  c.Feed(p + "qmgr[1]: AAAA0000001: removed");
  EXPECT_EQ(take(), "-AAAA0000001");

  // A new run given the facts of a message still queued completes its events, and reports the
  // restored id as forgotten once the message is removed.
  LogCorrelator next(RuleSet::Default(), [&](const DeliveryEvent& e) { events.push_back(e); });
  next.set_track_queue_facts(true);
  QueueFacts kept;
  kept.queue_id = "DDDD0000004";
  kept.sender = "news@x.example";
  kept.sender_known = true;
  kept.message_id = "<d@x>";
  kept.size = 99;
  kept.nrcpt = 3;
  next.RestoreQueueFacts(kept);
  events.clear();
  next.Feed(p +
            "smtp[3]: DDDD0000004: to=<u@y.example>, relay=mx.y.example[192.0.2.1]:25, delay=1, "
            "delays=0/0/0/1, dsn=2.0.0, status=sent (250 2.0.0 Ok)");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].sender, "news@x.example");
  EXPECT_TRUE(events[0].sender_known);
  EXPECT_EQ(events[0].message_id, "<d@x>");
  EXPECT_EQ(events[0].nrcpt, 3);
  EXPECT_EQ(events[0].size, 99);
  std::vector<QueueFacts> changed;
  std::vector<std::string> forgotten;
  next.Feed(p + "qmgr[1]: DDDD0000004: removed");
  next.TakeQueueFacts(&changed, &forgotten);
  EXPECT_TRUE(changed.empty());
  EXPECT_EQ(forgotten, std::vector<std::string>{"DDDD0000004"});

  // Evicted by the cap: forgotten too.
  LogCorrelator small(RuleSet::Default(), nullptr);
  small.set_track_queue_facts(true);
  small.set_max_tracked_queue_ids(1);
  small.Feed(p + "cleanup[1]: EEEE0000005: message-id=<e@x>");
  changed.clear();
  forgotten.clear();
  small.TakeQueueFacts(&changed, &forgotten);
  ASSERT_EQ(changed.size(), 1u);
  small.Feed(p + "cleanup[1]: FFFF0000006: message-id=<f@x>");
  changed.clear();
  small.TakeQueueFacts(&changed, &forgotten);
  EXPECT_EQ(forgotten, std::vector<std::string>{"EEEE0000005"});
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].queue_id, "FFFF0000006");

  // More facts restored than the table holds: the evicted ones are reported forgotten, so their
  // keeper drops them too.
  LogCorrelator full(RuleSet::Default(), nullptr);
  full.set_track_queue_facts(true);
  full.set_max_tracked_queue_ids(2);
  for (const char* id : {"AAAA0000011", "AAAA0000012", "AAAA0000013"}) {
    kept.queue_id = id;
    full.RestoreQueueFacts(kept);
  }
  changed.clear();
  forgotten.clear();
  full.TakeQueueFacts(&changed, &forgotten);
  EXPECT_TRUE(changed.empty());
  EXPECT_EQ(forgotten, std::vector<std::string>{"AAAA0000011"});
}

TEST(LogCorrelator, ExpiryWithoutKnownRecipientsIsReportedOnce) {
  LogRun run = Correlate(
      "Nov 29 17:11:12 mta postfix/qmgr[1]: 09DE9A74B41: from=<s@x.example>, status=expired, "
      "returned to sender\n");
  ASSERT_EQ(run.events.size(), 1u);
  EXPECT_EQ(run.events[0].log_status, "expired");
  EXPECT_EQ(run.events[0].recipient, "");
  EXPECT_EQ(run.events[0].sender, "s@x.example");
  EXPECT_EQ(run.events[0].result.category, Category::kExpired);
  EXPECT_EQ(run.stats.expired_without_recipients, 1u);
}

TEST(LogCorrelator, SentAndBouncedRecipientsLeaveThePendingList) {
  LogRun run = Correlate(
      "Nov 29 17:00:00 mta postfix/smtp[1]: 09DE9A74B41: to=<a@x.example>, relay=none, delay=1, "
      "delays=1/0/0/0, dsn=4.4.1, status=deferred (connect to x[1.2.3.4]:25: Connection timed "
      "out)\n"
      "Nov 29 17:00:00 mta postfix/smtp[1]: 09DE9A74B41: to=<b@x.example>, relay=none, delay=1, "
      "delays=1/0/0/0, dsn=4.4.1, status=deferred (connect to x[1.2.3.4]:25: Connection timed "
      "out)\n"
      "Nov 29 18:00:00 mta postfix/smtp[1]: 09DE9A74B41: to=<a@x.example>, relay=x[1.2.3.4]:25, "
      "delay=1, delays=1/0/0/0, dsn=2.0.0, status=sent (250 ok)\n"
      "Nov 29 19:00:00 mta postfix/qmgr[1]: 09DE9A74B41: from=<s@x.example>, status=expired, "
      "returned to sender\n");
  ASSERT_EQ(run.events.size(), 4u);
  EXPECT_EQ(run.events[3].log_status, "expired");
  EXPECT_EQ(run.events[3].recipient, "b@x.example");
  EXPECT_EQ(run.events[3].result.diagnostic, "connect to x[1.2.3.4]:25: Connection timed out");
}

TEST(LogCorrelator, ClassicYearAdvancesAtNewYear) {
  LogRun run = Correlate(
      "Dec 31 23:59:59 mta postfix/smtp[1]: 09DE9A74B41: to=<a@x.example>, relay=x[1.2.3.4]:25, "
      "delay=1, delays=1/0/0/0, dsn=2.0.0, status=sent (250 ok)\n"
      "Jan  1 00:00:01 mta postfix/smtp[1]: 19DE9A74B41: to=<a@x.example>, relay=x[1.2.3.4]:25, "
      "delay=1, delays=1/0/0/0, dsn=2.0.0, status=sent (250 ok)\n",
      4096, 2026);
  ASSERT_EQ(run.events.size(), 2u);
  EXPECT_EQ(run.events[0].time, "2026-12-31T23:59:59+00:00");
  EXPECT_EQ(run.events[1].time, "2027-01-01T00:00:01+00:00");
  EXPECT_EQ(run.events[1].unix_time - run.events[0].unix_time, 2);
}

// The time a log is read at gives the year of classic timestamps: December's lines read in
// January are last year's, and a line dated today or tomorrow (a clock running ahead) this
// year's. The zone is the one set with set_utc_offset.
TEST(LogCorrelator, ClassicYearIsInferredFromTheTimeTheLogIsRead) {
  auto first_time = [](int64_t reference, int utc_offset, const std::string& stamp) {
    std::vector<DeliveryEvent> events;
    LogCorrelator c(RuleSet::Default(), [&](const DeliveryEvent& e) { events.push_back(e); });
    c.set_utc_offset(utc_offset);
    c.set_reference_time(reference);
    c.Feed(stamp +
           " mta postfix/smtp[1]: 09DE9A74B41: to=<a@x.example>, relay=x[1.2.3.4]:25, "
           "delay=1, delays=1/0/0/0, dsn=2.0.0, status=sent (250 ok)");
    return events.empty() ? std::string() : events[0].time;
  };
  const int64_t jan2_2027 = 1798848000;  // 2027-01-02T00:00:00Z
  EXPECT_EQ(first_time(jan2_2027, 0, "Dec 31 23:00:00"), "2026-12-31T23:00:00+00:00");
  EXPECT_EQ(first_time(jan2_2027, 0, "Jan  1 23:00:00"), "2027-01-01T23:00:00+00:00");
  EXPECT_EQ(first_time(jan2_2027, 0, "Jan  3 08:00:00"), "2027-01-03T08:00:00+00:00");
  EXPECT_EQ(first_time(jan2_2027, 0, "Jan  4 08:00:00"), "2026-01-04T08:00:00+00:00");
  // 2027-01-02T00:00Z is still January 1st five hours west of UTC: "Dec 31" is a day back.
  EXPECT_EQ(first_time(jan2_2027, -5 * 3600, "Dec 31 21:30:00"), "2026-12-31T21:30:00-05:00");
  EXPECT_EQ(first_time(jan2_2027, -5 * 3600, "Jan  2 21:30:00"), "2027-01-02T21:30:00-05:00");
  EXPECT_EQ(first_time(jan2_2027, -5 * 3600, "Jan  3 21:30:00"), "2026-01-03T21:30:00-05:00");
  // Within a run the year still advances at Dec -> Jan.
  std::vector<DeliveryEvent> events;
  LogCorrelator c(RuleSet::Default(), [&](const DeliveryEvent& e) { events.push_back(e); });
  c.set_reference_time(jan2_2027);
  for (const char* stamp : {"Dec 30 10:00:00", "Jan  1 10:00:00"}) {
    c.Feed(std::string(stamp) +
           " mta postfix/smtp[1]: 09DE9A74B41: to=<a@x.example>, relay=x[1.2.3.4]:25, "
           "delay=1, delays=1/0/0/0, dsn=2.0.0, status=sent (250 ok)");
  }
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].time, "2026-12-30T10:00:00+00:00");
  EXPECT_EQ(events[1].time, "2027-01-01T10:00:00+00:00");
}

TEST(LogCorrelator, RecipientDomainIsLowerCasedLocalPartKept) {
  LogRun run = Correlate(
      "Nov 29 17:00:00 mta postfix/smtp[1]: 09DE9A74B41: to=<John.Doe@GMail.COM>, "
      "relay=gmail-smtp-in.l.google.com[1.2.3.4]:25, delay=1, delays=1/0/0/0, dsn=5.1.1, "
      "status=bounced (host gmail-smtp-in.l.google.com[1.2.3.4] said: 550 5.1.1 no such user (in "
      "reply to RCPT TO command))\n");
  ASSERT_EQ(run.events.size(), 1u);
  EXPECT_EQ(run.events[0].recipient, "John.Doe@gmail.com");
  EXPECT_EQ(run.events[0].result.recipient, "John.Doe@gmail.com");
  EXPECT_EQ(run.events[0].result.provider, "gmail");
  EXPECT_EQ(run.events[0].result.category, Category::kUserUnknown);
}

// A deferral and the later delivery of one recipient match even when the two lines spell it
// differently in ways the stored form removes (domain case, a run of spaces): the recipient is
// no longer pending, so the expiry reports nothing for it. Also with tabs (cleaned) and a
// 16-byte-plus address (the vector path of the clean-address check).
TEST(LogCorrelator, PendingRecipientMatchesItsStoredForm) {
  const std::string deferred =
      "dsn=4.4.1, status=deferred (connect to mx.example.org[192.0.2.9]:25: Connection timed "
      "out)\n";
  for (bool counts_only : {false, true}) {
    for (std::string_view pair :
         {"a@Example.ORG|a@example.org",
          "very.long.local.part+tag@Example.ORG|"
          "very.long.local.part+tag@example.org",
          "b  c@example.org|b c@example.org", "d\te@example.org|d e@example.org"}) {
      size_t bar = pair.find('|');
      std::string first(pair.substr(0, bar)), second(pair.substr(bar + 1));
      std::string log =
          "Nov 29 17:00:00 mta postfix/smtp[1]: 09DE9A74B41: to=<" + first +
          ">, relay=none, delay=1, delays=1/0/0/0, " + deferred +
          "Nov 29 17:00:01 mta postfix/smtp[1]: 09DE9A74B41: to=<" + second +
          ">, relay=mx.example.org[192.0.2.9]:25, delay=1, delays=1/0/0/0, dsn=2.0.0, "
          "status=sent (250 ok)\n"
          "Nov 29 17:00:02 mta postfix/qmgr[2]: 09DE9A74B41: from=<s@example.net>, "
          "status=expired, returned to sender\n";
      std::vector<std::string> statuses;
      LogCorrelator c(RuleSet::Default(),
                      [&statuses](const DeliveryEvent& e) { statuses.push_back(e.log_status); });
      c.set_counts_only(counts_only);
      LogLineSplitter splitter;
      auto feed = [&c](std::string_view line) { c.Feed(line); };
      splitter.Push(log, feed);
      splitter.Finish(feed);
      // deferred, sent, and the expiry of a queue id whose recipients are all done
      EXPECT_EQ(statuses, (std::vector<std::string>{"deferred", "sent", "expired"})) << pair;
      EXPECT_EQ(c.stats().expired_without_recipients, 1u) << pair;
    }
  }
}

TEST(LogLineSplitter, SplitsAcrossChunksAndKeepsCrlfLinesClean) {
  std::vector<std::string> lines;
  LogLineSplitter s;
  auto on = [&lines](std::string_view l) { lines.emplace_back(l); };
  s.Push("ab", on);
  s.Push("c\r\nde", on);
  s.Push("f\n\ng", on);
  s.Finish(on);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "abc");
  EXPECT_EQ(lines[1], "def");
  EXPECT_EQ(lines[2], "");
  EXPECT_EQ(lines[3], "g");
}

}  // namespace
}  // namespace bounced
