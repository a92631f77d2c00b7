// alert_monitor.h: the daemon's side of alerts: sender-side rejection spikes, and hard-bounce
// spikes at one recipient domain.
//
// Wraps a SpikeDetector (alert_detector.h) for the running bounced: thread-safe, fed every stored
// delivery event, logs one warning per incident (spdlog), keeps open and recent incidents for
// `bouncectl stats`, and runs the configured [alerts] command with the incident as JSON on
// stdin (posix_spawn of /bin/sh -c, own process group, killed after command_timeout_seconds).
//
// Configuration, section [alerts] of bounced.toml (every key optional):
//   enabled = true
//   window_minutes = 60          # sliding window a burst is counted in
//   baseline_days = 7            # history that defines "normal"
//   factor = 3.0                 # a jump is >= factor x normal ...
//   min_count = 10               # ... and at least this many in the window
//   hard_bounce_min_count = 25   # the same for one recipient domain's hard bounces (0: off)
//   command = ""                 # e.g. "/usr/local/bin/page-oncall"; "" runs nothing
//   command_timeout_seconds = 30
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>
#include <nlohmann/json.hpp>

#include "classifier/result.h"
#include "common/status.h"
#include "daemon/alert_detector.h"

namespace bounced {

struct AlertConfig {
  bool enabled = true;
  AlertThresholds thresholds;
  std::string command;
  int64_t command_timeout_seconds = 30;
};

// Reads the [alerts] table (nullptr: all defaults). Unknown keys and bad values are errors
// naming the file, the line and the key, as for every other section of bounced.toml:
// "bounced.toml:12: alerts.factor: must be a number from 1 to 1000".
Expected<AlertConfig> AlertConfigFromToml(const toml::table* alerts, std::string_view file);

// True for the events the detector counts: failures whose fault is the sender's (policy,
// reputation, authentication, content, configuration), and a named provider's throttling
// (Result::sender_side).
bool IsSenderSideRejection(const Result& result);
// The detector's view of a stored event.
RejectionEvent ToRejectionEvent(const Result& result, int64_t unix_time,
                                std::string_view sender = {});

// Runs `command` through /bin/sh -c with `stdin_text` on its standard input; waits at most
// timeout_seconds, then kills its process group. Returns its exit status, or an error.
Status RunAlertCommand(const std::string& command, const std::string& stdin_text,
                       int64_t timeout_seconds);

class AlertMonitor {
 public:
  explicit AlertMonitor(AlertConfig config);
  ~AlertMonitor();  // waits for alert commands still running (bounded by their timeout)
  AlertMonitor(const AlertMonitor&) = delete;
  AlertMonitor& operator=(const AlertMonitor&) = delete;

  // Call once for every delivery event stored (any outcome, any source), with the event's own
  // time, envelope sender ("" for the null sender or one not known) and log status (sent,
  // bounced, ...). Cheap for events that are neither sender-side rejections nor hard bounces
  // (IsHardBounce, storage/policy.h).
  // Thread-safe.
  void OnEvent(const Result& result, int64_t unix_time, std::string_view sender = {},
               std::string_view log_status = {});
  // At start: replays stored sender-side rejections of the baseline period (oldest first) so
  // a restart neither forgets "normal" nor re-announces an incident. Logs and runs nothing.
  void Seed(const RejectionEvent& event);
  // Call about once a minute with the current time, so incidents end when the burst stops.
  void Tick(int64_t now);
  // SIGHUP: new thresholds and command. The history is kept when the thresholds are unchanged.
  void Reconfigure(AlertConfig config);

  // For the `stats` reply: {"enabled", "window_seconds", "baseline_seconds", "factor",
  // "min_count", "hard_bounce_min_count", "open": [incident...], "recent": [incident...]}
  // (incident: alert_detector.h).
  nlohmann::json ToJson() const;
  // Incidents opened so far (for tests and health).
  uint64_t incidents_opened() const;

 private:
  void Opened(const Incident& incident);

  mutable std::mutex mu_;
  AlertConfig config_;
  std::unique_ptr<SpikeDetector> detector_;
  uint64_t opened_ = 0;
  struct Running;  // alert commands still running, shared with their threads
  std::shared_ptr<Running> running_;
};

}  // namespace bounced
