// log_scenarios_test.cc: every scenario captured from a real Postfix 3.7 (tests/data/postfix,
// copied from the project's Postfix test bed: fake remote MX answering with real provider texts)
// classifies as the scenario says when read from the log.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#include "classifier/result.h"
#include "tests/classifier/log_test_util.h"

namespace bounced {
namespace {

using testing_log::Correlate;
using testing_log::For;
using testing_log::LogRun;
using testing_log::ReadTestFile;

LogRun Scenario(const std::string& name) {
  return Correlate(ReadTestFile("postfix/" + name + ".log"));
}

// The one final event of a recipient (sent, bounced or expired).
const DeliveryEvent* Final(const LogRun& run, std::string_view rcpt) {
  const DeliveryEvent* last = nullptr;
  for (const auto* e : For(run, rcpt)) {
    if (e->log_status != "deferred") last = e;
  }
  return last;
}

struct Expectation {
  const char* scenario;
  const char* recipient;
  const char* log_status;
  Category category;
  const char* provider;
  const char* provider_code;  // nullptr: not checked
  const char* stage;          // nullptr: not checked
};

class CapturedScenario : public ::testing::TestWithParam<Expectation> {};

TEST_P(CapturedScenario, FinalEventClassifiesAsTheScenarioSays) {
  const Expectation& x = GetParam();
  LogRun run = Scenario(x.scenario);
  const DeliveryEvent* e = Final(run, x.recipient);
  ASSERT_NE(e, nullptr) << "no final event for " << x.recipient;
  EXPECT_EQ(e->log_status, x.log_status);
  EXPECT_EQ(ToString(e->result.category), ToString(x.category)) << e->result.diagnostic;
  EXPECT_EQ(e->result.provider, x.provider);
  if (x.provider_code != nullptr) {
    EXPECT_EQ(e->result.provider_code, x.provider_code);
  }
  if (x.stage != nullptr) {
    EXPECT_EQ(e->result.stage, x.stage);
  }
  EXPECT_EQ(e->sender, "sender@testbed.local");
  EXPECT_TRUE(e->sender_known);
  EXPECT_FALSE(e->message_id.empty());
  EXPECT_FALSE(e->result.diagnostic.empty());
  EXPECT_EQ(run.stats.skipped_garbage, 1u);  // the fixture's "# scenario" comment line
  EXPECT_EQ(run.stats.skipped_truncated, 0u);
  EXPECT_EQ(run.stats.tracked_queue_ids, 0u) << "every queue id was removed";
}

INSTANTIATE_TEST_SUITE_P(
    Postfix, CapturedScenario,
    ::testing::Values(
        Expectation{"ok", "ok@gmail.com", "sent", Category::kDelivered, "gmail", "", ""},
        Expectation{"gmail-unknown", "gmail-unknown@gmail.com", "bounced", Category::kUserUnknown,
                    "gmail", "NoSuchUser", "rcpt"},
        Expectation{"gmail-spam", "gmail-spam@gmail.com", "bounced", Category::kSpamContent,
                    "gmail", nullptr, "eom"},
        Expectation{"gmail-unauth", "gmail-unauth@gmail.com", "bounced", Category::kAuthFailure,
                    "gmail", nullptr, "eom"},
        Expectation{"gmail-full", "gmail-full@gmail.com", "expired", Category::kMailboxFull,
                    "gmail", "OverQuotaTemp", "rcpt"},
        Expectation{"gmail-rate", "gmail-rate@gmail.com", "expired", Category::kExpired, "gmail",
                    nullptr, "eom"},
        Expectation{"cs01", "cs01@icloud.com", "bounced", Category::kPolicyRejection, "icloud",
                    "CS01", "eom"},
        Expectation{"cs01-rcpt", "cs01-rcpt@icloud.com", "bounced", Category::kPolicyRejection,
                    "icloud", "CS01", "rcpt"},
        Expectation{"cs02", "cs02@me.com", "bounced", Category::kPolicyRejection, "icloud", "CS02",
                    "eom"},
        Expectation{"hm08", "hm08@mac.com", "bounced", Category::kAuthFailure, "icloud", "HM08",
                    "eom"},
        Expectation{"icloud-unknown", "icloud-unknown@icloud.com", "bounced",
                    Category::kUserUnknown, "icloud", nullptr, "rcpt"},
        Expectation{"icloud-full", "icloud-full@icloud.com", "bounced", Category::kMailboxFull,
                    "icloud", nullptr, "rcpt"},
        Expectation{"yahoo-policy", "yahoo-policy@yahoo.com", "bounced", Category::kPolicyRejection,
                    "yahoo", nullptr, "eom"},
        Expectation{"yahoo-unknown", "yahoo-unknown@yahoo.com", "bounced", Category::kUserUnknown,
                    "yahoo", nullptr, "rcpt"},
        Expectation{"tss04", "tss04@yahoo.com", "expired", Category::kExpired, "yahoo", "TSS04",
                    "rcpt"},
        Expectation{"ms-spam", "ms-spam@outlook.com", "bounced", Category::kSpamContent,
                    "microsoft", nullptr, "eom"},
        Expectation{"ms-notfound", "ms-notfound@outlook.com", "bounced", Category::kUserUnknown,
                    "microsoft", nullptr, "rcpt"},
        Expectation{"ms-unknown", "ms-unknown@hotmail.com", "bounced", Category::kUserUnknown,
                    "microsoft", nullptr, "rcpt"},
        Expectation{"ms-block", "ms-block@outlook.com", "bounced", Category::kReputationBlock,
                    "microsoft", "S3150", "rcpt"},
        Expectation{"full", "full@example.org", "bounced", Category::kMailboxFull, "", nullptr,
                    "rcpt"},
        Expectation{"unknown", "unknown@example.org", "bounced", Category::kUserUnknown, "",
                    nullptr, "rcpt"},
        Expectation{"grey", "grey@example.org", "sent", Category::kDelivered, "", "", ""},
        Expectation{"greet421", "someone@greet421.example", "expired", Category::kExpired, "yahoo",
                    "TSS04", "connect"},
        Expectation{"down", "someone@down.example", "expired", Category::kExpired, "", "",
                    "connect"}),
    [](const ::testing::TestParamInfo<Expectation>& info) {
      std::string name = info.param.scenario;
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

TEST(LogScenarios, Cs01IsPolicyNotHardAndDoesNotSuppress) {
  LogRun run = Scenario("cs01");
  const DeliveryEvent* e = Final(run, "cs01@icloud.com");
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->result.hard_bounce());
  EXPECT_EQ(e->result.fault(), Fault::kSender);
  EXPECT_EQ(e->result.action(), Action::kNone);
  EXPECT_EQ(e->result.status, "5.7.1");
  EXPECT_EQ(e->result.reply_code, "554");
  EXPECT_EQ(e->queue_id, "8D0E3A74992");
  EXPECT_EQ(e->message_id, "<20261129170953.029018@vm>");
  EXPECT_EQ(e->size, 516);
  EXPECT_EQ(e->nrcpt, 1);
  EXPECT_EQ(e->relay, "127.0.0.1[127.0.0.1]:2526");
  EXPECT_EQ(e->result.remote_mta, "127.0.0.1");
  EXPECT_EQ(e->time, "2026-11-29T17:09:53+00:00");
  EXPECT_EQ(e->unix_time, 1795972193);
  EXPECT_EQ(e->result.diagnostic,
            "554 5.7.1 [CS01] Message rejected due to local policy. Please visit "
            "https://support.apple.com/en-us/HT204137");
}

TEST(LogScenarios, IcloudUserUnknownIsHardAndSuppresses) {
  LogRun run = Scenario("icloud-unknown");
  const DeliveryEvent* e = Final(run, "icloud-unknown@icloud.com");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->result.hard_bounce());
  EXPECT_EQ(e->result.action(), Action::kSuppress);
}

TEST(LogScenarios, DeferralsComeBeforeTheExpiryWithTheirOwnCategory) {
  LogRun run = Scenario("tss04");
  auto events = For(run, "tss04@yahoo.com");
  ASSERT_EQ(events.size(), 6u);  // five deferrals, one expiry
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(events[i]->log_status, "deferred");
    EXPECT_EQ(events[i]->result.category, Category::kRateLimited);
    EXPECT_EQ(events[i]->result.provider_code, "TSS04");
    EXPECT_EQ(events[i]->dsn, "4.7.0");
  }
  EXPECT_EQ(events[5]->log_status, "expired");
  EXPECT_EQ(events[5]->dsn, "4.7.0");
  EXPECT_EQ(events[5]->result.status, "4.7.0");
  EXPECT_EQ(events[5]->result.dsn_action, "expired");
  EXPECT_NE(events[5]->result.diagnostic.find("[TSS04]"), std::string::npos);
}

TEST(LogScenarios, ConnectionRefusedIsNetworkErrorThenExpired) {
  LogRun run = Scenario("down");
  auto events = For(run, "someone@down.example");
  ASSERT_GE(events.size(), 2u);
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    EXPECT_EQ(events[i]->log_status, "deferred");
    EXPECT_EQ(events[i]->result.category, Category::kNetworkError) << events[i]->result.diagnostic;
    EXPECT_EQ(events[i]->relay, "none");
    EXPECT_EQ(events[i]->result.remote_mta, "127.0.0.1");
  }
  EXPECT_EQ(events.back()->log_status, "expired");
  EXPECT_EQ(events.back()->result.category, Category::kExpired);
  EXPECT_EQ(events.back()->result.diagnostic,
            "connect to 127.0.0.1[127.0.0.1]:2539: Connection refused");
}

