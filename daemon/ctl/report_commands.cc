// report_commands.cc: bouncectl's report command group (see commands.h).
//
//   report          the daily report (text, HTML or JSON) from the database, read-only; --mail
//                   sends it (multipart/alternative) through sendmail to [report] mail_to.
//   postfix-config  the main.cf lines that wire bounced into Postfix (socketmap, milter).
//   doctor          checks a live installation and says what to fix.
// Reads the configuration file (--config) for paths; never writes anything but its output
// (and the mail it hands to sendmail).
#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "daemon/alert_detector.h"
#include "daemon/config.h"
#include "daemon/ctl/commands.h"
#include "daemon/report_db.h"
#include "daemon/report_mail.h"
#include "daemon/report_render.h"
#include "daemon/rules_loader.h"
#include "storage/store.h"
#include "storage/timefmt.h"

namespace bounced::ctl {
namespace {

struct ReportOptions {
  std::string date;
  int days = 1;
  int trend_days = 0;
  std::string format = "text";
  std::string domain;
  std::string db;
  std::string advice;
  std::string output;
  bool mail = false;
  std::string mail_to;
  bool no_alerts = false;
};

Expected<Config> ReadConfig(const Context& ctx) {
  Expected<Config> c = LoadConfig(ctx.config_path);
  if (!c) return Status::Error("bouncectl: " + c.error());
  return c;
}

// The installed advice file, else the one in the source tree (running from a build directory).
Expected<AdviceBook> LoadAdvice(const std::string& configured, bool explicit_path) {
  if (explicit_path || access(configured.c_str(), R_OK) == 0) return AdviceBook::Load(configured);
  const std::string source = std::string(BOUNCED_SOURCE_RULES_DIR) + "/../packaging/advice.toml";
  if (access(source.c_str(), R_OK) == 0) return AdviceBook::Load(source);
  return Status::Error("no advice file at " + configured + "; the report has no advice texts");
}

// The text report without control characters but its line ends: C0 (tabs too), DEL and C1
// (U+0080-U+009F). Its texts come from the database, where a manual --reason is stored as given;
// the report is read on a terminal (and mailed), which must not obey an escape sequence in it.
std::string WithoutControls(std::string text) {
  size_t out = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7F) continue;
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      ++i;
      continue;
    }
    text[out++] = text[i];
  }
  text.resize(out);
  return text;
}

