// log_follower_test.cc: LogFollower on real files: exact positions, partial lines, both kinds of
// rotation, resume after a restart, a missing file, and lines longer than the cap.
#include "daemon/log_follower.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tests/daemon/daemon_harness.h"

namespace bounced {
namespace {

using testing::AppendFile;
using testing::TempDir;

struct Collected {
  std::vector<std::string> lines;
  LogPosition last;
};

LogFollower Make(const std::string& path, LogPosition start, Collected& c, size_t max = 1024) {
  return LogFollower({path, max}, start, [&c](std::string_view line, const LogPosition& after) {
    c.lines.emplace_back(line);
    c.last = after;
  });
}

void Drain(LogFollower& f) {
  while (f.Poll()) {
  }
}

uint64_t Inode(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_ino;
}

TEST(LogFollower, HandsOutCompleteLinesWithThePositionAfterEach) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "one\ntwo\nthr");
  Collected c;
  LogFollower f = Make(log, {}, c);
  Drain(f);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(c.last, (LogPosition{Inode(log), 8}));
  AppendFile(log, "ee\n");
  Drain(f);
  EXPECT_EQ(c.lines.back(), "three");
  EXPECT_EQ(c.last.offset, 14u);
}

TEST(LogFollower, ResumesFromAStoredPosition) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "one\ntwo\nthree\n");
  Collected c;
  LogFollower f = Make(log, {Inode(log), 4}, c);
  Drain(f);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"two", "three"}));
}

TEST(LogFollower, FollowsRenameRotationReadingTheOldFileToItsEnd) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "a\n");
  Collected c;
  LogFollower f = Make(log, {}, c);
  Drain(f);
  std::filesystem::rename(log, log + ".1");
  AppendFile(log + ".1", "b\nc-without-newline");
  AppendFile(log, "d\n");
  Drain(f);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"a", "b", "c-without-newline", "d"}));
  EXPECT_EQ(c.last, (LogPosition{Inode(log), 2}));
  EXPECT_EQ(f.stats().rotations, 1u);
}

TEST(LogFollower, FollowsCopytruncate) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "first line\nsecond line\n");
  Collected c;
  LogFollower f = Make(log, {}, c);
  Drain(f);
  std::filesystem::resize_file(log, 0);
  Drain(f);
  AppendFile(log, "x\n");
  Drain(f);
  EXPECT_EQ(c.lines.back(), "x");
  EXPECT_EQ(c.last.offset, 2u);
  EXPECT_EQ(f.stats().truncations, 1u);
}

TEST(LogFollower, FinishesTheRotatedFileAfterARestart) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "a\nb\n");
  LogPosition stored{Inode(log), 2};  // "a" was committed before the restart
  std::filesystem::rename(log, log + ".1");
  AppendFile(log, "c\n");
  Collected c;
  LogFollower f = Make(log, stored, c);
  Drain(f);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"b", "c"}));
}

TEST(LogFollower, WaitsForAMissingFileWithoutGivingUp) {
  TempDir dir;
  std::string log = dir / "mail.log";
  Collected c;
  LogFollower f = Make(log, {}, c);
  EXPECT_FALSE(f.Poll());
  EXPECT_NE(f.problem().find("cannot open"), std::string::npos);
  EXPECT_FALSE(f.Poll());
  EXPECT_EQ(f.stats().open_failures, 1u);  // logged once per incident
  AppendFile(log, "here\n");
  Drain(f);
  EXPECT_EQ(c.lines, std::vector<std::string>{"here"});
  EXPECT_EQ(f.problem(), "");
}

TEST(LogFollower, SkipsLinesLongerThanTheCapWithoutBufferingThem) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "short\n" + std::string(5000, 'x') + "\nafter\n" + std::string(3000, 'y'));
  Collected c;
  LogFollower f = Make(log, {}, c, 1024);
  Drain(f);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"short", "after"}));
  EXPECT_EQ(f.stats().skipped_too_long, 2u);
  AppendFile(log, "yyy\nend\n");  // the rest of the second long line, then a normal one
  Drain(f);
  EXPECT_EQ(c.lines.back(), "end");
  EXPECT_EQ(c.lines.size(), 3u);
}

}  // namespace
}  // namespace bounced