TEST(LogScenarios, SuspendedDeliveryIsClassifiedByItsCause) {
  LogRun run = Scenario("burst-suspended");
  size_t suspended_down = 0, suspended_greet = 0;
  for (const auto& e : run.events) {
    if (e.log_status != "deferred" || e.program != "postfix-tb/error") continue;
    if (e.recipient == "burst@down.example") {
      ++suspended_down;
      EXPECT_EQ(e.result.category, Category::kNetworkError);
    } else if (e.recipient == "burst@greet421.example") {
      ++suspended_greet;
      EXPECT_EQ(e.result.category, Category::kRateLimited);
      EXPECT_EQ(e.result.provider_code, "TSS04");
      EXPECT_EQ(e.result.stage, "connect");
    }
  }
  EXPECT_GT(suspended_down, 0u);
  EXPECT_GT(suspended_greet, 0u);
  // In the whole run the 16 burst messages expired, each reported with its recipient.
  LogRun whole = Correlate(ReadTestFile("postfix/postfix.scenarios.log"));
  size_t expired = 0;
  for (const auto& e : whole.events) {
    if (e.log_status == "expired" && e.recipient.rfind("burst@", 0) == 0) {
      ++expired;
      EXPECT_EQ(e.result.category, Category::kExpired);
    }
  }
  EXPECT_EQ(expired, 16u);
  EXPECT_EQ(whole.stats.expired_without_recipients, 0u);
}

