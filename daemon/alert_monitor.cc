// alert_monitor.cc: thread-safe alert detection, logging and the alert command (alert_monitor.h).
#include "daemon/alert_monitor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "classifier/text.h"
#include "daemon/config.h"
#include "storage/policy.h"
#include "storage/store.h"

extern char** environ;

namespace bounced {
namespace {

std::string KeyError(std::string_view file, const toml::node& value, std::string_view key,
                     std::string_view why) {
  return ConfigError(file, &value, "alerts." + std::string(key), why);
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Expected<AlertConfig> AlertConfigFromToml(const toml::table* alerts, std::string_view file) {
  AlertConfig c;
  if (alerts == nullptr) return c;
  for (auto&& [k, node] : *alerts) {
    const std::string_view key = k.str();
    const toml::node& v = node;  // a named reference: clang 14 cannot capture structured bindings
    auto integer = [&](int64_t min, int64_t max) -> std::optional<int64_t> {
      auto x = v.value<int64_t>();
      if (!v.is_integer() || !x || *x < min || *x > max) return std::nullopt;
      return x;
    };
    if (key == "enabled") {
      if (!v.is_boolean()) return Status::Error(KeyError(file, v, key, "must be true or false"));
      c.enabled = *v.value<bool>();
    } else if (key == "window_minutes") {
      auto x = integer(1, 7 * 24 * 60);
      if (!x) return Status::Error(KeyError(file, v, key, "must be an integer from 1 to 10080"));
      c.thresholds.window_seconds = *x * 60;
    } else if (key == "baseline_days") {
      auto x = integer(1, 90);
      if (!x) return Status::Error(KeyError(file, v, key, "must be an integer from 1 to 90"));
      c.thresholds.baseline_seconds = *x * 24 * 3600;
    } else if (key == "factor") {
      auto x = v.value<double>();
      if (!(v.is_number()) || !x || !(*x >= 1.0) || *x > 1000) {
        return Status::Error(KeyError(file, v, key, "must be a number from 1 to 1000"));
      }
      c.thresholds.factor = *x;
    } else if (key == "min_count") {
      auto x = integer(1, 1000000);
      if (!x) return Status::Error(KeyError(file, v, key, "must be an integer from 1 to 1000000"));
      c.thresholds.min_count = *x;
    } else if (key == "hard_bounce_min_count") {
      auto x = integer(0, 1000000);
      if (!x) return Status::Error(KeyError(file, v, key, "must be an integer from 0 to 1000000"));
      c.thresholds.hard_bounce_min_count = *x;
    } else if (key == "command") {
      if (!v.is_string()) return Status::Error(KeyError(file, v, key, "must be a string"));
      c.command = *v.value<std::string>();
    } else if (key == "command_timeout_seconds") {
      auto x = integer(1, 3600);
      if (!x) return Status::Error(KeyError(file, v, key, "must be an integer from 1 to 3600"));
      c.command_timeout_seconds = *x;
    } else {
      return Status::Error(KeyError(file, v, key, "unknown key"));
    }
  }
  return c;
}

bool IsSenderSideRejection(const Result& r) { return r.sender_side(); }

RejectionEvent ToRejectionEvent(const Result& r, int64_t unix_time, std::string_view sender) {
  RejectionEvent e;
  e.unix_time = unix_time;
  e.provider = r.provider;
  e.provider_code = r.provider_code;
  e.status = r.status;
  e.category = std::string(ToString(r.category));
  e.recipient_domain = DomainOf(r.recipient);  // lower-cased: one domain, however it is spelt
  e.sender_domain = SenderDomainOf(sender);
  e.diagnostic = r.diagnostic;
  return e;
}

Status RunAlertCommand(const std::string& command, const std::string& stdin_text,
                       int64_t timeout_seconds) {
  // A socket rather than a pipe so that a command which never reads its input cannot kill us
  // with SIGPIPE (send with MSG_NOSIGNAL).
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return Status::Error(std::string("alert command: socketpair: ") + strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], STDIN_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, "/bin/sh", &fa, &attr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    return Status::Error(std::string("alert command: spawn /bin/sh: ") + strerror(rc));
  }

  const int64_t deadline = NowMs() + timeout_seconds * 1000;
  fcntl(sv[0], F_SETFL, O_NONBLOCK);
  size_t sent = 0;
  while (sent < stdin_text.size() && NowMs() < deadline) {
    ssize_t n = send(sv[0], stdin_text.data() + sent, stdin_text.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      pollfd p{sv[0], POLLOUT, 0};
      poll(&p, 1, 100);
    } else {
      break;  // the command closed its input: it does not want the details
    }
  }
  close(sv[0]);

  int wstatus = 0;
  for (;;) {
    pid_t w = waitpid(pid, &wstatus, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return Status::Error("alert command: waitpid failed");
    if (NowMs() >= deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &wstatus, 0);
      return Status::Error("alert command: killed after " + std::to_string(timeout_seconds) +
                           " s: " + command);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return Status::Ok();
  if (WIFEXITED(wstatus)) {
    return Status::Error("alert command exited with status " +
                         std::to_string(WEXITSTATUS(wstatus)) + ": " + command);
  }
  return Status::Error("alert command killed by signal " + std::to_string(WTERMSIG(wstatus)) +
                       ": " + command);
}

struct AlertMonitor::Running {
  std::mutex mu;
  std::condition_variable cv;
  int count = 0;
};

AlertMonitor::AlertMonitor(AlertConfig config)
    : config_(std::move(config)),
      detector_(std::make_unique<SpikeDetector>(config_.thresholds)),
      running_(std::make_shared<Running>()) {}

AlertMonitor::~AlertMonitor() {
  std::unique_lock lock(running_->mu);
  running_->cv.wait(lock, [&] { return running_->count == 0; });
}

void AlertMonitor::OnEvent(const Result& result, int64_t unix_time, std::string_view sender,
                           std::string_view log_status) {
  const bool hard = IsHardBounce(result, log_status);
  if (!hard && !IsSenderSideRejection(result)) return;
  RejectionEvent event = ToRejectionEvent(result, unix_time, sender);
  event.hard_bounce = hard;
  std::lock_guard lock(mu_);
  if (!config_.enabled) return;
  if (auto opened = detector_->Observe(event)) {
    Opened(*opened);
  }
}

void AlertMonitor::Seed(const RejectionEvent& event) {
  std::lock_guard lock(mu_);
  detector_->Observe(event);
}

void AlertMonitor::Tick(int64_t now) {
  std::lock_guard lock(mu_);
  for (const Incident& i : detector_->Advance(now)) {
    spdlog::info(
        "{} #{} ended: {} {}, {} events",
        i.kind == kIncidentHardBounces ? "hard-bounce spike" : "sender-side rejection spike", i.id,
        i.provider, i.code, i.total_events);
  }
}

void AlertMonitor::Reconfigure(AlertConfig config) {
  std::lock_guard lock(mu_);
  const AlertThresholds& a = config_.thresholds;
  const AlertThresholds& b = config.thresholds;
  const bool same =
      a.window_seconds == b.window_seconds && a.baseline_seconds == b.baseline_seconds &&
      a.factor == b.factor && a.min_count == b.min_count &&
      a.hard_bounce_min_count == b.hard_bounce_min_count && a.max_recent == b.max_recent;
  config_ = std::move(config);
  if (!same) detector_ = std::make_unique<SpikeDetector>(config_.thresholds);
}

void AlertMonitor::Opened(const Incident& incident) {
  ++opened_;
  spdlog::warn("{}", DescribeIncident(incident));
  if (config_.command.empty()) return;
  std::string details = bounced::ToJson(incident).dump() + "\n";
  {
    std::lock_guard lock(running_->mu);
    ++running_->count;
  }
  // The command may be slow (a pager, a webhook); the writer thread must not wait for it.
  std::thread([running = running_, command = config_.command, details = std::move(details),
               timeout = config_.command_timeout_seconds] {
    Status s = RunAlertCommand(command, details, timeout);
    if (!s.ok()) spdlog::error("{}", s.message());
    std::lock_guard lock(running->mu);
    --running->count;
    running->cv.notify_all();
  }).detach();
}

nlohmann::json AlertMonitor::ToJson() const {
  std::lock_guard lock(mu_);
  const AlertThresholds& t = detector_->thresholds();
  nlohmann::json open = nlohmann::json::array();
  for (const Incident& i : detector_->Open()) open.push_back(bounced::ToJson(i));
  nlohmann::json recent = nlohmann::json::array();
  for (const Incident& i : detector_->Closed()) recent.push_back(bounced::ToJson(i));
  return {{"enabled", config_.enabled},
          {"window_seconds", t.window_seconds},
          {"baseline_seconds", t.baseline_seconds},
          {"factor", t.factor},
          {"min_count", t.min_count},
          {"hard_bounce_min_count", t.hard_bounce_min_count},
          {"open", std::move(open)},
          {"recent", std::move(recent)}};
}

uint64_t AlertMonitor::incidents_opened() const {
  std::lock_guard lock(mu_);
  return opened_;
}

}  // namespace bounced
