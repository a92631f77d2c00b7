// config.cc: parses and validates bounced.toml (see config.h). Reads: the config file only.
#include "daemon/config.h"

#include <sys/stat.h>
#include <toml++/toml.h>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "classifier/result.h"
#include "daemon/socketmap.h"

namespace bounced {

std::string ConfigError(std::string_view file, const toml::node* node, std::string_view key,
                        std::string_view why) {
  std::string where(file);
  if (node != nullptr && node->source().begin.line != 0) {
    // Appended in two steps: GCC 12 at -O3 warns (-Wrestrict, a false positive) about
    // ":" + std::to_string(...).
    where += ':';
    where += std::to_string(node->source().begin.line);
  }
  return where + ": " + std::string(key) + ": " + std::string(why);
}

namespace {

// Collects the first error with its location; later checks are skipped once one failed.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

  void Fail(const toml::node* node, std::string_view key, std::string_view reason) {
    if (failed()) return;
    error_ = ConfigError(file_, node, key, reason);
  }

  // Refuses keys of `table` not in `allowed`.
  void CheckKeys(const toml::table& table, std::string_view prefix,
                 std::initializer_list<std::string_view> allowed) {
    for (const auto& [k, v] : table) {
      bool known = false;
      for (auto a : allowed) known = known || a == k.str();
      if (!known) {
        Fail(&v, Join(prefix, k.str()), "unknown key (known: " + JoinList(allowed) + ")");
      }
    }
  }

  const toml::table* Table(const toml::table& parent, std::string_view prefix,
                           std::string_view key) {
    const toml::node* n = parent.get(key);
    if (n == nullptr) return nullptr;
    if (!n->is_table()) {
      Fail(n, Join(prefix, key), "must be a table");
      return nullptr;
    }
    return n->as_table();
  }

  void String(const toml::table& t, std::string_view prefix, std::string_view key,
              std::string* out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) return;
    if (!n->is_string()) return Fail(n, Join(prefix, key), "must be a string");
    *out = n->as_string()->get();
  }

  void Bool(const toml::table& t, std::string_view prefix, std::string_view key, bool* out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) return;
    if (!n->is_boolean()) return Fail(n, Join(prefix, key), "must be true or false");
    *out = n->as_boolean()->get();
  }

  template <typename Int>
  void Integer(const toml::table& t, std::string_view prefix, std::string_view key, Int* out,
               int64_t min, int64_t max) {
    const toml::node* n = t.get(key);
    if (n == nullptr) return;
    if (!n->is_integer()) return Fail(n, Join(prefix, key), "must be an integer");
    int64_t v = n->as_integer()->get();
    if (v < min || v > max) {
      return Fail(n, Join(prefix, key),
                  "must be between " + std::to_string(min) + " and " + std::to_string(max));
    }
    *out = static_cast<Int>(v);
  }

  void StringArray(const toml::table& t, std::string_view prefix, std::string_view key,
                   std::vector<std::string>* out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) return;
    if (!n->is_array()) return Fail(n, Join(prefix, key), "must be an array of strings");
    std::vector<std::string> values;
    for (const auto& e : *n->as_array()) {
      if (!e.is_string()) return Fail(&e, Join(prefix, key), "must be an array of strings");
      values.push_back(e.as_string()->get());
    }
    *out = std::move(values);
  }

  // Durations: an integer number of seconds, or a string "never", "0", "500ms", "30s", "10m",
  // "12h", "90d", "2w". Result in milliseconds; "never" and 0 give 0.
  void Duration(const toml::table& t, std::string_view prefix, std::string_view key,
                int64_t* out_ms, bool allow_never) {
    const toml::node* n = t.get(key);
    if (n == nullptr) return;
    std::string full = Join(prefix, key);
    if (n->is_integer()) {
      int64_t v = n->as_integer()->get();
      if (v < 0 || v > int64_t{100} * 365 * 86400) return Fail(n, full, "out of range");
      if (v == 0 && !allow_never) return Fail(n, full, "must be more than 0");
      *out_ms = v * 1000;
      return;
    }
    if (!n->is_string()) {
      return Fail(n, full, "must be a duration like \"30s\", \"12h\", \"90d\" or \"never\"");
    }
    std::string s = n->as_string()->get();
    if (s == "never") {
      if (!allow_never) return Fail(n, full, "\"never\" is not allowed here");
      *out_ms = 0;
      return;
    }
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    std::string_view unit(p, s.data() + s.size() - p);
    int64_t mult = 0;
    if (unit == "ms")
      mult = 1;
    else if (unit == "s" || unit.empty())
      mult = 1000;
    else if (unit == "m")
      mult = 60'000;
    else if (unit == "h")
      mult = 3'600'000;
    else if (unit == "d")
      mult = 86'400'000;
    else if (unit == "w")
      mult = 7 * 86'400'000LL;
    if (ec != std::errc() || p == s.data() || mult == 0 || v < 0 ||
        v > int64_t{100} * 365 * 86'400'000 / mult) {
      return Fail(n, full,
                  "bad duration \"" + s +
                      "\" (use e.g. \"500ms\", \"30s\", \"10m\", \"12h\", "
                      "\"90d\", \"2w\"" +
                      (allow_never ? " or \"never\")" : ")"));
    }
    if (v == 0 && !allow_never) return Fail(n, full, "must be more than 0");
    *out_ms = v * mult;
  }

  void Mode(const toml::table& t, std::string_view prefix, std::string_view key, uint32_t* out) {
    const toml::node* n = t.get(key);
    if (n == nullptr) return;
    std::string full = Join(prefix, key);
    int64_t v = -1;
    if (n->is_integer()) {
      v = n->as_integer()->get();
    } else if (n->is_string()) {
      const std::string& s = n->as_string()->get();
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 8);
      if (ec != std::errc() || p != s.data() + s.size()) v = -1;
    }
    if (v < 0 || v > 0777) return Fail(n, full, "must be a file mode like \"0660\" or 0o660");
    *out = static_cast<uint32_t>(v);
  }

  static std::string Join(std::string_view prefix, std::string_view key) {
    return prefix.empty() ? std::string(key) : std::string(prefix) + "." + std::string(key);
  }
  static std::string JoinList(std::initializer_list<std::string_view> l) {
    std::string s;
    for (auto x : l) s += (s.empty() ? "" : ", ") + std::string(x);
    return s;
  }

 private:
  std::string file_;
  std::string error_;
};

