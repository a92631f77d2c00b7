// query_handler.cc: the query socket's commands (see query_handler.h). Each handler reads and
// validates its request, then executes it against the store; errors become {"ok": false}.
#include "daemon/query_handler.h"

#include <grp.h>
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <charconv>
#include <ctime>
#include <limits>
#include <vector>

#include "classifier/dsn_parser.h"
#include "classifier/mail_date.h"
#include "classifier/result_json.h"
#include "classifier/text.h"
#include "classifier/verp.h"
#include "common/user_db.h"
#include "daemon/base64.h"
#include "daemon/metrics.h"
#include "storage/store_json.h"

namespace bounced {
namespace {

using nlohmann::json;

// A request error: reported to the client as {"ok": false, "error": message}.
struct RequestError {
  std::string message;
};

json Ok(json result) { return json{{"ok", true}, {"result", std::move(result)}}; }
json Fail(std::string message) { return json{{"ok", false}, {"error", std::move(message)}}; }

// Printable form of client text for our own log lines.
std::string Printable(std::string_view s, size_t max = 200) {
  std::string out = MaskControls(s.substr(0, max));
  if (s.size() > max) out += "...";
  return out;
}

std::string StringField(const json& req, const char* key, bool required) {
  auto it = req.find(key);
  if (it == req.end() || it->is_null()) {
    if (required) throw RequestError{std::string("missing \"") + key + "\""};
    return "";
  }
  if (!it->is_string()) throw RequestError{std::string("\"") + key + "\" must be a string"};
  return it->get<std::string>();
}

int64_t IntField(const json& req, const char* key, int64_t def, int64_t min, int64_t max) {
  auto it = req.find(key);
  if (it == req.end() || it->is_null()) return def;
  if (!it->is_number_integer())
    throw RequestError{std::string("\"") + key + "\" must be an integer"};
  int64_t v = it->get<int64_t>();
  if (v < min || v > max) {
    throw RequestError{std::string("\"") + key + "\" must be between " + std::to_string(min) +
                       " and " + std::to_string(max)};
  }
  return v;
}

bool BoolField(const json& req, const char* key) {
  auto it = req.find(key);
  if (it == req.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw RequestError{std::string("\"") + key + "\" must be true or false"};
  return it->get<bool>();
}

// Spans ("30d") and expiry dates reach at most this far: more is a typo or a number that would
// overflow, and an expiry that should not end is "never".
constexpr int64_t kMaxSpanSeconds = int64_t{36525} * 86400;  // 100 years
constexpr const char* kMaxSpanText = "100 years";

// "7d", "12h", "30m", "90s", "2w" -> seconds; nullopt when not of that form. A span longer than
// kMaxSpanSeconds is refused (checked before multiplying, so it cannot overflow).
std::optional<int64_t> RelativeSeconds(std::string_view s, const char* key) {
  if (s.size() < 2) return std::nullopt;
  int64_t unit = 0;
  switch (s.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    case 'w':
      unit = 7 * 86400;
      break;
    default:
      return std::nullopt;
  }
  const char* end = s.data() + s.size() - 1;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (p != end || (ec != std::errc() && ec != std::errc::result_out_of_range) || v < 0) {
    return std::nullopt;
  }
  if (ec == std::errc::result_out_of_range || v > kMaxSpanSeconds / unit) {
    throw RequestError{std::string("\"") + key + "\": the span " + Printable(s, 40) +
                       " is longer than " + kMaxSpanText};
  }
  return v * unit;
}

// "2026-11-29" or "2026-11-29T17:09:53Z" (UTC) -> unix seconds.
std::optional<int64_t> ParseUtcTime(const std::string& s) {
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) {
    tm = {};
    end = strptime(s.c_str(), "%Y-%m-%d", &tm);
  }
  if (end == nullptr || (*end != '\0' && std::string_view(end) != "Z")) return std::nullopt;
  return static_cast<int64_t>(timegm(&tm));
}

// `since`: unix seconds, an RFC 3339 UTC date/time, or relative to now ("7d").
int64_t SinceField(const json& req, const char* key) {
  auto it = req.find(key);
  if (it == req.end() || it->is_null()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    std::string s = it->get<std::string>();
    if (auto rel = RelativeSeconds(s, key)) return static_cast<int64_t>(std::time(nullptr)) - *rel;
    if (auto abs = ParseUtcTime(s)) return *abs;
  }
  throw RequestError{std::string("\"") + key +
                     "\" must be unix seconds, a date like 2026-11-01 or a span like 7d"};
}

// `expires`: unix seconds, an RFC 3339 UTC date/time, or a span from now ("30d"); 0 or "never" =
// never. Anything else must lie in the future (a past expiry would store a suppression that
// never applies) and at most kMaxSpanSeconds ahead.
int64_t ExpiresField(const json& req) {
  auto it = req.find("expires");
  if (it == req.end() || it->is_null()) return 0;
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  std::optional<int64_t> expires;
  constexpr int64_t kFarthest = std::numeric_limits<int64_t>::max();
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(kFarthest)) {
    expires = kFarthest;  // refused below as too far ahead
  } else if (it->is_number_integer()) {
    expires = it->get<int64_t>();
    if (*expires == 0) return 0;
  } else if (it->is_string()) {
    std::string s = it->get<std::string>();
    if (s == "never") return 0;
    if (auto rel = RelativeSeconds(s, "expires")) {
      expires = now + *rel;
    } else {
      expires = ParseUtcTime(s);
    }
  }
  if (!expires) {
    throw RequestError{"\"expires\" must be unix seconds, a date, a span like 30d, or \"never\""};
  }
  std::string given = Printable(it->is_string() ? it->get<std::string>() : it->dump(), 40);
  if (*expires <= now) {
    throw RequestError{"\"expires\": " + given + " is not in the future (now is " +
                       FormatTime(now) + "); nothing changed"};
  }
  if (*expires - now > kMaxSpanSeconds) {
    throw RequestError{"\"expires\": " + given + " is more than " + kMaxSpanText +
                       " ahead; use \"never\" for a suppression without end"};
  }
  return *expires;
}

// "category": "" or one of the taxonomy's names (an unknown one is refused, not matched to
// nothing).
std::string CategoryField(const json& req) {
  std::string category = StringField(req, "category", false);
  if (!category.empty() && !CategoryFromName(category)) {
    throw RequestError{"unknown category '" + Printable(category) + "'"};
  }
  return category;
}

// "domain" as stored: lower-case, without a leading '@' ("@Example.COM" -> "example.com").
// A domain filter (`key`: "domain", "sender_domain"): lower-cased, a leading '@' dropped; ""
// when absent. "@" alone names no domain and is refused (it is not "any").
std::string DomainField(const json& req, const char* key = "domain") {
  std::string domain = StringField(req, key, false);
  for (char& c : domain) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!domain.empty() && domain[0] == '@') {
    domain.erase(0, 1);
    if (domain.empty()) throw RequestError{"\"" + std::string(key) + "\" must name a domain"};
  }
  return domain;
}

