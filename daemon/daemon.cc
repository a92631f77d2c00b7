// daemon.cc: the bounced process (see daemon.h).
#include "daemon/daemon.h"

#include <utility>  // before Boost.Asio under C++20

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <boost/asio.hpp>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <thread>

#include "classifier/dsn_parser.h"
#include "daemon/alert_monitor.h"
#include "daemon/log_input.h"
#include "daemon/metrics.h"
#include "daemon/netstring.h"
#include "daemon/query_handler.h"
#include "daemon/report_db.h"
#include "daemon/services.h"
#include "daemon/socketmap.h"
#include "daemon/stream_server.h"
#include "milter/milter.h"
#include "milter/store_dependencies.h"
#include "storage/store.h"

namespace bounced {
namespace {

constexpr std::chrono::seconds kStoreRetryInterval{5};
constexpr std::chrono::seconds kAlertTickInterval{60};

// Feeds committed events to the reports engineer's alert monitor.
class AlertObserver : public CommitObserver {
 public:
  explicit AlertObserver(std::shared_ptr<AlertMonitor> monitor) : monitor_(std::move(monitor)) {}
  void OnCommitted(const std::vector<Event>& events) override {
    for (const Event& e : events) {
      monitor_->OnEvent(e.result, e.unix_time != 0 ? e.unix_time : std::time(nullptr), e.sender,
                        e.log_status);
    }
  }

 private:
  std::shared_ptr<AlertMonitor> monitor_;
};

nlohmann::json ServerStats(const StreamServer* s) {
  if (s == nullptr) return {{"enabled", false}};
  const StreamServerStats& st = s->stats();
  return {{"enabled", true},
          {"path", s->path()},
          {"accepted", st.accepted.load()},
          {"active", st.active.load()},
          {"refused_busy", st.refused_busy.load()},
          {"idle_closed", st.idle_closed.load()}};
}

// The keys whose new value a running bounced cannot take (the paths: sockets it listens on, the
// input it reads, the database; libmilter cannot reopen the milter's socket): said, not silently
// dropped.
std::vector<std::string> KeysNeedingRestart(const Config& running, const Config& next) {
  std::vector<std::string> keys;
  auto changed = [&](bool differs, const char* key) {
    if (differs) keys.emplace_back(key);
  };
  changed(next.storage.path != running.storage.path, "storage.path");
  const LogInputConfig& ri = running.input;
  const LogInputConfig& ni = next.input;
  changed(ni.path != ri.path, "input.log.path");
  changed(ni.journal_files != ri.journal_files, "input.log.journal_files");
  // The two sockets' modes, groups, connection limits and idle timeouts apply at once.
  changed(next.query.socket != running.query.socket, "query.socket");
  changed(next.socketmap.socket != running.socketmap.socket, "socketmap.socket");
  // The milter takes every other key of [milter] (and [verp]) at once (ReconfigureMilter).
  changed(next.milter.socket != running.milter.socket, "milter.socket");
  return keys;
}

}  // namespace

void ApplyLogLevel(const std::string& level) { spdlog::set_level(spdlog::level::from_str(level)); }

namespace {
sigset_t StopAndReloadSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}
}  // namespace