TEST(LogScenarios, MultiRecipientMessageGivesOneEventPerRecipient) {
  LogRun run = Scenario("multi");
  EXPECT_EQ(Final(run, "ok-multi@gmail.com")->result.category, Category::kDelivered);
  EXPECT_EQ(Final(run, "gmail-unknown@gmail.com")->result.category, Category::kUserUnknown);
  EXPECT_EQ(Final(run, "unknown@example.org")->result.category, Category::kUserUnknown);
  EXPECT_EQ(Final(run, "full@yahoo.com")->result.category, Category::kMailboxFull);
  for (const char* r :
       {"ok-multi@gmail.com", "gmail-unknown@gmail.com", "unknown@example.org", "full@yahoo.com"}) {
    EXPECT_EQ(Final(run, r)->sender, "multi@testbed.local");
    EXPECT_EQ(Final(run, r)->nrcpt, 4);
  }
}

TEST(LogScenarios, DataStageRejectHitsEveryRecipientOfTheTransaction) {
  LogRun run = Scenario("dsn-ext");
  const DeliveryEvent* cs01 = Final(run, "cs01@icloud.com");
  const DeliveryEvent* cc = Final(run, "ok-cc@gmail.com");
  ASSERT_NE(cs01, nullptr);
  ASSERT_NE(cc, nullptr);
  EXPECT_EQ(cs01->result.category, Category::kPolicyRejection);
  EXPECT_EQ(cs01->result.provider_code, "CS01");
  EXPECT_EQ(cc->log_status, "bounced");
  EXPECT_EQ(cc->result.category, Category::kPolicyRejection);
  EXPECT_FALSE(cc->result.hard_bounce());
  EXPECT_EQ(cs01->sender, "dsn-sender@testbed.local");
}