int RunReport(const Context& ctx, const ReportOptions& o) {
  Expected<Config> cfg = ReadConfig(ctx);
  if (!cfg) {
    std::cerr << cfg.error() << "\n";
    return kExitUsage;
  }
  const std::string format = ctx.json ? "json" : o.format;
  if (format != "text" && format != "html" && format != "json") {
    std::cerr << "bouncectl report: --format must be text, html or json\n";
    return kExitUsage;
  }
  // A date that is no day of the calendar is a usage error (exit 2), not a failed report.
  if (!o.date.empty() && AddDays(o.date, 0) != o.date) {
    std::cerr << "bouncectl report: bad date '" << o.date << "' (want YYYY-MM-DD)\n";
    return kExitUsage;
  }
  ReportRequest req;
  req.db_path = o.db.empty() ? cfg->storage.path : o.db;
  req.date = o.date;
  req.days = o.days;
  req.trend_days = o.trend_days > 0 ? o.trend_days : cfg->report.trend_days;
  if (!o.domain.empty()) {
    // As stats and list take it: "@Example.COM." is example.com, the form events are kept in.
    std::string_view d = o.domain;
    if (d.front() == '@') d.remove_prefix(1);
    req.domain = NormalizeDomain(d);
    if (req.domain.empty()) {
      std::cerr << "bouncectl report: --domain " << o.domain << " is not a domain\n";
      return kExitUsage;
    }
  }
  req.alerts = cfg->alerts.enabled && !o.no_alerts;
  req.thresholds = cfg->alerts.thresholds;
  if (const char* fixed = getenv("BOUNCED_REPORT_NOW")) req.now = atoll(fixed);  // golden tests
  if (const char* host = getenv("BOUNCED_REPORT_HOST")) req.host = host;

  Expected<AdviceBook> advice =
      LoadAdvice(o.advice.empty() ? cfg->report.advice : o.advice, !o.advice.empty());
  if (!advice) {
    if (!o.advice.empty()) {
      std::cerr << "bouncectl report: " << advice.error() << "\n";
      return kExitUsage;
    }
    std::cerr << "bouncectl report: warning: " << advice.error() << "\n";
    advice = AdviceBook();
  }
  Expected<ReportData> data = ReadReportData(req);
  if (!data) {
    std::cerr << "bouncectl " << data.error() << "\n";
    return kExitFailed;
  }
  const Report report = BuildReport(*data, *advice, cfg->report.top);

  if (o.mail || !o.mail_to.empty()) {
    const std::string list = o.mail_to.empty() ? cfg->report.mail_to : o.mail_to;
    if (list.empty()) {
      // The timer runs `report --mail`; without an address the report goes to the journal.
      std::cerr << "bouncectl report: no [report] mail_to configured; printing instead\n";
      std::cout << WithoutControls(RenderText(report));
      return kExitOk;
    }
    Expected<std::vector<std::string>> to = ParseRecipients(list);
    if (!to) {
      std::cerr << "bouncectl report: " << to.error() << "\n";
      return kExitUsage;
    }
    ReportMail mail;
    mail.from = cfg->report.mail_from;
    mail.to = *to;
    mail.subject = cfg->report.subject + (report.host.empty() ? "" : " (" + report.host + ")") +
                   " " + Headline(report);
    mail.text = WithoutControls(RenderText(report));
    mail.html = RenderHtml(report);
    mail.date = req.now ? req.now : static_cast<int64_t>(time(nullptr));
    mail.boundary_seed = std::to_string(mail.date) + "_" + std::to_string(getpid());
    Status s = SendReportMail(cfg->report.sendmail, mail);
    if (!s) {
      std::cerr << "bouncectl report: " << s.message() << "\n";
      return kExitFailed;
    }
    std::cerr << "bouncectl report: mailed the report for " << report.last_day << " to " << list
              << "\n";
    return kExitOk;
  }

  std::string out = format == "json"   ? RenderJson(report)
                    : format == "html" ? RenderHtml(report)
                                       : WithoutControls(RenderText(report));
  if (o.output.empty()) {
    std::cout << out;
    return kExitOk;
  }
  std::ofstream f(o.output, std::ios::binary | std::ios::trunc);
  f << out;
  f.close();
  if (!f) {
    std::cerr << "bouncectl report: cannot write " << o.output << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

// ---- postfix-config and doctor helpers -------------------------------------------------------

// Output of `postconf ARGS` (first line for -h queries), or nullopt when postconf is missing or
// fails. No shell: arguments are fixed strings.
std::optional<std::string> Postconf(const std::vector<std::string>& args) {
  std::string cmd = "postconf";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return std::nullopt;
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  if (pclose(p) != 0) return std::nullopt;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// "unix:/var/spool/postfix/bounced/milter.sock" -> "unix:bounced/milter.sock": Postfix daemons
// run in the queue directory (chrooted or not), so a relative path works in both cases.
std::string PostfixMilterSpec(const std::string& spec) {
  const std::string spool = "/var/spool/postfix/";
  for (const char* prefix : {"unix:", "local:"}) {
    const std::string p = prefix;
    if (spec.rfind(p + spool, 0) == 0) return "unix:" + spec.substr(p.size() + spool.size());
    if (spec.rfind(p, 0) == 0) return "unix:" + spec.substr(p.size());
  }
  return spec;
}

bool SmtpdChrooted() {
  auto m = Postconf({"-M", "smtp/inet"});
  if (!m) return false;
  // service type private unpriv chroot wakeup maxproc command
  std::istringstream in(*m);
  std::string f[5];
  for (auto& x : f) in >> x;
  return f[4] == "y" || f[4] == "-";  // Debian builds default chroot to y
}

std::string Merge(const std::string& ours, const std::optional<std::string>& current) {
  if (!current || current->empty()) return ours;
  if (current->find(ours) != std::string::npos) return *current;  // already there
  return ours + ", " + *current;
}

int RunPostfixConfig(const Context& ctx, bool milter, bool socketmap) {
  Expected<Config> cfg = ReadConfig(ctx);
  if (!cfg) {
    std::cerr << cfg.error() << "\n";
    return kExitUsage;
  }
  if (!milter && !socketmap) milter = socketmap = true;
  std::cout << "# Lines for /etc/postfix/main.cf to wire in bounced (config " << cfg->source
            << ").\n# Merged with the current values where postconf could read them; apply with\n"
               "# `postconf -e '<line>'` or edit main.cf, then `postfix reload`.\n";
  if (socketmap) {
    if (cfg->socketmap.socket.empty()) {
      std::cout << "\n# [socketmap] socket is \"\" in the bounced config: enable it first.\n";
    } else {
      // proxy: makes proxymap (not chrooted) open the socket, so it works whether smtpd and
      // trivial-rewrite run chrooted (Debian's default) or not; proxy_read_maps' default already
      // lists $smtpd_recipient_restrictions and $transport_maps.
      const std::string base = "proxy:socketmap:unix:" + cfg->socketmap.socket;
      std::cout << "\n# Socketmap: refuse suppressed recipients at RCPT TO (first, so it also "
                   "covers\n# mynetworks and authenticated clients), and stop sendmail(1) "
                   "submissions in\n# the queue with an error transport.\n";
      std::cout << "smtpd_recipient_restrictions = "
                << Merge("check_recipient_access " + base + ":recipient_access",
                         Postconf({"-h", "smtpd_recipient_restrictions"}))
                << "\n";
      std::cout << "transport_maps = "
                << Merge(base + ":transport", Postconf({"-h", "transport_maps"})) << "\n";
    }
  }
  if (milter) {
    std::string spec = cfg->milter.socket.empty() ? "unix:/var/spool/postfix/bounced/milter.sock"
                                                  : cfg->milter.socket;
    const std::string postfix_spec = PostfixMilterSpec(spec);
    std::cout << "\n# Milter: refuse suppressed recipients at RCPT (SMTP and sendmail(1)) and\n"
                 "# capture bounces in flight. Unavailable milter = accept (never lose mail).\n";
    if (cfg->milter.socket.empty()) {
      std::cout << "# [milter] socket is \"\" in the bounced config: set it, e.g.\n"
                   "#   [milter]\n#   socket = \""
                << spec << "\"\n";
    }
    if (postfix_spec.rfind("unix:/", 0) == 0 && SmtpdChrooted()) {
      std::cout << "# smtpd runs chrooted in /var/spool/postfix: an absolute socket path "
                   "outside it\n# is unreachable. Use [milter] socket = "
                   "\"unix:/var/spool/postfix/bounced/milter.sock\".\n";
    }
    std::cout << "smtpd_milters = " << Merge(postfix_spec, Postconf({"-h", "smtpd_milters"}))
              << "\n";
    std::cout << "non_smtpd_milters = "
              << Merge(postfix_spec, Postconf({"-h", "non_smtpd_milters"})) << "\n";
    // Postfix's own DSNs must pass the milter too, or it cannot record them.
    std::cout << "internal_mail_filter_classes = "
              << Merge("bounce", Postconf({"-h", "internal_mail_filter_classes"})) << "\n";
    std::cout << "milter_default_action = accept\nmilter_protocol = 6\n";
  }
  return kExitOk;
}

struct Doctor {
  int failures = 0;
  int warnings = 0;
  void Ok(const std::string& what) { std::cout << "ok    " << what << "\n"; }
  void Warn(const std::string& what, const std::string& fix) {
    ++warnings;
    std::cout << "warn  " << what << "\n      fix: " << fix << "\n";
  }
  void Fail(const std::string& what, const std::string& fix) {
    ++failures;
    std::cout << "FAIL  " << what << "\n      fix: " << fix << "\n";
  }
};

// Connects to a Unix stream socket; "" when connected (fd returned in *fd), else why not.
std::string ConnectUnix(const std::string& path, int* fd) {
  sockaddr_un a{};
  if (path.size() >= sizeof a.sun_path) return "path too long";
  a.sun_family = AF_UNIX;
  memcpy(a.sun_path, path.c_str(), path.size());
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return strerror(errno);
  timeval tv{5, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::string why = strerror(errno);
    close(s);
    return why;
  }
  *fd = s;
  return "";
}

std::string ReadSome(int fd, size_t max) {
  std::string out;
  char buf[4096];
  while (out.size() < max) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.find('\n') != std::string::npos || out.back() == ',') break;
  }
  return out;
}

void CheckSocketMode(Doctor& d, const std::string& path, const char* who) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return;
  const group* postfix = getgrnam("postfix");
  const bool group_postfix = postfix != nullptr && st.st_gid == postfix->gr_gid;
  const bool reachable = (st.st_mode & S_IWOTH) || (group_postfix && (st.st_mode & S_IWGRP));
  if (reachable) {
    d.Ok(path + " is writable by " + who);
  } else {
    d.Fail(
        path + " is not writable by " + who + " (mode " + std::to_string(st.st_mode & 0777) + ")",
        "set the socket mode in bounced.toml (0666, or 0660 with group postfix)");
  }
}

