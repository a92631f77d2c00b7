// metrics_test.cc: the Prometheus text of `bouncectl metrics` (daemon/metrics.h): the format
// (each family's HELP and TYPE once, its samples together, label values escaped), the event
// counts by source, category and provider, and the command against a real bounced: the file it
// writes, and bounced_up 0 with exit 1 once bounced is gone. Also `bouncectl events`, the other
// way to look into what bounced recorded. Writes only temp files.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <ctime>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/metrics.h"
#include "tests/daemon/daemon_harness.h"

namespace bounced::testing {
namespace {

using nlohmann::json;

// Checks `text` against the text exposition format as Prometheus reads it: every line a
// comment or a sample, each family's TYPE before its first sample and given once, a family's
// samples together, no sample twice; returns the samples (name{labels} -> value).
std::map<std::string, std::string> CheckExposition(const std::string& text) {
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  static const std::regex kSample(
      R"re(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*",?)*\})? (-?[0-9][0-9.e+-]*))re");
  static const std::regex kType(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge))");
  static const std::regex kHelp(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) [^\n]+)");
  std::map<std::string, std::string> samples;
  std::set<std::string> typed, ended;
  std::string current;  // the family whose samples come now
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, kType)) {
      EXPECT_TRUE(typed.insert(m[1]).second) << "TYPE twice: " << line;
      if (!current.empty()) ended.insert(current);
      current = m[1];
    } else if (std::regex_match(line, m, kHelp)) {
      EXPECT_EQ(typed.count(m[1]), 0u) << "HELP after TYPE: " << line;
    } else if (std::regex_match(line, m, kSample)) {
      EXPECT_EQ(m[1], current) << "sample outside its family: " << line;
      EXPECT_EQ(ended.count(m[1]), 0u) << line;
      std::string series = line.substr(0, line.rfind(' '));
      EXPECT_TRUE(samples.emplace(series, m[5]).second) << "sample twice: " << line;
    } else {
      ADD_FAILURE() << "not a comment or sample: '" << line << "'";
    }
  }
  return samples;
}

Event MakeEvent(EventSource source, Category category, std::string provider) {
  Event e;
  e.source = source;
  e.result.category = category;
  e.result.provider = std::move(provider);
  return e;
}

TEST(Metrics, EventCounterCountsBySourceCategoryAndProvider) {
  EventCounter c;
  c.OnCommitted({MakeEvent(EventSource::kLog, Category::kUserUnknown, "gmail"),
                 MakeEvent(EventSource::kLog, Category::kUserUnknown, "gmail"),
                 MakeEvent(EventSource::kMilter, Category::kPolicyRejection, "icloud"),
                 MakeEvent(EventSource::kLog, Category::kDelivered, "")});
  c.OnCommitted({MakeEvent(EventSource::kLog, Category::kUserUnknown, "gmail")});
  json j = c.ToJson();
  ASSERT_EQ(j.size(), 3u) << j.dump();
  std::map<std::string, int64_t> by;
  for (const json& e : j) {
    by[e["source"].get<std::string>() + "/" + e["category"].get<std::string>() + "/" +
       e["provider"].get<std::string>()] = e["count"];
  }
  EXPECT_EQ(by["log/user_unknown/gmail"], 3);
  EXPECT_EQ(by["milter/policy_rejection/icloud"], 1);
  EXPECT_EQ(by["log/delivered/unknown"], 1) << "no provider is \"unknown\"";
}

TEST(Metrics, EventCounterFoldsProvidersPastTheSeriesCapIntoOther) {
  EventCounter c;
  std::vector<Event> events;
  for (size_t i = 0; i < kMaxEventSeries + 10; ++i) {
    // Not "p" + std::to_string(i): a GCC 12 -O3 -Wrestrict false positive.
    events.push_back(MakeEvent(EventSource::kLog, Category::kUserUnknown,
                               std::string("p").append(std::to_string(i))));
  }
  events.push_back(MakeEvent(EventSource::kLog, Category::kUserUnknown, "p0"));  // known: its own
  c.OnCommitted(events);
  json j = c.ToJson();
  EXPECT_EQ(j.size(), kMaxEventSeries + 1) << "the cap, and one \"other\"";
  int64_t other = 0, p0 = 0;
  for (const json& e : j) {
    if (e["provider"] == "other") other = e["count"];
    if (e["provider"] == "p0") p0 = e["count"];
  }
  EXPECT_EQ(other, 10);
  EXPECT_EQ(p0, 2);
}