TEST(LogScenarios, NeverQueuedRejectsGiveNoEvents) {
  for (const char* name : {"milter-blocked", "suppressed", "suppressed2"}) {
    LogRun run = Scenario(name);
    EXPECT_TRUE(run.events.empty()) << name;
  }
}

TEST(LogScenarios, DsnSuccessAndNeverAreDeliveriesAndBounces) {
  LogRun success = Scenario("dsn-success");
  ASSERT_NE(Final(success, "ok-notify@gmail.com"), nullptr);
  EXPECT_EQ(Final(success, "ok-notify@gmail.com")->result.category, Category::kDelivered);
  LogRun never = Scenario("dsn-never");
  ASSERT_NE(Final(never, "gmail-unknown@gmail.com"), nullptr);
  EXPECT_EQ(Final(never, "gmail-unknown@gmail.com")->result.category, Category::kUserUnknown);
}

// The whole captured run: every delivery status line becomes exactly one event, and every
// expiry one event per pending recipient, with nothing left in memory at the end.
TEST(LogScenarios, WholeCapturedLogAccountsForEveryStatusLine) {
  std::string log = ReadTestFile("postfix/postfix.scenarios.log");
  size_t status_lines = 0, expiries = 0;
  for (size_t pos = 0; (pos = log.find(", status=", pos)) != std::string::npos; ++pos) {
    if (log.compare(pos, 17, ", status=expired,") == 0) {
      ++expiries;
    } else {
      ++status_lines;
    }
  }
  LogRun run = Correlate(log, 1 << 20);
  size_t expired_events = 0;
  for (const auto& e : run.events) expired_events += e.log_status == "expired";
  EXPECT_EQ(run.events.size() - expired_events, status_lines);
  EXPECT_EQ(expired_events, expiries);  // one recipient each in this run
  EXPECT_EQ(run.stats.skipped_garbage, 0u);
  EXPECT_EQ(run.stats.skipped_truncated, 0u);
  EXPECT_EQ(run.stats.postfix_lines, run.stats.lines);
  EXPECT_LE(run.stats.tracked_queue_ids, 2u);  // the log ends before two DSNs were removed
}

