// log_follower_test.cc: LogFollower on real files: exact positions, partial lines, both kinds of
// rotation, resume after a restart (and after two rotations), a missing file, and lines longer
// than the cap.
#include "daemon/log_follower.h"

#include <fcntl.h>
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

LogFollower Make(const std::string& path, LogPosition start, Collected& c, size_t max = 1024,
                 int64_t committed_at = 0) {
  return LogFollower({path, max, committed_at}, start,
                     [&c](std::string_view line, const LogPosition& after) {
                       c.lines.emplace_back(line);
                       c.last = after;
                     });
}

void SetMtime(const std::string& path, time_t when) {
  struct timespec times[2] = {{when, 0}, {when, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
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

// Down across two rotations: the stored file went on to mail.log.2 (then compressed), and
// mail.log.1, written after the position was committed, is read whole before mail.log. The
// stored file's rest is not read (and said so in the log).
TEST(LogFollower, ReadsTheNextRotatedFileWholeAfterTwoRotations) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "a\nb\n");
  LogPosition stored{Inode(log), 2};  // "a" committed
  const time_t committed_at = 1790000000;
  SetMtime(log, committed_at - 5);
  std::filesystem::rename(log, log + ".2");  // and logrotate compresses it: gone for us
  AppendFile(log + ".1", "c\nd-without-newline");
  SetMtime(log + ".1", committed_at + 3600);
  AppendFile(log, "e\n");
  Collected c;
  LogFollower f = Make(log, stored, c, 1024, committed_at);
  Drain(f);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"c", "d-without-newline", "e"}));
  EXPECT_EQ(c.last, (LogPosition{Inode(log), 2}));
  EXPECT_EQ(f.stats().rotations, 1u);
}

// A mail.log.1 last written before the stored position was committed was read before (the
// stored file came after it and went away some other way): it is not read again, nor is it
// without a commit time.
TEST(LogFollower, LeavesAnOlderRotatedFileAlone) {
  for (int64_t committed_at : {int64_t{1790000000}, int64_t{0}}) {
    TempDir dir;
    std::string log = dir / "mail.log";
    AppendFile(log + ".1", "old\n");
    SetMtime(log + ".1", 1790000000 - 86400);
    AppendFile(log, "a\n");
    LogPosition stored{Inode(log), 2};
    std::filesystem::rename(log, dir / "moved-away");  // kept, so its inode is not reused
    AppendFile(log, "new\n");
    Collected c;
    LogFollower f = Make(log, stored, c, 1024, committed_at);
    Drain(f);
    EXPECT_EQ(c.lines, std::vector<std::string>{"new"}) << committed_at;
  }
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

// "\r\n" line ends lose their "\r", as in parse-log.
TEST(LogFollower, StripsTheCarriageReturnOfCrlfLineEnds) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "one\r\ntwo\r\r\nthree\r");
  Collected c;
  LogFollower f = Make(log, {}, c);
  Drain(f);
  AppendFile(log, "\n");
  Drain(f);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"one", "two\r", "three"}));
  EXPECT_EQ(c.last.offset, 18u);
}

}  // namespace
}  // namespace bounced