// The daemon's health (its `result`) when it answers on the query socket, else nullopt.
std::optional<nlohmann::json> CheckQuerySocket(Doctor& d, const Config& cfg) {
  const std::string& path = cfg.query.socket;
  int fd = -1;
  std::string why = ConnectUnix(path, &fd);
  if (!why.empty()) {
    d.Fail("query socket " + path + ": " + why,
           "start bounced (systemctl start bounced; journalctl -u bounced says why it is not "
           "running), or point --socket/[query] socket at the right path");
    return std::nullopt;
  }
  const std::string req = "{\"cmd\":\"health\"}\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    d.Fail("query socket " + path + ": write failed", "check bounced's log");
    return std::nullopt;
  }
  std::string line = ReadSome(fd, 1 << 20);
  close(fd);
  auto reply = nlohmann::json::parse(line, nullptr, false);
  // Anything but bounced's {"ok": true, "result": {...}} (another program's socket) is a
  // finding, not a reason to stop the other checks.
  const bool answered = reply.is_object() && reply.value("ok", nlohmann::json()) == true &&
                        reply.contains("result") && reply["result"].is_object();
  if (!answered) {
    d.Fail("query socket " + path + " answered no health: " + line.substr(0, 200),
           "check bounced's log (journalctl -u bounced)");
    return std::nullopt;
  }
  const auto& h = reply["result"];
  if (h.value("healthy", nlohmann::json()) == true) {
    const nlohmann::json version = h.value("version", nlohmann::json("?"));
    d.Ok("bounced answers on " + path + " (version " +
         (version.is_string() ? version.get<std::string>() : version.dump()) + ", healthy)");
  } else {
    d.Fail(
        "bounced answers on " + path + " but reports itself unhealthy: " + h.dump().substr(0, 300),
        "read the storage part of `bouncectl --json health` and bounced's log");
  }
  if (h.contains("alerts") && h["alerts"].is_object() && h["alerts"].contains("open") &&
      !h["alerts"]["open"].empty()) {
    d.Warn(std::to_string(h["alerts"]["open"].size()) + " open sender-side rejection alert(s)",
           "see `bouncectl report` for the codes and what to do");
  }
  return h;
}

