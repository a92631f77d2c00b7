// report_alert_test.cc: the sender-side rejection spike detector, its [alerts] configuration,
// the alert command runner and the daemon-side AlertMonitor (real /bin/sh processes).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "daemon/alert_detector.h"
#include "daemon/alert_monitor.h"
#include "tests/read_file.h"

namespace bounced {
namespace {

constexpr int64_t kT0 = 1795000000;  // 2026-11-18, any fixed time will do

RejectionEvent Cs01(int64_t t, std::string domain = "icloud.com") {
  RejectionEvent e;
  e.unix_time = t;
  e.provider = "icloud";
  e.provider_code = "CS01";
  e.status = "5.7.1";
  e.category = "policy_rejection";
  e.recipient_domain = std::move(domain);
  e.diagnostic = "554 5.7.1 [CS01] Message rejected due to local policy";
  return e;
}

TEST(SpikeDetectorTest, SingleBounceIsNotASpike) {
  SpikeDetector d(AlertThresholds{});
  EXPECT_FALSE(d.Observe(Cs01(kT0)));
  EXPECT_TRUE(d.Open().empty());
}

TEST(SpikeDetectorTest, BurstWithoutHistoryOpensOneIncidentAtMinimumVolume) {
  SpikeDetector d(AlertThresholds{});
  int opened = 0;
  for (int i = 0; i < 30; ++i) {
    auto inc = d.Observe(Cs01(kT0 + i * 20, i % 2 ? "me.com" : "icloud.com"));
    if (inc) {
      ++opened;
      EXPECT_EQ(i, 9);  // the tenth event reaches min_count
      EXPECT_EQ(inc->provider, "icloud");
      EXPECT_EQ(inc->code, "CS01");
      EXPECT_EQ(inc->count_at_open, 10);
      EXPECT_NE(inc->sample.find("CS01"), std::string::npos);
    }
  }
  EXPECT_EQ(opened, 1);
  auto open = d.Open();
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].total_events, 30);
  EXPECT_EQ(open[0].domains.at("me.com"), 15);
  EXPECT_EQ(open[0].domains.at("icloud.com"), 15);
}

TEST(SpikeDetectorTest, SteadyRejectionsBecomeTheBaselineAndOnlyAJumpIsASpike) {
  SpikeDetector d(AlertThresholds{});
  // Seven days of 20 CS01 an hour. With no history the first hour is news (20 >= min_count);
  // after that the rate is the baseline and that first incident ends.
  int64_t t = kT0;
  int opened_after_first_day = 0;
  for (int h = 0; h < 7 * 24; ++h) {
    for (int i = 0; i < 20; ++i) {
      if (d.Observe(Cs01(t + h * 3600 + i * 170)) && h >= 24) ++opened_after_first_day;
    }
  }
  EXPECT_EQ(opened_after_first_day, 0);
  EXPECT_TRUE(d.Open().empty());
  t += 7 * 24 * 3600;
  // 25 in the next hour: above min_count, but not 3x normal.
  for (int i = 0; i < 25; ++i) EXPECT_FALSE(d.Observe(Cs01(t + i * 140)));
  // The hour after: 70, a real jump (threshold 3 x ~20).
  t += 3600;
  std::optional<Incident> inc;
  for (int i = 0; i < 70 && !inc; ++i) inc = d.Observe(Cs01(t + i * 50));
  ASSERT_TRUE(inc);
  EXPECT_NEAR(inc->expected_per_window, 20.0, 1.5);
  EXPECT_GE(inc->count_at_open, 3 * 19);
}

TEST(SpikeDetectorTest, IncidentEndsWhenTheBurstStopsAndANewOneCanOpen) {
  SpikeDetector d(AlertThresholds{});
  for (int i = 0; i < 12; ++i) d.Observe(Cs01(kT0 + i * 10));
  ASSERT_EQ(d.Open().size(), 1u);
  EXPECT_TRUE(d.Advance(kT0 + 600).empty());  // still inside the window
  auto closed = d.Advance(kT0 + 2 * 3600);
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].id, 1u);
  EXPECT_FALSE(closed[0].open());
  EXPECT_TRUE(d.Open().empty());
  ASSERT_EQ(d.Closed().size(), 1u);
  // A second, bigger burst the next day is a new incident (baseline: ~12 a day, ~0.5 an hour).
  std::optional<Incident> second;
  for (int i = 0; i < 40 && !second; ++i) second = d.Observe(Cs01(kT0 + 86400 + i * 10));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->id, 2u);
}