TEST(Metrics, RendersEachFamilyOnceWithItsSamplesTogether) {
  json m = {
      {"version", "1.2.3"},
      {"start_time", 1796000000},
      {"storage_available", true},
      {"suppressed", 42},
      {"suppressions_added",
       {{{"source", "bounce"}, {"category", "user_unknown"}, {"count", 40}},
        {{"source", "manual"}, {"category", ""}, {"count", 2}}}},
      {"rules", 191},
      {"events",
       {{{"source", "log"}, {"category", "user_unknown"}, {"provider", "gmail"}, {"count", 7}},
        {{"source", "milter"},
         {"category", "policy_rejection"},
         {"provider", "we\"ird\\pro\nvider"},
         {"count", 1}}}},
      {"input",
       {{"input", "log:/var/log/mail.log"},
        {"lines", 100},
        {"skipped_garbage", 3},
        {"skipped_too_long", 1},
        {"problem", "cannot open"}}},
      // The two sockets' families interleave in the health reply's order: still grouped.
      {"query_socket", {{"enabled", true}, {"accepted", 5}, {"active", 1}}},
      {"socketmap",
       {{"enabled", true}, {"accepted", 9}, {"active", 0}, {"lookups", 30}, {"found", 2}}},
      {"milter", {{"enabled", true}, {"running", false}}}};
  std::string text = RenderMetrics(m);
  std::map<std::string, std::string> s = CheckExposition(text);
  EXPECT_EQ(s["bounced_up"], "1");
  EXPECT_EQ(s["bounced_build_info{version=\"1.2.3\"}"], "1");
  EXPECT_EQ(s["bounced_start_time_seconds"], "1796000000");
  EXPECT_EQ(s["bounced_storage_available"], "1");
  EXPECT_EQ(s["bounced_suppressed_addresses"], "42");
  EXPECT_EQ(s["bounced_rules"], "191");
  EXPECT_EQ(s["bounced_suppressions_added_total{source=\"bounce\",category=\"user_unknown\"}"],
            "40");
  EXPECT_EQ(s["bounced_suppressions_added_total{source=\"manual\",category=\"none\"}"], "2")
      << "a manual entry without a category";
  EXPECT_EQ(s["bounced_events_total{source=\"log\",category=\"user_unknown\",provider=\"gmail\"}"],
            "7");
  EXPECT_EQ(s["bounced_events_total{source=\"milter\",category=\"policy_rejection\",provider="
              "\"we\\\"ird\\\\pro\\nvider\"}"],
            "1")
      << text;
  EXPECT_EQ(s["bounced_input_lines_total{input=\"log:/var/log/mail.log\"}"], "100");
  EXPECT_EQ(
      s["bounced_input_skipped_lines_total{input=\"log:/var/log/mail.log\",reason=\"garbage\"}"],
      "3");
  EXPECT_EQ(
      s["bounced_input_skipped_lines_total{input=\"log:/var/log/mail.log\",reason=\"too_long\"}"],
      "1");
  EXPECT_EQ(s["bounced_input_problem{input=\"log:/var/log/mail.log\"}"], "1");
  EXPECT_EQ(s["bounced_socket_connections_total{socket=\"query\"}"], "5");
  EXPECT_EQ(s["bounced_socket_connections_total{socket=\"socketmap\"}"], "9");
  EXPECT_EQ(s["bounced_socketmap_lookups_total"], "30");
  EXPECT_EQ(s["bounced_socketmap_suppressed_total"], "2");
  EXPECT_EQ(s["bounced_milter_running"], "0");
  EXPECT_EQ(s.count("bounced_view_memory_bytes"), 0u) << "absent parts give no lines";
  EXPECT_EQ(s.count("bounced_milter_recipients_checked_total"), 0u);
}