// The rules as configured compile (bounced refuses a reload, and a start, when they do not),
// and what bounced runs with is what the files say now: a file edited, added or removed after
// bounced read it waits for a reload. And a milter left in its dry run.
void CheckRulesAndRunningConfig(Doctor& d, const Config& cfg,
                                const std::optional<nlohmann::json>& health) {
  Expected<LoadedRules> rules = LoadRules(cfg.rules.files);
  if (!rules.ok()) {
    d.Fail("rules: " + rules.error(),
           "fix the file: bounced keeps the rules it runs with until they compile");
  } else {
    d.Ok("rules: " + std::to_string(rules->rules->rule_count()) + " from " +
         std::to_string(rules->sources.size()) + " file(s)");
  }
  if (!health) return;
  const nlohmann::json& h = *health;
  const std::string reload_fix = "`systemctl reload bounced` (or `bouncectl reload`) applies it";
  const nlohmann::json read_at = h.value("config_read_at", nlohmann::json());
  if (read_at.is_number_integer()) {
    std::vector<std::string> files;
    if (!cfg.source.starts_with("(")) files.push_back(cfg.source);  // not "(embedded ...)"
    if (rules.ok()) files.insert(files.end(), rules->sources.begin(), rules->sources.end());
    for (const std::string& f : files) {
      struct stat st {};
      if (stat(f.c_str(), &st) == 0 && st.st_mtime > read_at.get<int64_t>()) {
        d.Warn(f + " changed after bounced read it (" + FormatUtc(read_at.get<int64_t>()) + ")",
               reload_fix);
      }
    }
  }
  const nlohmann::json running = h.contains("rules") && h["rules"].is_object()
                                     ? h["rules"].value("files", nlohmann::json())
                                     : nlohmann::json();
  if (rules.ok() && running.is_array()) {
    std::vector<std::string> added, gone;
    for (const std::string& f : rules->sources) {
      if (std::find(running.begin(), running.end(), f) == running.end()) added.push_back(f);
    }
    for (const auto& f : running) {
      if (f.is_string() && std::find(rules->sources.begin(), rules->sources.end(),
                                     f.get<std::string>()) == rules->sources.end()) {
        gone.push_back(f.get<std::string>());
      }
    }
    auto join = [](const std::vector<std::string>& v) {
      std::string out;
      for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
      return out;
    };
    if (!added.empty()) d.Warn("rules file(s) bounced has not read: " + join(added), reload_fix);
    if (!gone.empty()) {
      d.Warn(
          "rules file(s) bounced still runs with but [rules] files no longer names: " + join(gone),
          reload_fix);
    }
  }
  if (const nlohmann::json reload = h.value("last_reload", nlohmann::json::object());
      reload.is_object() && reload.value("ok", true) == false) {
    const nlohmann::json error = reload.value("error", nlohmann::json(""));
    d.Warn("bounced refused its last reload: " +
               (error.is_string() ? error.get<std::string>() : error.dump()),
           "fix the file; bounced runs with the configuration it read before");
  }
  const nlohmann::json milter = h.value("milter", nlohmann::json::object());
  if (milter.is_object() && milter.value("running", false) == true &&
      milter.value("action", nlohmann::json()) == "log") {
    const nlohmann::json logged = milter.value("rcpt_logged", nlohmann::json(0));
    d.Warn("the milter refuses no suppressed recipient: action = \"log\", a dry run (" +
               logged.dump() + " only logged since bounced started)",
           "when the dry run is over, set [milter] action = \"reject\" and `systemctl reload "
           "bounced`");
  }
}