std::chrono::milliseconds Ms(int64_t v) { return std::chrono::milliseconds(v); }

template <typename Enum>
void EnumValue(Reader& r, const toml::node* n, const std::string& key,
               const std::vector<std::pair<std::string_view, Enum>>& values, Enum* out) {
  if (n == nullptr) return;
  std::string s = n->is_string() ? n->as_string()->get() : "";
  std::string names;
  for (const auto& [name, v] : values) {
    if (name == s) {
      *out = v;
      return;
    }
    names += (names.empty() ? "\"" : ", \"") + std::string(name) + "\"";
  }
  r.Fail(n, key, "must be one of " + names);
}

const std::vector<std::pair<std::string_view, RcptAction>> kRcptActions = {
    {"reject", RcptAction::kReject},
    {"tempfail", RcptAction::kTempfail},
    {"log", RcptAction::kLog}};

void ParseMilter(Reader& r, const toml::table& t, MilterConfig* m) {
  r.CheckKeys(t, "milter",
              {"socket", "socket_mode", "socket_group", "action", "actions", "reject_reply",
               "tempfail_reply", "bounces", "quarantine_dir", "on_storage_error", "timeout",
               "max_bounce_bytes", "removed_header"});
  r.String(t, "milter", "socket", &m->socket);
  if (!m->socket.empty() && m->socket.rfind("unix:", 0) != 0 && m->socket.rfind("inet:", 0) != 0 &&
      m->socket.rfind("local:", 0) != 0) {
    r.Fail(t.get("socket"), "milter.socket",
           "must be \"\" (disabled), \"unix:/path\" or \"inet:PORT@127.0.0.1\"");
  }
  r.Mode(t, "milter", "socket_mode", &m->socket_mode);
  r.String(t, "milter", "socket_group", &m->socket_group);
  EnumValue(r, t.get("action"), "milter.action", kRcptActions, &m->default_action);
  if (const toml::table* actions = r.Table(t, "milter", "actions")) {
    for (const auto& [k, v] : *actions) {
      std::string key = "milter.actions." + std::string(k.str());
      std::optional<Category> c = CategoryFromName(k.str());
      if (!c) {
        r.Fail(&v, key, "unknown category");
        continue;
      }
      RcptAction a = m->default_action;
      EnumValue(r, &v, key, kRcptActions, &a);
      m->category_actions[static_cast<int>(*c)] = a;
    }
  }
  r.String(t, "milter", "reject_reply", &m->reject_reply);
  r.String(t, "milter", "tempfail_reply", &m->tempfail_reply);
  auto check_reply = [&](const std::string& msg, const char* key, char cls) {
    if (msg.size() < 4 || msg[0] != cls || !isdigit(static_cast<unsigned char>(msg[1])) ||
        !isdigit(static_cast<unsigned char>(msg[2])) || msg[3] != ' ') {
      r.Fail(t.get(key), std::string("milter.") + key,
             std::string("must start with a ") + cls + "xx SMTP reply code and a space");
    }
  };
  check_reply(m->reject_reply, "reject_reply", '5');
  check_reply(m->tempfail_reply, "tempfail_reply", '4');
  EnumValue<BounceDisposition>(r, t.get("bounces"), "milter.bounces",
                               {{"keep", BounceDisposition::kKeep},
                                {"discard", BounceDisposition::kDiscard},
                                {"quarantine", BounceDisposition::kQuarantine}},
                               &m->bounces);
  r.String(t, "milter", "quarantine_dir", &m->quarantine_dir);
  if (m->bounces == BounceDisposition::kQuarantine && m->quarantine_dir.empty()) {
    r.Fail(t.get("quarantine_dir"), "milter.quarantine_dir",
           "must be set when bounces = \"quarantine\"");
  }
  EnumValue<StorageErrorPolicy>(
      r, t.get("on_storage_error"), "milter.on_storage_error",
      {{"accept", StorageErrorPolicy::kAccept}, {"tempfail", StorageErrorPolicy::kTempfail}},
      &m->on_storage_error);
  int64_t timeout = m->callback_timeout.count();
  r.Duration(t, "milter", "timeout", &timeout, false);
  m->callback_timeout = Ms(timeout);
  r.Integer(t, "milter", "max_bounce_bytes", &m->max_bounce_bytes, 4096,
            static_cast<int64_t>(kMaxMessageBytes));
  r.String(t, "milter", "removed_header", &m->removed_header);
  // The checks StartMilter makes (socket spec, reply templates and their placeholders, header
  // name), here too: a value the milter would refuse must be refused by --check-config and at
  // start, not leave a running bounced whose milter never started.
  if (r.failed()) return;
  if (Status s = ValidateMilterConfig(*m); !s.ok()) {
    // "milter.KEY: reason": point at KEY's line.
    const std::string& msg = s.message();
    size_t colon = msg.find(": ");
    std::string key = colon == std::string::npos ? "milter" : msg.substr(0, colon);
    std::string reason = colon == std::string::npos ? msg : msg.substr(colon + 2);
    const toml::node* n = key.rfind("milter.", 0) == 0 ? t.get(key.substr(7)) : nullptr;
    r.Fail(n != nullptr ? n : &t, key, reason);
  }
}