TEST(SpikeDetectorTest, ProvidersAndCodesAreCountedSeparately) {
  AlertThresholds t;
  t.min_count = 5;
  SpikeDetector d(t);
  for (int i = 0; i < 4; ++i) {
    EXPECT_FALSE(d.Observe(Cs01(kT0 + i)));
    RejectionEvent hm08 = Cs01(kT0 + i);
    hm08.provider_code = "HM08";
    EXPECT_FALSE(d.Observe(hm08));
    RejectionEvent gmail;
    gmail.unix_time = kT0 + i;
    gmail.provider = "gmail";
    gmail.status = "5.7.26";
    gmail.category = "auth_failure";
    EXPECT_FALSE(d.Observe(gmail));
  }
  auto inc = d.Observe(Cs01(kT0 + 10));
  ASSERT_TRUE(inc);
  EXPECT_EQ(inc->code, "CS01");
}

TEST(SpikeDetectorTest, KeyFallsBackToStatusThenCategoryAndUnknownProviderIsOther) {
  AlertThresholds t;
  t.min_count = 2;
  SpikeDetector d(t);
  RejectionEvent e;
  e.unix_time = kT0;
  e.category = "reputation_block";
  d.Observe(e);
  auto inc = d.Observe(e);
  ASSERT_TRUE(inc);
  EXPECT_EQ(inc->provider, "other");
  EXPECT_EQ(inc->code, "reputation_block");
}

TEST(SpikeDetectorTest, EventsOlderThanTheBaselineAreIgnored) {
  AlertThresholds t;
  t.min_count = 3;
  SpikeDetector d(t);
  d.Observe(Cs01(kT0 + 30 * 86400));
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(d.Observe(Cs01(kT0 + i)));
}