void CheckSocketmap(Doctor& d, const Config& cfg) {
  const std::string& path = cfg.socketmap.socket;
  if (path.empty()) {
    d.Ok("socketmap disabled ([socketmap] socket = \"\")");
    return;
  }
  int fd = -1;
  std::string why = ConnectUnix(path, &fd);
  if (!why.empty()) {
    d.Fail("socketmap " + path + ": " + why, "start bounced, or fix [socketmap] socket");
    return;
  }
  // A real lookup, exactly as Postfix sends it (socketmap_table(5)).
  const std::string q = "recipient_access doctor-probe@bounced.invalid";
  const std::string ns = std::to_string(q.size()) + ":" + q + ",";
  std::string reply;
  if (write(fd, ns.data(), ns.size()) == static_cast<ssize_t>(ns.size()))
    reply = ReadSome(fd, 4096);
  close(fd);
  if (reply.find(":NOTFOUND") != std::string::npos || reply.find(":OK") != std::string::npos) {
    d.Ok("socketmap " + path + " answers lookups");
  } else {
    d.Fail("socketmap " + path + " gave no valid answer: '" + reply.substr(0, 100) + "'",
           "check bounced's log; TEMP means its storage is unavailable");
  }
  CheckSocketMode(d, path, "Postfix (user postfix)");
}

// [verp] on: bounces come back to PREFIX+RCPT=DOMAIN@yourdomain, which Postfix takes (into
// PREFIX's mailbox, past the milter) only when recipient_delimiter has the first VERP delimiter;
// and `sendmail -V` writes return paths with default_verp_delimiters.
void CheckVerp(Doctor& d, const VerpFormat& verp) {
  const char first = verp.delimiters.empty() ? '+' : verp.delimiters[0];
  auto delimiter = Postconf({"-h", "recipient_delimiter"});
  if (delimiter && delimiter->find(first) != std::string::npos) {
    d.Ok(std::string("recipient_delimiter has '") + first + "': VERP return paths are delivered");
  } else if (delimiter) {
    d.Warn("recipient_delimiter = '" + *delimiter + "' lacks '" + first +
               "': Postfix refuses bounces to VERP return paths as unknown users (unless a "
               "catch-all takes them)",
           std::string("postconf -e recipient_delimiter=") + first +
               " (keeping any other delimiters you use)");
  }
  auto defaults = Postconf({"-h", "default_verp_delimiters"});
  if (defaults && *defaults != verp.delimiters) {
    d.Warn("default_verp_delimiters = '" + *defaults + "' but [verp] delimiters = '" +
               verp.delimiters + "': return paths of `sendmail -V` would not be read",
           "make them the same");
  }
}