ListFilter FilterFrom(const json& req) {
  ListFilter f;
  f.category = CategoryField(req);
  f.domain = DomainField(req);
  f.source = StringField(req, "source", false);
  f.since = SinceField(req, "since");
  f.until = SinceField(req, "until");
  if (f.until != 0 && f.until <= f.since) throw RequestError{"\"until\" must come after \"since\""};
  f.after = StringField(req, "after", false);
  f.limit = static_cast<size_t>(IntField(req, "limit", 0, 0, int64_t{1} << 40));
  f.include_expired = BoolField(req, "include_expired");
  return f;
}

ExportFormat FormatFrom(const json& req) {
  std::string name = StringField(req, "format", false);
  if (name.empty()) return ExportFormat::kCsv;
  auto f = ExportFormatFromName(name);
  if (!f) throw RequestError{"\"format\" must be \"csv\", \"jsonl\" or \"text\""};
  return *f;
}

// How many entries an export of `lines` lines holds (a CSV's first line is its header).
size_t ExportedCount(ExportFormat format, size_t lines) {
  return format == ExportFormat::kCsv && lines > 0 ? lines - 1 : lines;
}

// The category of an ESP's reply (an import's reason, status and code), classified as a bounce's
// would be by the rules in force: "" when they cannot tell, or it is no failure.
std::string ClassifyImported(const RuleSet& rules, const ImportedReply& reply) {
  ReplyInput in;
  in.diagnostic = reply.text;
  in.status = reply.status;
  in.reply_code = reply.code;
  in.recipient = reply.address;
  in.dsn_action = "failed";
  const Category c = rules.Classify(in).category;
  if (c == Category::kUndetermined || c == Category::kDelivered || c == Category::kAutoReply) {
    return {};
  }
  return std::string(ToString(c));
}

ImportOptions ImportOptionsFrom(Services& services, const json& req) {
  ImportOptions o;
  o.ignore_unknown_columns = BoolField(req, "ignore_unknown_columns");
  o.dry_run = BoolField(req, "dry_run");
  o.category = StringField(req, "category", false);
  if (!o.category.empty() && !CategoryFromName(o.category)) {
    throw RequestError{"unknown category '" + Printable(o.category) + "'"};
  }
  if (std::shared_ptr<const RuleSet> rules = services.rules()) {
    o.classify = [rules](const ImportedReply& reply) { return ClassifyImported(*rules, reply); };
  }
  return o;
}

// The reason of a manual change, as stored and shown (status, list, the report, a terminal):
// control characters (C0, DEL and C1, which a terminal obeys) become spaces, as an import's do.
std::string ReasonFrom(const json& req) {
  std::string reason = StringField(req, "reason", false);
  if (reason.empty()) throw RequestError{"a reason is required for manual changes (--reason)"};
  if (reason.size() > 1000) throw RequestError{"reason longer than 1000 bytes"};
  std::string out;
  out.reserve(reason.size());
  for (size_t i = 0; i < reason.size(); ++i) {
    auto u = static_cast<unsigned char>(reason[i]);
    auto next = i + 1 < reason.size() ? static_cast<unsigned char>(reason[i + 1]) : 0;
    if (u == 0xC2 && next >= 0x80 && next <= 0x9F) {  // U+0080..U+009F in UTF-8
      out += ' ';
      ++i;
    } else {
      out += (u < 0x20 || u == 0x7f) ? ' ' : reason[i];
    }
  }
  return out;
}

// The "address" of status, suppress and unsuppress, read first: one that is no address
// (IsAddress, the rule bouncectl applies before it asks) gets the same error from each command,
// before any other field is looked at.
std::string AddressField(const json& req) {
  std::string address = StringField(req, "address", true);
  if (!IsAddress(address)) throw RequestError{"invalid address '" + Printable(address) + "'"};
  return address;
}

std::shared_ptr<Store> RequireStore(Services& services) {
  std::shared_ptr<Store> s = services.store();
  if (!s) throw RequestError{"storage unavailable: " + services.store_problem()};
  return s;
}

template <typename T>
T Unwrap(Expected<T> e) {
  if (!e) throw RequestError{e.error()};
  return std::move(e).value();
}

void Check(const Status& s) {
  if (!s.ok()) throw RequestError{s.message()};
}

json CmdStatus(Services& services, const json& req) {
  std::string address = AddressField(req);
  return ToJson(Unwrap(RequireStore(services)->GetStatus(address, 10)));
}

