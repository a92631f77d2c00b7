// log_parser.h: Postfix log lines in, delivery events out. Pure code, no I/O.
//
// ParseLogLine understands one line in any of the formats Postfix writes: classic syslog
// ("Nov 29 17:09:53 host postfix/smtp[123]: ..."), RFC 3339 timestamps
// ("2026-11-29T17:09:53.123456+00:00 host postfix/smtp[123]: ..."), and postlog files. Any
// syslog_name ("postfix", "postfix-tb", "postfix/submission") is accepted. Short and long queue
// ids are both recognised.
//
// LogCorrelator keeps what earlier lines said about a queue id (qmgr from=, size, nrcpt;
// cleanup message-id; bounce "sender non-delivery notification: ID") and emits one
// DeliveryEvent per final or deferred delivery (status=sent|deferred|bounced|expired, and
// "status=expired, returned to sender" for each recipient still pending). State for a queue id
// is dropped on "removed", so memory stays flat in the log's size. Garbage or truncated lines
// are skipped and counted, never fatal.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "classifier/result.h"
#include "classifier/rules.h"

namespace bounced {

// A line longer than this is skipped and counted as garbage.
inline constexpr size_t kMaxLogLineBytes = 64 * 1024;

struct DeliveryEvent {
  std::string queue_id;
  std::string time;        // as written in the log, normalised to RFC 3339 when possible
  int64_t unix_time = 0;   // seconds since the epoch (classic syslog: year inferred)
  std::string sender;      // from qmgr from=<>; "" for the null sender
  std::string message_id;  // from cleanup message-id=
  std::string recipient;   // to=<...>
  std::string orig_recipient;  // orig_to=<...>, if any
  std::string log_status;  // sent, deferred, bounced, expired
  std::string dsn;         // dsn=5.7.1
  std::string relay;       // relay=host[addr]:port
  std::string program;     // postfix/smtp, postfix/error, ...
  std::string bounce_queue_id;  // the DSN Postfix generated for this message, if known yet
  Result result;           // classification of the reply text
};

struct LogStats {
  uint64_t lines = 0;
  uint64_t postfix_lines = 0;
  uint64_t events = 0;
  uint64_t skipped_garbage = 0;   // not a syslog line at all, or truncated
  uint64_t skipped_too_long = 0;
  uint64_t tracked_queue_ids = 0;  // currently held in memory
};

class LogCorrelator {
 public:
  using Sink = std::function<void(const DeliveryEvent&)>;
  LogCorrelator(std::shared_ptr<const RuleSet> rules, Sink sink);
  ~LogCorrelator();

  // Feeds one line (without its newline). Calls the sink zero or more times.
  void Feed(std::string_view line);
  const LogStats& stats() const;
  // The year assumed for classic syslog timestamps (default: the current year).
  void set_year(int year);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bounced
