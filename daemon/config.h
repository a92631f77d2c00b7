// config.h: bounced's configuration (bounced.toml) as one value.
//
// Reads a TOML file (toml++) or, when the file is missing, the embedded defaults: every key has
// a working default. Unknown keys, wrong types and bad values are refused with the file, the
// line, the key and the reason ("bounced.toml:12: policy.soft_threshold: must be >= 1").
// Nothing here opens sockets or files other than the config file itself; the daemon applies it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "classifier/verp.h"
#include "common/status.h"
#include "daemon/alert_monitor.h"
#include "daemon/report_config.h"
#include "milter/milter.h"
#include "storage/store.h"

namespace bounced {

inline constexpr const char* kDefaultConfigPath = "/etc/bounced/bounced.toml";
inline constexpr const char* kDefaultRulesFile = "/usr/share/bounced/rules/default.toml";

// How every configuration error reads: "FILE:LINE: KEY: WHY" ("bounced.toml:12: alerts.factor:
// must be ..."), without the line when `node` is null or has none.
std::string ConfigError(std::string_view file, const toml::node* node, std::string_view key,
                        std::string_view why);

struct StorageConfig {
  std::string path = "/var/lib/bounced/bounced.db";
  // event_retention_days, counter_retention_days: 0 (keep for ever) or 30 and more. Reloaded
  // on SIGHUP. The events must outlast [alerts] baseline_days, whose baseline they give.
  RetentionPolicy retention;
};

struct LogInputConfig {
  // A file path, "journal" (journald, Postfix's entries) or "-" (standard input).
  std::string path = "/var/log/mail.log";
  // With path = "journal": read these journal files instead of the system journal (tests,
  // or a journal copied from another host). Empty = the local system journal.
  std::vector<std::string> journal_files;
  // A line longer than this is skipped with a counted warning (never buffered whole).
  size_t max_line_bytes = 64 * 1024;
  // How often a file at its end (or missing, or unreadable) is looked at again.
  std::chrono::milliseconds poll_interval{250};
};

struct QuerySocketConfig {
  std::string socket = "/run/bounced/query.sock";
  // Members of this group (and root) may send write commands; "" = root only.
  std::string group = "bounced";
  uint32_t mode = 0660;
  size_t max_request_bytes = 64 * 1024 * 1024;  // one request line (a single-request import)
  // The most data one chunked import may send in total: bounced holds it until the last chunk,
  // then commits all of it or nothing.
  size_t max_import_bytes = size_t{1} << 30;
  size_t max_connections = 64;
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
};

struct SocketmapConfig {
  std::string socket = "/run/bounced/socketmap.sock";  // "" disables
  uint32_t mode = 0666;  // Postfix's processes connect as the postfix user
  size_t max_connections = 256;
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(120)};
  // access(5) action returned by map "recipient_access"; {address}, {date} (YYYY-MM-DD),
  // {reason} (hard bounce, repeated failures, complaint, manual request) and {category}.
  std::string access_action =
      "550 5.1.1 <{address}>: recipient suppressed after {reason} on {date} ({category})";
  // transport(5) result returned by map "transport".
  std::string transport_action =
      "error:5.1.1 <{address}>: recipient suppressed after {reason} on {date} ({category})";
};

struct RulesConfig {
  std::vector<std::string> files = {kDefaultRulesFile, "/etc/bounced/rules.d/*.toml"};
};

// [policy] maps onto storage's SuppressionPolicy; these two keys build its delimiters.
struct PolicyConfig {
  SuppressionPolicy suppression;  // thresholds and expiries, seconds; 0 = never expires
  bool plus_extension = true;     // user+ext@d looks up user@d
  std::string recipient_delimiter = "+";
  // The policy storage runs, with recipient_delimiters derived from the two keys above.
  SuppressionPolicy Effective() const;
};

// [verp]: bounces that come back to a VERP return path (classifier/verp.h) are about the
// recipient it encodes: the milter reads it from the bounce's envelope recipient, ingest-dsn
// from the request or the message's X-Original-To, Delivered-To or To.
struct VerpConfig {
  bool enabled = false;
  VerpFormat format;  // delimiters, prefixes, domains
};

struct LogConfig {
  std::string level = "info";  // trace, debug, info, warn, error
};

struct Config {
  std::string source;  // the file read, or "(embedded defaults)"
  StorageConfig storage;
  LogInputConfig input;
  QuerySocketConfig query;
  SocketmapConfig socketmap;
  RulesConfig rules;
  PolicyConfig policy;
  MilterConfig milter;
  VerpConfig verp;
  LogConfig log;
  AlertConfig alerts;   // [alerts], parsed by alert_monitor.h
  ReportConfig report;  // [report], parsed by report_config.h
};

// Parses TOML text; `name` is used in error messages.
Expected<Config> ParseConfig(std::string_view text, const std::string& name);
// Reads a file; a missing file yields the embedded defaults (source says so). Unreadable or
// invalid files are errors.
Expected<Config> LoadConfig(const std::string& path);
// The default configuration as a commented TOML file (what `bounced --print-default-config` shows).
std::string DefaultConfigToml();

}  // namespace bounced