// The in-memory answer only (what Postfix and the milter see), without SQLite: for scripts
// that check many addresses.
json CmdLookup(Services& services, const json& req) {
  std::string address = StringField(req, "address", true);
  std::optional<SuppressionHit> hit = RequireStore(services)->view().Lookup(address);
  json out{{"address", address}, {"suppressed", hit.has_value()}};
  if (hit) {
    out["since"] = FormatTime(hit->since);
    out["expires"] = hit->expires == 0 ? json(nullptr) : json(FormatTime(hit->expires));
    out["category"] =
        hit->category == Category::kUndetermined ? json(nullptr) : json(ToString(hit->category));
    out["manual"] = hit->manual;
  }
  return out;
}

json CmdList(Services& services, const json& req) {
  ListFilter f = FilterFrom(req);
  json rows = json::array();
  Check(RequireStore(services)->List(f, [&](const Suppression& s) {
    rows.push_back(ToJson(s));
    return true;
  }));
  return rows;
}

json CmdExport(Services& services, const json& req) {
  ListFilter f = FilterFrom(req);
  ExportFormat format = FormatFrom(req);
  std::string data;
  size_t lines = 0;
  Check(RequireStore(services)->Export(format, f, [&](std::string_view line) {
    data.append(line);
    ++lines;
    return true;
  }));
  return json{{"format", ExportFormatName(format)},
              {"count", ExportedCount(format, lines)},
              {"data", std::move(data)}};
}

json CmdStats(Services& services, const json& req) {
  StatsQuery q;
  std::string by = StringField(req, "by", false);
  if (by.empty() || by == "domain") {
    q.by = StatsQuery::By::kDomain;
  } else if (by == "provider") {
    q.by = StatsQuery::By::kProvider;
  } else if (by == "sender_domain") {
    q.by = StatsQuery::By::kSenderDomain;
  } else {
    throw RequestError{"\"by\" must be \"domain\", \"provider\" or \"sender_domain\""};
  }
  q.only = StringField(req, "only", false);
  q.days = static_cast<int>(IntField(req, "days", 7, 1, 3660));
  q.per_day = BoolField(req, "per_day");
  std::vector<StatsRow> rows = Unwrap(RequireStore(services)->Stats(q));
  json out = json::array();
  for (const auto& r : rows) out.push_back(ToJson(r));
  json result{{"by", by.empty() ? "domain" : by}, {"days", q.days}, {"rows", std::move(out)}};
  if (services.alerts_json) result["alerts"] = services.alerts_json();
  return result;
}

json CmdAllowlist(Services& services) {
  std::vector<AllowEntry> entries = Unwrap(RequireStore(services)->AllowList());
  json out = json::array();
  for (const auto& a : entries) out.push_back(ToJson(a));
  return out;
}

json CmdHealth(Services& services) {
  json out;
  out["version"] = BOUNCED_VERSION;
  out["protocol"] = kQueryProtocolVersion;
  std::shared_ptr<Store> store = services.store();
  if (store) {
    Expected<Health> h = store->GetHealth();
    out["storage"] = h ? ToJson(*h) : json{{"error", h.error()}};
    out["suppressed_in_memory"] = store->view().size();
    out["view_memory_bytes"] = store->view().memory_bytes();
  } else {
    out["storage"] = json{{"error", "unavailable: " + services.store_problem()}};
  }
  std::shared_ptr<const RuleSet> rules = services.rules();
  out["rules"] =
      json{{"count", rules ? rules->rule_count() : 0}, {"files", services.rules_sources()}};
  if (services.health_details) out.update(services.health_details());
  bool healthy = store != nullptr && out["storage"].value("integrity_ok", false) &&
                 out["storage"].value("last_write_error", std::string()).empty();
  out["healthy"] = healthy;
  return out;
}

// Recorded events by time, outcome, category, provider, domain, recipient or sender: what
// `bouncectl events` shows (which recipients got CS01 in the last hour, and from which sender).
json CmdEvents(Services& services, const json& req) {
  EventsQuery q;
  auto it = req.find("since");
  q.since = it == req.end() || it->is_null() ? static_cast<int64_t>(std::time(nullptr)) - 86400
                                             : SinceField(req, "since");
  q.until = SinceField(req, "until");
  if (q.until != 0 && q.until <= q.since) {
    throw RequestError{"\"until\" must come after \"since\""};
  }
  q.category = CategoryField(req);
  q.source = StringField(req, "source", false);
  if (!q.source.empty() && !EventSourceFromName(q.source)) {
    throw RequestError{"unknown source '" + Printable(q.source) +
                       "' (log, journal, dsn, milter, manual)"};
  }
  q.log_status = StringField(req, "log_status", false);
  q.provider = StringField(req, "provider", false);
  q.provider_code = StringField(req, "provider_code", false);
  q.domain = DomainField(req);
  q.recipient = StringField(req, "recipient", false);
  q.sender = StringField(req, "sender", false);
  q.sender_domain = DomainField(req, "sender_domain");  // "<>" passes as it is
  q.limit = static_cast<size_t>(
      IntField(req, "limit", 50, 1, static_cast<int64_t>(Store::kMaxFoundEvents)));
  q.after_id = IntField(req, "after_id", -1, 0, std::numeric_limits<int64_t>::max());
  std::vector<StoredEvent> events = Unwrap(RequireStore(services)->FindEvents(q));
  json out = json::array();
  for (const StoredEvent& e : events) out.push_back(ToJson(e));
  return out;
}

// The suppression list's changes, the oldest first: after_id (the cursor of a client that keeps
// its own copy), since (24h when neither is given), domain, limit (1..10000, default 1000).
json CmdChanges(Services& services, const json& req) {
  ChangesQuery q;
  q.after_id = IntField(req, "after_id", 0, 0, std::numeric_limits<int64_t>::max());
  auto it = req.find("since");
  q.since = (it == req.end() || it->is_null()) && !req.contains("after_id")
                ? static_cast<int64_t>(std::time(nullptr)) - 86400
                : SinceField(req, "since");
  q.domain = DomainField(req);
  q.limit = static_cast<size_t>(
      IntField(req, "limit", 1000, 1, static_cast<int64_t>(Store::kMaxChanges)));
  json out = json::array();
  for (const SuppressionChange& c : Unwrap(RequireStore(services)->Changes(q))) {
    out.push_back(ToJson(c));
  }
  return out;
}