// The bounce notice links a message to the DSN Postfix made for it; later events of the same
// queue id carry it.
TEST(LogScenarios, BounceNoticeLinksTheDsnQueueId) {
  std::string log =
      "Nov 29 17:09:57 mta postfix/qmgr[1]: 19BB0A74A1F: from=<a@b.example>, size=9, nrcpt=2 "
      "(queue active)\n"
      "Nov 29 17:09:57 mta postfix/smtp[2]: 19BB0A74A1F: to=<x@gmail.com>, relay=gmail-smtp-in.l."
      "google.com[1.2.3.4]:25, delay=1, delays=1/0/0/0, dsn=5.1.1, status=bounced (host x[1.2.3.4] "
      "said: 550 5.1.1 no such user (in reply to RCPT TO command))\n"
      "Nov 29 17:09:57 mta postfix/bounce[3]: 19BB0A74A1F: sender non-delivery notification: "
      "28E74A74B64\n"
      "Nov 29 17:09:58 mta postfix/smtp[2]: 19BB0A74A1F: to=<y@gmail.com>, relay=gmail-smtp-in.l."
      "google.com[1.2.3.4]:25, delay=1, delays=1/0/0/0, dsn=4.2.2, status=deferred (host "
      "x[1.2.3.4] "
      "said: 452 4.2.2 over quota (in reply to RCPT TO command))\n";
  LogRun run = Correlate(log);
  ASSERT_EQ(run.events.size(), 2u);
  EXPECT_EQ(run.events[0].bounce_queue_id, "");
  EXPECT_EQ(run.events[1].bounce_queue_id, "28E74A74B64");
  EXPECT_EQ(run.events[0].result.provider, "gmail");
}

}  // namespace
}  // namespace bounced

namespace bounced {
namespace {

// tests/data/sample/mail.log (scripts/demo.sh, bounced --sample): a genlog.py run followed by the
// captured scenarios. Every line is understood and every queue id that was removed is gone.
TEST(LogSample, SampleLogParsesCleanly) {
  LogRun run = Correlate(ReadTestFile("sample/mail.log"));
  EXPECT_EQ(run.stats.skipped_garbage, 0u);
  EXPECT_EQ(run.stats.skipped_truncated, 0u);
  EXPECT_GT(run.events.size(), 100u);
  size_t cs01 = 0;
  for (const auto& e : run.events) cs01 += e.result.provider_code == "CS01";
  EXPECT_GE(cs01, 3u);
}

// --summary mode: the same categories, only fewer fields filled.
TEST(LogSample, CountsOnlyKeepsTheClassification) {
  std::string log = ReadTestFile("postfix/postfix.scenarios.log");
  LogRun full = Correlate(log);
  std::vector<std::pair<std::string, Category>> counted;
  LogCorrelator c(RuleSet::Default(), [&counted](const DeliveryEvent& e) {
    counted.emplace_back(e.log_status, e.result.category);
  });
  c.set_counts_only(true);
  LogLineSplitter s;
  s.Push(log, [&c](std::string_view line) { c.Feed(line); });
  s.Finish([&c](std::string_view line) { c.Feed(line); });
  ASSERT_EQ(counted.size(), full.events.size());
  for (size_t i = 0; i < counted.size(); ++i) {
    EXPECT_EQ(counted[i].first, full.events[i].log_status);
    EXPECT_EQ(counted[i].second, full.events[i].result.category);
  }
}

// counts(): the events of a full run, counted by (log status, provider, category), also when
// the counts-only correlator has no sink at all (what `parse-log --summary` does).
TEST(LogSample, CountsMatchTheEventsOfAFullRun) {
  std::string log = ReadTestFile("postfix/postfix.scenarios.log") + ReadTestFile("sample/mail.log");
  LogRun full = Correlate(log);
  std::map<std::tuple<std::string, std::string, Category>, uint64_t> want, got;
  for (const DeliveryEvent& e : full.events) {
    ++want[{e.log_status, e.result.provider, e.result.category}];
  }
  LogCorrelator c(RuleSet::Default(), LogCorrelator::Sink{});
  c.set_counts_only(true);
  LogLineSplitter s;
  s.Push(log, [&c](std::string_view line) { c.Feed(line); });
  s.Finish([&c](std::string_view line) { c.Feed(line); });
  uint64_t total = 0;
  for (const EventCount& e : c.counts()) {
    EXPECT_GT(e.count, 0u);
    got[{std::string(e.log_status), std::string(e.provider), e.category}] += e.count;
    total += e.count;
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(total, c.stats().events);
  EXPECT_EQ(total, full.events.size());
}

}  // namespace
}  // namespace bounced
