// file_open_test.cc: common/file_open.h, how bouncectl opens the files it is given: the same
// files and the same errors as open(2) of the whole path, whatever the order of folders.
#include "common/file_open.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "tests/daemon/daemon_harness.h"

namespace bounced::testing {
namespace {

// The first bytes of the file behind `fd` (which it closes), or "" when fd is -1.
std::string Contents(int fd) {
  if (fd < 0) return "";
  char buf[64];
  ssize_t n = ::read(fd, buf, sizeof(buf));
  ::close(fd);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

TEST(FolderOpener, OpensFilesInOneFolderOrManyLikeOpen) {
  TempDir dir;
  std::filesystem::create_directory(dir / "a");
  std::filesystem::create_directory(dir / "b");
  AppendFile(dir / "a/x.eml", "a-x");
  AppendFile(dir / "a/y.eml", "a-y");
  AppendFile(dir / "b/x.eml", "b-x");
  FolderOpener opener;
  // Same folder twice, another folder, back to the first: each name resolves in its own folder.
  EXPECT_EQ(Contents(opener.Open(dir / "a/x.eml")), "a-x");
  EXPECT_EQ(Contents(opener.Open(dir / "a/y.eml")), "a-y");
  EXPECT_EQ(Contents(opener.Open(dir / "b/x.eml")), "b-x");
  EXPECT_EQ(Contents(opener.Open(dir / "a/x.eml")), "a-x");
  // A name with no folder is relative to the working directory; "/" is a folder too.
  std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir / "b");
  EXPECT_EQ(Contents(opener.Open("x.eml")), "b-x");
  EXPECT_EQ(Contents(opener.Open("../a/y.eml")), "a-y");
  std::filesystem::current_path(cwd);
  int root = opener.Open("/etc");
  EXPECT_GE(root, 0);
  if (root >= 0) ::close(root);
}

TEST(FolderOpener, ReportsTheErrorsOpenReports) {
  TempDir dir;
  AppendFile(dir / "x.eml", "x");
  FolderOpener opener;
  errno = 0;
  EXPECT_EQ(opener.Open(dir / "missing.eml"), -1);
  EXPECT_EQ(errno, ENOENT);
  // A folder that does not exist: the error is the file's, as open(2) gives it.
  errno = 0;
  EXPECT_EQ(opener.Open(dir / "no-such-folder/x.eml"), -1);
  EXPECT_EQ(errno, ENOENT);
  // A file where a folder should be.
  errno = 0;
  EXPECT_EQ(opener.Open(dir / "x.eml/y.eml"), -1);
  EXPECT_EQ(errno, ENOTDIR);
  // A folder named with a trailing slash opens as open(2) opens it.
  int folder = opener.Open(dir.path() + "/");
  EXPECT_GE(folder, 0);
  if (folder >= 0) ::close(folder);
  // And a good file after all of these.
  EXPECT_EQ(Contents(opener.Open(dir / "x.eml")), "x");
}

// A folder that loses its search permission between two files: the second open fails as
// open(2) would (the kernel checks the folder at each openat). Root passes every permission
// check, so as root the opens run in a child that has become `nobody`.
TEST(FolderOpener, ChecksTheFolderAtEveryOpen) {
  TempDir dir;
  const std::string locked = dir / "locked";
  std::filesystem::create_directory(locked);
  AppendFile(locked + "/x.eml", "x");
  // 0: as expected; 1: the first open failed; 2: the second did not fail with EACCES.
  auto check = [&locked] {
    FolderOpener opener;
    if (Contents(opener.Open(locked + "/x.eml")) != "x") return 1;
    ::chmod(locked.c_str(), 0);
    errno = 0;
    int fd = opener.Open(locked + "/x.eml");
    int err = errno;
    ::chmod(locked.c_str(), 0755);
    if (fd >= 0) ::close(fd);
    return fd == -1 && err == EACCES ? 0 : 2;
  };
  if (::geteuid() != 0) {
    EXPECT_EQ(check(), 0);
    return;
  }
  constexpr uid_t kNobody = 65534;
  ASSERT_EQ(::chown(locked.c_str(), kNobody, kNobody), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(3);
    ::_exit(check());
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace bounced::testing