// What health says without SQLite (no counts, no integrity check: a scraper asks every minute),
// as Prometheus text.
json CmdMetrics(Services& services) {
  json m = services.metrics_details ? services.metrics_details() : json::object();
  m["version"] = BOUNCED_VERSION;
  std::shared_ptr<Store> store = services.store();
  m["storage_available"] = store != nullptr;
  if (store) {
    m["suppressed"] = store->view().size();
    m["view_memory_bytes"] = store->view().memory_bytes();
    json added = json::array();
    for (const AddedSuppressions& a : store->SuppressionsAdded()) {
      added.push_back({{"source", a.source}, {"category", a.category}, {"count", a.count}});
    }
    m["suppressions_added"] = std::move(added);
    const PruneTotals pruned = store->Pruned();
    m["events_pruned"] = pruned.events_pruned;
    m["counter_rows_pruned"] = pruned.counter_rows_pruned;
    m["events_too_old"] = pruned.events_too_old;
  }
  std::shared_ptr<const RuleSet> rules = services.rules();
  m["rules"] = rules ? rules->rule_count() : 0;
  return {{"format", "prometheus"}, {"text", RenderMetrics(m)}};
}

json CmdSuppress(Services& services, const PeerCred& peer, const json& req) {
  ManualSuppression m;
  m.address = AddressField(req);
  m.category = CategoryField(req);
  m.expires = ExpiresField(req);
  Actor who{static_cast<int64_t>(peer.uid), ReasonFrom(req)};
  Suppression s = Unwrap(RequireStore(services)->Suppress(m, who));
  spdlog::info("query: uid {} suppressed {} ({})", peer.uid, Printable(s.address),
               Printable(who.reason));
  return ToJson(s);
}

// One address ("address"), or every live entry a selection picks: "domain", "category",
// "source", "since" and "until" (created), or "all": true for the whole list. "dry_run": true
// says what would be lifted and changes nothing.
json CmdUnsuppress(Services& services, const PeerCred& peer, const json& req) {
  const bool bulk = req.find("address") == req.end();
  if (!bulk) {
    std::string address = AddressField(req);
    Actor who{static_cast<int64_t>(peer.uid), ReasonFrom(req)};
    const std::string key = Unwrap(RequireStore(services)->Unsuppress(address, who));
    spdlog::info("query: uid {} unsuppressed {} ({})", peer.uid, Printable(key),
                 Printable(who.reason));
    // "key": the entry lifted (the address as bounced keys it: User+news@Example.COM lifts
    // user@example.com).
    return json{{"address", address}, {"key", key}, {"suppressed", false}};
  }
  for (const char* key : {"after", "limit", "include_expired"}) {
    if (req.contains(key)) {
      throw RequestError{std::string("\"") + key + "\" does not apply to unsuppress"};
    }
  }
  ListFilter f = FilterFrom(req);
  const bool all = BoolField(req, "all");
  const bool selects =
      !f.category.empty() || !f.domain.empty() || !f.source.empty() || f.since != 0 || f.until != 0;
  if (all == selects) {
    throw RequestError{selects ? "\"all\" and a selection exclude each other"
                               : "name an \"address\", a selection (domain, category, source, "
                                 "since, until) or \"all\": true"};
  }
  const bool dry_run = BoolField(req, "dry_run");
  Actor who{static_cast<int64_t>(peer.uid),
            dry_run ? StringField(req, "reason", false) : ReasonFrom(req)};
  BulkUnsuppressResult r = Unwrap(RequireStore(services)->UnsuppressMatching(f, who, dry_run));
  if (!dry_run) {
    spdlog::info("query: uid {} unsuppressed {} entries matching {} ({})", peer.uid, r.count,
                 Printable(req.dump(-1, ' ', false, json::error_handler_t::replace)),
                 Printable(who.reason));
  }
  return json{{"count", r.count}, {"dry_run", dry_run}, {"sample", r.sample}};
}

json CmdAllow(Services& services, const PeerCred& peer, const json& req, bool allow) {
  std::string entry = StringField(req, "entry", false);
  if (entry.empty()) entry = StringField(req, "address", true);
  Actor who{static_cast<int64_t>(peer.uid), ReasonFrom(req)};
  std::shared_ptr<Store> store = RequireStore(services);
  spdlog::info("query: uid {} {} {} ({})", peer.uid,
               allow ? "allowlisted" : "removed from the allowlist", Printable(entry),
               Printable(who.reason));
  if (allow) return ToJson(Unwrap(store->Allow(entry, who)));
  Check(store->Disallow(entry, who));
  return json{{"entry", entry}, {"allowed", false}};
}

// Commits a whole import (all or nothing) and returns its reply.
json CommitImport(Store& store, ExportFormat format, std::string_view data, const Actor& who,
                  uid_t uid, const ImportOptions& options) {
  try {
    Expected<ImportResult> e = store.Import(format, data, who, options);
    if (!e) return Fail(e.error());
    ImportResult& r = *e;
    if (!r.errors.empty()) {
      json reply = Fail("import refused, nothing imported: " + std::to_string(r.errors.size()) +
                        " bad line(s), first: " + r.errors.front());
      reply["errors"] = std::move(r.errors);
      return reply;
    }
    if (!options.dry_run) {
      spdlog::info("query: uid {} imported {} new and {} updated suppressions", uid, r.added,
                   r.updated);
    }
    json result{{"added", r.added},
                {"updated", r.updated},
                {"categorized", r.categorized},
                {"categories", r.categories},
                {"dry_run", options.dry_run}};
    if (!r.ignored_columns.empty()) result["ignored_columns"] = std::move(r.ignored_columns);
    return Ok(result);
  } catch (const std::exception& e) {
    return Fail(std::string("internal error: ") + e.what());
  }
}

