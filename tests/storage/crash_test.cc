// crash_test.cc: kill -9 a process that is ingesting, resume from the stored position, and
// check that every event is stored exactly once (events and position commit together).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/storage/test_util.h"

namespace bounced {
namespace {

using testing::Scalar;

constexpr uint64_t kTotal = 20000;
constexpr uint64_t kPerBatch = 50;
constexpr const char* kInput = "log:/test/mail.log";

// The "log": event number i is a deterministic function of i.
Event EventAt(uint64_t i) {
  Event e = testing::MakeEvent("r" + std::to_string(i % 997) + "@example.com",
                               i % 3 ? Category::kDelivered : Category::kRateLimited,
                               i % 3 ? "sent" : "deferred", testing::kT0 + static_cast<int64_t>(i));
  e.source_ref = "off=" + std::to_string(i);
  return e;
}

// Child: resumes from the stored position and ingests until kTotal, writing a byte to `progress`
// after each commit; never returns.
[[noreturn]] void Ingest(const std::string& path, int progress) {
  StoreOptions o;
  o.path = path;
  auto store = Store::Open(o);
  if (!store.ok()) _exit(3);
  auto pos = (*store)->LoadPosition(kInput);
  if (!pos.ok()) _exit(4);
  uint64_t next = pos->has_value() ? (*pos)->offset : 0;
  while (next < kTotal) {
    Batch b;
    uint64_t end = std::min(kTotal, next + kPerBatch);
    for (uint64_t i = next; i < end; ++i) b.events.push_back(EventAt(i));
    b.position = InputPosition{kInput, 1, end, ""};
    // Several batches in flight at once, as a real input does.
    (*store)->Submit(std::move(b));
    next = end;
    if (next % (4 * kPerBatch) == 0) {
      if (!(*store)->Flush().ok()) _exit(5);
      char c = 1;
      if (write(progress, &c, 1) != 1) _exit(6);
    }
  }
  if (!(*store)->Flush().ok()) _exit(5);
  _exit(0);
}

TEST(CrashTest, KillNineMidIngestLosesNothingAndDuplicatesNothing) {
  testing::TempDir dir;
  std::string path = dir.File("crash.db");
  for (int round = 0; round < 4; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      Ingest(path, fds[1]);
    }
    close(fds[1]);
    // Let it commit a few batches (different amounts each round), then kill it mid-stream.
    char buf[1];
    for (int i = 0; i < 3 + round * 7; ++i) {
      if (read(fds[0], buf, 1) != 1) break;
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    close(fds[0]);
    // Whatever was committed, the position matches the events exactly.
    int64_t events = Scalar(path, "SELECT count(*) FROM events");
    int64_t offset = Scalar(path, "SELECT offset FROM input_positions");
    EXPECT_EQ(events, offset) << "round " << round;
  }
  // Finish the input in one last, uninterrupted run.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) Ingest(path, open("/dev/null", O_WRONLY));
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(Scalar(path, "SELECT count(*) FROM events"), static_cast<int64_t>(kTotal));
  EXPECT_EQ(Scalar(path, "SELECT count(DISTINCT source_ref) FROM events"),
            static_cast<int64_t>(kTotal));
  EXPECT_EQ(Scalar(path, "SELECT sum(count) FROM daily_counters"), static_cast<int64_t>(kTotal));
  EXPECT_EQ(Scalar(path, "SELECT sum(events) FROM recipient_state"), static_cast<int64_t>(kTotal));
}

}  // namespace
}  // namespace bounced