TEST(Metrics, AbsentPartsGiveNoLinesAndDownSaysSo) {
  std::map<std::string, std::string> s = CheckExposition(RenderMetrics(json::object()));
  EXPECT_EQ(s.size(), 1u) << "only bounced_up";
  // A disabled socket or milter has no counters.
  s = CheckExposition(
      RenderMetrics({{"query_socket", {{"enabled", false}}}, {"milter", {{"enabled", false}}}}));
  EXPECT_EQ(s.size(), 1u);
  s = CheckExposition(RenderDownMetrics("9.9"));
  EXPECT_EQ(s["bounced_up"], "0");
  EXPECT_EQ(s["bounced_build_info{version=\"9.9\"}"], "1");
}

TEST(Metrics, BouncectlWritesTheDaemonsCountersAndSaysWhenItIsAway) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), ReadFile(kTestData + "/postfix/icloud-unknown.log"));
  AppendFile(d.log(), ReadFile(kTestData + "/postfix/cs01.log"));
  AppendFile(d.log(), "not a postfix line\n");
  ASSERT_TRUE(d.WaitForEvents(2)) << ReadFile(d.stderr_path());
  ASSERT_TRUE(WaitUntil([&] {
    return d.Query({{"cmd", "status"}, {"address", "icloud-unknown@icloud.com"}})["result"].value(
        "suppressed", false);
  }));
  SocketmapAsk(d.socketmap_socket(), "recipient_access icloud-unknown@icloud.com");
  SocketmapAsk(d.socketmap_socket(), "recipient_acess icloud-unknown@icloud.com");  // a typo

  const std::string prom = dir / "bounced.prom";
  int rc = -1;
  std::string out;
  // The input counts its events once it has seen their commit (its next turn).
  EXPECT_TRUE(WaitUntil([&] {
    out = d.Ctl("metrics --output " + Quote(prom), &rc);
    return ReadFile(prom).find("category=\"policy_rejection\",provider=\"icloud\"} 1\n") !=
           std::string::npos;
  })) << ReadFile(prom);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "") << "--output prints nothing";
  struct stat st {};
  ASSERT_EQ(::stat(prom.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u) << "readable by node_exporter";
  std::string text = ReadFile(prom);
  std::map<std::string, std::string> s = CheckExposition(text);
  EXPECT_EQ(s["bounced_up"], "1");
  EXPECT_EQ(s["bounced_storage_available"], "1");
  EXPECT_EQ(s["bounced_suppressed_addresses"], "1") << text;
  EXPECT_EQ(s["bounced_suppressions_added_total{source=\"bounce\",category=\"user_unknown\"}"], "1")
      << text;
  EXPECT_EQ(s.count("bounced_suppressions_added_total{source=\"bounce\",category=\"policy_"
                    "rejection\"}"),
            0u)
      << "CS01 suppresses nobody";
  EXPECT_EQ(s["bounced_events_total{source=\"log\",category=\"user_unknown\",provider=\"icloud\"}"],
            "1")
      << text;
  EXPECT_EQ(
      s["bounced_events_total{source=\"log\",category=\"policy_rejection\",provider=\"icloud\"}"],
      "1")
      << text;
  EXPECT_EQ(s["bounced_socketmap_lookups_total"], "2");
  EXPECT_EQ(s["bounced_socketmap_suppressed_total"], "1");
  EXPECT_EQ(s["bounced_socketmap_perm_total"], "1") << "a map name bounced does not serve";
  const std::string input = "{input=\"log:" + d.log() + "\"}";
  EXPECT_NE(s["bounced_input_lines_total" + input], "0");
  EXPECT_EQ(s["bounced_input_problem" + input], "0");
  bool garbage = false;
  for (const auto& [series, value] : s) {
    if (series.rfind("bounced_input_skipped_lines_total", 0) == 0 &&
        series.find("reason=\"garbage\"") != std::string::npos) {
      garbage = value != "0";
    }
  }
  EXPECT_TRUE(garbage) << "the garbage line is counted";
  // The same text on standard output, without --output; a manual suppression is counted as one.
  d.Ctl("suppress someone@example.org --reason 'asked us'", &rc);
  ASSERT_EQ(rc, 0);
  d.Ctl("suppress someone@example.org --reason 'asked again'", &rc);  // an update: not added
  ASSERT_EQ(rc, 0);
  std::string printed = d.Ctl("metrics", &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(printed.find("# TYPE bounced_events_total counter\n"), std::string::npos) << printed;
  s = CheckExposition(printed);
  EXPECT_EQ(s["bounced_suppressions_added_total{source=\"manual\",category=\"none\"}"], "1")
      << printed;
  EXPECT_EQ(s["bounced_suppressed_addresses"], "2");

  EXPECT_EQ(d.Stop(), 0);
  out = d.Ctl("metrics --output " + Quote(prom), &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("cannot connect to bounced"), std::string::npos) << out;
  s = CheckExposition(ReadFile(prom));
  EXPECT_EQ(s["bounced_up"], "0") << "a stale file would hide that bounced is away";
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    std::string f = entry.path().filename().string();
    EXPECT_EQ(f.find(".partial-"), std::string::npos) << "no temporary file left: " << f;
  }
}