Actor ImportActor(const PeerCred& peer, const std::string& reason) {
  return Actor{static_cast<int64_t>(peer.uid), reason.empty() ? "import" : reason};
}

json CmdImport(Services& services, const PeerCred& peer, const json& req, json* error_details) {
  ExportFormat format = FormatFrom(req);
  std::string data = StringField(req, "data", true);
  std::string reason = StringField(req, "reason", false);
  json reply = CommitImport(*RequireStore(services), format, data, ImportActor(peer, reason),
                            peer.uid, ImportOptionsFrom(services, req));
  if (reply.value("ok", false)) return reply["result"];
  if (reply.contains("errors")) *error_details = std::move(reply["errors"]);
  throw RequestError{reply.value("error", std::string("import failed"))};
}

json CmdIngestDsn(Services& services, const json& req) {
  std::string message;
  if (req.contains("message_base64")) {
    auto decoded = Base64Decode(StringField(req, "message_base64", true));
    if (!decoded) throw RequestError{"\"message_base64\" is not valid base64"};
    message = std::move(*decoded);
  } else {
    message = StringField(req, "message", true);
  }
  if (message.empty()) throw RequestError{"the message is empty"};
  // With [verp] on, the return path the bounce came back to says whom it is about: the address
  // it was delivered to (a pipe transport's ${original_recipient}) when the request gives it,
  // else the message's own X-Original-To, Delivered-To or To.
  const std::string envelope = StringField(req, "envelope_recipient", false);
  std::shared_ptr<const RuleSet> rules = services.rules();
  ParsedBounce parsed = ParseBounce(message, *rules);
  std::optional<std::string> verp;
  if (const VerpConfig v = services.config().verp; v.enabled && !parsed.recipients.empty()) {
    verp = envelope.empty() ? VerpRecipientOf(message, v.format) : DecodeVerp(envelope, v.format);
    if (verp) ApplyVerp(&parsed, *verp, *rules);
  }
  json recipients = json::array();
  for (const auto& r : parsed.recipients) recipients.push_back(ToJson(r));
  json out{{"kind", ToString(parsed.kind)},
           {"message_id", parsed.message_id},
           {"recipients", std::move(recipients)}};
  if (verp) out["verp_recipient"] = *verp;
  // What a limit left unread (a message over 16 MiB, more recipients than are read): said in
  // the reply and logged, and what was read is recorded.
  if (!parsed.warnings.empty()) {
    out["warnings"] = parsed.warnings;
    for (const std::string& w : parsed.warnings)
      spdlog::warn("ingest-dsn: message {}: {}", parsed.message_id, w);
  }
  if (parsed.recipients.empty()) {
    throw RequestError{"not a bounce: " +
                       (parsed.error.empty() ? std::string("no recipient results") : parsed.error)};
  }
  // The bounce's own Date, so that a saved mailbox fed in later (bouncectl ingest-dsn --mbox)
  // lands on the days it bounced; a Date more than a day ahead of this clock, or none, is now.
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  int64_t when = now;
  if (std::optional<int64_t> date = MessageDate(message); date && *date <= now + 86400)
    when = *date;
  out["time"] = FormatTime(when);
  std::vector<Event> events = EventsFromBounce(parsed, message, EventSource::kDsn, when);
  out["events"] = events.size();
  // Older than the retention keeps: the store skips its events and counts them (see
  // RetentionPolicy); the reply says so.
  const int retention_days = services.config().storage.retention.event_days;
  if (when < RetentionHorizon(retention_days, now)) {
    out["events"] = 0;
    out["too_old"] = true;
    out["warnings"].push_back("the bounce is from " + FormatTime(when) +
                              ", before what [storage] event_retention_days (" +
                              std::to_string(retention_days) + ") keeps: not recorded");
  }
  Check(services.Record(std::move(events)));
  return out;
}

// Whether the request changes state. A bulk unsuppress's dry run (no "address", "dry_run":
// true) only reads, as `list` with the same selection does, so a read-only user may ask it.
bool IsWriteRequest(const std::string& cmd, const json& req) {
  if (cmd == "unsuppress") {
    return req.contains("address") || !req.contains("dry_run") || req["dry_run"] != true;
  }
  return cmd == "suppress" || cmd == "allow" || cmd == "disallow" || cmd == "import" ||
         cmd == "reload" || cmd == "ingest-dsn";
}

void RequireWrite(const PeerCred& peer, bool peer_may_write, const std::string& cmd,
                  const json& req) {
  if (!IsWriteRequest(cmd, req) || peer_may_write) return;
  spdlog::warn("query: refused '{}' from uid {} (not root nor in the write group)", cmd, peer.uid);
  throw RequestError{"permission denied: '" + cmd +
                     "' changes state; it needs root or membership in the bounced admin "
                     "group ([query] group); your uid is " +
                     std::to_string(peer.uid)};
}

// Streamed replies go out in pieces of about this many bytes (a streamed export: one reply
// line per piece; a list or a whole export: pieces of one long reply line).
constexpr size_t kStreamPieceBytes = 64 * 1024;