void CheckPostfix(Doctor& d, const Config& cfg) {
  auto version = Postconf({"-h", "mail_version"});
  if (!version) {
    d.Warn("postconf not found or failing: Postfix settings not checked",
           "install Postfix, or run doctor where Postfix runs");
    return;
  }
  d.Ok("Postfix " + *version);
  bool wired = false;
  if (!cfg.socketmap.socket.empty()) {
    const std::string map = "socketmap:unix:" + cfg.socketmap.socket;
    auto rcpt = Postconf({"-h", "smtpd_recipient_restrictions"});
    auto transport = Postconf({"-h", "transport_maps"});
    const bool has_rcpt = rcpt && rcpt->find(map + ":recipient_access") != std::string::npos;
    const bool has_transport =
        transport && transport->find(map + ":transport") != std::string::npos;
    if (has_rcpt) {
      wired = true;
      d.Ok("smtpd_recipient_restrictions uses " + map + ":recipient_access");
      if (rcpt->find("proxy:" + map) == std::string::npos && SmtpdChrooted()) {
        d.Fail("smtpd is chrooted but the socketmap is not behind proxy:",
               "use proxy:" + map + ":recipient_access (see `bouncectl postfix-config`)");
      }
    }
    if (has_transport) {
      wired = true;
      d.Ok("transport_maps uses " + map + ":transport");
    } else if (has_rcpt) {
      d.Warn("transport_maps does not use " + map + ":transport",
             "add it so mail submitted with sendmail(1) is stopped too "
             "(`bouncectl postfix-config --socketmap`)");
    }
  }
  auto milters = Postconf({"-h", "smtpd_milters"});
  if (!cfg.milter.socket.empty()) {
    const std::string spec = PostfixMilterSpec(cfg.milter.socket);
    if (milters && milters->find(spec) != std::string::npos) {
      wired = true;
      d.Ok("smtpd_milters uses " + spec);
      auto def = Postconf({"-h", "milter_default_action"});
      if (def && *def != "accept") {
        d.Warn("milter_default_action = " + *def + ": mail stops when bounced is down",
               "postconf -e milter_default_action=accept (unless that is what you want)");
      }
    } else {
      d.Warn("smtpd_milters does not use bounced's milter " + spec,
             "add it (`bouncectl postfix-config --milter`) or disable [milter] socket");
    }
    int fd = -1;
    std::string sock = cfg.milter.socket.substr(cfg.milter.socket.find(':') + 1);
    if (cfg.milter.socket.rfind("unix:", 0) == 0 || cfg.milter.socket.rfind("local:", 0) == 0) {
      std::string why = ConnectUnix(sock, &fd);
      if (why.empty()) {
        close(fd);
        d.Ok("milter socket " + sock + " accepts connections");
        CheckSocketMode(d, sock, "Postfix (user postfix)");
      } else {
        d.Fail("milter socket " + sock + ": " + why, "start bounced, or fix [milter] socket");
      }
    }
  }
  if (!wired) {
    d.Fail("Postfix does not consult bounced (no socketmap or milter in main.cf)",
           "run `bouncectl postfix-config` and add the lines it prints to main.cf");
  }
  if (cfg.verp.enabled) CheckVerp(d, cfg.verp.format);
}

// How big the database is and how far back its events go: without [storage]
// event_retention_days it grows for ever. And the room left beside it: a full disk stops every
// commit, and the WAL may take up to 256 MiB more during a backlog.
void CheckDatabaseSize(Doctor& d, const Config& cfg, const std::string& path,
                       const std::optional<std::string>& oldest_day) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  constexpr int64_t kBigDatabase = int64_t{4} << 30;
  constexpr int kLongHistoryDays = 400;
  int64_t bytes = 0;
  for (const char* suffix : {"", "-wal"}) {
    struct stat st {};
    if (stat((path + suffix).c_str(), &st) == 0) bytes += st.st_size;
  }
  const int days = cfg.storage.retention.event_days;
  std::string what = "database size " + std::to_string(bytes / kMiB) + " MiB";
  int64_t age_days = 0;
  if (oldest_day && !oldest_day->empty()) {
    what += ", events since " + *oldest_day;
    if (auto t = ParseTime(*oldest_day)) age_days = (std::time(nullptr) - *t) / 86400;
  }
  what += days == 0 ? ", kept for ever" : ", kept " + std::to_string(days) + " days";
  if (days == 0 && (bytes >= kBigDatabase || age_days > kLongHistoryDays)) {
    d.Warn(what,
           "set [storage] event_retention_days (e.g. 400) and `systemctl reload bounced`: older "
           "events are deleted, suppressions stay; VACUUM shrinks the file (README, How long the "
           "history is kept)");
  } else {
    d.Ok(what);
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  struct statvfs fs {};
  if (statvfs(dir.empty() ? "." : dir.c_str(), &fs) == 0) {
    const int64_t free_bytes =
        static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
    if (free_bytes < 512 * kMiB) {
      d.Warn("only " + std::to_string(free_bytes / kMiB) + " MiB free beside the database (" +
                 (dir.empty() ? "." : dir) + ")",
             "free space there: a full disk stops bounced's commits (the WAL alone may take 256 "
             "MiB during a backlog)");
    }
  }
}