void ParseTables(Reader& r, const toml::table& root, Config* c) {
  r.CheckKeys(root, "",
              {"storage", "input", "query", "socketmap", "rules", "policy", "milter", "verp", "log",
               "alerts", "report"});
  if (const toml::table* t = r.Table(root, "", "storage")) {
    r.CheckKeys(*t, "storage", {"path", "event_retention_days", "counter_retention_days"});
    r.String(*t, "storage", "path", &c->storage.path);
    if (c->storage.path.empty()) r.Fail(t->get("path"), "storage.path", "must not be empty");
    // Less than a month would starve the report's comparisons and trends.
    for (auto [key, days] : {std::pair{"event_retention_days", &c->storage.retention.event_days},
                             {"counter_retention_days", &c->storage.retention.counter_days}}) {
      r.Integer(*t, "storage", key, days, 0, 36500);
      if (*days != 0 && *days < 30) {
        r.Fail(t->get(key), std::string("storage.") + key,
               "must be 0 (keep for ever) or at least 30");
      }
    }
  }
  if (const toml::table* in = r.Table(root, "", "input")) {
    r.CheckKeys(*in, "input", {"log"});
    if (const toml::table* t = r.Table(*in, "input", "log")) {
      r.CheckKeys(*t, "input.log", {"path", "journal_files", "max_line_bytes", "poll_interval"});
      r.String(*t, "input.log", "path", &c->input.path);
      if (c->input.path.empty()) {
        r.Fail(t->get("path"), "input.log.path",
               "must be a file path, \"journal\" or \"-\" (standard input)");
      }
      r.StringArray(*t, "input.log", "journal_files", &c->input.journal_files);
      r.Integer(*t, "input.log", "max_line_bytes", &c->input.max_line_bytes, 256,
                int64_t{64} * 1024 * 1024);
      int64_t poll = c->input.poll_interval.count();
      r.Duration(*t, "input.log", "poll_interval", &poll, false);
      c->input.poll_interval = Ms(poll);
    }
  }
  if (const toml::table* t = r.Table(root, "", "query")) {
    r.CheckKeys(*t, "query",
                {"socket", "group", "mode", "max_request_bytes", "max_import_bytes",
                 "max_connections", "idle_timeout"});
    r.String(*t, "query", "socket", &c->query.socket);
    if (c->query.socket.empty()) r.Fail(t->get("socket"), "query.socket", "must not be empty");
    r.String(*t, "query", "group", &c->query.group);
    r.Mode(*t, "query", "mode", &c->query.mode);
    r.Integer(*t, "query", "max_request_bytes", &c->query.max_request_bytes, 64, int64_t{1} << 31);
    r.Integer(*t, "query", "max_import_bytes", &c->query.max_import_bytes, 1024, int64_t{1} << 40);
    r.Integer(*t, "query", "max_connections", &c->query.max_connections, 1, 100000);
    int64_t idle = c->query.idle_timeout.count();
    r.Duration(*t, "query", "idle_timeout", &idle, false);
    c->query.idle_timeout = Ms(idle);
  }
  if (const toml::table* t = r.Table(root, "", "socketmap")) {
    r.CheckKeys(
        *t, "socketmap",
        {"socket", "mode", "max_connections", "idle_timeout", "access_action", "transport_action"});
    r.String(*t, "socketmap", "socket", &c->socketmap.socket);
    r.Mode(*t, "socketmap", "mode", &c->socketmap.mode);
    r.Integer(*t, "socketmap", "max_connections", &c->socketmap.max_connections, 1, 100000);
    int64_t idle = c->socketmap.idle_timeout.count();
    r.Duration(*t, "socketmap", "idle_timeout", &idle, false);
    c->socketmap.idle_timeout = Ms(idle);
    r.String(*t, "socketmap", "access_action", &c->socketmap.access_action);
    r.String(*t, "socketmap", "transport_action", &c->socketmap.transport_action);
    // A template the socketmap would turn into an empty or malformed answer ("OK " and nothing,
    // which Postfix reads as OK) is refused here, on its line: before any lookup gets it.
    if (!r.failed()) {
      if (Status s = ValidateSocketmapConfig(c->socketmap); !s.ok()) {
        const std::string& msg = s.message();  // "socketmap.KEY: reason"
        const size_t colon = msg.find(": ");
        const std::string key = msg.substr(0, colon);
        const toml::node* n = t->get(key.substr(key.find('.') + 1));
        r.Fail(n != nullptr ? n : t, key, msg.substr(colon + 2));
      }
    }
  }
  if (const toml::table* t = r.Table(root, "", "rules")) {
    r.CheckKeys(*t, "rules", {"files"});
    r.StringArray(*t, "rules", "files", &c->rules.files);
  }
  if (const toml::table* t = r.Table(root, "", "policy")) {
    SuppressionPolicy& p = c->policy.suppression;
    r.CheckKeys(*t, "policy",
                {"hard_bounce_expiry", "soft_bounce_expiry", "complaint_expiry", "soft_threshold",
                 "soft_window_days", "soft_incident_gap", "count_deferrals", "complaints_suppress",
                 "complaint_report_only_types", "plus_extension", "recipient_delimiter",
                 "suppress_original_recipient"});
    // Kept in whole seconds: "500ms" would become 0, which means "never" for an expiry.
    auto seconds = [&](const char* key, int64_t* out_s, bool allow_never) {
      int64_t ms = *out_s * 1000;
      r.Duration(*t, "policy", key, &ms, allow_never);
      if (ms % 1000 != 0) {
        return r.Fail(t->get(key), std::string("policy.") + key, "must be whole seconds");
      }
      *out_s = ms / 1000;
    };
    seconds("hard_bounce_expiry", &p.hard_bounce_expiry_seconds, true);
    seconds("soft_bounce_expiry", &p.count_expiry_seconds, true);
    seconds("complaint_expiry", &p.complaint_expiry_seconds, true);
    seconds("soft_incident_gap", &p.incident_merge_seconds, false);
    r.Integer(*t, "policy", "soft_threshold", &p.count_threshold, 1, 1000);
    int days = static_cast<int>(p.count_min_span_seconds / 86400);
    r.Integer(*t, "policy", "soft_window_days", &days, 0, 3650);
    p.count_min_span_seconds = int64_t{days} * 86400;
    r.Bool(*t, "policy", "count_deferrals", &p.count_deferrals);
    r.Bool(*t, "policy", "complaints_suppress", &p.complaints_suppress);
    r.Bool(*t, "policy", "suppress_original_recipient", &p.suppress_original_recipient);
    r.StringArray(*t, "policy", "complaint_report_only_types", &p.complaint_report_only_types);
    // Compared with the provider code the classifier writes: lower-case, no blanks.
    for (std::string& type : p.complaint_report_only_types) {
      for (char& ch : type) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (type.empty() || type.find_first_of(" \t") != std::string::npos) {
        r.Fail(t->get("complaint_report_only_types"), "policy.complaint_report_only_types",
               "must be feedback types such as \"not-spam\" (non-empty, no blanks)");
        break;
      }
    }
    r.Bool(*t, "policy", "plus_extension", &c->policy.plus_extension);
    r.String(*t, "policy", "recipient_delimiter", &c->policy.recipient_delimiter);
    for (char ch : c->policy.recipient_delimiter) {
      auto u = static_cast<unsigned char>(ch);
      if (ch == '@' || isspace(u) || !isprint(u)) {
        r.Fail(t->get("recipient_delimiter"), "policy.recipient_delimiter",
               "must be printable characters other than '@' (Postfix's recipient_delimiter)");
        break;
      }
    }
  }
  if (const toml::table* t = r.Table(root, "", "milter")) ParseMilter(r, *t, &c->milter);
  if (const toml::table* t = r.Table(root, "", "verp")) {
    r.CheckKeys(*t, "verp", {"enabled", "delimiters", "prefixes", "domains"});
    r.Bool(*t, "verp", "enabled", &c->verp.enabled);
    r.String(*t, "verp", "delimiters", &c->verp.format.delimiters);
    r.StringArray(*t, "verp", "prefixes", &c->verp.format.prefixes);
    r.StringArray(*t, "verp", "domains", &c->verp.format.domains);
    if (!r.failed()) {
      if (Status s = CheckVerpFormat(c->verp.format); !s.ok()) {
        const std::string& msg = s.message();  // "KEY: reason"
        const size_t colon = msg.find(": ");
        const std::string key = msg.substr(0, colon);
        r.Fail(t->get(key) != nullptr ? t->get(key) : t, "verp." + key, msg.substr(colon + 2));
      }
    }
  }
  if (c->verp.enabled) c->milter.verp = c->verp.format;
  if (const toml::table* t = r.Table(root, "", "log")) {
    r.CheckKeys(*t, "log", {"level"});
    r.String(*t, "log", "level", &c->log.level);
    const std::string& l = c->log.level;
    if (l != "trace" && l != "debug" && l != "info" && l != "warn" && l != "error") {
      r.Fail(t->get("level"), "log.level", "must be trace, debug, info, warn or error");
    }
  }
}

}  // namespace

