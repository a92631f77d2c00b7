// query_commands.cc: bouncectl's commands that talk to a running bounced over its query socket
// (--socket, default /run/bounced/query.sock): status, suppress, unsuppress, allow, disallow,
// allowlist, list, export, import, events, stats, reload, health, metrics, ingest-dsn. One JSON
// request line out, one JSON reply line back (protocol: daemon/query_handler.h). --json prints the
// reply's result as is; otherwise readable text and tables. Exit 1 when the daemon refuses or is
// away.
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <thread>

#include "classifier/text.h"
#include "common/file_write.h"
#include "common/status.h"
#include "daemon/alert_detector.h"
#include "daemon/base64.h"
#include "daemon/config.h"
#include "daemon/ctl/commands.h"
#include "daemon/ctl/message_sources.h"
#include "daemon/metrics.h"
#include "storage/store.h"

namespace bounced::ctl {
namespace {

using nlohmann::json;

// One connection to the query socket: request lines out, reply lines in. Errors say what to
// check.
class QueryConnection {
 public:
  QueryConnection() = default;
  QueryConnection(const QueryConnection&) = delete;
  QueryConnection& operator=(const QueryConnection&) = delete;
  ~QueryConnection() {
    if (fd_ >= 0) ::close(fd_);
  }

  bool Connect(const std::string& path, int timeout_seconds, std::string* error) {
    timeout_seconds_ = timeout_seconds;
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      *error = std::string("socket: ") + std::strerror(errno);
      return false;
    }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path)) {
      *error = "socket path too long: " + path;
      return false;
    }
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    path_ = path;
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      *error = "cannot connect to bounced at " + path + ": " + std::strerror(errno) +
               " (is bounced running? use --socket PATH for another socket)";
      return false;
    }
    return true;
  }

  bool Send(const json& request, std::string* error) {
    std::string line = request.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    size_t sent = 0;
    while (sent < line.size()) {
      ssize_t n = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        *error = std::string("sending the request: ") + std::strerror(errno);
        return false;
      }
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads the next reply line.
  bool Receive(json* reply, std::string* error) {
    size_t nl;
    while ((nl = in_.find('\n', scanned_)) == std::string::npos) {
      scanned_ = in_.size();
      if (timeout_seconds_ > 0) {
        pollfd p{fd_, POLLIN, 0};
        int ready = ::poll(&p, 1, timeout_seconds_ * 1000);
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) {
          *error = "no reply from bounced at " + path_ + " for " +
                   std::to_string(timeout_seconds_) +
                   " s (is it stuck? see its log; --timeout 0 waits for ever)";
          return false;
        }
      }
      char buf[65536];
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        *error = std::string("reading the reply: ") + std::strerror(errno);
        return false;
      }
      if (n == 0) {
        *error = in_.empty() ? "bounced closed the connection without a reply"
                             : "bounced closed the connection in the middle of a reply";
        return false;
      }
      in_.append(buf, static_cast<size_t>(n));
    }
    try {
      *reply = json::parse(std::string_view(in_).substr(0, nl));
    } catch (const json::exception& e) {
      *error = std::string("unreadable reply from bounced: ") + e.what();
      return false;
    }
    in_.erase(0, nl + 1);
    scanned_ = 0;
    // JSON of another shape (a socket that is not bounced's, or a newer protocol): said here
    // once, so that the commands may read "ok", "error" and "more" without checking types.
    if (!ReplyShapeOk(*reply)) {
      *error = "unexpected reply (not bounced's query protocol; is " + path_ +
               " bounced's query socket?): " +
               reply->dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 200);
      return false;
    }
    return true;
  }

 private:
  // {"ok": bool, ...} with "error" a string and "more" a bool when present (query_handler.h).
  static bool ReplyShapeOk(const json& r) {
    if (!r.is_object()) return false;
    auto ok = r.find("ok");
    if (ok == r.end() || !ok->is_boolean()) return false;
    auto error = r.find("error");
    if (error != r.end() && !error->is_string()) return false;
    auto more = r.find("more");
    return more == r.end() || more->is_boolean();
  }

  int fd_ = -1;
  int timeout_seconds_ = 0;
  std::string path_;
  std::string in_;      // received, not yet returned
  size_t scanned_ = 0;  // in_ before this has no newline
};

}  // namespace

std::string QuerySocketPath(const Context& ctx) {
  if (ctx.socket_given) return ctx.socket_path;
  if (!ctx.resolved_socket) {
    Expected<Config> cfg = LoadConfig(ctx.config_path);
    ctx.resolved_socket = cfg.ok() ? cfg->query.socket : ctx.socket_path;
  }
  return *ctx.resolved_socket;
}

namespace {

// Sends one request and reads one reply line.
bool Call(const Context& ctx, const json& request, json* reply, std::string* error) {
  QueryConnection c;
  return c.Connect(QuerySocketPath(ctx), ctx.reply_timeout_seconds, error) &&
         c.Send(request, error) && c.Receive(reply, error);
}

// Text from bounced as the readable output shows it: stored reasons, addresses and errors came
// from people and files (a --reason, an import, a bounce), and a mail admin's terminal must not
// obey an escape sequence in them. Sanitize (classifier/text.h) drops control characters, folds
// whitespace and replaces bytes that are not UTF-8; --json output is escaped JSON already.
std::string Shown(std::string_view text) { return Sanitize(text, text.size() * 3); }

// Prints a refusal from bounced (and its list of errors) and sets the exit status.
void PrintRefusal(Context& ctx, const std::string& cmd, const json& reply) {
  std::string error = Shown(reply.value("error", std::string("failed")));
  // The store names its operation already ("unsuppress: x is not suppressed"): said once.
  if (error.size() > cmd.size() + 2 && error.compare(0, cmd.size(), cmd) == 0 &&
      error.compare(cmd.size(), 2, ": ") == 0) {
    error.erase(0, cmd.size() + 2);
  }
  std::fprintf(stderr, "bouncectl: %s: %s\n", cmd.c_str(), error.c_str());
  if (reply.contains("errors") && reply["errors"].is_array()) {
    for (const auto& e : reply["errors"]) {
      if (e.is_string()) std::fprintf(stderr, "  %s\n", Shown(e.get<std::string>()).c_str());
    }
  }
  ctx.exit_code = kExitFailed;
}

void PrintFailure(Context& ctx, const std::string& cmd, const std::string& error) {
  std::fprintf(stderr, "bouncectl: %s: %s\n", cmd.c_str(), error.c_str());
  ctx.exit_code = kExitFailed;
}

// The ADDRESS of status, suppress and unsuppress: one that is no address (IsAddress, the rule
// bounced applies too) is a usage error, said before connecting, in bounced's words. Its
// control characters are shown as '?', as bounced shows them: dropped, they could leave what
// looks like an address.
bool AddressOk(Context& ctx, const char* cmd, const std::string& address) {
  if (IsAddress(address)) return true;
  std::fprintf(stderr, "bouncectl: %s: invalid address '%s'\n", cmd,
               Shown(MaskControls(address)).c_str());
  ctx.exit_code = kExitUsage;
  return false;
}

// Runs a request; on success hands the result to `print` (or prints JSON with --json).
void Run(Context& ctx, const json& request, const std::function<void(const json&)>& print) {
  json reply;
  std::string error;
  if (!Call(ctx, request, &reply, &error)) {
    std::fprintf(stderr, "bouncectl: %s\n", error.c_str());
    ctx.exit_code = kExitFailed;
    return;
  }
  if (!reply.value("ok", false)) return PrintRefusal(ctx, request.value("cmd", ""), reply);
  const json& result = reply["result"];
  if (ctx.json) {
    std::cout << result.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  } else {
    print(result);
  }
}

// j[key] as the readable output shows it (Shown), or "" when it is not a string.
std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "";
  return Shown(it->get_ref<const std::string&>());
}

