// log_follower_test.cc: LogFollower on real files: exact positions, partial lines, both kinds of
// rotation (the renamed file read on while its writer still writes it, copytruncate's copy read
// first), resume after a restart (after two rotations, from a dated or copied file, a file
// replaced under its inode), a missing file, "\r\n" ends, and lines longer than the cap.
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

// Tests use no rotation grace unless they are about it: a renamed file is given up at its end.
LogFollower Make(const std::string& path, LogPosition start, Collected& c, size_t max = 1024,
                 int64_t committed_at = 0,
                 std::chrono::milliseconds grace = std::chrono::milliseconds(0)) {
  return LogFollower({path, max, committed_at, grace}, start,
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

// (inode, offset) of a position, without its fingerprint.
std::pair<uint64_t, uint64_t> At(const LogPosition& p) { return {p.inode, p.offset}; }
std::pair<uint64_t, uint64_t> At(const std::string& path, uint64_t offset) {
  return {Inode(path), offset};
}

// Rewrites `path` in place (same inode): truncate, then write `text`.
void Rewrite(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// Polls until `n` lines came (or the wait limit).
bool PollUntilLines(LogFollower& f, const Collected& c, size_t n) {
  return testing::WaitUntil([&] {
    f.Poll();
    return c.lines.size() >= n;
  });
}

using Lines = std::vector<std::string>;

TEST(LogFollower, HandsOutCompleteLinesWithThePositionAfterEach) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "one\ntwo\nthr");
  Collected c;
  LogFollower f = Make(log, {}, c);
  Drain(f);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(At(c.last), At(log, 8));
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
  EXPECT_EQ(At(c.last), At(log, 2));
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

// Down across two rotations: the stored file went on to mail.log.2.gz (compressed: the follower
// does not read it), and mail.log.1, written after the position was committed, is read whole
// before mail.log. The stored file's rest is not read (said so in the log, and counted).
TEST(LogFollower, ReadsTheNextRotatedFileWholeAfterTwoRotations) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "a\nb\n");
  LogPosition stored{Inode(log), 2};  // "a" committed
  const time_t committed_at = 1790000000;
  SetMtime(log, committed_at - 5);
  std::filesystem::rename(log, log + ".2.gz");  // as named by logrotate's compress
  AppendFile(log + ".1", "c\nd-without-newline");
  SetMtime(log + ".1", committed_at + 3600);
  AppendFile(log, "e\n");
  Collected c;
  LogFollower f = Make(log, stored, c, 1024, committed_at);
  Drain(f);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"c", "d-without-newline", "e"}));
  EXPECT_EQ(At(c.last), At(log, 2));
  EXPECT_EQ(f.stats().rotations, 1u);
  EXPECT_EQ(f.stats().unread_rotated, 1u);
}

// The same with the stored file still uncompressed (delaycompress): its rest is read first, then
// the rotated file after it, then the log.
TEST(LogFollower, FinishesTheStoredFileTwoRotationsBackThenTheNewerOnes) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "a\n");
  Collected before;
  {
    LogFollower f = Make(log, {}, before);
    Drain(f);
  }
  AppendFile(log, "b\n");
  std::filesystem::rename(log, log + ".2");
  AppendFile(log + ".1", "c\n");
  AppendFile(log, "d\n");
  Collected c;
  LogFollower f = Make(log, before.last, c, 1024, 1790000000);
  Drain(f);
  EXPECT_EQ(c.lines, (Lines{"b", "c", "d"}));
  EXPECT_EQ(f.stats().unread_rotated, 0u);
}

// logrotate's dateext: the stored file is found under its dated name (only path.1 was looked at).
TEST(LogFollower, FinishesTheStoredFileUnderADatedName) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "a\n");
  Collected before;
  {
    LogFollower f = Make(log, {}, before);
    Drain(f);
  }
  AppendFile(log, "b\n");
  std::filesystem::rename(log, log + "-20261201");
  AppendFile(log + "-20261124", "older\n");  // read before: left alone
  SetMtime(log + "-20261124", 1790000000 - 86400);
  AppendFile(log, "c\n");
  Collected c;
  LogFollower f = Make(log, before.last, c, 1024, 1790000000);
  Drain(f);
  EXPECT_EQ(c.lines, (Lines{"b", "c"}));
}

// The writer (syslog) keeps writing the renamed file until logrotate's postrotate makes it
// reopen its log: those lines are read, in order, before the new file's, and a line it was in
// the middle of is passed on whole.
TEST(LogFollower, ReadsTheRenamedFileOnWhileItsWriterStillWritesIt) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "r1\nr2\nr3\nr4-");
  Collected c;
  LogFollower f = Make(log, {}, c, 1024, 0, std::chrono::seconds(5));
  Drain(f);
  std::filesystem::rename(log, log + ".1");
  AppendFile(log, "");
  Drain(f);
  ASSERT_EQ(f.stats().rotations, 1u);  // the new file is there, and seen
  AppendFile(log + ".1", "half\nr5\n");
  AppendFile(log, "r6\n");
  AppendFile(log + ".1", "r5b\n");
  ASSERT_TRUE(PollUntilLines(f, c, 7)) << c.lines.size();
  EXPECT_EQ(c.lines, (Lines{"r1", "r2", "r3", "r4-half", "r5", "r5b", "r6"}));
  EXPECT_EQ(At(c.last), At(log, 3));
}

