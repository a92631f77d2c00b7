// metrics.h: bounced's counters and gauges in the Prometheus text exposition format (0.0.4),
// for `bouncectl metrics`: node_exporter's textfile collector reads the file it writes
// (systemd/bounced-metrics.timer), and any scraper that can run a command can use its output.
//
// Contract:
// - Names are stable (tools and dashboards rely on them): bounced_* with Prometheus's suffixes
//   (_total for counters, _seconds, _bytes). Counters count from bounced's start (a restart
//   resets them, which Prometheus's rate() expects); gauges are the present value.
// - EventCounter counts the events the store committed as counted (a DSN recorded before, or the
//   DSN copy of a logged bounce, is not counted twice), by source, category and provider. The
//   label sets are bounded: categories and sources are fixed lists, providers come from the
//   rules; past kMaxEventSeries distinct sets, new ones are counted under provider="other".
// - RenderMetrics is pure: the daemon's state as JSON in (see its comment), text out. Label
//   values are escaped as the format requires; the output always ends with a newline.
// - Thread safety: EventCounter may be used from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/services.h"

namespace bounced {

inline constexpr size_t kMaxEventSeries = 5000;

class EventCounter final : public CommitObserver {
 public:
  void OnCommitted(const std::vector<Event>& events) override;

  // {"source", "category", "provider", "count"} objects, in the order of the sources and categories
  // enums, providers by name; provider "" (none known) is "unknown".
  nlohmann::json ToJson() const;

 private:
  mutable std::mutex mu_;
  // (source, category) -> provider -> events; looked up without building a string.
  std::map<std::pair<EventSource, Category>, std::map<std::string, int64_t, std::less<>>> counts_;
  size_t series_ = 0;
};

// The text for the daemon's state `m`, whose members are all optional (a part that is absent
// gives no lines):
//   "version" (string), "start_time" (unix seconds), "storage_available" (bool),
//   "suppressed" and "view_memory_bytes" (the in-memory suppression view),
//   "suppressions_added" ([{"source", "category", "count"}]: Store::SuppressionsAdded), "rules"
//   (count), "alerts_open" (open policy-rejection alerts), "events" (EventCounter::ToJson()),
//   "input", "query_socket", "socketmap", "milter": the objects of the `health` reply.
std::string RenderMetrics(const nlohmann::json& m);

// What `bouncectl metrics` writes when it cannot reach bounced: bounced_up 0 (and its build
// info), so that a stale file does not hide that the daemon is away.
std::string RenderDownMetrics(std::string_view version);

}  // namespace bounced