// j[key] when j is an object that has it, else null: the replies are read through const
// references, where operator[] of a missing key is undefined behaviour, not an exception.
const json& At(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// Writes `text` to `path` under a temporary name beside it ("PATH.partial-XXXXXX": not
// "*.prom", which a textfile collector would read) and renames it into place.
Status ReplaceFile(const std::string& path, const std::string& text, mode_t mode) {
  std::string temp = path + ".partial-XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0) return Status::Error(temp + ": " + std::strerror(errno));
  if (::fchmod(fd, mode) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    return Status::Error("chmod " + temp + ": " + std::strerror(err));
  }
  return WriteAndRename(fd, temp, path, text, false);
}

// `bouncectl metrics`: the daemon's Prometheus text, or bounced_up 0 when it cannot be asked
// (then exit 1, the file still written: a collector keeps serving the last file it read, and
// a stale one would hide that bounced is away). --output replaces the file by rename, so a
// collector never reads half of it.
void WriteMetrics(Context& ctx, const std::string& output) {
  json reply;
  std::string error;
  std::string text;
  if (!Call(ctx, {{"cmd", "metrics"}}, &reply, &error)) {
    std::fprintf(stderr, "bouncectl: %s\n", error.c_str());
    ctx.exit_code = kExitFailed;
    text = RenderDownMetrics(BOUNCED_VERSION);
  } else if (!reply.value("ok", false)) {
    return PrintRefusal(ctx, "metrics", reply);
  } else {
    const json& t = At(At(reply, "result"), "text");
    if (!t.is_string()) {
      std::fprintf(stderr, "bouncectl: bounced's metrics reply has no text\n");
      ctx.exit_code = kExitFailed;
      return;
    }
    text = t.get<std::string>();
  }
  if (output.empty()) {
    std::cout << text << std::flush;
    return;
  }
  if (Status s = ReplaceFile(output, text, 0644); !s.ok()) {
    std::fprintf(stderr, "bouncectl: %s\n", s.message().c_str());
    ctx.exit_code = kExitFailed;
  }
}

// `bouncectl events` options and the request they make.
struct EventsOptions {
  std::string since, until, category, provider, code, status, source, domain, recipient, sender,
      sender_domain;
  int limit = 50;
  bool follow = false;
  int interval = 1;
};

json EventsRequest(const EventsOptions& o) {
  json req = {{"cmd", "events"}, {"limit", o.limit}};
  auto set = [&](const char* key, const std::string& v) {
    if (!v.empty()) req[key] = v;
  };
  set("since", o.since);
  set("until", o.until);
  set("category", o.category);
  set("provider", o.provider);
  set("provider_code", o.code);
  set("log_status", o.status);
  set("source", o.source);
  set("domain", o.domain);
  set("sender", o.sender);
  set("sender_domain", o.sender_domain);
  set("recipient", o.recipient);
  return req;
}

// One event as a row of the readable output.
std::vector<std::string> EventRow(const json& e) {
  std::string sender = Str(e, "sender");
  return {Str(e, "time"),
          Str(e, "log_status"),
          Str(e, "category"),
          Str(e, "provider"),
          Str(e, "provider_code"),
          Str(e, "recipient"),
          sender.empty() ? "<>" : sender,
          Sanitize(Str(e, "diagnostic"), 60)};
}

// How a question of a --follow was answered. Away: bounced could not be reached; refused: it
// answered with an error. Either way `error` says why, and *reply is what came (empty when away).
enum class Answer { kOk, kAway, kRefused };

Answer AskForArray(Context& ctx, const json& req, json* result, json* reply, std::string* error) {
  *reply = json();
  if (!Call(ctx, req, reply, error)) return Answer::kAway;
  if (!reply->value("ok", false) || !At(*reply, "result").is_array()) {
    *error = "bounced refuses: " + Shown(reply->value("error", std::string("failed")));
    return Answer::kRefused;
  }
  *result = At(*reply, "result");
  return Answer::kOk;
}

// A --follow's first questions: bounced must answer them (else why, and exit status 1).
bool AskFirst(Context& ctx, const char* what, const json& req, json* result) {
  std::string error;
  json reply;
  Answer a = AskForArray(ctx, req, result, &reply, &error);
  if (a == Answer::kAway) PrintFailure(ctx, what, error);
  if (a == Answer::kRefused) PrintRefusal(ctx, what, reply);
  return a == Answer::kOk;
}

// Lines of a --follow: each record's columns joined by two spaces ("-" for an empty one), or
// with --json the record as a JSON object.
void PrintFollowed(Context& ctx, const json& records,
                   const std::function<std::vector<std::string>(const json&)>& columns) {
  for (const json& r : records) {
    if (ctx.json) {
      std::cout << r.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
      continue;
    }
    std::string line;
    for (const std::string& f : columns(r)) {
      if (!line.empty()) line += "  ";
      line += f.empty() ? "-" : f;
    }
    std::cout << line << "\n";
  }
  std::cout << std::flush;
}

// The rest of a --follow: every `interval` seconds, whatever was recorded after the record
// `last` (by id: `req` with after_id, which answers the oldest first, in pieces of `limit`, so
// none is missed however many arrive), printed. A bounced that goes away (a restart) or refuses
// (its database unavailable for a while) is waited for, said once on standard error: the
// database keeps the ids, so what was recorded meanwhile comes next. Ends when interrupted.
void PollAfterId(Context& ctx, json req, int64_t last, int interval, size_t limit,
                 const std::function<void(const json&)>& print) {
  bool away = false;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::seconds(interval));
    json more;
    do {
      req["after_id"] = last;
      std::string error;
      json reply;
      if (AskForArray(ctx, req, &more, &reply, &error) != Answer::kOk) {
        if (!away) std::fprintf(stderr, "bouncectl: %s; waiting for it\n", error.c_str());
        away = true;
        break;
      }
      if (away) std::fprintf(stderr, "bouncectl: bounced answers again\n");
      away = false;
      print(more);
      for (const json& e : more) last = std::max(last, e.value("id", int64_t{0}));
    } while (more.size() == limit);
  }
}

// `events --follow`: the latest events as without it (oldest first), then every event recorded
// after the last one shown (PollAfterId), whenever it happened (a log read late records old
// times), with the same filters. Ends with exit 1 when bounced refuses or cannot be reached at
// the start.
void FollowEvents(Context& ctx, const EventsOptions& o) {
  auto print = [&](const json& events) { PrintFollowed(ctx, events, EventRow); };
  // The newest event of all first (none: 0), so that what follows starts after it even when
  // the filters match nothing yet; then the latest that match.
  json newest;
  if (!AskFirst(ctx, "events", {{"cmd", "events"}, {"since", 0}, {"limit", 1}}, &newest)) return;
  int64_t last = newest.empty() ? 0 : newest[0].value("id", int64_t{0});
  json first;
  if (!AskFirst(ctx, "events", EventsRequest(o), &first)) return;
  for (const json& e : first) last = std::max(last, e.value("id", int64_t{0}));
  if (!ctx.json) {
    std::cout << "TIME  STATUS  CATEGORY  PROVIDER  CODE  RECIPIENT  SENDER  DIAGNOSTIC\n";
  }
  std::reverse(first.begin(), first.end());  // the oldest first, as the lines that follow
  print(first);
  json req = EventsRequest(o);
  req["since"] = 0;
  PollAfterId(ctx, req, last, o.interval, static_cast<size_t>(o.limit), print);
}

// Why a change of the list was made: the operator's reason for a manual one, else the entry's.
std::string ChangeReason(const json& c) {
  std::string why = Str(c, "note");
  return why.empty() ? Str(c, "reason") : why;
}

// One change of the list as a row: who made it ("bounced" itself, or a uid) and why.
std::vector<std::string> ChangeCells(const json& c) {
  const int64_t uid = c.value("uid", int64_t{-1});
  return {Str(c, "time"),
          Str(c, "action"),
          Str(c, "source"),
          Str(c, "category"),
          uid < 0 ? "bounced" : "uid " + std::to_string(uid),
          Sanitize(ChangeReason(c), 60)};
}

// `bouncectl changes` options and the request they make.
struct ChangesOptions {
  int64_t after = -1;
  std::string since, domain;
  int limit = 1000;
  bool follow = false;
  int interval = 1;
};

json ChangesRequest(const ChangesOptions& o) {
  json req = {{"cmd", "changes"}, {"limit", o.limit}};
  if (o.after >= 0) req["after_id"] = o.after;
  if (!o.since.empty()) req["since"] = o.since;
  if (!o.domain.empty()) req["domain"] = o.domain;
  return req;
}

// One change as a row of the readable output: its id and address, then as `status -v` shows it.
std::vector<std::string> ChangeRow(const json& c) {
  std::vector<std::string> cells = ChangeCells(c);
  cells.insert(cells.begin() + 2, Str(c, "address"));
  cells.insert(cells.begin(), std::to_string(c.value("id", int64_t{0})));
  return cells;
}

constexpr const char* kChangeColumns[] = {"ID",     "TIME",     "ACTION", "ADDRESS",
                                          "SOURCE", "CATEGORY", "BY",     "REASON"};

