// alert_detector.h: spots sudden jumps in sender-side rejections (iCloud CS01, Gmail 5.7.26 ...),
// and in hard bounces at one recipient domain (a list gone stale, or the domain's own failure
// read as unknown users: a DNS outage, a mail migration, which suppress addresses that exist).
//
// Pure code: no clock, no I/O, no threads. It is fed sender-side rejection events with their own
// timestamps (log time, seconds since the epoch) and answers with incidents. For each key
// (provider + provider code, or provider + category when there is no code; for hard bounces, the
// recipient domain, with hard_bounce_min_count for min_count) it keeps per-minute
// counts for the sliding window plus the baseline period before it. An incident opens when the
// count inside the window reaches
//     threshold = max(min_count, factor * expected)
// where `expected` is the baseline's average count per window length (so a provider that always
// sends 50 CS01 an hour is not news, and a single bounce never is: min_count). One incident per
// burst: it stays open, absorbing further events, until the window count falls below half the
// current threshold (the burst stopped, or the baseline caught up with a lasting change); only
// then can a new incident for that key open. With no history (a fresh install,
// or a restart without seeding from the database) the baseline is zero and min_count decides.
//
// Events may arrive slightly out of order (several inputs); an event older than the newest one
// seen minus the window still counts toward the baseline. Not thread-safe: AlertMonitor
// (alert_monitor.h) wraps it for the daemon; the report replays stored events through it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace bounced {

struct AlertThresholds {
  int64_t window_seconds = 3600;             // the sliding window a burst is counted in
  int64_t baseline_seconds = 7 * 24 * 3600;  // history before the window that sets "normal"
  double factor = 3.0;                       // how far above normal counts as a jump
  int64_t min_count = 10;                    // never an incident below this many in a window
  int64_t hard_bounce_min_count = 25;        // the same for hard bounces; 0: not watched
  size_t max_recent = 50;                    // closed incidents remembered for stats/report
};

// One sender-side rejection as the detector needs it.
struct RejectionEvent {
  int64_t unix_time = 0;
  std::string provider;          // "icloud", ... or "" (grouped as "other")
  std::string provider_code;     // "CS01", ... or ""
  std::string status;            // "5.7.1", ... or ""
  std::string category;          // "policy_rejection", ...
  std::string recipient_domain;  // for the incident's details
  std::string sender_domain;     // ours: SenderDomainOf (store.h) the envelope sender; "" = none
  std::string diagnostic;        // remote reply; the first one of a burst is kept as a sample
  // A recipient's hard bounce (a hard_bounce category, bounced: what suppresses at once), not
  // a sender-side rejection: counted per recipient domain.
  bool hard_bounce = false;
};

// Incident kinds. A hard-bounce incident's provider is the recipient domain, its code
// kHardBounceCode, so that every place that shows an incident reads it as it is.
inline constexpr const char* kIncidentSenderSide = "sender_side";
inline constexpr const char* kIncidentHardBounces = "hard_bounces";
inline constexpr const char* kHardBounceCode = "hard bounces";

struct Incident {
  uint64_t id = 0;                         // 1, 2, ... in opening order within one detector
  std::string kind = kIncidentSenderSide;  // or kIncidentHardBounces
  // "icloud"; "other" when the provider is unknown; a hard-bounce incident's recipient domain
  std::string provider;
  std::string code;        // provider code, else enhanced status, else category
  std::string category;    // category of the event that opened it
  int64_t opened = 0;      // unix time of the event that crossed the threshold
  int64_t last_event = 0;  // unix time of the newest event counted in it
  int64_t closed = 0;      // 0 while open
  int64_t window_seconds = 0;
  int64_t count_at_open = 0;       // events in the window when it opened
  int64_t peak_count = 0;          // highest window count while open
  int64_t total_events = 0;        // events absorbed while open
  double expected_per_window = 0;  // the baseline's average per window at opening
  double threshold = 0;
  std::string sample;                      // one remote reply from the burst
  std::map<std::string, int64_t> domains;  // recipient domains hit while open
  // Our sending domains (envelope sender; "<>": the null sender) of its events, at most
  // kMaxIncidentSenderDomains, the others counted as "other": which of our brands it is about.
  std::map<std::string, int64_t> sender_domains;

  bool open() const { return closed == 0; }
};

inline constexpr size_t kMaxIncidentSenderDomains = 100;

// {"id","kind","provider","code","category","opened","last_event","closed","open","window_seconds",
//  "count_at_open","peak_count","total_events","expected_per_window","threshold","sample",
//  "domains":{domain: count},"sender_domains":{domain: count}}; times as RFC 3339 UTC strings,
//  "closed" null while open. A hard-bounce incident also has "remedy": the bouncectl command
//  that shows (as a dry run) what to lift if the domain failed rather than its addresses.
nlohmann::json ToJson(const Incident& incident);
// One line for logs: "sender-side rejection spike: icloud CS01 ...", or "hard-bounce spike at
// example.net ..." with what to do when the domain failed rather than its addresses.
std::string DescribeIncident(const Incident& incident);
// Seconds since the epoch as "2026-11-29T17:09:53Z".
std::string FormatUtc(int64_t unix_time);

class SpikeDetector {
 public:
  explicit SpikeDetector(AlertThresholds thresholds);

  // Counts one event. Returns the incident when this event opens one (the caller logs it and
  // runs the alert command); nullopt otherwise. Closes incidents whose burst is over first.
  std::optional<Incident> Observe(const RejectionEvent& event);
  // Lets time pass without events (call e.g. once a minute with the current time): closes
  // incidents whose window count fell back and returns them.
  std::vector<Incident> Advance(int64_t now);

  std::vector<Incident> Open() const;
  // Closed incidents, newest last, at most thresholds.max_recent.
  const std::deque<Incident>& Closed() const { return closed_; }
  const AlertThresholds& thresholds() const { return thresholds_; }

 private:
  struct KeyState {
    bool hard_bounce = false;            // a recipient domain's hard bounces
    std::map<int64_t, int64_t> minutes;  // minute index -> events in it
    struct Recent {
      int64_t time;
      std::string domain;         // recipient's
      std::string sender_domain;  // ours
    };
    std::deque<Recent> recent;  // inside the window
    std::optional<Incident> incident;
  };
  int64_t MinCount(const KeyState& s) const {
    return s.hard_bounce ? thresholds_.hard_bounce_min_count : thresholds_.min_count;
  }
  int64_t WindowCount(const KeyState& s, int64_t now) const;
  double ExpectedPerWindow(const KeyState& s, int64_t now) const;
  void Prune(KeyState& s, int64_t now);
  std::optional<Incident> MaybeClose(KeyState& s, int64_t now);

  AlertThresholds thresholds_;
  std::map<std::string, KeyState> keys_;  // "provider\x1f" "code"
  int64_t first_seen_ = 0;                // earliest event time: how much baseline exists
  int64_t newest_ = 0;
  uint64_t next_id_ = 1;
  std::deque<Incident> closed_;
};

}  // namespace bounced