// `bouncectl events` against a real bounced: which recipients got CS01, and from which sender.
TEST(Events, BouncectlListsRecordedEventsByCategoryProviderAndCode) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), ReadFile(kTestData + "/postfix/icloud-unknown.log"));
  AppendFile(d.log(), ReadFile(kTestData + "/postfix/cs01.log"));
  ASSERT_TRUE(WaitUntil([&] {
    return d.Query({{"cmd", "status"}, {"address", "cs01@icloud.com"}})["result"].contains(
               "events") &&
           !d.Query({{"cmd", "status"}, {"address", "cs01@icloud.com"}})["result"]["events"]
                .empty();
  })) << ReadFile(d.stderr_path());
  // The captured log's times are in the past: a window that reaches them.
  int rc = -1;
  std::string out = d.Ctl("events --since 2000-01-01 --provider icloud --code CS01", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("cs01@icloud.com"), std::string::npos) << out;
  EXPECT_NE(out.find("policy_rejection"), std::string::npos) << out;
  EXPECT_EQ(out.find("icloud-unknown@icloud.com"), std::string::npos) << out;
  EXPECT_NE(out.find("1 event(s)"), std::string::npos) << out;

  json rows = json::parse(d.Ctl("--json events --since 2000-01-01 --status bounced", &rc));
  EXPECT_EQ(rc, 0);
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  EXPECT_EQ(rows[0]["recipient"], "cs01@icloud.com") << "the most recently recorded first";
  EXPECT_EQ(rows[1]["recipient"], "icloud-unknown@icloud.com");
  EXPECT_EQ(rows[1]["category"], "user_unknown");
  EXPECT_EQ(rows[1]["sender"], "sender@testbed.local");

  // One recipient's, spelt as mail may carry it.
  rows =
      json::parse(d.Ctl("--json events --since 2000-01-01 --recipient '<CS01+x@iCloud.com>'", &rc));
  EXPECT_EQ(rc, 0);
  ASSERT_EQ(rows.size(), 1u) << rows.dump();
  EXPECT_EQ(rows[0]["recipient"], "cs01@icloud.com");
  out = d.Ctl("events --recipient 'not an address'", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("invalid address 'not an address'"), std::string::npos) << out;
  out = d.Ctl("events --since 2000-01-01 --limit 1", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("1 event(s), the newest 1 (--limit for more)"), std::string::npos) << out;
  out = d.Ctl("events --category no_such_category", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("unknown category 'no_such_category'"), std::string::npos) << out;
  out = d.Ctl("events --since 2026-11-02 --until 2026-11-01", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("\"until\" must come after \"since\""), std::string::npos) << out;
  out = d.Ctl("events --limit 0", &rc);
  EXPECT_EQ(rc, 2) << out;

  // Which of our sender domains got the CS01: stats per sender domain.
  out = d.Ctl("stats --sender-domain --days 3660", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("SENDER DOMAIN"), std::string::npos) << out;
  json stats = json::parse(d.Ctl("--json stats --sender-domain testbed.local --days 3660", &rc));
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(stats["by"], "sender_domain");
  bool cs01 = false;
  for (const json& row : stats["rows"]) {
    EXPECT_EQ(row["key"], "testbed.local") << stats.dump();
    cs01 = cs01 || (row["provider_code"] == "CS01" && row["count"] == 1);
  }
  EXPECT_TRUE(cs01) << stats.dump();
  // And the events behind it.
  out = d.Ctl("events --since 2000-01-01 --sender-domain TESTBED.local --code CS01", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("cs01@icloud.com"), std::string::npos) << out;
  EXPECT_NE(out.find("1 event(s)"), std::string::npos) << out;
  out = d.Ctl("events --since 2000-01-01 --sender-domain other.example", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("cs01@icloud.com"), std::string::npos) << out;
  out = d.Ctl("events --sender-domain @", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("\"sender_domain\" must name a domain"), std::string::npos) << out;
  out = d.Ctl("stats --sender-domain --provider", &rc);
  EXPECT_EQ(rc, 2) << "one grouping at a time: " << out;
  EXPECT_EQ(d.Stop(), 0);
}