// `changes --follow`: the changes the options select, then every later one (PollAfterId).
// The time bound stays: a change is committed after the ones before it.
void FollowChanges(Context& ctx, const ChangesOptions& o) {
  auto print = [&](const json& changes) { PrintFollowed(ctx, changes, ChangeRow); };
  json req = ChangesRequest(o);
  // Every question below names after_id, which makes bounced's default of the last 24 hours
  // "from the first change": keep that default here.
  if (o.after < 0 && o.since.empty()) req["since"] = "24h";
  if (!ctx.json) {
    std::string header;
    for (const char* c : kChangeColumns) header += (header.empty() ? "" : "  ") + std::string(c);
    std::cout << header << "\n";
  }
  int64_t last = std::max<int64_t>(o.after, 0);
  json more;
  do {
    req["after_id"] = last;
    if (!AskFirst(ctx, "changes", req, &more)) return;
    print(more);
    for (const json& c : more) last = std::max(last, c.value("id", int64_t{0}));
  } while (more.size() == static_cast<size_t>(o.limit));
  PollAfterId(ctx, req, last, o.interval, static_cast<size_t>(o.limit), print);
}

// The open policy-rejection alerts of a stats reply, a few lines each: what, since when, how
// many against the threshold, the recipient domains most hit, our sending domains, and a sample
// reply (`--json` has it all).
void PrintOpenAlerts(const json& open) {
  if (!open.is_array() || open.empty()) return;
  std::cout << "\n" << open.size() << " open alert(s):\n";
  for (const json& a : open) {
    std::string what = Str(a, "provider").empty() ? "(unknown provider)" : Str(a, "provider");
    what += " " + Str(a, "category");
    if (!Str(a, "code").empty()) what += " " + Str(a, "code");
    std::cout << "  " << Shown(what) << ": since " << Str(a, "opened") << ", "
              << a.value("total_events", int64_t{0}) << " event(s), peak "
              << a.value("peak_count", int64_t{0}) << " in "
              << a.value("window_seconds", int64_t{0}) / 60 << " min (threshold "
              << static_cast<int64_t>(a.value("threshold", 0.0)) << ")\n";
    // The recipient domains hit most, and our sending domains, five at most each.
    for (const auto& [member, label] :
         {std::pair{"domains", "domains"}, std::pair{"sender_domains", "from"}}) {
      std::vector<std::pair<int64_t, std::string>> domains;
      if (const json& d = At(a, member); d.is_object()) {
        for (const auto& [domain, n] : d.items()) {
          domains.emplace_back(n.is_number_integer() ? n.get<int64_t>() : 0, domain);
        }
      }
      std::sort(domains.begin(), domains.end(), [](const auto& x, const auto& y) {
        return x.first != y.first ? x.first > y.first : x.second < y.second;
      });
      if (domains.empty()) continue;
      std::string line;
      for (size_t i = 0; i < domains.size() && i < 5; ++i) {
        if (i > 0) line += ", ";
        line += domains[i].second + " " + std::to_string(domains[i].first);
      }
      if (domains.size() > 5) line += ", " + std::to_string(domains.size() - 5) + " more";
      std::cout << "    " << label << ": " << Shown(line) << "\n";
    }
    if (!Str(a, "sample").empty())
      std::cout << "    e.g. " << Sanitize(Str(a, "sample"), 160) << "\n";
    // One domain's hard bounces: a stale list, or the domain's own failure read as unknown
    // users; what undoes the second once the domain works again.
    if (Str(a, "kind") == "hard_bounces" && !Str(a, "remedy").empty()) {
      std::cout << "    a list gone stale, or " << Str(a, "provider")
                << "'s own failure (DNS, a migration) read as unknown users? If the domain "
                   "failed, once it works again:\n      "
                << Str(a, "remedy") << "\n";
    }
  }
}

// "2026-11-29T17:09:53Z" -> "2026-11-29"; "" stays "".
std::string Day(const std::string& t) { return t.substr(0, 10); }

std::string StatusLine(const json& s) {
  std::string addr = Str(s, "address");
  const json& sup = At(s, "suppression");
  if (s.value("allowlisted", false)) {
    std::string line = addr + " is not suppressed: allowlisted (" +
                       Str(At(s, "allowed_by"), "kind") + " " + Str(At(s, "allowed_by"), "entry") +
                       ")";
    if (!sup.is_null()) {
      line += ", which overrides a " + Str(sup, "source") + " suppression since " +
              Day(Str(sup, "created"));
    }
    return line;
  }
  if (s.value("suppressed", false)) {
    std::string category = Str(s, "category");
    std::string line = addr + " is SUPPRESSED since " + Day(Str(s, "since")) + " (" +
                       Str(s, "reason") + (category.empty() ? "" : ", " + category) + ", " +
                       Str(s, "source") + ")";
    std::string detail = Str(sup, "detail");
    if (!detail.empty()) line += ": \"" + Sanitize(detail, 160) + "\"";  // whole characters
    std::string expires = Str(s, "expires");
    line += expires.empty() ? "; never expires" : "; expires " + Day(expires);
    line += ". To lift it: bouncectl unsuppress " + addr + " --reason \"...\"";
    return line;
  }
  std::string line = addr + " is not suppressed";
  const json& history = At(s, "history");
  const json& latest = history.is_array() && !history.empty() ? history.front() : json();
  if (!sup.is_null()) {
    line += " (suppression expired " + Day(Str(sup, "expires")) + ")";
  } else if (Str(latest, "action") == "remove") {
    // Lifted by hand (unsuppress: who and why), or purged by bounced once it expired.
    const int64_t uid = latest.value("uid", int64_t{-1});
    line += uid < 0 ? " (its suppression expired; removed " + Day(Str(latest, "time")) + ")"
                    : " (lifted " + Day(Str(latest, "time")) + " by uid " + std::to_string(uid) +
                          ": \"" + Sanitize(ChangeReason(latest), 120) + "\")";
  }
  const json& events = At(s, "events");
  if (!events.is_array() || events.empty()) return line + "; no delivery events recorded";
  const json& last = events.front();
  line += "; last event " + Day(Str(last, "time")) + ": " + Str(last, "log_status") + " " +
          Str(last, "category");
  std::string status = Str(last, "status");
  if (!status.empty()) line += " " + status;
  if (last.value("as_original_recipient", false)) {
    line += " (at " + Str(last, "recipient") + ", which it forwarded to)";
  }
  const json& state = At(s, "state");
  if (state.is_object() && state.value("incidents", 0) > 0) {
    line += "; " + std::to_string(state.value("incidents", 0)) + " failure incident(s) since " +
            Day(Str(state, "incidents_since")) + " count toward suppression";
    // Deliveries after them wait (storage/policy.h): each starts the count over when a message
    // accepted after it fails first, and not when it bounces itself (a relay that accepted it
    // and sent a DSN later).
    std::string pending = Str(state, "pending_delivery");
    const json& waiting = At(state, "pending_deliveries");
    const size_t n = waiting.is_array() ? waiting.size() : 0;
    if (!pending.empty()) {
      line += n > 1 ? " (" + std::to_string(n) + " deliveries waiting, the latest message <"
                    : " (message <";
      line += Str(state, "pending_message_id") + "> delivered " + Day(pending) +
              (n > 1 ? ": each one" : ": it") +
              " starts the count over if a message accepted after it fails before it bounces)";
    }
  }
  return line;
}

void PrintTable(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size());
  for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], r[i].size());
  }
  auto print_row = [&](const std::vector<std::string>& r) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    std::cout << line << "\n";
  };
  print_row(header);
  for (const auto& r : rows) print_row(r);
}