// Streams an export: {"ok":true,"more":true,"data":"lines"} per piece as Store::Export reads
// them, then {"ok":true,"result":{"format","count"}} (or {"ok":false,...} when the store fails
// midway: the data sent is then incomplete).
std::shared_ptr<ReplyStream> StartExport(std::shared_ptr<Store> store, ExportFormat format,
                                         ListFilter filter) {
  return std::make_shared<WorkerStream>([store = std::move(store), format,
                                         filter =
                                             std::move(filter)](const WorkerStream::Emit& emit) {
    std::string piece;
    size_t lines = 0;
    bool gone = false;
    auto send = [&] {
      json j{{"ok", true}, {"more", true}, {"data", piece}};
      piece.clear();
      if (!emit(ReplyLine(j))) gone = true;
      return !gone;
    };
    Status st = Status::Ok();
    try {
      st = store->Export(format, filter, [&](std::string_view line) {
        piece.append(line);
        ++lines;
        return piece.size() < kStreamPieceBytes || send();
      });
    } catch (const std::exception& e) {
      st = Status::Error(std::string("internal error: ") + e.what());
    }
    if (gone) return std::string();
    if (!st.ok()) {
      spdlog::warn("query: export failed midway after {} lines: {}", lines, st.message());
      return ReplyLine(Fail("export failed midway, the data sent is incomplete: " + st.message()));
    }
    if (!piece.empty() && !send()) return std::string();
    return ReplyLine(
        Ok(json{{"format", ExportFormatName(format)}, {"count", ExportedCount(format, lines)}}));
  });
}

// One reply line written in pieces as a producer makes it (a list or an export of any size,
// in bounded memory). The result comes first and "ok" last: a store that fails midway still
// ends the line as valid JSON, {"result": <what was read>, "ok": false, "error": "..."}; one that
// fails before the first piece left gets the usual {"ok": false, "error"} line.
class PiecewiseReply {
 public:
  explicit PiecewiseReply(const WorkerStream::Emit& emit) : emit_(emit), piece_("{\"result\":") {}

  // Adds reply text; false once the client is gone (the producer should stop).
  bool Append(std::string_view text) {
    if (gone_) return false;
    piece_.append(text);
    if (piece_.size() < kStreamPieceBytes) return true;
    started_ = true;
    gone_ = !emit_(std::move(piece_));
    piece_.clear();
    return !gone_;
  }
  bool gone() const { return gone_; }

  // The last piece: `close` ends the result, then "ok" (and why not).
  std::string Finish(std::string_view close, const Status& status, std::string_view what) {
    if (!status.ok()) {
      spdlog::warn("query: {} failed{}: {}", what, started_ ? " midway" : "", status.message());
      if (!started_) return ReplyLine(Fail(status.message()));
    }
    piece_.append(close);
    if (status.ok()) {
      piece_.append(",\"ok\":true}\n");
    } else {
      piece_.append(",\"ok\":false,\"error\":");
      piece_.append(
          json(std::string(what) + " failed midway, the result is incomplete: " + status.message())
              .dump(-1, ' ', false, json::error_handler_t::replace));
      piece_.append("}\n");
    }
    return std::move(piece_);
  }

 private:
  const WorkerStream::Emit& emit_;
  std::string piece_;
  bool started_ = false;  // a piece has gone to the client
  bool gone_ = false;
};

// Runs `produce` (which fills a PiecewiseReply and returns the store's status), turning an
// exception into an error status.
Status ProduceSafely(const std::function<Status()>& produce) {
  try {
    return produce();
  } catch (const std::exception& e) {
    return Status::Error(std::string("internal error: ") + e.what());
  }
}

// `list` as one reply line, {"result":[suppression, ...],"ok":true}, written as SQLite reads it.
std::shared_ptr<ReplyStream> StartList(std::shared_ptr<Store> store, ListFilter filter) {
  return std::make_shared<WorkerStream>(
      [store = std::move(store), filter = std::move(filter)](const WorkerStream::Emit& emit) {
        PiecewiseReply reply(emit);
        reply.Append("[");
        bool first = true;
        Status st = ProduceSafely([&] {
          return store->List(filter, [&](const Suppression& s) {
            if (!first) reply.Append(",");
            first = false;
            return reply.Append(ToJson(s).dump(-1, ' ', false, json::error_handler_t::replace));
          });
        });
        if (reply.gone()) return std::string();
        return reply.Finish("]", st, "list");
      });
}

// `export` without "stream" as one reply line, {"result":{"format","data","count"},"ok":true},
// written as SQLite reads it (the data's lines are escaped one by one).
std::shared_ptr<ReplyStream> StartWholeExport(std::shared_ptr<Store> store, ExportFormat format,
                                              ListFilter filter) {
  return std::make_shared<WorkerStream>(
      [store = std::move(store), format,
       filter = std::move(filter)](const WorkerStream::Emit& emit) {
        PiecewiseReply reply(emit);
        reply.Append(std::string("{\"format\":\"") + ExportFormatName(format) + "\",\"data\":\"");
        size_t lines = 0;
        Status st = ProduceSafely([&] {
          return store->Export(format, filter, [&](std::string_view line) {
            ++lines;
            std::string quoted =
                json(std::string(line)).dump(-1, ' ', false, json::error_handler_t::replace);
            return reply.Append(std::string_view(quoted).substr(1, quoted.size() - 2));
          });
        });
        if (reply.gone()) return std::string();
        return reply.Finish("\",\"count\":" + std::to_string(ExportedCount(format, lines)) + "}",
                            st, "export");
      });
}

// An import sent in parts, held until its last part (then committed all or nothing).
struct PendingImport {
  ExportFormat format = ExportFormat::kCsv;
  ImportOptions options;
  std::string reason;
  std::string data;
  int64_t next_part = 0;
};

class QuerySession : public Session {
 public:
  QuerySession(Services& services, PeerCred peer, size_t max_request_bytes, std::string group)
      : services_(services),
        peer_(peer),
        max_request_bytes_(max_request_bytes),
        group_(std::move(group)) {}

  ~QuerySession() override {
    if (import_) {
      spdlog::warn(
          "query: uid {} went away in the middle of an import ({} parts, {} bytes): nothing "
          "imported",
          peer_.uid, import_->next_part, import_->data.size());
    }
  }