// `bouncectl events --follow`: each event recorded after it started, once, in the order
// recorded, whatever the filters matched before (here nothing: no bounce yet), and on across a
// kill -9 and restart of bounced: what was recorded after it is printed once it is back.
TEST(Events, FollowPrintsEachNewEventOnceInOrderAcrossRestartsAndAnOutage) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), ReadFile(kTestData + "/postfix/down.log"));  // deferrals only
  ASSERT_TRUE(d.WaitForEvents(1)) << ReadFile(d.stderr_path());
  const std::string out = dir / "follow.jsonl";
  const std::string err = dir / "follow.err";
  // Connections to the query socket: each Health() call is one too.
  auto accepted = [&] { return d.Health()["query_socket"].value("accepted", int64_t{0}); };
  const int64_t before = accepted();
  Shell("timeout 60 " + std::string(kBouncectl) + " --socket " + Quote(d.query_socket()) +
        " --json events --follow --status bounced --since 2000-01-01 --limit 1 > " + Quote(out) +
        " 2> " + Quote(err) + " &");
  // It has asked its two first questions (the newest event of all, then the listing, empty)
  // before the bounces come.
  int64_t own = 0;
  ASSERT_TRUE(WaitUntil([&] { return accepted() - before - ++own >= 2; })) << ReadFile(err);
  auto lines = [&] {
    std::vector<json> got;
    std::istringstream in(ReadFile(out));
    for (std::string l; std::getline(in, l);) {
      try {
        got.push_back(json::parse(l));
      } catch (...) {
        got.push_back(json{{"unparsed", l}});
      }
    }
    return got;
  };
  AppendFile(d.log(), ReadFile(kTestData + "/postfix/cs01.log"));
  AppendFile(d.log(), ReadFile(kTestData + "/postfix/icloud-unknown.log"));
  EXPECT_TRUE(WaitUntil([&] { return lines().size() >= 2; }, std::chrono::seconds(10)))
      << ReadFile(out) << ReadFile(err);
  d.Kill9();
  AppendFile(d.log(), ReadFile(kTestData + "/postfix/full.log"));
  EXPECT_TRUE(WaitUntil([&] { return ReadFile(err).find("waiting for it") != std::string::npos; },
                        std::chrono::seconds(10)))
      << ReadFile(err);
  d.Start();
  EXPECT_TRUE(WaitUntil([&] { return lines().size() >= 3; }, std::chrono::seconds(10)))
      << ReadFile(out) << ReadFile(err);
  // A restart that cannot open its database: bounced answers, but refuses ("storage
  // unavailable"). --follow waits for that too, and goes on once the database is back.
  EXPECT_EQ(d.Stop(), 0);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    if (fs::exists(d.db() + suffix)) fs::rename(d.db() + suffix, d.db() + suffix + ".aside");
  }
  std::ofstream(d.db()) << "not a database, whatever its name says\n";
  AppendFile(d.log(), ReadFile(kTestData + "/postfix/hm08.log"));
  d.Start();
  EXPECT_TRUE(WaitUntil([&] { return ReadFile(err).find("bounced refuses") != std::string::npos; },
                        std::chrono::seconds(10)))
      << ReadFile(err);
  EXPECT_EQ(d.Stop(), 0);
  fs::remove(d.db());
  for (const char* suffix : {"", "-wal", "-shm"}) {
    if (fs::exists(d.db() + suffix + ".aside"))
      fs::rename(d.db() + suffix + ".aside", d.db() + suffix);
  }
  d.Start();
  EXPECT_TRUE(WaitUntil([&] { return lines().size() >= 4; }, std::chrono::seconds(10)))
      << ReadFile(out) << ReadFile(err);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a look more: nothing twice
  Shell("pkill -f " + Quote(out) + " >/dev/null 2>&1");
  std::vector<json> got = lines();
  ASSERT_EQ(got.size(), 4u) << ReadFile(out);
  EXPECT_EQ(got[0].value("recipient", ""), "cs01@icloud.com") << ReadFile(out);
  EXPECT_EQ(got[1].value("recipient", ""), "icloud-unknown@icloud.com");
  EXPECT_EQ(got[2].value("recipient", ""), "full@example.org");
  EXPECT_EQ(got[3].value("provider_code", ""), "HM08");
  EXPECT_LT(got[0].value("id", 0), got[1].value("id", 0));
  EXPECT_LT(got[1].value("id", 0), got[2].value("id", 0));
  EXPECT_LT(got[2].value("id", 0), got[3].value("id", 0));
  EXPECT_NE(ReadFile(err).find("bounced answers again"), std::string::npos) << ReadFile(err);
  EXPECT_EQ(d.Stop(), 0);
}