// ingest-dsn: one request per message. One plain file (or stdin) prints as it always has; more
// messages (several files, a folder, a mailbox) print a line each, labelled FILE or FILE#N, and
// a count at the end. Messages that are no bounce (a mailbox holds some) are counted and named
// on stderr, and make the exit status 1, as an unreadable input does; a refusal of any other
// kind, or bounced not answering, stops the run.
// `envelope_recipient`: where the messages were delivered (--envelope-recipient), "" when unknown.
void IngestMessages(Context& ctx, std::vector<std::string> files, bool mbox,
                    const std::string& envelope_recipient) {
  if (files.empty()) files.push_back("-");
  const bool many = mbox || files.size() > 1 || IsFolder(files[0]);
  uint64_t messages = 0, recorded = 0, events = 0, not_bounces = 0, unreadable = 0, too_old = 0;
  bool stopped = false;
  auto label = [](const std::string& file, uint64_t number) {
    return number == 0 ? file : file + "#" + std::to_string(number);
  };
  auto print = [&](const json& r, const std::string& where) {
    if (ctx.json) {
      json line = r;
      if (many) line["file"] = where;
      std::cout << line.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
      return;
    }
    if (many) std::cout << where << ": ";
    std::cout << Str(r, "kind") << " with " << At(r, "recipients").size() << " recipient(s) "
              << (r.value("too_old", false) ? "not recorded (too old)" : "recorded");
    if (many) std::cout << " (" << Str(r, "time") << ")";
    if (r.contains("verp_recipient")) std::cout << " for " << Str(r, "verp_recipient") << " (VERP)";
    for (const auto& w : r.value("warnings", json::array())) {
      std::cout << "\n  warning: " << (w.is_string() ? Shown(w.get<std::string>()) : w.dump());
    }
    for (const auto& rc : At(r, "recipients")) {
      std::cout << "\n  " << Str(rc, "recipient") << ": " << Str(rc, "category") << " "
                << Str(rc, "status");
    }
    std::cout << "\n";
  };
  // Counted and named; the run goes on (a mailbox holds some).
  auto not_a_bounce = [&](const std::string& where, const std::string& why) {
    ++not_bounces;
    ctx.exit_code = kExitFailed;
    std::fprintf(stderr, "bouncectl: ingest-dsn: %s%s\n", many ? (where + ": ").c_str() : "",
                 Shown(why).c_str());
  };
  ForEachMessage(
      files, mbox,
      [&](const std::string& file, uint64_t number, std::string_view bytes) {
        if (stopped) return;
        ++messages;
        const std::string where = label(file, number);
        if (bytes.empty()) {  // a mailbox's separator with nothing after it
          not_a_bounce(where, "not a bounce: the message is empty");
          return;
        }
        json reply;
        std::string error;
        json request{{"cmd", "ingest-dsn"}, {"message_base64", Base64Encode(bytes)}};
        if (!envelope_recipient.empty()) request["envelope_recipient"] = envelope_recipient;
        if (!Call(ctx, request, &reply, &error)) {
          std::fprintf(stderr, "bouncectl: %s\n", error.c_str());
          ctx.exit_code = kExitFailed;
          stopped = true;
          return;
        }
        if (!reply.value("ok", false)) {
          const std::string why = reply.value("error", std::string("failed"));
          if (why.rfind("not a bounce", 0) != 0) {
            PrintRefusal(ctx, "ingest-dsn", reply);
            stopped = true;
            return;
          }
          not_a_bounce(where, why);
          return;
        }
        ++(reply["result"].value("too_old", false) ? too_old : recorded);
        events += reply["result"].value("events", uint64_t{0});
        print(reply["result"], where);
      },
      [&](const std::string&, const std::string& error) {
        if (stopped) return;
        ++unreadable;
        ctx.exit_code = kExitFailed;
        std::fprintf(stderr, "bouncectl: ingest-dsn: %s\n", error.c_str());
      });
  if (many && !ctx.json) {
    std::cout << messages << " message(s): " << recorded << " recorded (" << events
              << " recipient event(s); one already recorded is not recorded again), ";
    if (too_old != 0) std::cout << too_old << " too old for the event retention, ";
    std::cout << not_bounces << " not a bounce";
    if (unreadable != 0) std::cout << ", " << unreadable << " input(s) unreadable";
    if (stopped) std::cout << "; stopped early";
    std::cout << "\n";
  }
}

struct ListOptions {
  std::string category, domain, since, until, source;
  size_t limit = 0;
  bool include_expired = false;
};

void AddListOptions(CLI::App* cmd, ListOptions& o) {
  cmd->add_option("--category", o.category, "only this category (e.g. user_unknown)");
  cmd->add_option("--domain", o.domain, "only addresses at this domain");
  cmd->add_option("--since", o.since, "created since: 2026-11-01, 2026-11-01T12:00:00Z or 7d");
  cmd->add_option("--until", o.until, "and created before this time (same forms)");
  cmd->add_option("--source", o.source, "only this source: bounce, complaint, manual, import");
  // bounced's own bound (query_handler.cc): refused here as a usage error (exit 2).
  cmd->add_option("--limit", o.limit, "at most this many (0: all)")
      ->check(CLI::Range(size_t{0}, size_t{1} << 40));
  cmd->add_flag("--include-expired", o.include_expired, "also expired entries");
}

json ListRequest(const char* cmd, const ListOptions& o) {
  json r{{"cmd", cmd}};
  if (!o.category.empty()) r["category"] = o.category;
  if (!o.domain.empty()) r["domain"] = o.domain;
  if (!o.since.empty()) r["since"] = o.since;
  if (!o.until.empty()) r["until"] = o.until;
  if (!o.source.empty()) r["source"] = o.source;
  if (o.limit > 0) r["limit"] = o.limit;
  if (o.include_expired) r["include_expired"] = true;
  return r;
}

// Streams an export into `output` ("-" = stdout) as bounced sends it. Returns the count, or
// nothing after printing why it failed.
std::optional<size_t> StreamExport(Context& ctx, json request, const std::string& output) {
  request["stream"] = true;
  QueryConnection c;
  std::string error;
  if (!c.Connect(QuerySocketPath(ctx), ctx.reply_timeout_seconds, &error) ||
      !c.Send(request, &error)) {
    PrintFailure(ctx, "export", error);
    return std::nullopt;
  }
  // A regular file (or a new one) is written under a temporary name beside it and renamed
  // into place only once the export is complete: a failed export leaves no partial file and
  // an earlier export under that name stays as it was. Anything else (a FIFO, /dev/stdout, a
  // symlink) is written directly.
  std::FILE* out = stdout;
  std::string temp;
  if (output != "-") {
    struct stat st {};
    bool replace = ::lstat(output.c_str(), &st) != 0 ? errno == ENOENT : S_ISREG(st.st_mode);
    if (replace) {
      temp = output + ".partial-XXXXXX";
      int fd = ::mkstemp(temp.data());
      if (fd < 0) {
        PrintFailure(ctx, "export", temp + ": " + std::strerror(errno));
        return std::nullopt;
      }
      mode_t mask = ::umask(0);  // the mode fopen would give a new file
      ::umask(mask);
      ::fchmod(fd, 0666 & ~mask);
      out = ::fdopen(fd, "wb");
      if (out == nullptr) ::close(fd);
    } else {
      out = std::fopen(output.c_str(), "wb");
    }
    if (out == nullptr) {
      PrintFailure(ctx, "export", output + ": " + std::strerror(errno));
      if (!temp.empty()) ::unlink(temp.c_str());
      return std::nullopt;
    }
  }
  std::string incomplete = output == "-" ? "the output" : output;
  // What a failure leaves behind, for its message.
  std::string left = temp.empty() ? incomplete + " is incomplete" : output + " was not written";
  auto write = [&](const json& data) {
    if (!data.is_string()) return true;
    const std::string& d = data.get_ref<const std::string&>();
    return std::fwrite(d.data(), 1, d.size(), out) == d.size();
  };
  std::optional<size_t> count;
  for (;;) {
    json reply;
    if (!c.Receive(&reply, &error)) {
      PrintFailure(ctx, "export", error + "; " + left);
      break;
    }
    if (!reply.value("ok", false)) {
      PrintRefusal(ctx, "export", reply);
      if (!temp.empty()) PrintFailure(ctx, "export", left);
      break;
    }
    bool written =
        reply.value("more", false) ? write(reply["data"]) : write(reply["result"]["data"]);
    if (!written) {
      PrintFailure(ctx, "export", "writing " + incomplete + ": " + std::strerror(errno));
      break;
    }
    if (!reply.value("more", false)) {  // the end (older bounced: the only line, with the data)
      count = reply["result"].value("count", size_t{0});
      break;
    }
  }
  if (std::fflush(out) != 0 && count) {
    PrintFailure(ctx, "export", "writing " + incomplete + ": " + std::strerror(errno));
    count.reset();
  }
  if (out != stdout && std::fclose(out) != 0 && count) {
    PrintFailure(ctx, "export", "writing " + incomplete + ": " + std::strerror(errno));
    count.reset();
  }
  if (!temp.empty()) {
    if (!count) {
      ::unlink(temp.c_str());
    } else if (::rename(temp.c_str(), output.c_str()) != 0) {
      PrintFailure(ctx, "export",
                   "renaming " + temp + " to " + output + ": " + std::strerror(errno));
      ::unlink(temp.c_str());
      count.reset();
    }
  }
  return count;
}

