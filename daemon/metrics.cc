// metrics.cc: Prometheus text exposition of bounced's state (see metrics.h).
#include "daemon/metrics.h"

#include <charconv>
#include <initializer_list>
#include <utility>

namespace bounced {

void EventCounter::OnCommitted(const std::vector<Event>& events) {
  std::lock_guard lock(mu_);
  for (const Event& e : events) {
    auto& by_provider = counts_[{e.source, e.result.category}];
    std::string_view provider = e.result.provider;
    if (provider.empty()) provider = "unknown";
    auto it = by_provider.find(provider);
    if (it == by_provider.end()) {
      if (series_ >= kMaxEventSeries) provider = "other";
      it = by_provider.find(provider);
      if (it == by_provider.end()) {
        it = by_provider.emplace(std::string(provider), 0).first;
        ++series_;
      }
    }
    ++it->second;
  }
}

nlohmann::json EventCounter::ToJson() const {
  std::lock_guard lock(mu_);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [key, by_provider] : counts_) {
    for (const auto& [provider, n] : by_provider) {
      out.push_back({{"source", ToString(key.first)},
                     {"category", ToString(key.second)},
                     {"provider", provider},
                     {"count", n}});
    }
  }
  return out;
}

namespace {

using nlohmann::json;
using Labels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

// A label value as the format wants it: backslash, double quote and line feed escaped.
void AppendLabelValue(std::string* out, std::string_view v) {
  for (char c : v) {
    if (c == '\\') {
      *out += "\\\\";
    } else if (c == '"') {
      *out += "\\\"";
    } else if (c == '\n') {
      *out += "\\n";
    } else {
      *out += c;
    }
  }
}

// A JSON number or boolean as a sample value; false when `v` is neither.
bool AppendValue(std::string* out, const json& v) {
  char buf[32];
  std::to_chars_result r{};
  if (v.is_boolean()) {
    *out += v.get<bool>() ? '1' : '0';
    return true;
  }
  if (v.is_number_unsigned()) {
    r = std::to_chars(buf, buf + sizeof(buf), v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    r = std::to_chars(buf, buf + sizeof(buf), v.get<int64_t>());
  } else if (v.is_number_float()) {
    r = std::to_chars(buf, buf + sizeof(buf), v.get<double>());
  } else {
    return false;
  }
  out->append(buf, r.ptr);
  return true;
}

// Collects samples by metric family and writes each family once, in the order of its first
// sample: its HELP and TYPE lines, then all its samples (the format wants a family's samples
// together).
class Exposition {
 public:
  // One sample of family `name`; nothing when `value` is not a number or boolean.
  void Sample(std::string_view name, std::string_view type, std::string_view help, Labels labels,
              const json& value) {
    std::string line(name);
    if (labels.size() != 0) {
      line += '{';
      bool first = true;
      for (const auto& [k, v] : labels) {
        if (!first) line += ',';
        first = false;
        line.append(k);
        line += "=\"";
        AppendLabelValue(&line, v);
        line += '"';
      }
      line += '}';
    }
    line += ' ';
    if (!AppendValue(&line, value)) return;
    line += '\n';
    auto [it, added] = index_.try_emplace(std::string(name), families_.size());
    if (added) {
      families_.push_back("# HELP " + std::string(name) + " " + std::string(help) + "\n# TYPE " +
                          std::string(name) + " " + std::string(type) + "\n");
    }
    families_[it->second] += line;
  }

  // Samples of `object`'s members: each {member, metric name, type, help} that it holds.
  struct Field {
    const char* member;
    const char* name;
    const char* type;
    const char* help;
  };
  void Fields(const json& object, Labels labels, std::initializer_list<Field> fields) {
    if (!object.is_object()) return;
    for (const Field& f : fields) {
      auto it = object.find(f.member);
      if (it != object.end()) Sample(f.name, f.type, f.help, labels, *it);
    }
  }

  std::string Take() const {
    std::string text;
    for (const std::string& f : families_) text += f;
    return text;
  }

 private:
  std::vector<std::string> families_;                 // HELP, TYPE and samples of each family
  std::map<std::string, size_t, std::less<>> index_;  // family name -> families_ index
};

const json& Member(const json& m, const char* key) {
  static const json kNull;
  if (!m.is_object()) return kNull;
  auto it = m.find(key);
  return it == m.end() ? kNull : *it;
}

std::string StringMember(const json& m, const char* key) {
  const json& v = Member(m, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

void BuildInfo(Exposition& x, std::string_view version) {
  x.Sample("bounced_build_info", "gauge", "bounced's version (always 1).", {{"version", version}},
           1);
}

void SocketStats(Exposition& x, const json& s, std::string_view socket) {
  if (!Member(s, "enabled").is_boolean() || !Member(s, "enabled").get<bool>()) return;
  x.Fields(s, {{"socket", socket}},
           {{"accepted", "bounced_socket_connections_total", "counter",
             "Connections accepted on a bounced socket."},
            {"active", "bounced_socket_active_connections", "gauge",
             "Connections open now on a bounced socket."},
            {"refused_busy", "bounced_socket_refused_busy_total", "counter",
             "Connections refused because max_connections were open."},
            {"idle_closed", "bounced_socket_idle_closed_total", "counter",
             "Connections closed after idle_timeout without a request."}});
}

}  // namespace

std::string RenderMetrics(const json& m) {
  Exposition x;
  x.Sample("bounced_up", "gauge", "Whether bounced answered (1) or could not be reached (0).", {},
           1);
  if (const json& v = Member(m, "version"); v.is_string()) {
    BuildInfo(x, v.get_ref<const std::string&>());
  }
  x.Sample("bounced_start_time_seconds", "gauge", "When bounced started, in Unix seconds.", {},
           Member(m, "start_time"));
  x.Sample("bounced_storage_available", "gauge",
           "Whether the database is open (0: lookups answer 'unavailable').", {},
           Member(m, "storage_available"));
  x.Sample("bounced_suppressed_addresses", "gauge",
           "Addresses suppressed now (the in-memory view lookups use).", {},
           Member(m, "suppressed"));
  x.Sample("bounced_suppression_view_bytes", "gauge",
           "Memory held by the in-memory suppression view.", {}, Member(m, "view_memory_bytes"));
  x.Fields(m, {},
           {{"events_pruned", "bounced_events_pruned_total", "counter",
             "Events deleted for being older than [storage] event_retention_days."},
            {"counter_rows_pruned", "bounced_counter_rows_pruned_total", "counter",
             "Daily counter rows deleted for being older than [storage] counter_retention_days."},
            {"events_too_old", "bounced_events_too_old_total", "counter",
             "Events not recorded: older than [storage] event_retention_days when they came."}});
  x.Sample("bounced_rules", "gauge", "Classification rules in force.", {}, Member(m, "rules"));
  if (const json& reload = Member(m, "last_reload"); reload.is_object()) {
    x.Sample("bounced_config_last_reload_successful", "gauge",
             "Whether the last reload took (1; also before any), or was refused (0).", {},
             Member(reload, "ok"));
  }
  x.Sample("bounced_config_read_time_seconds", "gauge",
           "When the configuration and rules in force were read, in Unix seconds.", {},
           Member(m, "config_read_at"));
  x.Sample("bounced_alerts_open", "gauge",
           "Alerts open now: sender-side rejection spikes and hard-bounce spikes.", {},
           Member(m, "alerts_open"));
  x.Sample("bounced_hard_bounce_alerts_open", "gauge",
           "Of those, one recipient domain's hard-bounce spikes (a stale list, or the domain's "
           "outage read as unknown users).",
           {}, Member(m, "hard_bounce_alerts_open"));

  if (const json& events = Member(m, "events"); events.is_array()) {
    for (const json& e : events) {
      x.Sample("bounced_events_total", "counter",
               "Delivery results recorded since bounced started (repeats not counted), by "
               "source, category and provider.",
               {{"source", StringMember(e, "source")},
                {"category", StringMember(e, "category")},
                {"provider", StringMember(e, "provider")}},
               Member(e, "count"));
    }
  }

  if (const json& added = Member(m, "suppressions_added"); added.is_array()) {
    for (const json& a : added) {
      std::string category = StringMember(a, "category");
      x.Sample("bounced_suppressions_added_total", "counter",
               "Addresses suppressed anew since the database was opened, by source (bounce, "
               "complaint, manual, import) and category.",
               {{"source", StringMember(a, "source")},
                {"category", category.empty() ? std::string("none") : category}},
               Member(a, "count"));
    }
  }

  const json& in = Member(m, "input");
  const std::string input = StringMember(in, "input");
  x.Fields(in, {{"input", input}},
           {{"lines", "bounced_input_lines_total", "counter", "Log lines read."},
            {"bytes", "bounced_input_bytes_total", "counter", "Log bytes read."},
            {"events_committed", "bounced_input_events_total", "counter",
             "Delivery events the log input committed to the database."}});
  x.Fields(in, {{"input", input}, {"reason", "garbage"}},
           {{"skipped_garbage", "bounced_input_skipped_lines_total", "counter",
             "Log lines skipped with a counted warning, by reason."}});
  x.Fields(in, {{"input", input}, {"reason", "too_long"}},
           {{"skipped_too_long", "bounced_input_skipped_lines_total", "counter",
             "Log lines skipped with a counted warning, by reason."}});
  x.Fields(
      in, {{"input", input}},
      {{"rotations", "bounced_input_rotations_total", "counter", "Log file rotations followed."},
       {"truncations", "bounced_input_truncations_total", "counter",
        "Log file truncations (copytruncate) followed."},
       {"unread_rotated", "bounced_input_unread_rotated_total", "counter",
        "Rotated log files that went away before they were read to the end."},
       {"tracked_queue_ids", "bounced_input_tracked_queue_ids", "gauge",
        "Postfix queue ids whose sender and message-id are kept for later lines."}});
  if (in.is_object()) {
    x.Sample("bounced_input_problem", "gauge",
             "Whether the log input reports a problem now (see bouncectl health).",
             {{"input", input}}, !StringMember(in, "problem").empty());
  }

  SocketStats(x, Member(m, "query_socket"), "query");
  SocketStats(x, Member(m, "socketmap"), "socketmap");
  x.Fields(Member(m, "socketmap"), {},
           {{"lookups", "bounced_socketmap_lookups_total", "counter",
             "Postfix socketmap lookups answered."},
            {"found", "bounced_socketmap_suppressed_total", "counter",
             "Socketmap lookups answered with the suppression action."},
            {"temp", "bounced_socketmap_temp_total", "counter",
             "Socketmap lookups answered TEMP (storage unavailable)."},
            {"perm", "bounced_socketmap_perm_total", "counter",
             "Socketmap requests answered PERM (not \"name key\", or a map name bounced does "
             "not serve: check main.cf)."},
            {"malformed", "bounced_socketmap_malformed_total", "counter",
             "Socketmap requests refused as malformed."}});

  const json& milter = Member(m, "milter");
  if (Member(milter, "enabled").is_boolean() && Member(milter, "enabled").get<bool>()) {
    x.Sample("bounced_milter_running", "gauge", "Whether the milter is running.", {},
             Member(milter, "running"));
    x.Fields(milter, {},
             {{"rcpt_checked", "bounced_milter_recipients_checked_total", "counter",
               "Recipients the milter looked up at RCPT."},
              {"rcpt_rejected", "bounced_milter_recipients_rejected_total", "counter",
               "Recipients the milter refused as suppressed."},
              {"rcpt_tempfailed", "bounced_milter_recipients_tempfailed_total", "counter",
               "Suppressed recipients the milter deferred (action tempfail)."},
              {"rcpt_logged", "bounced_milter_recipients_logged_total", "counter",
               "Suppressed recipients the milter only logged (action log, a dry run)."},
              {"rcpt_removed", "bounced_milter_recipients_removed_total", "counter",
               "Suppressed recipients removed from sendmail(1) mail."},
              {"bounces_seen", "bounced_milter_bounces_total", "counter",
               "Bounce messages the milter read."},
              {"bounce_recipients", "bounced_milter_bounce_recipients_total", "counter",
               "Recipients in the bounce messages the milter read."},
              {"bounces_truncated", "bounced_milter_bounces_truncated_total", "counter",
               "Bounces longer than max_bounce_bytes (read up to it)."},
              {"bounces_incomplete", "bounced_milter_bounces_incomplete_total", "counter",
               "Bounces cut short by a parser limit."},
              {"bounces_verp", "bounced_milter_bounces_verp_total", "counter",
               "Bounces whose VERP return path named the recipient ([verp])."},
              {"bounces_discarded", "bounced_milter_bounces_discarded_total", "counter",
               "Bounces the milter discarded after recording them."},
              {"bounces_quarantined", "bounced_milter_bounces_quarantined_total", "counter",
               "Bounces the milter quarantined after recording them."},
              {"callback_timeouts", "bounced_milter_callback_timeouts_total", "counter",
               "Milter callbacks that ran out of time."},
              {"dropped_records", "bounced_milter_dropped_records_total", "counter",
               "Bounce records not queued because storage was too slow."},
              {"storage_errors", "bounced_milter_storage_errors_total", "counter",
               "Bounce records the database refused."}});
  }
  return x.Take();
}

std::string RenderDownMetrics(std::string_view version) {
  Exposition x;
  x.Sample("bounced_up", "gauge", "Whether bounced answered (1) or could not be reached (0).", {},
           0);
  BuildInfo(x, version);
  return x.Take();
}

}  // namespace bounced
