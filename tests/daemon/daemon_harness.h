// daemon_harness.h: runs the real `bounced` (built in BOUNCED_BINARY_DIR) as a child process on
// temp paths, and talks to it over its real sockets and through the real `bouncectl`.
// Header-only, for the tests in tests/daemon.
#pragma once
#include "tests/read_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace bounced::testing {

using nlohmann::json;
namespace fs = std::filesystem;

inline const std::string kBounced = std::string(BOUNCED_BINARY_DIR) + "/bounced";
inline const std::string kBouncectl = std::string(BOUNCED_BINARY_DIR) + "/bouncectl";
inline const std::string kTestData = BOUNCED_TEST_DATA;
// Upper bound for anything we wait for; tests never assert on time, only give up.
inline constexpr std::chrono::seconds kWaitLimit{60};

inline void AppendFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << text;
}

// A world-traversable temp dir (clients run as `nobody` in some tests), removed at the end.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/bounced-test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
    ::chmod(path_.c_str(), 0755);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Runs a shell command, returns stdout; *rc gets the exit status.
inline std::string Shell(const std::string& cmd, int* rc = nullptr) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int status = ::pclose(p);
  if (rc != nullptr) *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

inline std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Connects to a Unix socket; -1 on failure.
inline int ConnectUnix(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

inline bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Reads until `done(buffer)` or EOF/timeout.
inline std::string RecvUntil(int fd, const std::function<bool(const std::string&)>& done) {
  std::string in;
  char buf[65536];
  while (!done(in)) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  return in;
}

// One socketmap request ("NAME KEY", sent as a netstring) on a new connection: the reply's
// payload, or what went wrong. `limit` bounds the wait for the reply.
inline std::string SocketmapAsk(const std::string& socket, const std::string& request,
                                std::chrono::seconds limit = std::chrono::seconds(30)) {
  int fd = ConnectUnix(socket);
  if (fd < 0) return "connect failed";
  timeval tv{static_cast<time_t>(limit.count()), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  SendAll(fd, std::to_string(request.size()) + ":" + request + ",");
  std::string reply =
      RecvUntil(fd, [](const std::string& s) { return !s.empty() && s.back() == ','; });
  ::close(fd);
  if (reply.empty()) return "no reply within " + std::to_string(limit.count()) + " s";
  size_t colon = reply.find(':');
  if (colon == std::string::npos || reply.back() != ',') return "bad reply: " + reply;
  return reply.substr(colon + 1, reply.size() - colon - 2);
}

inline bool WaitUntil(const std::function<bool()>& pred,
                      std::chrono::milliseconds limit = kWaitLimit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

class BouncedProcess {
 public:
  explicit BouncedProcess(const TempDir& dir, std::string extra_config = "")
      : dir_(dir), extra_config_(std::move(extra_config)) {
    WriteConfig();
  }
  ~BouncedProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  std::string config_path() const { return dir_ / "bounced.toml"; }
  std::string db() const { return dir_ / "bounced.db"; }
  std::string log() const { return dir_ / "mail.log"; }
  std::string query_socket() const { return dir_ / "query.sock"; }
  std::string socketmap_socket() const { return dir_ / "socketmap.sock"; }
  std::string stderr_path() const { return dir_ / "bounced.stderr"; }
  std::string rules_dir() const { return dir_ / "rules.d"; }
  pid_t pid() const { return pid_; }

  // The test config: everything on temp paths, fast polling, root-only writes.
  std::string BaseConfig() const {
    return "[storage]\npath = \"" + db() + "\"\n" + storage_extra_ + "[input.log]\npath = \"" +
           log() + "\"\npoll_interval = \"20ms\"\n" + "[query]\nsocket = \"" + query_socket() +
           "\"\ngroup = \"\"\nmode = \"0666\"\n" + query_extra_ + "[socketmap]\nsocket = \"" +
           socketmap_socket() + "\"\n" +
           "[rules]\nfiles = [\"/usr/share/bounced/rules/default.toml\", \"" + rules_dir() +
           "/*.toml\"]\n";
  }
  void WriteConfig() { std::ofstream(config_path()) << BaseConfig() << extra_config_; }
  // Adds `lines` ("key = value\n" ...) to the [storage] table (then reload, or before Start).
  void SetStorageConfig(std::string lines) {
    storage_extra_ = std::move(lines);
    WriteConfig();
  }
  // Adds `lines` ("key = value\n" ...) to the [query] table; before Start.
  void SetQueryConfig(std::string lines) {
    query_extra_ = std::move(lines);
    WriteConfig();
  }

  // Starts bounced and waits until its query socket answers `health`.
  void Start(const std::vector<std::string>& extra_args = {}) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(stderr_path().c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 2);
      std::vector<std::string> args = {kBounced, "--config", config_path()};
      args.insert(args.end(), extra_args.begin(), extra_args.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(kBounced.c_str(), argv.data());
      ::_exit(127);
    }
    ASSERT_TRUE(WaitUntil([&] {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return true;  // died: reported below
      }
      return Query({{"cmd", "health"}}).value("ok", false);
    })) << ReadFile(stderr_path());
    ASSERT_GT(pid_, 0) << "bounced exited at start:\n" << ReadFile(stderr_path());
  }

  // SIGTERM and wait; returns the exit status.
  int Stop() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  void Kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  bool Alive() const { return pid_ > 0 && ::kill(pid_, 0) == 0; }

  // One request/reply over the query socket; {"ok": false, "error": "connect"} when closed.
  json Query(const json& request) const { return QueryRaw(request.dump() + "\n"); }
  json QueryRaw(const std::string& line) const {
    int fd = ConnectUnix(query_socket());
    if (fd < 0) return {{"ok", false}, {"error", "connect"}};
    SendAll(fd, line);
    std::string reply =
        RecvUntil(fd, [](const std::string& s) { return !s.empty() && s.back() == '\n'; });
    ::close(fd);
    try {
      return json::parse(reply);
    } catch (...) {
      return {{"ok", false}, {"error", "unparseable reply: " + reply}};
    }
  }

  // bouncectl --socket ... ARGS; `as_nobody` runs it as the unprivileged user nobody.
  std::string Ctl(const std::string& args, int* rc = nullptr, bool as_nobody = false) const {
    std::string prefix = as_nobody ? "setpriv --reuid=nobody --regid=nogroup --clear-groups " : "";
    return Shell(prefix + kBouncectl + " --socket " + Quote(query_socket()) + " " + args + " 2>&1",
                 rc);
  }

  json Health() const {
    json r = Query({{"cmd", "health"}});
    return r.value("ok", false) ? r["result"] : json::object();
  }
  int64_t StoredEvents() const {
    json h = Health();
    if (!h.contains("storage") || !h["storage"].contains("events")) return -1;
    return h["storage"]["events"].get<int64_t>();
  }
  bool WaitForEvents(int64_t n) const {
    return WaitUntil([&] { return StoredEvents() >= n; });
  }

 private:
  const TempDir& dir_;
  std::string extra_config_;
  std::string query_extra_;
  std::string storage_extra_;
  pid_t pid_ = -1;
};

}  // namespace bounced::testing
