// log_fuzz.cc: libFuzzer target for the Postfix log parser (classifier/log_parser.h).
//
// Reads: arbitrary bytes as a log. The first byte picks a chunk size for LogLineSplitter (so
// lines are split across reads) and a small queue id cap (so eviction runs). Every line goes
// through ParseLogLine, ParseLogTimestamp (on what it found) and a LogCorrelator with the
// default rules; a second LogCorrelator gets the same lines through FeedParsed with what
// ParseLogLine gave (as parse-log's pipeline feeds them). Checks: no crash, no sanitizer report,
// the invariants of the parsed views and of the emitted events (sanitised text, known log
// statuses), and that both correlators count the same events and lines. The first correlator
// also hands out its queue facts (set_track_queue_facts) every line or every few lines to a
// keeper that applies them as the store does: a forgotten id must be one the keeper holds, the
// keeper never holds more ids than the table's cap, and its facts restore into a new correlator.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "classifier/log_parser.h"
#include "classifier/rules.h"

namespace {

void Check(bool ok) {
  if (!ok) abort();
}

// A view must lie inside the line it was parsed from.
void CheckInside(std::string_view part, std::string_view line) {
  if (part.empty()) return;
  Check(part.data() >= line.data() && part.data() + part.size() <= line.data() + line.size());
}

void CheckClean(const std::string& s) {
  for (unsigned char c : s) Check(c >= 0x20 && c != 0x7f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::shared_ptr<const bounced::RuleSet> rules = bounced::RuleSet::Default();
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 97;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);

  bounced::LogCorrelator correlator(rules, [](const bounced::DeliveryEvent& e) {
    Check(e.log_status == "sent" || e.log_status == "deferred" || e.log_status == "bounced" ||
          e.log_status == "expired");
    CheckClean(e.recipient);
    CheckClean(e.sender);
    CheckClean(e.result.diagnostic);
    CheckClean(e.time);
    Check(e.result.diagnostic.size() <= 4096);
  });
  correlator.set_max_tracked_queue_ids(1u + data[0] % 7u);
  correlator.set_year(2026);
  correlator.set_track_queue_facts(true);
  std::map<std::string, bounced::QueueFacts> keeper;
  size_t lines = 0;
  const size_t take_every = 1 + (data[0] >> 5);
  auto take = [&] {
    std::vector<bounced::QueueFacts> changed;
    std::vector<std::string> forgotten;
    correlator.TakeQueueFacts(&changed, &forgotten);
    for (const std::string& id : forgotten) Check(keeper.erase(id) == 1);
    for (bounced::QueueFacts& f : changed) {
      Check(!f.queue_id.empty() && f.queue_id.size() <= 23);
      CheckClean(f.sender);
      CheckClean(f.message_id);
      keeper[f.queue_id] = std::move(f);
    }
    Check(keeper.size() <= 1u + data[0] % 7u);
  };
  bounced::LogCorrelator parsed_ahead(rules, nullptr);
  parsed_ahead.set_max_tracked_queue_ids(1u + data[0] % 7u);
  parsed_ahead.set_year(2026);

  bounced::LogLineSplitter splitter;
  auto on_line = [&](std::string_view line) {
    bounced::ParsedLogLine p;
    bounced::LogLineKind kind = bounced::ParseLogLine(line, &p);
    Check(kind == p.kind);
    for (std::string_view part : {p.timestamp, p.host, p.program, p.daemon, p.queue_id, p.message,
                                  p.recipient, p.orig_recipient, p.relay, p.dsn, p.status, p.reason,
                                  p.sender, p.message_id, p.notification_queue_id}) {
      CheckInside(part, line);
    }
    if (!p.timestamp.empty()) {
      int64_t t = 0;
      std::string s;
      bounced::ParseLogTimestamp(p.timestamp, 2026, 3600, &t, &s);
    }
    correlator.Feed(line);
    parsed_ahead.FeedParsed(line, p);
    if (++lines % take_every == 0) take();
  };
  for (size_t i = 0; i < input.size(); i += chunk) splitter.Push(input.substr(i, chunk), on_line);
  splitter.Finish(on_line);
  take();
  bounced::LogCorrelator restored(rules, nullptr);
  restored.set_track_queue_facts(true);
  for (const auto& [id, f] : keeper) restored.RestoreQueueFacts(f);
  Check(restored.stats().tracked_queue_ids == keeper.size());
  const bounced::LogStats& st = correlator.stats();
  Check(st.tracked_queue_ids <= 1u + data[0] % 7u);
  const bounced::LogStats& ahead = parsed_ahead.stats();
  Check(ahead.events == st.events && ahead.lines == st.lines &&
        ahead.postfix_lines == st.postfix_lines && ahead.skipped_garbage == st.skipped_garbage &&
        ahead.skipped_truncated == st.skipped_truncated &&
        ahead.skipped_too_long == st.skipped_too_long &&
        ahead.evicted_queue_ids == st.evicted_queue_ids);
  return 0;
}