// A log line's time as postlog writes it (RFC 3339), and a queue id: `prefix` then i in hex.
std::string LogStamp(std::time_t t) {
  char stamp[64];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S+00:00", std::gmtime(&t));
  return stamp;
}

std::string QueueId(const char* prefix, int i) {
  char qid[16];
  std::snprintf(qid, sizeof qid, "%s%04X", prefix, i);
  return qid;
}

// Appends `lines` (holding `events` deliveries) to bounced's log, waits for them to be recorded
// and for `bouncectl ARGS` to show an open alert; returns that output (exit status in *rc).
std::string StatsOnceAnAlertOpens(BouncedProcess& d, const std::string& lines, int64_t events,
                                  const std::string& args, int* rc) {
  AppendFile(d.log(), lines);
  EXPECT_TRUE(d.WaitForEvents(events)) << ReadFile(d.stderr_path());
  std::string out;
  EXPECT_TRUE(WaitUntil([&] {
    out = d.Ctl(args, rc);
    return out.find("open alert(s)") != std::string::npos;
  })) << out;
  return out;
}

// `bouncectl stats` shows an open alert as a few lines a person reads: what, since when, how
// many against the threshold, the recipient domains most hit, our sending domains and a sample
// reply (a real bounced, fed a burst of CS01 rejections stamped now).
TEST(Stats, ShowsOpenAlertsReadably) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  const std::time_t now = std::time(nullptr);
  std::string lines;
  for (int i = 0; i < 30; ++i) {
    const std::string stamp = LogStamp(now - 60 + i), qid = QueueId("8D0E3A7", i);
    const std::string domain = i % 3 == 0 ? "me.com" : "icloud.com";
    // The offers brand sent two thirds of them.
    lines += stamp + " mta postfix/qmgr[28946]: " + qid + ": from=<" +
             (i % 3 == 2 ? "news@shop.example" : "offers@Deals.example") +
             ">, size=900, nrcpt=1 (queue active)\n";
    lines += stamp + " mta postfix/smtp[28967]: " + qid + ": to=<user" + std::to_string(i) + "@" +
             domain +
             ">, relay=mx01.mail.icloud.com[17.57.154.6]:25, delay=0.05, "
             "delays=0.05/0/0/0, dsn=5.7.1, status=bounced (host mx01.mail.icloud.com"
             "[17.57.154.6] said: 554 5.7.1 [CS01] Message rejected due to local policy. "
             "Please visit https://support.apple.com/en-us/HT204137 (in reply to end of DATA "
             "command))\n";
  }
  int rc = -1;
  std::string out = StatsOnceAnAlertOpens(d, lines, 30, "stats --provider icloud", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("1 open alert(s):\n  icloud policy_rejection CS01: since "), std::string::npos)
      << out;
  EXPECT_NE(out.find("    domains: icloud.com 20, me.com 10\n"), std::string::npos) << out;
  EXPECT_NE(out.find("    from: deals.example 20, shop.example 10\n"), std::string::npos) << out;
  EXPECT_NE(out.find("    e.g. 554 5.7.1 [CS01] Message rejected due to local policy."),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("{\""), std::string::npos) << "no raw JSON: " << out;
  // --json keeps the whole incident.
  json j = json::parse(d.Ctl("--json stats --provider icloud", &rc));
  ASSERT_EQ(j["alerts"]["open"].size(), 1u) << j.dump();
  EXPECT_EQ(j["alerts"]["open"][0]["domains"]["icloud.com"], 20);
  EXPECT_EQ(j["alerts"]["open"][0]["sender_domains"]["deals.example"], 20);
  EXPECT_EQ(d.Stop(), 0);
}