// Bytes `c` takes in a JSON string as nlohmann dumps it (at most: a byte of a multi-byte
// sequence counts as 3, what an invalid byte's replacement character takes).
size_t JsonEscapedSize(unsigned char c) {
  if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
    return 2;
  if (c < 0x20) return 6;
  return c < 0x80 ? 1 : 3;
}

// The request size bouncectl aims at for one import part (bounced's own limit, from part 0's
// reply, may be lower).
constexpr size_t kImportPartBytes = 1024 * 1024;
// Room for the rest of a part's request: {"cmd":"import","data":"","more":true,"part":N}.
constexpr size_t kImportPartOverhead = 128;

// Where the first byte of `text` that is not well-formed UTF-8 is, or npos.
size_t FirstInvalidUtf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    size_t len = Utf8SequenceLength(p + i, text.size() - i);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

// Sends an import in parts of whole lines, each request under bounced's max_request_bytes; the
// file is read as it is sent. bounced joins the parts and imports all or nothing at the end.
// The file must be UTF-8: a request is JSON, which would carry other bytes only as U+FFFD, and
// "m\xfcller@example.de" stored as "m\uFFFDller@example.de" is another address. So a byte
// that is not UTF-8 ends the import before its part is sent (bounced drops the parts it has:
// nothing is imported), naming its line.
// What `bouncectl import` asks besides the file.
struct ImportFlags {
  std::string reason;
  std::string category;
  bool ignore_unknown_columns = false;
  bool dry_run = false;
};

// "user_unknown 3, complaint 1, (none) 2": a result's categories, the most first.
std::string CategoryCounts(const json& categories) {
  std::vector<std::pair<int64_t, std::string>> counts;
  for (const auto& [name, n] : categories.items()) {
    counts.emplace_back(n.is_number_integer() ? n.get<int64_t>() : 0,
                        name.empty() ? "(none)" : Sanitize(name, 40));
  }
  std::stable_sort(counts.begin(), counts.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (const auto& [n, name] : counts) {
    out += (out.empty() ? "" : ", ") + name + " " + std::to_string(n);
  }
  return out;
}

void StreamImport(Context& ctx, const std::string& file, const std::string& format,
                  const ImportFlags& flags) {
  std::FILE* in = file == "-" ? stdin : std::fopen(file.c_str(), "rb");
  if (in == nullptr) return PrintFailure(ctx, "import", file + ": " + std::strerror(errno));
  struct Closer {
    std::FILE* f;
    ~Closer() {
      if (f != stdin) std::fclose(f);
    }
  } closer{in};

  QueryConnection c;
  std::string error;
  if (!c.Connect(QuerySocketPath(ctx), ctx.reply_timeout_seconds, &error))
    return PrintFailure(ctx, "import", error);
  // Part 0 carries no data: its reply says the limits (and refusals come before any reading).
  json req{{"cmd", "import"}, {"format", format}, {"part", 0}, {"more", true}, {"data", ""}};
  if (!flags.reason.empty()) req["reason"] = flags.reason;
  if (flags.ignore_unknown_columns) req["ignore_unknown_columns"] = true;
  if (!flags.category.empty()) req["category"] = flags.category;
  if (flags.dry_run) req["dry_run"] = true;
  struct stat st {};
  if (::fstat(::fileno(in), &st) == 0 && S_ISREG(st.st_mode)) {
    // What is left to read: bounced refuses too large at once, and makes room for it once.
    off_t at = ::ftello(in);
    req["size"] = static_cast<int64_t>(st.st_size - (at > 0 ? at : 0));
  }
  json reply;
  if (!c.Send(req, &error) || !c.Receive(&reply, &error)) return PrintFailure(ctx, "import", error);
  if (!reply.value("ok", false)) return PrintRefusal(ctx, "import", reply);
  const json& limits = reply["result"];
  if (!limits.contains("max_request_bytes")) {
    return PrintFailure(ctx, "import",
                        "this bounced does not take imports in parts (query protocol 2); "
                        "upgrade it");
  }
  size_t max_request = limits.value("max_request_bytes", size_t{0});
  size_t budget = kImportPartBytes;
  if (max_request < budget + kImportPartOverhead) {
    budget = max_request > 2 * kImportPartOverhead ? max_request - kImportPartOverhead
                                                   : kImportPartOverhead;
  }

  std::string pending;  // read from the file, not sent yet
  bool eof = false;
  int64_t lines_sent = 0;  // line ends in the parts sent so far
  for (int64_t part = 1;; ++part) {
    // Read up to `budget` raw bytes: they never escape to less than that.
    while (!eof && pending.size() < budget) {
      size_t have = pending.size();
      pending.resize(budget);
      size_t n = std::fread(pending.data() + have, 1, budget - have, in);
      pending.resize(have + n);
      if (n == 0) {
        if (std::ferror(in)) return PrintFailure(ctx, "import", file + ": " + std::strerror(errno));
        eof = true;
      }
    }
    // What fits in one request once escaped, then back to the end of its last whole line.
    size_t fit = 0, escaped = 0;
    while (fit < pending.size()) {
      size_t e = JsonEscapedSize(static_cast<unsigned char>(pending[fit]));
      if (escaped + e > budget) break;
      escaped += e;
      ++fit;
    }
    bool last = eof && fit == pending.size();
    size_t cut = fit;
    if (!last) {
      size_t nl = pending.rfind('\n', fit == 0 ? 0 : fit - 1);
      if (nl != std::string::npos && nl < fit) {
        cut = nl + 1;
      } else {
        // One line longer than a part: it goes in pieces (bounced joins them), split between
        // UTF-8 characters.
        while (cut > 0 && (static_cast<unsigned char>(pending[cut]) & 0xC0) == 0x80) --cut;
        if (cut == 0) cut = fit;
      }
    }
    std::string_view data = std::string_view(pending).substr(0, cut);
    if (size_t bad = FirstInvalidUtf8(data); bad != std::string_view::npos) {
      std::string_view before = data.substr(0, bad);
      int64_t line = lines_sent + std::count(before.begin(), before.end(), '\n') + 1;
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(data[bad]));
      return PrintFailure(ctx, "import",
                          file + " line " + std::to_string(line) + ": byte " + byte +
                              " is not UTF-8 (convert the file first, e.g. iconv -f LATIN1 -t "
                              "UTF-8); nothing imported");
    }
    lines_sent += std::count(data.begin(), data.end(), '\n');
    json part_req{{"cmd", "import"}, {"part", part}, {"more", !last}, {"data", data}};
    if (!c.Send(part_req, &error) || !c.Receive(&reply, &error)) {
      return PrintFailure(ctx, "import", error + "; nothing imported");
    }
    if (!reply.value("ok", false)) return PrintRefusal(ctx, "import", reply);
    if (last) break;
    pending.erase(0, cut);
  }
  const json& r = reply["result"];
  if (ctx.json) {
    std::cout << r.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  } else {
    const bool dry_run = r.value("dry_run", false);
    std::cout << (dry_run ? "would import: " : "imported: ") << r.value("added", 0) << " added, "
              << r.value("updated", 0) << " updated\n";
    if (const int64_t n = r.value("categorized", int64_t{0}); n > 0) {
      std::cout << "categorized: " << n << " from their reason (bouncectl list --source import "
                << "--category C shows them)\n";
    }
    if (const json& c = At(r, "categories"); dry_run && c.is_object() && !c.empty()) {
      std::cout << "categories: " << CategoryCounts(c) << "\n";
    }
    if (const json& ignored = At(r, "ignored_columns"); ignored.is_array() && !ignored.empty()) {
      std::string names;
      for (const json& n : ignored) {
        if (!names.empty()) names += ", ";
        names += Sanitize(n.is_string() ? n.get<std::string>() : n.dump(), 40);
      }
      std::cout << "ignored columns: " << names << "\n";
    }
  }
}

}  // namespace