  // Answers the complete lines in `buffer_`; stops after a request answered by a stream, or once
  // the reply holds kMaxPendingReplyBytes (the connection writes it, then calls again with no
  // bytes for the requests after it, see HasPendingRequests).
  bool OnData(std::string_view bytes, std::string* reply) override {
    buffer_.append(bytes);
    size_t start = 0;
    while (!stream_ && reply->size() < kMaxPendingReplyBytes) {
      size_t nl = buffer_.find('\n', scanned_);
      size_t end = nl == std::string::npos ? buffer_.size() : nl;
      if (end - start > max_request_bytes_) {
        spdlog::warn("query: request from uid {} larger than {} bytes refused; connection closed",
                     peer_.uid, max_request_bytes_);
        reply->append(
            ReplyLine(Fail("request too large: more than " + std::to_string(max_request_bytes_) +
                           " bytes ([query] max_request_bytes); connection closed")));
        return false;
      }
      if (nl == std::string::npos) {
        scanned_ = buffer_.size();
        break;
      }
      std::string_view line(buffer_.data() + start, nl - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (!line.empty()) Handle(line, reply);
      start = scanned_ = nl + 1;
    }
    buffer_.erase(0, start);
    scanned_ -= start;
    return true;
  }

  std::shared_ptr<ReplyStream> TakeStream() override { return std::move(stream_); }

  bool HasPendingRequests() const override {
    return buffer_.find('\n', scanned_) != std::string::npos;
  }

 private:
  void Handle(std::string_view line, std::string* reply) {
    json request;
    try {
      request = json::parse(line);
    } catch (const json::exception& e) {
      reply->append(ReplyLine(Fail(std::string("invalid JSON request: ") + e.what())));
      return;
    }
    if (!may_write_) may_write_ = PeerMayWrite(peer_, group_);
    std::string cmd;
    if (request.is_object()) {
      auto it = request.find("cmd");
      if (it != request.end() && it->is_string()) cmd = it->get<std::string>();
    }
    try {
      if (cmd == "import") {
        RequireWrite(peer_, *may_write_, cmd, request);
        if (json r = ImportPart(request); !r.is_null()) reply->append(ReplyLine(r));
        return;
      }
      // Replies as large as the list: written as they are read, never held whole.
      if (cmd == "list") {
        ListFilter f = FilterFrom(request);
        stream_ = StartList(RequireStore(services_), std::move(f));
        return;
      }
      if (cmd == "export") {
        ListFilter f = FilterFrom(request);
        ExportFormat format = FormatFrom(request);
        stream_ = BoolField(request, "stream")
                      ? StartExport(RequireStore(services_), format, std::move(f))
                      : StartWholeExport(RequireStore(services_), format, std::move(f));
        return;
      }
    } catch (const RequestError& e) {
      reply->append(ReplyLine(Fail(e.message)));
      return;
    } catch (const std::exception& e) {
      reply->append(ReplyLine(Fail(std::string("internal error: ") + e.what())));
      return;
    }
    if (!AnsweredOffThread(cmd)) {
      reply->append(ReplyLine(HandleQuery(services_, peer_, *may_write_, request)));
      return;
    }
    // A command that waits for SQLite (a write behind a lock held by another process waits up
    // to the busy timeout) is answered on a thread of its own, as a reply of one piece: the
    // query socket's io threads stay free for every other client. The connection answers its
    // next request once this one's reply is written, as with a list.
    stream_ = std::make_shared<WorkerStream>(
        [&services = services_, peer = peer_, may_write = *may_write_,
         request = std::move(request)](const WorkerStream::Emit&) {
          return ReplyLine(HandleQuery(services, peer, may_write, request));
        });
  }

  // Writes (they wait for the writer, and it for SQLite's lock), reads that may scan much of
  // the database (status, stats, health's counts) and reload. Answered on the io thread: lookup
  // (memory), allowlist (a short read of a WAL snapshot, which a lock does not block), and an
  // unknown command's error.
  static bool AnsweredOffThread(std::string_view cmd) {
    for (std::string_view c : {"status", "stats", "events", "health", "metrics", "suppress",
                               "unsuppress", "allow", "disallow", "ingest-dsn", "reload"}) {
      if (cmd == c) return true;
    }
    return false;
  }

  // One part of an import: {"part": N, "more": true|false, "data", ["format"], ["reason"]}.
  // Without "part" and "more" it is the single-request import (part 0, the last). Parts are
  // kept until the last one, which is committed on a worker thread (the reply is then a
  // stream of one line); returns the reply to a part before the last, or null.
  json ImportPart(json& req) {
    try {
      return ImportPartOrThrow(req);
    } catch (...) {
      import_.reset();  // a refused part ends the import: the client has to start again
      throw;
    }
  }

  json ImportPartOrThrow(json& req) {
    int64_t part = IntField(req, "part", 0, 0, int64_t{1} << 40);
    bool more = BoolField(req, "more");
    if (part == 0) {
      import_.reset();  // a new import replaces one left unfinished on this connection
      PendingImport p;
      p.format = FormatFrom(req);
      p.options = ImportOptionsFrom(services_, req);
      p.reason = StringField(req, "reason", false);
      import_ = std::move(p);
    } else if (!import_ || part != import_->next_part) {
      std::string expected = import_ ? std::to_string(import_->next_part) : "0";
      throw RequestError{"import part " + std::to_string(part) + " out of order (expected part " +
                         expected + "); nothing imported, start again from part 0"};
    } else if (req.contains("format") && FormatFrom(req) != import_->format) {
      throw RequestError{"import part " + std::to_string(part) +
                         " names another format than part 0; nothing imported"};
    }
    StringField(req, "data", true);                                     // validates
    std::string data = std::move(req["data"].get_ref<std::string&>());  // no copy of a big one
    size_t max_import = services_.config().query.max_import_bytes;
    if (part == 0 && req.contains("size")) {
      // The whole import's size, when the client knows it: refused now rather than after
      // sending it all, and room for it made once.
      auto size = static_cast<size_t>(IntField(req, "size", 0, 0, int64_t{1} << 50));
      if (size > max_import) {
        throw RequestError{"import too large: " + std::to_string(size) + " bytes, more than " +
                           std::to_string(max_import) +
                           " ([query] max_import_bytes); nothing imported"};
      }
      import_->data.reserve(size);
    }
    if (import_->data.size() + data.size() > max_import) {
      spdlog::warn("query: import from uid {} larger than {} bytes refused", peer_.uid, max_import);
      throw RequestError{"import too large: more than " + std::to_string(max_import) +
                         " bytes ([query] max_import_bytes); nothing imported"};
    }
    import_->data.append(data);
    ++import_->next_part;
    if (more) {
      return Ok(json{{"part", part},
                     {"received", import_->data.size()},
                     {"max_request_bytes", max_request_bytes_},
                     {"max_import_bytes", max_import}});
    }
    std::shared_ptr<Store> store = RequireStore(services_);
    PendingImport p = std::move(*import_);
    import_.reset();
    if (p.next_part > 1) {
      spdlog::info("query: uid {} sent an import of {} bytes in {} parts; committing", peer_.uid,
                   p.data.size(), p.next_part);
    }
    stream_ = std::make_shared<WorkerStream>([store = std::move(store), p = std::move(p),
                                              peer = peer_](const WorkerStream::Emit&) mutable {
      std::string data = std::move(p.data);  // freed as soon as the commit is done
      return ReplyLine(
          CommitImport(*store, p.format, data, ImportActor(peer, p.reason), peer.uid, p.options));
    });
    return nullptr;
  }

  Services& services_;
  PeerCred peer_;
  size_t max_request_bytes_;
  std::string group_;
  std::optional<bool> may_write_;
  std::string buffer_;  // received, not yet answered: a partial line, or lines after a stream
  size_t scanned_ = 0;  // buffer_ before this has no newline left to find
  std::optional<PendingImport> import_;
  std::shared_ptr<ReplyStream> stream_;  // made by the last request, not yet taken
};

}  // namespace

