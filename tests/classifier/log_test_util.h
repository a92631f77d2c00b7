// log_test_util.h: helpers shared by the log parser tests: read a fixture from tests/data and run
// it through a LogCorrelator with the default rules, collecting copies of the events.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "classifier/log_parser.h"
#include "classifier/rules.h"

namespace bounced::testing_log {

inline std::string ReadTestFile(const std::string& relative) {
  std::ifstream in(std::string(BOUNCED_TEST_DATA) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing test data " << relative;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct LogRun {
  std::vector<DeliveryEvent> events;
  LogStats stats;
};

// Feeds `text` in chunks of `chunk` bytes (to exercise line splitting across reads).
inline LogRun Correlate(std::string_view text, size_t chunk = 4096, int year = 2026) {
  LogRun run;
  LogCorrelator c(RuleSet::Default(), [&run](const DeliveryEvent& e) { run.events.push_back(e); });
  c.set_year(year);
  LogLineSplitter splitter;
  auto feed = [&c](std::string_view line) { c.Feed(line); };
  for (size_t i = 0; i < text.size(); i += chunk) splitter.Push(text.substr(i, chunk), feed);
  splitter.Finish(feed);
  run.stats = c.stats();
  return run;
}

inline std::vector<const DeliveryEvent*> For(const LogRun& run, std::string_view recipient) {
  std::vector<const DeliveryEvent*> out;
  for (const auto& e : run.events) {
    if (e.recipient == recipient) out.push_back(&e);
  }
  return out;
}

}  // namespace bounced::testing_log
