// log_feed_parsed_test.cc: LogCorrelator::FeedParsed (lines parsed ahead, as parse-log's reader
// thread does) gives the events and counts that Feed gives; and LogLineSplitter hands out the
// same lines, too-long ones counted the same, wherever the chunks of a stream break.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "classifier/log_parser.h"
#include "classifier/result_json.h"
#include "classifier/rules.h"
#include "tests/classifier/log_test_util.h"

namespace bounced {
namespace {

using testing_log::ReadTestFile;

// An event as text, every field in it, to compare two runs.
std::string Describe(const DeliveryEvent& e) {
  nlohmann::json j = ToJson(e.result);
  j["queue_id"] = e.queue_id;
  j["time"] = e.time;
  j["unix_time"] = e.unix_time;
  j["sender"] = e.sender;
  j["sender_known"] = e.sender_known;
  j["message_id"] = e.message_id;
  j["size"] = e.size;
  j["nrcpt"] = e.nrcpt;
  j["recipient"] = e.recipient;
  j["orig_recipient"] = e.orig_recipient;
  j["log_status"] = e.log_status;
  j["dsn"] = e.dsn;
  j["relay"] = e.relay;
  j["program"] = e.program;
  j["bounce_queue_id"] = e.bounce_queue_id;
  return j.dump();
}

// The counters that do not depend on the classification cache's random seed.
std::vector<uint64_t> Counters(const LogStats& s) {
  return {s.lines,
          s.postfix_lines,
          s.events,
          s.skipped_garbage,
          s.skipped_truncated,
          s.skipped_too_long,
          s.cut_reasons,
          s.ignored_statuses,
          s.expired_without_recipients,
          s.tracked_queue_ids,
          s.max_tracked_queue_ids,
          s.evicted_queue_ids,
          s.dropped_pending};
}

std::vector<std::string> SplitLines(std::string_view text) {
  std::vector<std::string> lines;
  LogLineSplitter splitter;
  auto keep = [&lines](std::string_view line) { lines.emplace_back(line); };
  splitter.Push(text, keep);
  splitter.Finish(keep);
  return lines;
}

struct Outcome {
  std::vector<std::string> events;
  LogStats stats;
};

// All lines parsed first (their ParsedLogLines kept side by side, as in a pipeline block), then
// fed; or each fed as it comes.
Outcome Correlate(const std::vector<std::string>& lines, bool parse_ahead, bool counts_only) {
  Outcome run;
  LogCorrelator::Sink sink;
  if (!counts_only) {
    sink = [&run](const DeliveryEvent& e) { run.events.push_back(Describe(e)); };
  }
  LogCorrelator c(RuleSet::Default(), sink);
  c.set_year(2026);
  c.set_counts_only(counts_only);
  c.set_max_tracked_queue_ids(50);  // so that eviction runs as well
  if (parse_ahead) {
    std::vector<ParsedLogLine> parsed(lines.size());
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].size() <= kMaxLogLineBytes) ParseLogLine(lines[i], &parsed[i]);
    }
    for (size_t i = 0; i < lines.size(); ++i) c.FeedParsed(lines[i], parsed[i]);
  } else {
    for (const std::string& line : lines) c.Feed(line);
  }
  run.stats = c.stats();
  if (counts_only) {
    for (const EventCount& n : c.counts()) {
      run.events.push_back(std::string(n.log_status) + " " + std::string(n.provider) + " " +
                           std::string(ToString(n.category)) + " " + std::to_string(n.count));
    }
  }
  return run;
}

TEST(LogFeedParsed, GivesTheEventsAndCountsOfFeed) {
  std::string log;
  for (const char* f :
       {"sample/mail.log", "postfix/hm08.log", "postfix/cs01-rcpt.log", "postfix/gmail-full.log",
        "postfix/burst-suspended.log", "postfix/dsn-ext.log", "postfix/ok.log"}) {
    log += ReadTestFile(f);
  }
  // Lines Feed only counts: too long, blank, garbage.
  log += std::string(kMaxLogLineBytes + 1, 'x') + "\n\n\x01\x02 garbage\n";
  std::vector<std::string> lines = SplitLines(log);
  ASSERT_GT(lines.size(), 100u);
  for (bool counts_only : {false, true}) {
    Outcome fed = Correlate(lines, false, counts_only);
    Outcome parsed = Correlate(lines, true, counts_only);
    EXPECT_GT(fed.stats.events, 20u);
    EXPECT_EQ(fed.stats.skipped_too_long, 1u);
    EXPECT_EQ(Counters(parsed.stats), Counters(fed.stats)) << counts_only;
    EXPECT_EQ(parsed.events, fed.events) << counts_only;
  }
}

// A line over the limit whose byte at the limit is "\r": cut short when carried between chunks,
// it must not come out as a line at the limit (and be parsed) where a chunk breaks inside it.
TEST(LogLineSplitter, CountsTooLongLinesWhereverTheChunksBreak) {
  std::string line(kMaxLogLineBytes + 5, 'x');
  line[kMaxLogLineBytes] = '\r';
  const std::string stream = "a\n" + line + "\nb\n" + line + "\r\n";
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{4096}, kMaxLogLineBytes, kMaxLogLineBytes + 1,
                       kMaxLogLineBytes + 2, stream.size()}) {
    LogCorrelator c(RuleSet::Default(), nullptr);
    LogLineSplitter splitter;
    auto feed = [&c](std::string_view l) { c.Feed(l); };
    for (size_t i = 0; i < stream.size(); i += chunk) {
      splitter.Push(std::string_view(stream).substr(i, chunk), feed);
    }
    splitter.Finish(feed);
    EXPECT_EQ(c.stats().lines, 4u) << chunk;
    EXPECT_EQ(c.stats().skipped_too_long, 2u) << chunk;
  }
}

}  // namespace
}  // namespace bounced