void RegisterQueryCommands(CLI::App& app, Context& ctx) {
  // status
  {
    auto* cmd = app.add_subcommand("status", "is ADDRESS suppressed, since when, why");
    auto address = std::make_shared<std::string>();
    auto verbose = std::make_shared<bool>(false);
    cmd->add_option("address", *address, "email address")->required();
    cmd->add_flag("-v,--events", *verbose, "also list the latest events");
    cmd->callback([&ctx, address, verbose] {
      if (!AddressOk(ctx, "status", *address)) return;
      Run(ctx, {{"cmd", "status"}, {"address", *address}}, [&](const json& r) {
        std::cout << StatusLine(r) << "\n";
        if (*verbose && At(r, "events").is_array() && !At(r, "events").empty()) {
          std::vector<std::vector<std::string>> rows;
          for (const auto& e : At(r, "events")) {
            // A forward's failure (the address asked about was its original recipient).
            const std::string via = e.value("as_original_recipient", false)
                                        ? "[for " + Str(e, "recipient") + "] "
                                        : std::string();
            rows.push_back({Str(e, "time"), Str(e, "source"), Str(e, "log_status"),
                            Str(e, "category"), Str(e, "status"), Str(e, "provider_code"),
                            Sanitize(via + Str(e, "diagnostic"), 80)});
          }
          PrintTable({"TIME", "SOURCE", "STATUS", "CATEGORY", "DSN", "CODE", "DIAGNOSTIC"}, rows);
        }
        // The entry's history: when it was added, changed, lifted; by whom and why.
        if (*verbose && At(r, "history").is_array() && !At(r, "history").empty()) {
          std::vector<std::vector<std::string>> rows;
          for (const auto& c : At(r, "history")) rows.push_back(ChangeCells(c));
          std::cout << "\nsuppression history (newest first):\n";
          PrintTable({"TIME", "ACTION", "SOURCE", "CATEGORY", "BY", "REASON"}, rows);
        }
      });
    });
  }
  // suppress / unsuppress
  {
    auto* cmd = app.add_subcommand("suppress", "suppress ADDRESS by hand (audited)");
    auto address = std::make_shared<std::string>();
    auto reason = std::make_shared<std::string>();
    auto category = std::make_shared<std::string>();
    auto expires = std::make_shared<std::string>();
    cmd->add_option("address", *address, "email address")->required();
    cmd->add_option("--reason", *reason, "why (recorded in the audit log)")->required();
    cmd->add_option("--category", *category, "category to record, e.g. user_unknown");
    cmd->add_option("--expires", *expires, "when it ends: a date, 30d, or never (default)");
    cmd->callback([&ctx, address, reason, category, expires] {
      if (!AddressOk(ctx, "suppress", *address)) return;
      json req{{"cmd", "suppress"}, {"address", *address}, {"reason", *reason}};
      if (!category->empty()) req["category"] = *category;
      if (!expires->empty()) req["expires"] = *expires;
      Run(ctx, req, [&](const json& r) {
        std::cout << Str(r, "address") << " suppressed (" << Str(r, "reason") << ")"
                  << (Str(r, "expires").empty() ? "" : ", expires " + Str(r, "expires")) << "\n";
      });
    });
  }
  {
    auto* cmd = app.add_subcommand(
        "unsuppress",
        "lift the suppression of ADDRESS, or of every entry a selection picks (audited)");
    auto address = std::make_shared<std::string>();
    auto reason = std::make_shared<std::string>();
    auto opts = std::make_shared<ListOptions>();
    auto all = std::make_shared<bool>(false);
    auto dry_run = std::make_shared<bool>(false);
    cmd->add_option("address", *address, "email address");
    cmd->add_option("--reason", *reason,
                    "why (recorded in the audit log; required but for --dry-run)");
    auto* domain = cmd->add_option("--domain", opts->domain, "every entry at this domain");
    auto* category = cmd->add_option("--category", opts->category,
                                     "every entry of this category (e.g. domain_unknown)");
    auto* source = cmd->add_option("--source", opts->source,
                                   "every entry of this source: bounce, complaint, manual, import");
    auto* since =
        cmd->add_option("--since", opts->since,
                        "every entry created since: 2026-11-01, 2026-11-01T12:00:00Z or 7d");
    auto* until =
        cmd->add_option("--until", opts->until, "and created before this time (same forms)");
    auto* every = cmd->add_flag("--all", *all, "every entry of the list");
    cmd->add_flag("--dry-run", *dry_run, "say what would be lifted; change nothing");
    for (CLI::Option* o : {domain, category, source, since, until}) o->excludes(every);
    cmd->callback([&ctx, address, reason, opts, all, dry_run] {
      const bool selects = !opts->domain.empty() || !opts->category.empty() ||
                           !opts->source.empty() || !opts->since.empty() || !opts->until.empty();
      if (!address->empty() && (selects || *all || *dry_run)) {
        std::fprintf(stderr,
                     "bouncectl: unsuppress: give an ADDRESS or a selection (--domain, "
                     "--category, --source, --since, --until, --all), not both\n");
        ctx.exit_code = kExitUsage;
        return;
      }
      if (address->empty() && !selects && !*all) {
        std::fprintf(stderr,
                     "bouncectl: unsuppress: give an ADDRESS, a selection (--domain, --category, "
                     "--source, --since, --until) or --all\n");
        ctx.exit_code = kExitUsage;
        return;
      }
      if (reason->empty() && !*dry_run) {
        std::fprintf(stderr, "bouncectl: unsuppress: --reason is required\n");
        ctx.exit_code = kExitUsage;
        return;
      }
      if (!address->empty()) {
        if (!AddressOk(ctx, "unsuppress", *address)) return;
        Run(ctx, {{"cmd", "unsuppress"}, {"address", *address}, {"reason", *reason}},
            [&](const json& r) {
              // The key lifted, as status and list show it (User+news@Example.COM lifts
              // user@example.com); the address as given from a bounced that does not say.
              std::string key = Str(r, "key");
              std::cout << (key.empty() ? Shown(*address) : key) << " is no longer suppressed\n";
            });
        return;
      }
      json req = ListRequest("unsuppress", *opts);
      if (*all) req["all"] = true;
      if (*dry_run) req["dry_run"] = true;
      if (!reason->empty()) req["reason"] = *reason;
      Run(ctx, req, [&](const json& r) {
        const int64_t count = r.value("count", int64_t{0});
        const json& sample = At(r, "sample");
        int64_t shown = 0;
        if (sample.is_array()) {
          for (const json& k : sample) {
            if (!k.is_string()) continue;
            std::cout << "  " << Shown(k.get<std::string>()) << "\n";
            ++shown;
          }
        }
        if (count > shown) std::cout << "  ... and " << count - shown << " more\n";
        std::cout << count << (count == 1 ? " suppression " : " suppressions ")
                  << (*dry_run ? "would be lifted (dry run: nothing changed)\n" : "lifted\n");
      });
    });
  }
  // allow / disallow / allowlist
  for (const char* name : {"allow", "disallow"}) {
    bool allow = std::string(name) == "allow";
    auto* cmd = app.add_subcommand(name, allow ? "never suppress this address or domain (audited)"
                                               : "remove an allowlist entry (audited)");
    auto entry = std::make_shared<std::string>();
    auto reason = std::make_shared<std::string>();
    cmd->add_option("entry", *entry, "address, or domain (example.com)")->required();
    cmd->add_option("--reason", *reason, "why (recorded in the audit log)")->required();
    cmd->callback([&ctx, entry, reason, allow, name] {
      Run(ctx, {{"cmd", name}, {"entry", *entry}, {"reason", *reason}}, [&](const json&) {
        std::cout << *entry << (allow ? " is allowlisted\n" : " is no longer allowlisted\n");
      });
    });
  }
  {
    auto* cmd = app.add_subcommand("allowlist", "show the allowlist");
    cmd->callback([&ctx] {
      Run(ctx, {{"cmd", "allowlist"}}, [&](const json& r) {
        std::vector<std::vector<std::string>> rows;
        for (const auto& a : r) {
          rows.push_back({Str(a, "entry"), Str(a, "kind"), Str(a, "created"),
                          std::to_string(a.value("uid", -1)), Str(a, "reason")});
        }
        PrintTable({"ENTRY", "KIND", "CREATED", "UID", "REASON"}, rows);
      });
    });
  }
  // events
  {
    auto* cmd = app.add_subcommand(
        "events",
        "recorded delivery results, newest first: by time, outcome, category, provider, "
        "domain, recipient or sender");
    auto o = std::make_shared<EventsOptions>();
    cmd->add_option("--since", o->since,
                    "happened since: 2026-11-01, 2026-11-01T12:00:00Z or 1h (default 24h)");
    cmd->add_option("--until", o->until, "and before this time (same forms)");
    cmd->add_option("--category", o->category, "only this category (e.g. policy_rejection)");
    cmd->add_option("--provider", o->provider, "only this provider (e.g. icloud; - = none known)");
    cmd->add_option("--code", o->code, "only this provider code (e.g. CS01)");
    cmd->add_option("--status", o->status,
                    "only this outcome: sent, deferred, bounced, expired, complaint, auto_reply, "
                    "blocked");
    cmd->add_option("--source", o->source, "only from log, journal, dsn, milter or manual");
    cmd->add_option("--domain", o->domain, "only recipients at this domain");
    cmd->add_option("--recipient", o->recipient,
                    "only this recipient (spelt any way: case, <>, +extension)");
    cmd->add_option("--sender", o->sender, "only this envelope sender (<> = the null sender)");
    cmd->add_option("--sender-domain", o->sender_domain,
                    "only envelope senders at this domain (<> = the null sender)");
    cmd->add_option("--limit", o->limit, "at most this many (default 50)")
        ->check(CLI::Range(1, static_cast<int>(Store::kMaxFoundEvents)));
    cmd->add_flag("-f,--follow", o->follow,
                  "then print each new event as it is recorded, one line each (--json: one "
                  "object per line), until interrupted");
    cmd->add_option("--interval", o->interval, "with --follow: seconds between looks (default 1)")
        ->check(CLI::Range(1, 3600));
    cmd->get_option("--follow")->excludes("--until");
    cmd->callback([&ctx, o] {
      if (o->follow) return FollowEvents(ctx, *o);
      Run(ctx, EventsRequest(*o), [&](const json& r) {
        std::vector<std::vector<std::string>> rows;
        for (const auto& e : r) rows.push_back(EventRow(e));
        PrintTable(
            {"TIME", "STATUS", "CATEGORY", "PROVIDER", "CODE", "RECIPIENT", "SENDER", "DIAGNOSTIC"},
            rows);
        std::cout << rows.size() << " event(s)";
        if (rows.size() == static_cast<size_t>(o->limit)) {
          std::cout << ", the newest " << o->limit << " (--limit for more)";
        }
        std::cout << "\n";
      });
    });
  }
  // changes
  {
    auto* cmd = app.add_subcommand(
        "changes",
        "the suppression list's changes (added, updated, lifted), the oldest first, each with an "
        "id to continue after");
    auto o = std::make_shared<ChangesOptions>();
    cmd->add_option("--after", o->after,
                    "only changes after the one with this id (a feed's cursor: the last id seen)")
        ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max()));
    cmd->add_option("--since", o->since,
                    "committed since: 2026-11-01, 2026-11-01T12:00:00Z or 1h (default 24h, or "
                    "all with --after)");
    cmd->add_option("--domain", o->domain, "only addresses at this domain");
    cmd->add_option("--limit", o->limit, "at most this many (default 1000)")
        ->check(CLI::Range(1, 10000));
    cmd->add_flag("-f,--follow", o->follow,
                  "then print each new change as it is committed, one line each (--json: one "
                  "object per line), until interrupted");
    cmd->add_option("--interval", o->interval, "with --follow: seconds between looks (default 1)")
        ->check(CLI::Range(1, 3600));
    cmd->callback([&ctx, o] {
      if (o->follow) return FollowChanges(ctx, *o);
      Run(ctx, ChangesRequest(*o), [&](const json& r) {
        std::vector<std::vector<std::string>> rows;
        for (const json& c : r) rows.push_back(ChangeRow(c));
        PrintTable(std::vector<std::string>(std::begin(kChangeColumns), std::end(kChangeColumns)),
                   rows);
        if (rows.size() == static_cast<size_t>(o->limit)) {
          std::cout << "(more may follow: --after " << r.back().value("id", int64_t{0}) << ")\n";
        }
      });
    });
  }
  // list / export / import
  {
    auto* cmd = app.add_subcommand("list", "list suppressed addresses");
    auto opts = std::make_shared<ListOptions>();
    AddListOptions(cmd, *opts);
    cmd->callback([&ctx, opts] {
      Run(ctx, ListRequest("list", *opts), [&](const json& r) {
        std::vector<std::vector<std::string>> rows;
        for (const auto& s : r) {
          rows.push_back({Str(s, "address"), Str(s, "reason"), Str(s, "category"), Str(s, "source"),
                          Str(s, "created"),
                          Str(s, "expires").empty() ? "never" : Str(s, "expires")});
        }
        PrintTable({"ADDRESS", "REASON", "CATEGORY", "SOURCE", "SINCE", "EXPIRES"}, rows);
        std::cout << rows.size() << " suppressed\n";
      });
    });
  }
  {
    auto* cmd =
        app.add_subcommand("export", "write the suppression list (CSV, JSONL or plain text)");
    auto opts = std::make_shared<ListOptions>();
    auto format = std::make_shared<std::string>("csv");
    auto output = std::make_shared<std::string>("-");
    AddListOptions(cmd, *opts);
    cmd->add_option("--format", *format,
                    "csv (default), jsonl, or text (one address per line, as bounced keys it)")
        ->check(CLI::IsMember({"csv", "jsonl", "text"}));
    cmd->add_option("-o,--output", *output, "file to write (- = stdout)");
    cmd->callback([&ctx, opts, format, output] {
      json req = ListRequest("export", *opts);
      req["format"] = *format;
      std::optional<size_t> count = StreamExport(ctx, req, *output);
      if (count && *output != "-") {
        std::fprintf(stderr, "%zu suppressions written to %s\n", *count, output->c_str());
      }
    });
  }
  {
    auto* cmd = app.add_subcommand(
        "import",
        "add suppressions from a CSV, JSONL or plain text file; all or nothing (audited)");
    auto file = std::make_shared<std::string>();
    auto format = std::make_shared<std::string>();
    auto flags = std::make_shared<ImportFlags>();
    cmd->add_option("file", *file, "file to read (- = stdin)")->required();
    cmd->add_option("--format", *format,
                    "csv, jsonl or text (one address per line; default: from the file name, "
                    "else csv)")
        ->check(CLI::IsMember({"csv", "jsonl", "text"}));
    cmd->add_option("--reason", flags->reason, "why (recorded in the audit log)");
    cmd->add_flag("--ignore-unknown-columns", flags->ignore_unknown_columns,
                  "skip columns (or JSONL fields) import does not know, as an ESP's export has, "
                  "instead of refusing the file");
    cmd->add_option("--category", flags->category,
                    "category of the entries whose file gives none and whose reason tells none "
                    "(e.g. complaint for a list of spam reports)");
    cmd->add_flag("--dry-run", flags->dry_run,
                  "check the file and say what the import would add and update, and the "
                  "entries' categories; change nothing");
    cmd->callback([&ctx, file, format, flags] {
      std::string fmt = *format;
      if (fmt.empty()) {
        fmt = "csv";
        if (file->ends_with(".jsonl") || file->ends_with(".json")) fmt = "jsonl";
        if (file->ends_with(".txt")) fmt = "text";
      }
      StreamImport(ctx, *file, fmt, *flags);
    });
  }
  // stats
  {
    auto* cmd = app.add_subcommand(
        "stats", "delivery results per recipient domain, provider or sender domain");
    auto domain = std::make_shared<std::string>();
    auto provider = std::make_shared<std::string>();
    auto sender_domain = std::make_shared<std::string>();
    auto days = std::make_shared<int>(7);
    auto per_day = std::make_shared<bool>(false);
    auto* d =
        cmd->add_option("--domain", *domain, "per recipient domain (default); a value: only it")
            ->expected(0, 1);
    auto* p =
        cmd->add_option("--provider", *provider, "per provider; a value: only it")->expected(0, 1);
    auto* sd = cmd->add_option("--sender-domain", *sender_domain,
                               "per envelope sender domain (which of our domains gets what; "
                               "\"<>\": null or unknown sender); a value: only it")
                   ->expected(0, 1);
    d->excludes(p);
    d->excludes(sd);
    p->excludes(sd);
    cmd->add_option("--days", *days, "today and the days before (default 7)")
        ->check(CLI::Range(1, 3660));
    cmd->add_flag("--per-day", *per_day, "one row per day");
    cmd->callback([&ctx, domain, provider, sender_domain, days, per_day, p, sd] {
      const bool by_provider = p->count() > 0;
      const bool by_sender = sd->count() > 0;
      const char* by = by_provider ? "provider" : by_sender ? "sender_domain" : "domain";
      json req{{"cmd", "stats"}, {"by", by}, {"days", *days}};
      const std::string& only = by_provider ? *provider : by_sender ? *sender_domain : *domain;
      if (!only.empty()) req["only"] = only;
      if (*per_day) req["per_day"] = true;
      Run(ctx, req, [&](const json& r) {
        std::vector<std::vector<std::string>> rows;
        for (const auto& row : At(r, "rows")) {
          std::vector<std::string> cols;
          if (*per_day) cols.push_back(Str(row, "day"));
          cols.push_back(Str(row, "key").empty() ? "(unknown)" : Str(row, "key"));
          cols.push_back(Str(row, "log_status"));
          cols.push_back(Str(row, "category"));
          cols.push_back(Str(row, "provider_code"));
          cols.push_back(std::to_string(row.value("count", 0)));
          rows.push_back(std::move(cols));
        }
        std::vector<std::string> header;
        if (*per_day) header.push_back("DAY");
        for (const char* h : {by_provider ? "PROVIDER"
                              : by_sender ? "SENDER DOMAIN"
                                          : "DOMAIN",
                              "STATUS", "CATEGORY", "CODE", "COUNT"}) {
          header.push_back(h);
        }
        std::cout << "last " << r.value("days", 0) << " day(s)\n";
        PrintTable(header, rows);
        PrintOpenAlerts(At(At(r, "alerts"), "open"));
      });
    });
  }
  // reload / health
  {
    auto* cmd = app.add_subcommand("reload", "reload the configuration and rules");
    cmd->callback([&ctx] {
      Run(ctx, {{"cmd", "reload"}}, [&](const json& r) {
        std::cout << "reloaded: " << r.value("rules", 0) << " rules from "
                  << At(r, "rule_files").size() << " file(s)";
        if (const json& keys = At(r, "restart_needed"); !keys.empty()) {
          std::cout << "; waiting for a restart:";
          for (const json& k : keys) {
            std::cout << " " << (k.is_string() ? Shown(k.get<std::string>()) : k.dump());
          }
        }
        std::cout << "\n";
      });
    });
  }
  {
    auto* cmd = app.add_subcommand("health", "is bounced well: storage, input, sockets, milter");
    cmd->callback([&ctx] {
      Run(ctx, {{"cmd", "health"}}, [&](const json& r) {
        const json& st = At(r, "storage");
        const json& in = r.value("input", json::object());
        // The exit status follows the verdict, for scripts and monitoring.
        if (!r.value("healthy", false)) ctx.exit_code = kExitFailed;
        std::cout << (r.value("healthy", false) ? "healthy" : "UNHEALTHY") << ": bounced "
                  << Str(r, "version") << ", up " << r.value("uptime_seconds", 0) << " s\n";
        if (!Str(r, "config").empty()) {
          const json& read_at = r.value("config_read_at", json());
          std::cout << "config: " << Shown(Str(r, "config"))
                    << (read_at.is_number_integer()
                            ? ", read at " + FormatUtc(read_at.get<int64_t>())
                            : "")
                    << "\n";
        }
        if (st.contains("error")) {
          std::cout << "storage: " << Str(st, "error") << "\n";
        } else {
          std::cout << "storage: " << Str(st, "path") << " (schema "
                    << st.value("schema_version", 0) << ", integrity " << Str(st, "integrity")
                    << "), " << st.value("events", 0) << " events, " << st.value("suppressions", 0)
                    << " suppressions, " << st.value("allowlist", 0) << " allowlisted\n";
          if (const int days = st.value("event_retention_days", 0); days != 0) {
            std::cout << "storage: events kept " << days << " days (oldest "
                      << (Str(st, "oldest_event_day").empty() ? "none"
                                                              : Str(st, "oldest_event_day"))
                      << "), " << st.value("events_pruned", 0) << " pruned and "
                      << st.value("events_too_old", 0) << " too old since start\n";
          }
          if (!Str(st, "last_write_error").empty()) {
            std::cout << "storage: last write failed: " << Str(st, "last_write_error") << "\n";
          }
        }
        std::cout << "input: " << Str(in, "input") << ", " << in.value("lines", 0) << " lines, "
                  << in.value("events_committed", 0) << " events committed, "
                  << in.value("skipped_garbage", 0) << " garbage and "
                  << in.value("skipped_too_long", 0) << " too-long lines skipped";
        if (!Str(in, "problem").empty()) std::cout << "; PROBLEM: " << Str(in, "problem");
        std::cout << "\n";
        std::cout << "rules: " << At(r, "rules").value("count", 0) << " rules from "
                  << At(At(r, "rules"), "files").dump() << "\n";
        if (const json& reload = r.value("last_reload", json::object());
            reload.is_object() && reload.value("ok", true) == false) {
          const json& when = reload.value("time", json());
          const json& read_at = r.value("config_read_at", json());
          std::cout << "reload: REFUSED"
                    << (when.is_number_integer() ? " at " + FormatUtc(when.get<int64_t>()) : "")
                    << ": " << Shown(Str(reload, "error")) << "; running with what was read"
                    << (read_at.is_number_integer() ? " at " + FormatUtc(read_at.get<int64_t>())
                                                    : "")
                    << "\n";
        }
        const json& sm = r.value("socketmap", json::object());
        if (sm.value("enabled", false)) {
          std::cout << "socketmap: " << Str(sm, "path") << ", " << sm.value("lookups", 0)
                    << " lookups, " << sm.value("found", 0) << " suppressed answers, "
                    << sm.value("malformed", 0) << " malformed requests";
          if (sm.value("perm", 0) != 0) {
            std::cout << "; " << sm.value("perm", 0)
                      << " answered PERM (a map name bounced does not serve? check main.cf)";
          }
          std::cout << "\n";
        }
        const json& m = r.value("milter", json::object());
        if (m.value("enabled", false)) {
          std::cout << "milter: " << (m.value("running", false) ? "running" : "NOT running")
                    << (Str(m, "error").empty() ? "" : " (" + Str(m, "error") + ")");
          if (m.value("running", false)) {
            if (!Str(m, "action").empty()) {
              std::cout << " (action " << Str(m, "action");
              if (const json& o = m.value("actions", json::object()); o.is_object()) {
                for (const auto& [category, action] : o.items()) {
                  std::cout << ", " << category << " "
                            << (action.is_string() ? action.get<std::string>() : action.dump());
                }
              }
              std::cout << "; bounces " << Str(m, "bounces") << ")";
            }
            std::cout << ", " << m.value("rcpt_checked", 0) << " recipients checked ("
                      << m.value("rcpt_rejected", 0) << " refused";
            if (m.value("rcpt_tempfailed", 0) != 0)
              std::cout << ", " << m.value("rcpt_tempfailed", 0) << " deferred";
            if (m.value("rcpt_logged", 0) != 0)
              std::cout << ", " << m.value("rcpt_logged", 0) << " only logged";
            if (m.value("rcpt_removed", 0) != 0)
              std::cout << ", " << m.value("rcpt_removed", 0) << " removed";
            std::cout << "), " << m.value("bounces_seen", 0) << " bounces ("
                      << m.value("bounce_recipients", 0) << " recipients; "
                      << m.value("bounces_truncated", 0) << " over max_bounce_bytes, "
                      << m.value("bounces_incomplete", 0) << " cut short by a parser limit";
            if (m.value("bounces_verp", 0) != 0)
              std::cout << "; " << m.value("bounces_verp", 0) << " read by their VERP return path";
            std::cout << ")";
            if (m.value("dropped_records", 0) != 0) {
              std::cout << "; " << m.value("dropped_records", 0)
                        << " records not queued (storage too slow; bounces kept)";
            }
          }
          std::cout << "\n";
        }
      });
    });
  }
  // metrics
  {
    auto* cmd = app.add_subcommand(
        "metrics",
        "bounced's counters in Prometheus text format (for node_exporter's textfile collector)");
    auto output = std::make_shared<std::string>();
    cmd->add_option("--output", *output,
                    "write FILE (replaced at once, mode 0644) instead of printing; e.g. "
                    "/var/lib/prometheus/node-exporter/bounced.prom");
    cmd->callback([&ctx, output] { WriteMetrics(ctx, *output); });
  }
  // ingest-dsn
  {
    auto* cmd = app.add_subcommand(
        "ingest-dsn",
        "hand bounce messages (DSN, ARF, auto-reply) to bounced to record them: files, folders "
        "(Maildir) or mailboxes (--mbox)");
    auto files = std::make_shared<std::vector<std::string>>();
    auto mbox = std::make_shared<bool>(false);
    cmd->add_option("files", *files,
                    "raw messages or folders of them (- = stdin, the default); with --mbox, "
                    "mailboxes");
    cmd->add_flag("--mbox", *mbox,
                  "every FILE is a Unix mailbox: each message in it is handed over");
    auto envelope = std::make_shared<std::string>();
    cmd->add_option("--envelope-recipient", *envelope,
                    "the address the message was delivered to (a Postfix pipe transport's "
                    "${original_recipient}); with [verp] on, the bounce is about the recipient "
                    "that return path encodes");
    cmd->callback([&ctx, files, mbox, envelope] { IngestMessages(ctx, *files, *mbox, *envelope); });
  }
}

}  // namespace bounced::ctl