// While the renamed file is still read, positions stay in it: a restart from any of them reads
// its rest (found by its inode under the rotated name), then the new file, nothing twice.
TEST(LogFollower, PositionsStayInTheRenamedFileUntilItIsGivenUp) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "r1\n");
  Collected c;
  LogFollower f = Make(log, {}, c, 1024, 0, std::chrono::seconds(60));
  Drain(f);
  std::filesystem::rename(log, log + ".1");
  AppendFile(log, "r3\n");
  Drain(f);
  AppendFile(log + ".1", "r2\nlast-without-newline");
  Drain(f);
  EXPECT_EQ(c.lines, (Lines{"r1", "r2"}));  // within the grace: the new file waits
  EXPECT_EQ(At(c.last), At(log + ".1", 6));
  Collected after;  // a restart (kill -9) now
  LogFollower g = Make(log, c.last, after);
  Drain(g);
  EXPECT_EQ(after.lines, (Lines{"last-without-newline", "r3"}));
}

// A file with the stored inode but other bytes (a new file that got a deleted file's inode, or
// the log emptied and written again while bounced was down) is read from its start.
TEST(LogFollower, ReadsAFileReplacedUnderTheStoredInodeFromItsStart) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "Nov 29 17:09:54 old line one\nNov 29 17:09:55 old line two\n");
  Collected before;
  {
    LogFollower f = Make(log, {}, before);
    Drain(f);
  }
  const uint64_t inode = Inode(log);
  Rewrite(log, "Dec  1 00:00:01 new line one, longer\nDec  1 00:00:02 new line two, longer\n");
  ASSERT_EQ(Inode(log), inode);
  Collected c;
  LogFollower f = Make(log, before.last, c);
  Drain(f);
  EXPECT_EQ(c.lines, (Lines{"Dec  1 00:00:01 new line one, longer",
                            "Dec  1 00:00:02 new line two, longer"}));
  EXPECT_EQ(f.stats().truncations, 1u);
}

// A position stored by an older bounced has no fingerprint: its inode is trusted as before.
TEST(LogFollower, TrustsAStoredPositionWithoutFingerprint) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "one\ntwo\nthree\n");
  Collected c;
  LogFollower f = Make(log, {Inode(log), 4, 0}, c);
  Drain(f);
  EXPECT_EQ(c.lines, (Lines{"two", "three"}));
  EXPECT_EQ(FingerprintFromText(FingerprintText(c.last.fingerprint)), c.last.fingerprint);
  EXPECT_NE(c.last.fingerprint, 0u);
  EXPECT_EQ(FingerprintText(0), "");
  EXPECT_EQ(FingerprintFromText("journal-cursor"), 0u);
}

// copytruncate right after the writer added lines, before the follower saw them: they are read
// from the copy, then the emptied file from its start.
TEST(LogFollower, ReadsCopytruncatesCopyFromWhereItWasFirst) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "r1\nr2\nr3\n");
  Collected c;
  LogFollower f = Make(log, {}, c);
  Drain(f);
  AppendFile(log, "r4\nr5-");
  Drain(f);
  AppendFile(log, "half\nr6\n");
  std::filesystem::copy_file(log, log + ".1");
  std::filesystem::resize_file(log, 0);
  AppendFile(log, "r7\n");
  Drain(f);
  EXPECT_EQ(c.lines, (Lines{"r1", "r2", "r3", "r4", "r5-half", "r6", "r7"}));
  EXPECT_EQ(At(c.last), At(log, 3));
  EXPECT_EQ(f.stats().truncations, 1u);
}

// The same while bounced was down, with the emptied log written past the stored offset again.
TEST(LogFollower, ReadsCopytruncatesCopyFirstAfterARestart) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "Nov 29 17:09:54 r1\nNov 29 17:09:54 r2\n");
  Collected before;
  {
    LogFollower f = Make(log, {}, before);
    Drain(f);
  }
  AppendFile(log, "Nov 29 17:09:55 r3\n");
  std::filesystem::copy_file(log, log + ".1");
  std::filesystem::resize_file(log, 0);
  AppendFile(log, "Nov 29 17:09:56 r4\nNov 29 17:09:56 r5\nNov 29 17:09:56 r6\n");
  Collected c;
  LogFollower f = Make(log, before.last, c, 1024, 1790000000);
  Drain(f);
  EXPECT_EQ(c.lines, (Lines{"Nov 29 17:09:55 r3", "Nov 29 17:09:56 r4", "Nov 29 17:09:56 r5",
                            "Nov 29 17:09:56 r6"}));
}

// A copy compressed at once cannot be read from an offset: what it alone holds is named in a
// warning and counted; the log is read from its start.
TEST(LogFollower, CountsWhatACompressedCopyAloneHolds) {
  TempDir dir;
  std::string log = dir / "mail.log";
  AppendFile(log, "r1\n");
  Collected c;
  LogFollower f = Make(log, {}, c);
  Drain(f);
  AppendFile(log, "r2\n");
  AppendFile(log + ".1.gz", "(compressed bytes)");
  std::filesystem::resize_file(log, 0);
  AppendFile(log, "r3\n");
  Drain(f);
  EXPECT_EQ(c.lines, (Lines{"r1", "r3"}));
  EXPECT_EQ(f.stats().unread_rotated, 1u);
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
  EXPECT_EQ(c.lines, (Lines{"one", "two\r", "three"}));
  EXPECT_EQ(At(c.last), At(log, 18));
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

}  // namespace
}  // namespace bounced