std::string ReplyLine(const json& reply) {
  std::string s = reply.dump(-1, ' ', false, json::error_handler_t::replace);
  s += '\n';
  return s;
}

bool PeerMayWrite(const PeerCred& peer, const std::string& group) {
  if (peer.uid == 0 || peer.uid == ::geteuid()) return true;
  if (group.empty()) return false;
  std::optional<gid_t> gid = GroupId(group);
  if (!gid) return false;
  if (peer.gid == *gid) return true;
  std::optional<UserEntry> user = UserById(peer.uid);
  if (!user) return false;
  int n = 64;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  if (::getgrouplist(user->name.c_str(), user->gid, groups.data(), &n) < 0) {
    groups.resize(static_cast<size_t>(n));
    if (::getgrouplist(user->name.c_str(), user->gid, groups.data(), &n) < 0) return false;
  }
  for (int i = 0; i < n; ++i) {
    if (groups[static_cast<size_t>(i)] == *gid) return true;
  }
  return false;
}

json HandleQuery(Services& services, const PeerCred& peer, bool peer_may_write,
                 const json& request) {
  json error_details;
  try {
    if (!request.is_object()) throw RequestError{"the request must be a JSON object"};
    std::string cmd = StringField(request, "cmd", true);
    RequireWrite(peer, peer_may_write, cmd, request);
    if (cmd == "status") return Ok(CmdStatus(services, request));
    if (cmd == "lookup") return Ok(CmdLookup(services, request));
    if (cmd == "list") return Ok(CmdList(services, request));
    if (cmd == "export") return Ok(CmdExport(services, request));
    if (cmd == "stats") return Ok(CmdStats(services, request));
    if (cmd == "allowlist") return Ok(CmdAllowlist(services));
    if (cmd == "health") return Ok(CmdHealth(services));
    if (cmd == "metrics") return Ok(CmdMetrics(services));
    if (cmd == "events") return Ok(CmdEvents(services, request));
    if (cmd == "changes") return Ok(CmdChanges(services, request));
    if (cmd == "suppress") return Ok(CmdSuppress(services, peer, request));
    if (cmd == "unsuppress") return Ok(CmdUnsuppress(services, peer, request));
    if (cmd == "allow") return Ok(CmdAllow(services, peer, request, true));
    if (cmd == "disallow") return Ok(CmdAllow(services, peer, request, false));
    if (cmd == "import") return Ok(CmdImport(services, peer, request, &error_details));
    if (cmd == "ingest-dsn") return Ok(CmdIngestDsn(services, request));
    if (cmd == "reload") {
      if (!services.reload) throw RequestError{"reload is not available"};
      Expected<json> r = services.reload();
      if (!r) throw RequestError{"reload failed, previous configuration kept: " + r.error()};
      return Ok(*r);
    }
    throw RequestError{
        "unknown command '" + Printable(cmd) +
        "' (status, lookup, list, export, events, changes, stats, allowlist, health, metrics, "
        "suppress, unsuppress, allow, disallow, import, ingest-dsn, reload)"};
  } catch (const RequestError& e) {
    json reply = Fail(e.message);
    if (!error_details.is_null()) reply["errors"] = std::move(error_details);
    return reply;
  } catch (const std::exception& e) {
    return Fail(std::string("internal error: ") + e.what());
  }
}

std::unique_ptr<Session> MakeQuerySession(Services& services, const PeerCred& peer,
                                          size_t max_request_bytes, const std::string& group) {
  return std::make_unique<QuerySession>(services, peer, max_request_bytes, group);
}

}  // namespace bounced
