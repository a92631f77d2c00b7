// stream_server_test.cc: the socket servers' accept loop on the real bounced process (temp
// paths, real sockets): at the descriptor limit (RLIMIT_NOFILE lowered with prlimit to what the
// daemon already holds) a waiting client neither spins a core nor floods the log with accept
// warnings, connections already open are still answered, and the waiting client is served
// once descriptors are free again.
#include <sys/resource.h>

#include <algorithm>

#include "tests/daemon/daemon_harness.h"

namespace bounced::testing {
namespace {

size_t OpenDescriptors(pid_t pid) {
  std::error_code ec;
  auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
  return ec ? 0 : static_cast<size_t>(std::distance(it, fs::directory_iterator()));
}

// User plus system CPU time of `pid` so far, in seconds.
double CpuSeconds(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  // Fields after the command name (which is in parentheses and may hold spaces): state is
  // field 3, utime and stime are fields 14 and 15.
  std::istringstream in(stat.substr(stat.rfind(')') + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string LookupRequest(const std::string& address) {
  return json{{"cmd", "lookup"}, {"address", address}}.dump() + "\n";
}

bool RepliedLine(int fd) {
  std::string reply =
      RecvUntil(fd, [](const std::string& s) { return !s.empty() && s.back() == '\n'; });
  return !reply.empty() && json::parse(reply).value("ok", false);
}

TEST(StreamServer, AtTheDescriptorLimitAcceptWaitsInsteadOfSpinningAndResumes) {
  TempDir dir;
  BouncedProcess d(dir);
  AppendFile(d.log(), "");  // the input holds its file already: nothing else needs a descriptor
  d.Start();
  int open = ConnectUnix(d.query_socket());  // accepted before the limit
  ASSERT_GE(open, 0);
  ASSERT_TRUE(SendAll(open, LookupRequest("a@example.com")));
  ASSERT_TRUE(RepliedLine(open));

  // Whatever the daemon holds now is all it may hold: the next accept fails with EMFILE.
  rlimit before{};
  ASSERT_EQ(::prlimit(d.pid(), RLIMIT_NOFILE, nullptr, &before), 0);
  rlimit at_limit = before;
  at_limit.rlim_cur = OpenDescriptors(d.pid());
  ASSERT_GT(at_limit.rlim_cur, 0u);
  ASSERT_EQ(::prlimit(d.pid(), RLIMIT_NOFILE, &at_limit, nullptr), 0);
  const double cpu_before = CpuSeconds(d.pid());
  const auto wall_before = std::chrono::steady_clock::now();

  // Clients left waiting in the listen queue (connect works, accept cannot). Several, in case
  // the daemon had a descriptor open only for a moment when they were counted.
  std::vector<int> waiting;
  for (int i = 0; i < 4; ++i) {
    waiting.push_back(ConnectUnix(d.query_socket()));
    ASSERT_GE(waiting.back(), 0);
    ASSERT_TRUE(SendAll(waiting.back(), LookupRequest("b@example.com")));
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));

  // The open connection is still answered, the daemon hardly used the CPU meanwhile and said
  // so once in its log, not once per attempt.
  ASSERT_TRUE(SendAll(open, LookupRequest("c@example.com")));
  EXPECT_TRUE(RepliedLine(open));
  const double cpu = CpuSeconds(d.pid()) - cpu_before;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
  EXPECT_LT(cpu, wall / 4) << "cpu " << cpu << " s in " << wall << " s";
  std::string log = ReadFile(d.stderr_path());
  EXPECT_GE(Count(log, "query socket: accept failed: Too many open files"), 1u) << log;
  EXPECT_LE(Count(log, "accept failed"), 2u) << log.substr(0, 4000);

  // Descriptors free again: the waiting clients are accepted and answered.
  ASSERT_EQ(::prlimit(d.pid(), RLIMIT_NOFILE, &before, nullptr), 0);
  for (int fd : waiting) {
    EXPECT_TRUE(RepliedLine(fd));
    ::close(fd);
  }
  EXPECT_NE(ReadFile(d.stderr_path()).find("query socket: accepting again"), std::string::npos);
  ::close(open);
  EXPECT_TRUE(d.Query({{"cmd", "health"}})["ok"]);
  EXPECT_EQ(d.Stop(), 0);
}

}  // namespace
}  // namespace bounced::testing
