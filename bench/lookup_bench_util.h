// lookup_bench_util.h: shared by lookup_bench and startup_bench: builds a database with N
// suppressed addresses (through Store::Import, as `bouncectl import` would), starts the real
// bounced on it (the binary next to bench/), and waits until its query socket answers.
// Reads nothing from /work/shared.
#pragma once

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "storage/store.h"

namespace bounced::bench {

inline std::string BinaryDir() {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().parent_path();
}

inline std::string Address(size_t i) {
  return "user" + std::to_string(i) + "@example" + std::to_string(i % 1000) + ".com";
}

// Creates `path` with n suppressions (all-or-nothing import in one transaction).
inline bool MakeDatabase(const std::string& path, size_t n) {
  StoreOptions so;
  so.path = path;
  auto store = Store::Open(so);
  if (!store) {
    std::fprintf(stderr, "open %s: %s\n", path.c_str(), store.error().c_str());
    return false;
  }
  std::string csv = "address,reason,category,source\n";
  csv.reserve(n * 64);
  for (size_t i = 0; i < n; ++i) csv += Address(i) + ",bench,user_unknown,import\n";
  auto r = (*store)->Import(ExportFormat::kCsv, csv, Actor{0, "bench"});
  if (!r || !r->errors.empty()) {
    std::fprintf(stderr, "import: %s\n", r ? r->errors.front().c_str() : r.error().c_str());
    return false;
  }
  return (*store)->Flush().ok();
}

inline int Connect(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One request, one reply ending in `terminator`; false on a broken connection.
inline bool RoundTrip(int fd, const std::string& request, char terminator, std::string* reply) {
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size()))
    return false;
  reply->clear();
  char buf[4096];
  while (reply->empty() || reply->back() != terminator) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    reply->append(buf, static_cast<size_t>(n));
  }
  return true;
}

struct Daemon {
  pid_t pid = -1;
  std::string dir;
  std::string query() const { return dir + "/query.sock"; }
  std::string socketmap() const { return dir + "/socketmap.sock"; }

  // Starts bounced on `db`; returns seconds until a `lookup` is answered (the suppression view
  // is loaded), or -1.
  double Start(const std::string& db) {
    std::ofstream(dir + "/bounced.toml")
        << "[storage]\npath = \"" << db << "\"\n[input.log]\npath = \"" << dir
        << "/mail.log\"\n[query]\nsocket = \"" << query() << "\"\ngroup = \"\"\n"
        << "[socketmap]\nsocket = \"" << socketmap() << "\"\n[log]\nlevel = \"warn\"\n";
    std::string bin = BinaryDir() + "/bounced";
    std::string cfg = dir + "/bounced.toml";
    auto t0 = std::chrono::steady_clock::now();
    pid = ::fork();
    if (pid == 0) {
      ::execl(bin.c_str(), bin.c_str(), "--config", cfg.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::string reply;
    for (;;) {
      int fd = Connect(query());
      if (fd >= 0) {
        bool ok = RoundTrip(fd, "{\"cmd\":\"lookup\",\"address\":\"a@b.c\"}\n", '\n', &reply);
        ::close(fd);
        if (ok && reply.find("\"ok\":true") != std::string::npos) break;
      }
      if (::waitpid(pid, nullptr, WNOHANG) == pid) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  long RssKb() const {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    }
    return -1;
  }

  void Stop() {
    if (pid <= 0) return;
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
  ~Daemon() { Stop(); }
};

}  // namespace bounced::bench
