// lookup_bench: suppression lookups against the real bounced with 1M suppressed addresses, one
// client connection, request/reply, compared with a minimal echo server on the same kind of
// Unix socket (the practical limit for one request/reply connection).
//   build/bench/lookup_bench [N_SUPPRESSED=1000000] [N_REQUESTS=200000]
// Rows: echo (same request bytes as the socketmap), socketmap recipient_access (Postfix's
// lookup), query `lookup` (in-memory, JSON), query `status` (SQLite + JSON, the full answer).
// Half the addresses asked are suppressed, half are not. Reads nothing from /work/shared.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/lookup_bench_util.h"

namespace {

using bounced::bench::Address;
using bounced::bench::Connect;
using bounced::bench::RoundTrip;

// Minimal echo server: one thread per connection, read and write back what arrived.
class EchoServer {
 public:
  explicit EchoServer(const std::string& path) : path_(path) {
    ::unlink(path.c_str());
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(fd_, 16);
    thread_ = std::thread([this] {
      int c = ::accept(fd_, nullptr, nullptr);
      char buf[4096];
      for (;;) {
        ssize_t n = ::recv(c, buf, sizeof(buf), 0);
        if (n <= 0) break;
        if (::send(c, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
      }
      ::close(c);
    });
  }
  ~EchoServer() {
    thread_.join();
    ::close(fd_);
    ::unlink(path_.c_str());
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::thread thread_;
};

struct Row {
  const char* name;
  double per_second = 0;
  double mean_us = 0;
};

// Runs n request/replies over one connection; request(i) builds the i-th request.
template <typename MakeRequest>
Row Measure(const char* name, const std::string& socket, size_t n, char terminator,
            MakeRequest request, const char* expect_in_first = nullptr) {
  int fd = Connect(socket);
  if (fd < 0) {
    std::fprintf(stderr, "%s: cannot connect to %s\n", name, socket.c_str());
    throw std::runtime_error(name);
  }
  std::string reply;
  // Sanity check on a suppressed address (i = 0), then warm up.
  RoundTrip(fd, request(0), terminator, &reply);
  if (expect_in_first != nullptr && reply.find(expect_in_first) == std::string::npos) {
    std::fprintf(stderr, "%s: unexpected reply: %s\n", name, reply.c_str());
    throw std::runtime_error(name);
  }
  for (size_t i = 0; i < 1000; ++i) RoundTrip(fd, request(i), terminator, &reply);
  std::vector<std::string> reqs;
  reqs.reserve(n);
  for (size_t i = 0; i < n; ++i) reqs.push_back(request(i));
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) {
    if (!RoundTrip(fd, reqs[i], terminator, &reply)) {
      std::fprintf(stderr, "%s: connection broken at %zu\n", name, i);
      throw std::runtime_error(name);
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(fd);
  return {name, static_cast<double>(n) / s, s / static_cast<double>(n) * 1e6};
}

}  // namespace

int main(int argc, char** argv) {
  size_t suppressed = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1000000;
  size_t requests = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 200000;
  char tmpl[] = "/tmp/bounced-lookup-bench.XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::string db = dir + "/bounced.db";
  std::printf("building %s with %zu suppressed addresses...\n", db.c_str(), suppressed);
  std::fflush(stdout);
  if (!bounced::bench::MakeDatabase(db, suppressed)) return 1;

  bounced::bench::Daemon d;
  d.dir = dir;
  double startup = d.Start(db);
  if (startup < 0) {
    std::fprintf(stderr, "bounced did not start\n");
    return 1;
  }
  std::printf("bounced up in %.2f s, RSS %ld kB\n", startup, d.RssKb());

  // Asked addresses: even i suppressed, odd i not (an address never imported).
  auto addr = [&](size_t i) {
    return i % 2 == 0 ? Address((i * 7919) % suppressed)
                      : "nobody" + std::to_string(i) + "@example.net";
  };
  auto netstring = [](const std::string& s) { return std::to_string(s.size()) + ":" + s + ","; };
  auto socketmap_req = [&](size_t i) { return netstring("recipient_access " + addr(i)); };

  std::vector<Row> rows;
  try {
    {
      EchoServer echo(dir + "/echo.sock");
      rows.push_back(Measure("echo (same bytes as socketmap)", dir + "/echo.sock", requests, ',',
                             socketmap_req));
    }
    rows.push_back(Measure("socketmap recipient_access", d.socketmap(), requests, ',',
                           socketmap_req, "OK 550 5.1.1"));
    rows.push_back(Measure(
        "query lookup (memory)", d.query(), requests, '\n',
        [&](size_t i) { return "{\"cmd\":\"lookup\",\"address\":\"" + addr(i) + "\"}\n"; },
        "\"suppressed\":true"));
    rows.push_back(Measure(
        "query status (SQLite)", d.query(), requests / 4, '\n',
        [&](size_t i) { return "{\"cmd\":\"status\",\"address\":\"" + addr(i) + "\"}\n"; },
        "\"suppressed\":true"));
  } catch (const std::runtime_error&) {
    return 1;  // the row said why; `d` stops bounced on the way out
  }
  {
    std::string health;
    int fd = Connect(d.query());
    RoundTrip(fd, "{\"cmd\":\"health\"}\n", '\n', &health);
    ::close(fd);
    size_t view_bytes = 0;
    if (auto p = health.find("\"view_memory_bytes\":"); p != std::string::npos) {
      view_bytes = std::strtoul(health.c_str() + p + 20, nullptr, 10);
    }
    long rss = d.RssKb();
    d.Stop();

    std::printf("\n%zu suppressed, %zu requests per row (status: %zu), one connection each\n",
                suppressed, requests, requests / 4);
    std::printf("%-34s %12s %10s %10s\n", "", "req/s", "mean us", "vs echo");
    for (const Row& r : rows) {
      std::printf("%-34s %12.0f %10.2f %9.0f%%\n", r.name, r.per_second, r.mean_us,
                  100.0 * r.per_second / rows[0].per_second);
    }
    std::printf(
        "\nmemory: suppression view %.1f MB = %.0f bytes/address; bounced RSS %.1f MB = "
        "%.0f bytes/address (whole process)\n",
        view_bytes / 1e6, static_cast<double>(view_bytes) / static_cast<double>(suppressed),
        rss / 1e3, rss * 1024.0 / static_cast<double>(suppressed));
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return 0;
  }
}