void BlockStopAndReloadSignals() {
  sigset_t set = StopAndReloadSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

struct Daemon::Impl {
  Impl(Config c, LoadedRules r, DaemonOptions o)
      : config(std::move(c)), options(std::move(o)), store_retry(io), watchdog(io), alert_tick(io) {
    services.SetConfig(config);
    services.SetRules(r.rules, r.sources);
    // The MIME library is loaded here rather than by the first bounce the milter or a query
    // brings; a broken install is said at start.
    if (std::string why = MimeLibraryProblem(); !why.empty()) {
      spdlog::error("DSN messages cannot be read: {}", why);
    }
    alerts = std::make_shared<AlertMonitor>(config.alerts);
    services.AddObserver(std::make_shared<AlertObserver>(alerts));
    services.alerts_json = [a = alerts] { return a->ToJson(); };
    // Metrics are for a running service; --once has no one to ask.
    if (!options.once) services.AddObserver(event_counter);
    services.metrics_details = [this] {
      nlohmann::json m = HealthDetails();
      m["start_time"] = started;
      m["events"] = event_counter->ToJson();
      nlohmann::json a = alerts->ToJson();
      if (a.contains("open") && a["open"].is_array()) {
        m["alerts_open"] = a["open"].size();
        size_t hard = 0;
        for (const nlohmann::json& i : a["open"])
          hard += i.value("kind", "") == kIncidentHardBounces;
        m["hard_bounce_alerts_open"] = hard;
      }
      return m;
    };
    input = std::make_unique<LogInput>(services, config.input);
    services.reload = [this] { return Reload(); };
    services.health_details = [this] { return HealthDetails(); };
  }

  ~Impl() { StopSocketmap(); }

  bool OpenStore() {
    StoreOptions so;
    so.path = config.storage.path;
    so.policy = config.policy.Effective();
    so.retention = config.storage.retention;
    std::error_code ec;
    std::filesystem::path dir = std::filesystem::path(so.path).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    auto store = Store::Open(so);
    if (!store) {
      if (store.error() != last_store_error) {
        spdlog::error("storage: {} (retrying every {} s; lookups answer 'unavailable')",
                      store.error(), kStoreRetryInterval.count());
        last_store_error = store.error();
      }
      services.SetStoreProblem(store.error());
      return false;
    }
    std::shared_ptr<Store> shared(std::move(*store));
    spdlog::info("storage: {} open, {} suppressed addresses in memory", so.path,
                 shared->view().size());
    services.SetStore(shared);
    last_store_error.clear();
    SeedAlertsOnce();
    StartMilterIfConfigured();
    return true;
  }

  void RetryStoreLater() {
    store_retry.expires_after(kStoreRetryInterval);
    store_retry.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopping) return;
      // OpenStore reads `config`, which a reload on the other io thread may be replacing.
      std::lock_guard lock(reload_mu);
      if (!OpenStore()) RetryStoreLater();
    });
  }

  // Replays the stored sender-side rejections and hard bounces of the alert baseline period, so a
  // restart neither forgets what is normal nor announces an incident that was already open.
  void SeedAlertsOnce() {
    if (alerts_seeded || !config.alerts.enabled) return;
    alerts_seeded = true;
    const int64_t now = std::time(nullptr);
    const AlertThresholds& t = config.alerts.thresholds;
    Status s =
        ReplaySenderRejections(config.storage.path, now - t.baseline_seconds - t.window_seconds,
                               now + 1, [this](const RejectionEvent& e) { alerts->Seed(e); });
    if (!s.ok()) spdlog::warn("alerts: baseline not restored: {}", s.message());
  }

  void StartMilterIfConfigured() {
    if (options.once || config.milter.socket.empty() || milter_started) return;
    std::shared_ptr<Store> store = services.store();
    if (!store) return;
    MilterDependencies deps = MilterDependenciesForStore(
        *store, [this] { return services.rules(); }, config.milter.callback_timeout);
    Status s = StartMilter(config.milter, std::move(deps));
    if (!s.ok()) {
      spdlog::error("milter: {}", s.message());
      milter_failed = s.message();
      return;
    }
    milter_started = true;
    spdlog::info("milter: listening on {}", config.milter.socket);
  }

  Status StartServers() {
    StreamServerOptions q;
    q.name = "query";
    q.path = config.query.socket;
    q.mode = config.query.mode;
    q.group = config.query.group;
    q.max_connections = config.query.max_connections;
    q.idle_timeout = config.query.idle_timeout;
    q.busy_reply = [](size_t max) {
      return ReplyLine({{"ok", false},
                        {"error", "too many connections ([query] max_connections = " +
                                      std::to_string(max) + "); try again"}});
    };
    auto qs = StreamServer::Listen(io, q, [this](const PeerCred& peer) {
      Config c = services.config();
      return MakeQuerySession(services, peer, c.query.max_request_bytes, c.query.group);
    });
    if (!qs) return qs.status();
    query = std::move(*qs);
    query->Start();
    spdlog::info("query: listening on {}", config.query.socket);
    if (!config.socketmap.socket.empty()) {
      StreamServerOptions m;
      m.name = "socketmap";
      m.path = config.socketmap.socket;
      m.mode = config.socketmap.mode;
      m.max_connections = config.socketmap.max_connections;
      m.idle_timeout = config.socketmap.idle_timeout;
      m.busy_reply = [](size_t) { return EncodeNetstring("TEMP too many connections"); };
      auto ms = StreamServer::Listen(socketmap_io, m, [this](const PeerCred&) {
        return MakeSocketmapSession(services, services.config().socketmap, socketmap_stats);
      });
      if (!ms) return ms.status();
      socketmap = std::move(*ms);
      socketmap->Start();
      socketmap_thread = std::thread([this] { socketmap_io.run(); });
      spdlog::info("socketmap: listening on {} (maps recipient_access, transport)",
                   config.socketmap.socket);
    }
    return Status::Ok();
  }

  Expected<nlohmann::json> Reload() {
    std::lock_guard lock(reload_mu);
    // systemd shows the unit reloading meanwhile (and, with Type=notify-reload, waits for it).
    timespec mono{};
    clock_gettime(CLOCK_MONOTONIC, &mono);
    sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%lld",
               static_cast<long long>(mono.tv_sec) * 1000000 + mono.tv_nsec / 1000);
    struct ReadyAgain {
      ~ReadyAgain() { sd_notify(0, "READY=1"); }
    } ready_again;
    const int64_t reading_at = std::time(nullptr);
    auto fresh = LoadConfig(options.config_path);
    if (!fresh) {
      spdlog::error("reload: {}; keeping the running configuration and rules", fresh.error());
      NoteReload(reading_at, fresh.error());
      return fresh.status();
    }
    auto rules = LoadRules(fresh->rules.files);
    if (!rules) {
      spdlog::error("reload: rules: {}; keeping the running configuration and rules",
                    rules.error());
      NoteReload(reading_at, "rules: " + rules.error());
      return rules.status();
    }
    Config next = std::move(*fresh);
    std::vector<std::string> restart = KeysNeedingRestart(config, next);
    // What cannot change in a running process stays as it was; everything else applies now.
    next.storage.path = config.storage.path;  // the retention applies now
    // The input reads what it started on; its poll_interval and max_line_bytes apply now.
    LogInputConfig input_next = config.input;
    input_next.poll_interval = next.input.poll_interval;
    input_next.max_line_bytes = next.input.max_line_bytes;
    next.input = input_next;
    next.query.socket = config.query.socket;
    next.socketmap.socket = config.socketmap.socket;
    next.milter.socket = config.milter.socket;  // libmilter cannot listen anew in-process
    // The running milter checks the rest as it did at start (a quarantine directory it cannot
    // write is refused) and takes it for the messages that start after this.
    if (MilterRunning()) {
      if (Status s = ReconfigureMilter(next.milter); !s.ok()) {
        spdlog::error("reload: {}; keeping the running configuration and rules", s.message());
        NoteReload(reading_at, s.message());
        return s;
      }
    }
    // The query socket's group decides who may write (checked per request), and with its mode
    // who may connect: the socket file follows both now.
    if (query && (next.query.mode != config.query.mode || next.query.group != config.query.group)) {
      if (Status s = query->SetModeAndGroup(next.query.mode, next.query.group); !s.ok()) {
        spdlog::warn("reload: {}", s.message());
      }
    }
    if (query) query->SetLimits(next.query.max_connections, next.query.idle_timeout);
    input->SetTuning(next.input.poll_interval, next.input.max_line_bytes);
    if (socketmap) {
      if (next.socketmap.mode != config.socketmap.mode) {
        if (Status s = socketmap->SetModeAndGroup(next.socketmap.mode, ""); !s.ok()) {
          spdlog::warn("reload: {}", s.message());
        }
      }
      socketmap->SetLimits(next.socketmap.max_connections, next.socketmap.idle_timeout);
    }
    config = next;
    services.SetConfig(next);
    services.SetRules(rules->rules, rules->sources);
    if (auto store = services.store()) {
      store->SetPolicy(next.policy.Effective());
      store->SetRetention(next.storage.retention);
    }
    alerts->Reconfigure(next.alerts);
    ApplyLogLevel(next.log.level);
    for (const auto& r : restart) {
      spdlog::warn("reload: {} changed; it takes effect at the next restart", r);
    }
    config_read_at = reading_at;
    NoteReload(reading_at, "");
    spdlog::info("reload: configuration {} and {} rules from {} file(s) in force", next.source,
                 rules->rules->rule_count(), rules->sources.size());
    return nlohmann::json{{"config", next.source},
                          {"rules", rules->rules->rule_count()},
                          {"rule_files", rules->sources},
                          {"restart_needed", restart}};
  }

  nlohmann::json HealthDetails() {
    std::lock_guard lock(reload_mu);
    nlohmann::json milter_json = {{"enabled", !config.milter.socket.empty()},
                                  {"running", MilterRunning()}};
    if (!milter_failed.empty()) milter_json["error"] = milter_failed;
    if (MilterRunning()) {
      MilterStats ms = GetMilterStats();
      milter_json["rcpt_checked"] = ms.rcpt_checked;
      milter_json["rcpt_rejected"] = ms.rcpt_rejected;
      milter_json["rcpt_tempfailed"] = ms.rcpt_tempfailed;
      milter_json["rcpt_logged"] = ms.rcpt_logged;
      milter_json["rcpt_removed"] = ms.rcpt_removed;
      // What it does now (a reload may have changed it since the start).
      const MilterConfig mc = CurrentMilterConfig();
      milter_json["action"] = ToString(mc.default_action);
      nlohmann::json overrides = nlohmann::json::object();  // [milter.actions]
      for (int c = 0; c < kCategoryCount; ++c) {
        if (const auto& a = mc.category_actions[c]) {
          overrides[std::string(ToString(static_cast<Category>(c)))] = ToString(*a);
        }
      }
      milter_json["actions"] = overrides;
      milter_json["bounces"] = ToString(mc.bounces);
      milter_json["bounces_seen"] = ms.bounces_seen;
      milter_json["bounce_recipients"] = ms.bounce_recipients;
      milter_json["bounces_truncated"] = ms.bounces_truncated;
      milter_json["bounces_incomplete"] = ms.bounces_incomplete;
      milter_json["bounces_verp"] = ms.bounces_verp;
      milter_json["bounces_discarded"] = ms.bounces_discarded;
      milter_json["bounces_quarantined"] = ms.bounces_quarantined;
      milter_json["callback_timeouts"] = ms.callback_timeouts;
      milter_json["dropped_records"] = ms.dropped_records;
      milter_json["storage_errors"] = ms.storage_errors;
    }
    nlohmann::json sm = ServerStats(socketmap.get());
    if (socketmap) {
      sm["lookups"] = socketmap_stats->lookups.load();
      sm["found"] = socketmap_stats->found.load();
      sm["temp"] = socketmap_stats->temp.load();
      sm["perm"] = socketmap_stats->perm.load();
      sm["malformed"] = socketmap_stats->malformed.load();
    }
    nlohmann::json reload = {{"ok", last_reload_error.empty()}};
    reload["time"] = last_reload_at != 0 ? nlohmann::json(last_reload_at) : nlohmann::json();
    if (!last_reload_error.empty()) reload["error"] = last_reload_error;
    return {{"config", config.source},  {"config_read_at", config_read_at},
            {"last_reload", reload},    {"uptime_seconds", std::time(nullptr) - started},
            {"input", input->Health()}, {"query_socket", ServerStats(query.get())},
            {"socketmap", sm},          {"milter", milter_json}};
  }

  void WatchSignals() {
    signals->async_wait([this](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      if (sig == SIGHUP) {
        spdlog::info("SIGHUP: reloading {}", options.config_path);
        (void)Reload();
        return WatchSignals();
      }
      spdlog::info("{}: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      Shutdown();
    });
  }

  void Shutdown() {
    if (stopping.exchange(true)) return;
    sd_notify(0, "STOPPING=1");
    input->Stop();
    if (query) query->Stop();
    StopSocketmap();
    store_retry.cancel();
    watchdog.cancel();
    alert_tick.cancel();
    if (signals) signals->cancel();
    io.stop();
  }

  // Stops the socketmap's thread, then its server (the acceptor is its thread's to use).
  void StopSocketmap() {
    socketmap_io.stop();
    if (socketmap_thread.joinable()) socketmap_thread.join();
    if (socketmap) socketmap->Stop();
  }

  void ArmWatchdog(std::chrono::microseconds interval) {
    watchdog.expires_after(interval / 2);
    watchdog.async_wait([this, interval](const boost::system::error_code& ec) {
      if (ec || stopping) return;
      sd_notify(0, "WATCHDOG=1");
      ArmWatchdog(interval);
    });
  }

  void ArmAlertTick() {
    alert_tick.expires_after(kAlertTickInterval);
    alert_tick.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopping) return;
      alerts->Tick(std::time(nullptr));
      ArmAlertTick();
    });
  }

  int RunOnce() {
    if (!OpenStore()) {
      spdlog::error("--once: storage unavailable, nothing read");
      return 1;
    }
    input->Run(true);
    nlohmann::json h = input->Health();
    Status s = services.store()->Flush();
    if (!s.ok()) {
      spdlog::error("--once: final commit failed: {}", s.message());
      return 1;
    }
    spdlog::info(
        "--once: read {} lines, committed {} events ({} garbage lines skipped, {} too "
        "long)",
        h.value("lines", 0), h.value("events_committed", 0), h.value("skipped_garbage", 0),
        h.value("skipped_too_long", 0));
    services.SetStore(nullptr);
    return 0;
  }

  int RunService() {
    // First: a signal that came while bounced was starting (main blocks them) is queued by the
    // signal_set and handled once io runs.
    signals = std::make_unique<boost::asio::signal_set>(io, SIGTERM, SIGINT, SIGHUP);
    WatchSignals();
    sigset_t handled = StopAndReloadSignals();
    pthread_sigmask(SIG_UNBLOCK, &handled, nullptr);
    Status s = StartServers();
    if (!s.ok()) {
      spdlog::critical("{}", s.message());
      return 1;
    }
    if (!OpenStore()) RetryStoreLater();
    ArmAlertTick();
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0) ArmWatchdog(std::chrono::microseconds(usec));
    input_thread = std::thread([this] { input->Run(false); });
    sd_notifyf(0, "READY=1\nSTATUS=serving %s", config.query.socket.c_str());
    spdlog::info("bounced {} ready (config: {})", BOUNCED_VERSION, config.source);
    std::vector<std::thread> extra;
    for (int i = 1; i < options.io_threads; ++i) extra.emplace_back([this] { io.run(); });
    io.run();
    for (auto& t : extra) t.join();
    StopSocketmap();  // when io.run() ended otherwise than by Shutdown
    // Shutdown: the input commits what it read, then the milter detaches, then the writer drains.
    input->Stop();
    if (input_thread.joinable()) input_thread.join();
    StopMilter();
    if (auto store = services.store()) {
      Status f = store->Flush();
      if (!f.ok()) spdlog::error("shutdown: final commit failed: {}", f.message());
    }
    services.SetStore(nullptr);
    spdlog::info("bounced stopped");
    return 0;
  }

  Config config;
  DaemonOptions options;
  Services services;
  boost::asio::io_context io;
  // The socketmap's own (see daemon.h); kept running while it has no connection.
  boost::asio::io_context socketmap_io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> socketmap_work =
      boost::asio::make_work_guard(socketmap_io);
  std::thread socketmap_thread;
  boost::asio::steady_timer store_retry;
  boost::asio::steady_timer watchdog;
  boost::asio::steady_timer alert_tick;
  std::unique_ptr<boost::asio::signal_set> signals;  // service mode only
  std::unique_ptr<StreamServer> query;
  std::unique_ptr<StreamServer> socketmap;
  std::shared_ptr<SocketmapStats> socketmap_stats = std::make_shared<SocketmapStats>();
  std::unique_ptr<LogInput> input;
  std::thread input_thread;
  std::shared_ptr<AlertMonitor> alerts;
  std::shared_ptr<EventCounter> event_counter = std::make_shared<EventCounter>();
  std::mutex reload_mu;
  std::atomic<bool> stopping{false};
  bool milter_started = false;
  std::string milter_failed;
  std::string last_store_error;
  bool alerts_seeded = false;
  int64_t started = std::time(nullptr);
  // When the configuration and rules in force were read (at start, or by the last reload that
  // took): `bouncectl doctor` compares the files' mtimes with it.
  int64_t config_read_at = started;
  // The last reload asked for (SIGHUP or `bouncectl reload`): when, and why it was refused ("" when
  // it took). 0 while none was.
  int64_t last_reload_at = 0;
  std::string last_reload_error;
  void NoteReload(int64_t at, std::string error) {
    last_reload_at = at;
    last_reload_error = std::move(error);
  }
};

Daemon::Daemon(Config config, LoadedRules rules, DaemonOptions options)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(rules), std::move(options))) {}

Daemon::~Daemon() = default;

int Daemon::Run() { return impl_->options.once ? impl_->RunOnce() : impl_->RunService(); }

}  // namespace bounced
