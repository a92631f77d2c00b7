// log_robustness_test.cc: hostile and damaged input never stops the log parser: garbage lines,
// lines cut at every byte, 100 KB lines, binary bytes, CRLF ends. Also the RFC 3339 + long
// queue id format end to end against the generator's ground truth
// (tests/data/postfix/genlog_rfc3339_longid.*, made with the project's bench generator:
// genlog.py --lines 2000 --seed 5 --format rfc3339 --long-queue-ids --tz-offset 60).
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <tuple>

#include "classifier/result.h"
#include "tests/classifier/log_test_util.h"

namespace bounced {
namespace {

using testing_log::Correlate;
using testing_log::LogRun;
using testing_log::ReadTestFile;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(LogRobustness, GarbageBetweenLinesIsCountedAndChangesNothing) {
  std::string clean = ReadTestFile("postfix/postfix.scenarios.log");
  LogRun baseline = Correlate(clean);
  std::string dirty;
  size_t garbage = 0;
  for (const std::string& l : Lines(clean)) {
    dirty += l + "\n";
    // A NUL, other controls and bytes that are not UTF-8 (sizeof - 1: the literal's own bytes).
    static constexpr char kGarbage[] = "\x00\x01\xff garbage \xc3\x28";
    dirty += std::string(kGarbage, sizeof(kGarbage) - 1) + "\n";
    dirty += "-- MARK --\n";
    garbage += 2;
  }
  LogRun run = Correlate(dirty, 777);
  EXPECT_EQ(run.stats.skipped_garbage, garbage);
  ASSERT_EQ(run.events.size(), baseline.events.size());
  for (size_t i = 0; i < run.events.size(); ++i) {
    EXPECT_EQ(run.events[i].recipient, baseline.events[i].recipient);
    EXPECT_EQ(run.events[i].result.category, baseline.events[i].result.category);
  }
}

TEST(LogRobustness, EveryPrefixOfEveryLineIsSafe) {
  // Each line of a scenario cut at every length: never fatal, and a cut delivery line is either
  // counted as truncated or (cut inside the reply only) kept with reason_cut.
  std::string log = ReadTestFile("postfix/cs01.log") + ReadTestFile("postfix/tss04.log");
  std::string cuts;
  for (const std::string& l : Lines(log)) {
    for (size_t n = 0; n <= l.size(); ++n) cuts += l.substr(0, n) + "\n";
  }
  LogRun run = Correlate(cuts, 1 << 16);
  EXPECT_GT(run.stats.skipped_truncated, 0u);
  EXPECT_GT(run.stats.cut_reasons, 0u);
  EXPECT_GT(run.stats.skipped_garbage, 0u);
  for (const auto& e : run.events) {
    EXPECT_FALSE(e.log_status.empty());
    EXPECT_FALSE(e.queue_id.empty());
  }
}

TEST(LogRobustness, HundredKilobyteLinesAreSkippedAndCounted) {
  std::string big =
      "Nov 29 17:09:53 mta postfix/smtp[1]: 8D0E3A74992: to=<a@icloud.com>, "
      "relay=x[1.2.3.4]:25, delay=1, delays=1/0/0/0, dsn=5.7.1, status=bounced "
      "(host x[1.2.3.4] said: 554 5.7.1 [CS01] " +
      std::string(100 * 1024, 'A') + ")";
  std::string log = ReadTestFile("postfix/cs01.log") + big + "\n" + big + "\n" +
                    ReadTestFile("postfix/hm08.log") + std::string(200 * 1024, 'x');
  for (size_t chunk : {size_t{1000}, size_t{4 << 20}}) {
    LogRun run = Correlate(log, chunk);
    EXPECT_EQ(run.stats.skipped_too_long, 3u) << chunk;  // two lines + the unterminated tail
    ASSERT_EQ(run.events.size(), 4u) << chunk;           // cs01, its DSN, hm08, its DSN
    EXPECT_EQ(run.events[0].result.provider_code, "CS01");
    EXPECT_EQ(run.events[2].result.provider_code, "HM08");
  }
}

TEST(LogRobustness, LongReplyIsCutToTheDiagnosticLimit) {
  std::string line =
      "Nov 29 17:09:53 mta postfix/smtp[1]: 8D0E3A74992: to=<a@icloud.com>, "
      "relay=x[1.2.3.4]:25, delay=1, delays=1/0/0/0, dsn=5.1.1, status=bounced "
      "(host x[1.2.3.4] said: 550 5.1.1 user unknown " +
      std::string(20000, 'z') + " (in reply to RCPT TO command))";
  LogRun run = Correlate(line + "\n");
  ASSERT_EQ(run.events.size(), 1u);
  EXPECT_LE(run.events[0].result.diagnostic.size(), 4096u);
  EXPECT_EQ(run.events[0].result.category, Category::kUserUnknown);
}

TEST(LogRobustness, BinaryBytesInFieldsComeOutSanitised) {
  std::string line =
      "Nov 29 17:09:53 mta postfix/smtp[1]: 8D0E3A74992: to=<a\x01\xff@icloud.com>, "
      "relay=x[1.2.3.4]:25, delay=1, delays=1/0/0/0, dsn=5.7.1, status=bounced (host x[1.2.3.4] "
      "said: 554 5.7.1 [CS01] \xc3\x28 bad\tbytes\x7f (in reply to end of DATA command))";
  LogRun run = Correlate(line + "\r\n");
  ASSERT_EQ(run.events.size(), 1u);
  for (const std::string* s : {&run.events[0].recipient, &run.events[0].result.diagnostic}) {
    for (unsigned char c : *s) EXPECT_TRUE(c >= 0x20 && c != 0x7f) << *s;
  }
  EXPECT_EQ(run.events[0].result.provider_code, "CS01");
}

// RFC 3339 time stamps with an offset and long queue ids, against the generator's truth: every
// truth row has its event, with the same queue id, recipient, status and dsn.
TEST(LogRobustness, Rfc3339AndLongQueueIdsMatchTheGeneratorTruth) {
  LogRun run = Correlate(ReadTestFile("postfix/genlog_rfc3339_longid.log"));
  EXPECT_EQ(run.stats.skipped_garbage, 0u);
  EXPECT_EQ(run.stats.skipped_truncated, 0u);
  using Key = std::tuple<std::string, std::string, std::string>;  // qid, rcpt, status
  std::map<Key, std::vector<const DeliveryEvent*>> events;
  for (const auto& e : run.events) events[{e.queue_id, e.recipient, e.log_status}].push_back(&e);
  std::map<Key, size_t> used;
  size_t rows = 0, hard_agree = 0, hard_rows = 0;
  for (const std::string& row : Lines(ReadTestFile("postfix/genlog_rfc3339_longid.truth.tsv"))) {
    std::vector<std::string> f;
    std::istringstream in(row);
    for (std::string x; std::getline(in, x, '\t');) f.push_back(x);
    if (f.size() < 13 || f[0] == "line_no") continue;
    ++rows;
    Key k{f[2], f[3], f[4]};
    auto it = events.find(k);
    ASSERT_NE(it, events.end()) << row;
    size_t& n = used[k];
    ASSERT_LT(n, it->second.size()) << row;
    const DeliveryEvent* e = it->second[n++];
    EXPECT_EQ(e->dsn, f[5]) << row;
    EXPECT_EQ(e->queue_id.size() >= 12, true);
    EXPECT_EQ(e->time.substr(e->time.size() - 6), "+01:00");
    if (f[6] == "hard_bounce") {
      ++hard_rows;
      hard_agree += e->result.hard_bounce();
    }
  }
  EXPECT_GT(rows, 400u);
  EXPECT_EQ(rows, run.events.size());
  EXPECT_EQ(hard_agree, hard_rows);
}

}  // namespace
}  // namespace bounced