// Imported entries whose category is about the sender or a passing fault (an ESP kept an
// address on its list for a policy block such as iCloud's CS01, or a timeout): they say nothing
// about the address, and bounced itself would not have suppressed it. A warning, since keeping
// them may be meant.
template <typename One>
void CheckImportedCategories(Doctor& d, One& one) {
  std::string names;
  for (int i = 0; i < kCategoryCount; ++i) {
    const CategoryInfo& c = Describe(static_cast<Category>(i));
    if (c.fault != Fault::kSender && c.fault != Fault::kTransient) continue;
    names += std::string(names.empty() ? "" : ", ") + "'" + std::string(c.name) + "'";
  }
  const std::string from =
      " FROM suppressions WHERE source = 'import' AND category IN (" + names + ")";
  auto counts = one(("SELECT coalesce(group_concat(category || ' ' || n, ', '), '') FROM "
                     "(SELECT category, count(*) AS n" +
                     from + " GROUP BY category ORDER BY n DESC, category)")
                        .c_str());
  if (!counts || counts->empty()) return;
  auto total = one(("SELECT count(*)" + from).c_str());
  const std::string first = counts->substr(0, counts->find(' '));
  d.Warn(total.value_or("some") +
             " imported suppressions are about the sending, not the address (" + *counts +
             "): bounced would not have suppressed them",
         "review them (bouncectl list --source import --category " + first +
             "); lift what should be mailed again (bouncectl unsuppress --source import "
             "--category " +
             first + " --dry-run, then with --reason)");
}

void CheckDatabase(Doctor& d, const Config& cfg, const std::string& db_path) {
  const std::string& path = db_path.empty() ? cfg.storage.path : db_path;
  if (access(path.c_str(), R_OK) != 0) {
    d.Fail("database " + path + ": " + strerror(errno),
           "start bounced once to create it, or fix [storage] path; run doctor as root or as "
           "the bounced user");
    return;
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    d.Fail("database " + path + ": " + (db ? sqlite3_errmsg(db) : "cannot open"),
           "check permissions of the file and its directory");
    sqlite3_close_v2(db);
    return;
  }
  sqlite3_busy_timeout(db, 5000);
  auto one = [&](const char* sql) -> std::optional<std::string> {
    sqlite3_stmt* st = nullptr;
    std::optional<std::string> out;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, 0);
      out = t ? reinterpret_cast<const char*>(t) : "";
    }
    sqlite3_finalize(st);
    return out;
  };
  auto version = one("PRAGMA user_version");
  auto check = one("PRAGMA quick_check");
  auto journal = one("PRAGMA journal_mode");
  if (!version || !check) {
    d.Fail("database " + path + ": " + sqlite3_errmsg(db),
           "restore it from a backup (see README, Backup and restore)");
  } else if (std::stoi(*version) > kSchemaVersion) {
    d.Fail("database " + path + " has schema " + *version + ", newer than this bouncectl",
           "upgrade the bounced package");
  } else if (*check != "ok") {
    d.Fail("database " + path + " failed quick_check: " + *check,
           "stop bounced and restore from a backup (see README, Backup and restore)");
  } else {
    d.Ok("database " + path + " (schema " + *version + ", quick_check ok, journal " +
         journal.value_or("?") + ")");
  }
  CheckDatabaseSize(d, cfg, path, one("SELECT coalesce(min(day), '') FROM event_days"));
  CheckImportedCategories(d, one);
  sqlite3_close_v2(db);
}

void CheckLog(Doctor& d, const Config& cfg) {
  const std::string& path = cfg.input.path;
  if (path == "-") {
    d.Ok("log input is standard input");
    return;
  }
  if (path == "journal") {
    const group* g = getgrnam("systemd-journal");
    const passwd* pw = getpwnam("bounced");
    bool member = false;
    if (g && pw) {
      member = pw->pw_gid == g->gr_gid;
      for (char** m = g->gr_mem; m && *m && !member; ++m) member = std::string(*m) == "bounced";
    }
    if (member || (pw == nullptr)) {
      d.Ok("log input is the journal");
    } else {
      d.Warn("log input is the journal; user bounced is not in group systemd-journal",
             "the packaged unit adds it (SupplementaryGroups); for other setups: "
             "usermod -aG systemd-journal bounced");
    }
    return;
  }
  if (access(path.c_str(), R_OK) != 0) {
    d.Fail("mail log " + path + ": " + strerror(errno),
           "check rsyslog writes Postfix's log there, or set [input.log] path = \"journal\"");
    return;
  }
  struct stat st {};
  stat(path.c_str(), &st);
  const passwd* pw = getpwnam("bounced");
  if (pw != nullptr && !(st.st_mode & S_IROTH)) {
    bool ok = st.st_uid == pw->pw_uid || (pw->pw_gid == st.st_gid && (st.st_mode & S_IRGRP));
    if (!ok && (st.st_mode & S_IRGRP)) {
      if (const group* g = getgrgid(st.st_gid)) {
        for (char** m = g->gr_mem; m && *m && !ok; ++m) ok = std::string(*m) == "bounced";
      }
    }
    if (!ok) {
      const group* g = getgrgid(st.st_gid);
      d.Fail("mail log " + path + " is not readable by user bounced",
             std::string("usermod -aG ") + (g ? g->gr_name : "adm") +
                 " bounced (the packaged unit adds group adm), then restart bounced");
      return;
    }
  }
  d.Ok("mail log " + path + " is readable");
}