SuppressionPolicy PolicyConfig::Effective() const {
  SuppressionPolicy p = suppression;
  p.recipient_delimiters = plus_extension ? recipient_delimiter : "";
  return p;
}

Expected<Config> ParseConfig(std::string_view text, const std::string& name) {
  Config c;
  c.source = name;
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    return Status::Error(name + ":" + std::to_string(e.source().begin.line) + ": " +
                         std::string(e.description()));
  }
  Reader r(name);
  ParseTables(r, root, &c);
  if (r.failed()) return Status::Error(r.error());
  // [alerts] and [report] belong to the reports code, which checks its own keys (and words its
  // errors as the Reader does: file:line: section.key: reason).
  const toml::table* alerts = r.Table(root, "", "alerts");
  const toml::table* report = r.Table(root, "", "report");
  if (r.failed()) return Status::Error(r.error());
  Expected<AlertConfig> a = AlertConfigFromToml(alerts, name);
  if (!a) return a.status();
  c.alerts = std::move(*a);
  if (const int days = c.storage.retention.event_days;
      days != 0 && c.alerts.enabled &&
      c.alerts.thresholds.baseline_seconds >= int64_t{days} * 86400) {
    r.Fail(root.at_path("storage.event_retention_days").node(), "storage.event_retention_days",
           "must be more than [alerts] baseline_days (" +
               std::to_string(c.alerts.thresholds.baseline_seconds / 86400) +
               "): the alerts' baseline is read from the events");
    return Status::Error(r.error());
  }
  Expected<ReportConfig> rep = ReportConfigFromToml(report, name);
  if (!rep) return rep.status();
  c.report = std::move(*rep);
  return c;
}