// A recipient domain whose users all read as unknown for a while (its DNS, a migration): bounced
// says so in stats, with the command that shows what to lift once the domain works again, and
// the report lists it among the alerts. The same bounces, replayed at a restart, are not news.
TEST(Stats, ShowsAHardBounceSpikeAtOneDomainWithItsRemedy) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  const std::time_t now = std::time(nullptr);
  std::string lines;
  for (int i = 0; i < 30; ++i) {
    lines += LogStamp(now - 60 + i) + " mta postfix/smtp[28967]: " + QueueId("9D0E3A7", i) +
             ": to=<user" + std::to_string(i) +
             "@tenant.example>, relay=tenant-example.mail.protection.outlook.com[52.101.1.1]:25, "
             "delay=0.05, delays=0.05/0/0/0, dsn=5.1.10, status=bounced (host "
             "tenant-example.mail.protection.outlook.com[52.101.1.1] said: 550 5.1.10 "
             "RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup (in "
             "reply to RCPT TO command))\n";
  }
  int rc = -1;
  std::string out = StatsOnceAnAlertOpens(d, lines, 30, "stats", &rc);
  EXPECT_NE(out.find("1 open alert(s):\n  tenant.example user_unknown hard bounces: since "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("      bouncectl unsuppress --domain tenant.example --since "),
            std::string::npos)
      << out;
  EXPECT_NE(ReadFile(d.stderr_path()).find("hard-bounce spike at tenant.example"),
            std::string::npos);
  out = d.Ctl("metrics", &rc);
  EXPECT_NE(out.find("\nbounced_alerts_open 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\nbounced_hard_bounce_alerts_open 1\n"), std::string::npos) << out;
  // They are suppressed (the alert lifts nothing), and the remedy's dry run finds them all.
  out = d.Ctl("list --domain tenant.example", &rc);
  EXPECT_NE(out.find("30 suppressed"), std::string::npos) << out;
  json j = json::parse(d.Ctl("--json stats", &rc));
  ASSERT_EQ(j["alerts"]["open"].size(), 1u) << j.dump();
  const std::string remedy = j["alerts"]["open"][0].value("remedy", "");
  ASSERT_EQ(remedy.rfind("bouncectl ", 0), 0u) << remedy;
  out = d.Ctl(remedy.substr(std::string("bouncectl ").size()), &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("30 suppressions would be lifted"), std::string::npos) << out;
  // A restart replays the burst as history: still open, not announced twice.
  EXPECT_EQ(d.Stop(), 0);
  d.Start();
  j = json::parse(d.Ctl("--json stats", &rc));
  ASSERT_EQ(j["alerts"]["open"].size(), 1u) << j.dump();
  EXPECT_EQ(j["alerts"]["open"][0].value("kind", ""), "hard_bounces");
  EXPECT_EQ(d.Stop(), 0);
}

}  // namespace
}  // namespace bounced::testing