TEST(SpikeDetectorTest, IncidentJsonHasStableFields) {
  SpikeDetector d(AlertThresholds{});
  std::optional<Incident> inc;
  for (int i = 0; i < 10; ++i) inc = d.Observe(Cs01(kT0 + i));
  ASSERT_TRUE(inc);
  auto j = ToJson(*inc);
  for (const char* k : {"id", "provider", "code", "category", "opened", "last_event", "closed",
                        "open", "window_seconds", "count_at_open", "peak_count", "total_events",
                        "expected_per_window", "threshold", "sample", "domains"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_TRUE(j["closed"].is_null());
  EXPECT_EQ(j["opened"], FormatUtc(kT0 + 9));
  EXPECT_NE(DescribeIncident(*inc).find("icloud CS01"), std::string::npos);
}

// An incident's details count recipient domains: the log's spelling of one domain (Postfix logs
// the recipient as the client gave it) must count as that one domain.
TEST(SpikeDetectorTest, RecipientDomainsAreCountedLowerCased) {
  Result r;
  r.recipient = "User@Example.COM";
  r.category = Category::kPolicyRejection;
  EXPECT_EQ(ToRejectionEvent(r, 1000).recipient_domain, "example.com");
  r.recipient = "<user@Mail.Example.org.>";
  EXPECT_EQ(ToRejectionEvent(r, 1000).recipient_domain, "mail.example.org");
  r.recipient = "postmaster";
  EXPECT_EQ(ToRejectionEvent(r, 1000).recipient_domain, "");
}

// And our sending domains, which tell which of our brands a spike is about: "<>" for the null
// (or an unknown) sender, lower-cased, a sender without '@' as itself.
TEST(SpikeDetectorTest, SenderDomainsAreCountedWithTheirBrand) {
  Result r;
  r.recipient = "user@icloud.com";
  r.category = Category::kPolicyRejection;
  EXPECT_EQ(ToRejectionEvent(r, 1000, "Offers@Deals.Example").sender_domain, "deals.example");
  EXPECT_EQ(ToRejectionEvent(r, 1000, "").sender_domain, "<>");
  EXPECT_EQ(ToRejectionEvent(r, 1000, "root").sender_domain, "root");

  SpikeDetector d(AlertThresholds{});
  std::optional<Incident> inc;
  for (int i = 0; i < 10 && !inc; ++i) {
    RejectionEvent e = Cs01(kT0 + i);
    e.sender_domain = i < 7 ? "deals.example" : "shop.example";
    inc = d.Observe(e);
  }
  ASSERT_TRUE(inc);
  EXPECT_EQ(inc->sender_domains,
            (std::map<std::string, int64_t>{{"deals.example", 7}, {"shop.example", 3}}));
  EXPECT_EQ(ToJson(*inc)["sender_domains"]["deals.example"], 7);
  // While it is open, each event adds; past kMaxIncidentSenderDomains, as "other". An event
  // without a sender domain (a RejectionEvent built without one) adds nothing.
  for (size_t i = 0; i < kMaxIncidentSenderDomains + 5; ++i) {
    RejectionEvent e = Cs01(kT0 + 20);
    e.sender_domain = "brand" + std::to_string(i) + ".example";
    d.Observe(e);
  }
  RejectionEvent unknown = Cs01(kT0 + 21);
  d.Observe(unknown);
  const std::vector<Incident> now_open = d.Open();
  ASSERT_EQ(now_open.size(), 1u);
  const Incident& open = now_open[0];
  EXPECT_EQ(open.sender_domains.size(), kMaxIncidentSenderDomains + 1) << "the cap, and other";
  EXPECT_EQ(open.sender_domains.at("other"), 7);
  EXPECT_EQ(open.total_events, 10 + static_cast<int64_t>(kMaxIncidentSenderDomains) + 5 + 1);
}

TEST(AlertConfigTest, DefaultsWhenTheSectionIsMissing) {
  auto c = AlertConfigFromToml(nullptr, "bounced.toml");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->enabled);
  EXPECT_EQ(c->thresholds.window_seconds, 3600);
  EXPECT_EQ(c->thresholds.min_count, 10);
  EXPECT_EQ(c->thresholds.hard_bounce_min_count, 25);
}

TEST(AlertConfigTest, ReadsEveryKey) {
  auto doc = toml::parse(R"(
[alerts]
enabled = false
window_minutes = 30
baseline_days = 3
factor = 5
min_count = 20
hard_bounce_min_count = 0
command = "logger -t bounced-alert"
command_timeout_seconds = 5
)");
  auto c = AlertConfigFromToml(doc["alerts"].as_table(), "x.toml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_FALSE(c->enabled);
  EXPECT_EQ(c->thresholds.window_seconds, 1800);
  EXPECT_EQ(c->thresholds.baseline_seconds, 3 * 86400);
  EXPECT_DOUBLE_EQ(c->thresholds.factor, 5.0);
  EXPECT_EQ(c->thresholds.min_count, 20);
  EXPECT_EQ(c->thresholds.hard_bounce_min_count, 0);
  EXPECT_EQ(c->command, "logger -t bounced-alert");
  EXPECT_EQ(c->command_timeout_seconds, 5);
}

TEST(AlertConfigTest, RefusesUnknownKeysAndBadValuesNamingThem) {
  auto unknown = toml::parse("[alerts]\nthreshold = 3\n");
  auto c = AlertConfigFromToml(unknown["alerts"].as_table(), "x.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(), "x.toml:2: alerts.threshold: unknown key");
  auto bad = toml::parse("[alerts]\nfactor = 0.5\n");
  c = AlertConfigFromToml(bad["alerts"].as_table(), "x.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("factor"), std::string::npos);
  auto neg = toml::parse("[alerts]\nmin_count = -1\n");
  EXPECT_FALSE(AlertConfigFromToml(neg["alerts"].as_table(), "x.toml").ok());
  auto hard = toml::parse("[alerts]\nhard_bounce_min_count = -1\n");
  c = AlertConfigFromToml(hard["alerts"].as_table(), "x.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(),
            "x.toml:2: alerts.hard_bounce_min_count: must be an integer from 0 to 1000000");
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/bounced-alert-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

using testing::ReadFile;

TEST(RunAlertCommandTest, PassesTheDetailsOnStdin) {
  TempDir dir;
  std::string out = dir.path() + "/got.json";
  Status s = RunAlertCommand("cat > " + out, "{\"x\":1}\n", 10);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ReadFile(out), "{\"x\":1}\n");
}

TEST(RunAlertCommandTest, ReportsFailureAndSurvivesACommandThatIgnoresStdin) {
  Status s = RunAlertCommand("exit 3", std::string(1 << 20, 'x'), 10);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("status 3"), std::string::npos);
}

TEST(RunAlertCommandTest, KillsACommandThatHangs) {
  Status s = RunAlertCommand("sleep 30", "{}", 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("killed after 1 s"), std::string::npos);
}

Result Cs01Result() {
  Result r;
  r.recipient = "someone@icloud.com";
  r.category = Category::kPolicyRejection;
  r.status = "5.7.1";
  r.reply_code = "554";
  r.provider = "icloud";
  r.provider_code = "CS01";
  r.diagnostic = "554 5.7.1 [CS01] Message rejected due to local policy";
  return r;
}

TEST(AlertMonitorTest, LogsOnceRunsTheCommandAndShowsTheIncidentInStats) {
  TempDir dir;
  std::string out = dir.path() + "/incident.json";
  AlertConfig cfg;
  cfg.command = "cat > " + out;
  {
    AlertMonitor m(cfg);
    Result hard;
    hard.recipient = "nobody@example.com";
    hard.category = Category::kUserUnknown;
    // Recipient faults count only as hard bounces (bounced): not deferred, not unknown.
    for (int i = 0; i < 50; ++i) m.OnEvent(hard, kT0 + i, "", "deferred");
    for (int i = 0; i < 50; ++i) m.OnEvent(hard, kT0 + i);
    EXPECT_EQ(m.incidents_opened(), 0u);
    for (int i = 0; i < 25; ++i) m.OnEvent(Cs01Result(), kT0 + i * 5);
    EXPECT_EQ(m.incidents_opened(), 1u);
    auto j = m.ToJson();
    ASSERT_EQ(j["open"].size(), 1u);
    EXPECT_EQ(j["open"][0]["code"], "CS01");
    EXPECT_EQ(j["open"][0]["domains"]["icloud.com"], 25);
    m.Tick(kT0 + 3 * 3600);
    j = m.ToJson();
    EXPECT_EQ(j["open"].size(), 0u);
    EXPECT_EQ(j["recent"].size(), 1u);
  }  // the destructor waits for the command
  auto got = nlohmann::json::parse(ReadFile(out));
  EXPECT_EQ(got["provider"], "icloud");
  EXPECT_EQ(got["count_at_open"], 10);
}

// One domain's hard bounces jump: an incident of their own, keyed by the recipient domain, with
// the command that shows what to lift if the domain failed rather than its addresses.
TEST(AlertMonitorTest, HardBouncesAtOneDomainAreAnIncidentWithTheirRemedy) {
  AlertMonitor m(AlertConfig{});
  auto unknown = [](const std::string& rcpt) {
    Result r;
    r.recipient = rcpt;
    r.category = Category::kUserUnknown;
    r.provider = "microsoft";
    r.diagnostic =
        "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup";
    return r;
  };
  // A few at many domains are normal; 24 at one are under the default of 25.
  for (int i = 0; i < 40; ++i) {
    m.OnEvent(unknown("u@d" + std::to_string(i) + ".example"), kT0 + i, "", "bounced");
  }
  for (int i = 0; i < 24; ++i) {
    m.OnEvent(unknown("u" + std::to_string(i) + "@Tenant.Example"), kT0 + 60 + i, "", "bounced");
  }
  EXPECT_EQ(m.incidents_opened(), 0u);
  m.OnEvent(unknown("u24@tenant.example"), kT0 + 90, "news@shop.example", "bounced");
  EXPECT_EQ(m.incidents_opened(), 1u);
  nlohmann::json j = m.ToJson();
  EXPECT_EQ(j["hard_bounce_min_count"], 25);
  ASSERT_EQ(j["open"].size(), 1u) << j.dump();
  const nlohmann::json& i = j["open"][0];
  EXPECT_EQ(i["kind"], "hard_bounces");
  EXPECT_EQ(i["provider"], "tenant.example");
  EXPECT_EQ(i["code"], "hard bounces");
  EXPECT_EQ(i["category"], "user_unknown");
  EXPECT_EQ(i["count_at_open"], 25);
  EXPECT_EQ(i["domains"]["tenant.example"], 25);
  EXPECT_EQ(i["remedy"], "bouncectl unsuppress --domain tenant.example --since " +
                             FormatUtc(kT0 + 90 - 3600) + " --dry-run");
  Incident described;
  described.kind = kIncidentHardBounces;
  described.provider = "tenant.example";
  described.category = "user_unknown";
  described.window_seconds = 3600;
  described.opened = kT0;
  const std::string line = DescribeIncident(described);
  EXPECT_EQ(line.rfind("hard-bounce spike at tenant.example: ", 0), 0u) << line;
  EXPECT_NE(line.find("bouncectl unsuppress --domain tenant.example"), std::string::npos) << line;

  // Off: hard_bounce_min_count = 0. Sender-side rejections are still watched.
  AlertConfig off;
  off.thresholds.hard_bounce_min_count = 0;
  AlertMonitor quiet(off);
  for (int i = 0; i < 100; ++i) {
    quiet.OnEvent(unknown("u" + std::to_string(i) + "@tenant.example"), kT0 + i, "", "bounced");
  }
  EXPECT_EQ(quiet.incidents_opened(), 0u);
  for (int i = 0; i < 10; ++i) quiet.OnEvent(Cs01Result(), kT0 + 200 + i);
  EXPECT_EQ(quiet.incidents_opened(), 1u);
}

TEST(AlertMonitorTest, SeededHistoryIsNotAnnouncedAgain) {
  AlertMonitor m(AlertConfig{});
  for (int i = 0; i < 30; ++i) m.Seed(Cs01(kT0 + i));
  EXPECT_EQ(m.incidents_opened(), 0u);
  EXPECT_EQ(m.ToJson()["open"].size(), 1u);  // the burst is known, not re-logged
  m.OnEvent(Cs01Result(), kT0 + 40);
  EXPECT_EQ(m.incidents_opened(), 0u);
}

TEST(AlertMonitorTest, DisabledMonitorCountsNothing) {
  AlertConfig cfg;
  cfg.enabled = false;
  AlertMonitor m(cfg);
  for (int i = 0; i < 50; ++i) m.OnEvent(Cs01Result(), kT0 + i);
  EXPECT_EQ(m.incidents_opened(), 0u);
}

}  // namespace
}  // namespace bounced