Expected<Config> LoadConfig(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) {
    Config c;
    c.source = "(embedded defaults; " + path + " does not exist)";
    return c;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(path + ": cannot read: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::Error(path + ": read error: " + std::strerror(errno));
  return ParseConfig(ss.str(), path);
}

std::string DefaultConfigToml() {
  return R"toml(# bounced.toml: every key is optional; these are the defaults.
[storage]
path = "/var/lib/bounced/bounced.db"
event_retention_days = 0       # delivery events older than this many days are deleted; 0 = keep
counter_retention_days = 0     # the same for the daily counters (report totals and trends)

[input.log]
path = "/var/log/mail.log"     # or "journal" (journald, postfix/* entries) or "-" (stdin)
journal_files = []             # with path = "journal": read these files, not the system journal
max_line_bytes = 65536         # longer lines are skipped with a counted warning
poll_interval = "250ms"        # how often a file at its end or missing is looked at again

[query]
socket = "/run/bounced/query.sock"   # bouncectl
group = "bounced"                    # who may write (suppress, import, ...); root always may
mode = "0660"
max_request_bytes = 67108864         # one request line (a single-request import)
max_import_bytes = 1073741824        # one chunked import in total (bouncectl import)
max_connections = 64
idle_timeout = "60s"

[socketmap]
socket = "/run/bounced/socketmap.sock"   # Postfix lookups; "" disables
mode = "0666"
max_connections = 256
idle_timeout = "120s"
access_action = "550 5.1.1 <{address}>: recipient suppressed after {reason} on {date} ({category})"
transport_action = "error:5.1.1 <{address}>: recipient suppressed after {reason} on {date} ({category})"

[rules]
files = ["/usr/share/bounced/rules/default.toml", "/etc/bounced/rules.d/*.toml"]

[policy]
hard_bounce_expiry = "never"   # user_unknown, domain_unknown, mailbox_moved, not_accept
soft_bounce_expiry = "never"   # mailbox_disabled, mailbox_full (after soft_threshold incidents)
complaint_expiry = "never"
soft_threshold = 3             # incidents ...
soft_window_days = 7           # ... spread over at least this many days
soft_incident_gap = "1h"       # failures closer than this to an incident's start are part of it
count_deferrals = false        # whether 4xx mailbox_full/disabled deferrals count as incidents
complaints_suppress = true
complaint_report_only_types = ["not-spam", "auth-failure"]   # feedback reports that never suppress
plus_extension = true          # user+ext@example.com is looked up as user@example.com
recipient_delimiter = "+"
suppress_original_recipient = false   # a forwarded address's failure suppresses the address sent to too

[milter]
socket = ""                    # "unix:/run/bounced/milter.sock" or "inet:8895@127.0.0.1"
socket_mode = "0660"
socket_group = ""
action = "reject"              # reject | tempfail | log, for every category ...
# actions = { mailbox_full = "tempfail" }   # ... or per category
reject_reply = "550 5.1.1 <{addr}>: recipient suppressed since {since} ({category}); not sent"
tempfail_reply = "450 4.2.1 <{addr}>: recipient suppressed since {since} ({category}); try later"
bounces = "keep"               # keep | discard | quarantine
quarantine_dir = "/var/lib/bounced/quarantine"
on_storage_error = "accept"    # accept | tempfail
timeout = "2s"
max_bounce_bytes = 1048576
removed_header = "X-Bounced-Suppressed"

[verp]
enabled = false                # bounces to a VERP return path are about the recipient it encodes
delimiters = "+="              # as Postfix's default_verp_delimiters: bounces+alice=example.com@...
prefixes = []                  # local parts before the first delimiter ("bounces", "*-bounces"); [] = any
domains = []                   # return-path domains ("news.example.org", "*.example.org"); [] = any

[log]
level = "info"
)toml";
}

}  // namespace bounced