int RunDoctor(const Context& ctx, const std::string& db_path, bool skip_postfix) {
  Doctor d;
  Expected<Config> cfg = LoadConfig(ctx.config_path);
  if (!cfg) {
    d.Fail("configuration: " + cfg.error(), "fix the file; `bounced --check-config` shows it");
    std::cout << "1 problem found.\n";
    return kExitFailed;
  }
  d.Ok("configuration " + cfg->source);
  Context c = ctx;
  if (!ctx.socket_given) c.socket_path = cfg->query.socket;
  Config effective = *cfg;
  effective.query.socket = c.socket_path;
  std::optional<nlohmann::json> health = CheckQuerySocket(d, effective);
  CheckRulesAndRunningConfig(d, effective, health);
  CheckSocketmap(d, effective);
  CheckDatabase(d, effective, db_path);
  CheckLog(d, effective);
  if (!skip_postfix) CheckPostfix(d, effective);
  if (d.failures == 0) {
    std::cout << "No problems found"
              << (d.warnings ? " (" + std::to_string(d.warnings) +
                                   (d.warnings == 1 ? " warning)" : " warnings)")
                             : std::string())
              << ".\n";
    return kExitOk;
  }
  std::cout << d.failures << " problem" << (d.failures == 1 ? "" : "s") << " found.\n";
  return kExitFailed;
}

}  // namespace

void RegisterReportCommands(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<ReportOptions>();
  CLI::App* report = app.add_subcommand(
      "report", "daily report from the database (read-only; works beside the running daemon)");
  report->add_option("--date", opts->date,
                     "last day of the report, YYYY-MM-DD UTC (default: yesterday)");
  report->add_option("--days", opts->days, "number of days ending on --date")
      ->check(CLI::Range(1, 366));
  report->add_option("--trend-days", opts->trend_days, "days in the trend charts (7-90)")
      ->check(CLI::Range(7, 90));
  report->add_option("--format", opts->format, "text, html or json")
      ->check(CLI::IsMember({"text", "html", "json"}));
  report->add_option("--domain", opts->domain, "only this recipient domain");
  report->add_option("--db", opts->db, "database file (default: [storage] path)");
  report->add_option("--advice", opts->advice, "advice file (default: [report] advice)");
  report->add_option("--output,-o", opts->output, "write to this file instead of stdout");
  report->add_flag("--mail", opts->mail, "mail it to [report] mail_to through sendmail");
  report->add_option("--mail-to", opts->mail_to, "mail it to these addresses instead");
  report->add_flag("--no-alerts", opts->no_alerts, "do not recompute alert incidents");
  report->callback([&ctx, opts] { ctx.exit_code = RunReport(ctx, *opts); });

  auto pf = std::make_shared<std::pair<bool, bool>>(false, false);
  CLI::App* postfix = app.add_subcommand("postfix-config",
                                         "print the main.cf lines that wire bounced into Postfix");
  postfix->add_flag("--milter", pf->first, "only the milter lines");
  postfix->add_flag("--socketmap", pf->second, "only the socketmap lines");
  postfix->callback([&ctx, pf] { ctx.exit_code = RunPostfixConfig(ctx, pf->first, pf->second); });

  auto doc = std::make_shared<std::pair<std::string, bool>>("", false);
  CLI::App* doctor = app.add_subcommand("doctor", "check a live installation and say what to fix");
  doctor->add_option("--db", doc->first, "database file (default: [storage] path)");
  doctor->add_flag("--no-postfix", doc->second, "skip the Postfix checks");
  doctor->callback([&ctx, doc] { ctx.exit_code = RunDoctor(ctx, doc->first, doc->second); });
}

}  // namespace bounced::ctl
