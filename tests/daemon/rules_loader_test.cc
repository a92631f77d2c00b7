// rules_loader_test.cc: reading rules files that change while they are read (an in-place edit
// caught by a SIGHUP). The change is made by a hook at an exact point of the read, on the real
// file, so the tests do not depend on a race.
#include "daemon/rules_loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace bounced {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/bounced-rules-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string Rule(const std::string& id, const std::string& pattern) {
  return "[[rule]]\nid = \"" + id + "\"\ncategory = \"user_unknown\"\npatterns = ['" + pattern +
         "']\n\n";
}

void Append(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::app | std::ios::binary) << text;
}

// An editor saving in place: the first rules are on disk when bounced reads, the last one is
// written during the read. The read is made again and gets the whole file.
TEST(RulesLoader, AFileAppendedToWhileReadIsReadAgainWhole) {
  TempDir dir;
  const std::string path = dir / "local.toml";
  std::ofstream(path) << Rule("first", "no such user here");
  int reads = 0;
  auto text = ReadRulesFile(path, [&](int attempt) {
    reads = attempt;
    if (attempt == 1) Append(path, Rule("second", "mailbox unavailable here"));
  });
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(*text, Rule("first", "no such user here") + Rule("second", "mailbox unavailable here"));
  RulesSource source;
  source.name = path;
  source.text = *text;
  auto rules = RuleSet::Compile({source});
  ASSERT_TRUE(rules.ok()) << rules.error();
  EXPECT_EQ((*rules)->rule_count(), 2u);
}

// A file that keeps changing is refused, naming it; LoadRules returns nothing, so a reload keeps
// the running rules (DaemonProcess.SighupWithBrokenRulesKeepsTheOldRules).
TEST(RulesLoader, AFileThatKeepsChangingIsRefusedWithItsName) {
  TempDir dir;
  const std::string path = dir / "local.toml";
  std::ofstream(path) << Rule("r0", "no such user 0");
  int reads = 0;
  auto text = ReadRulesFile(path, [&](int attempt) {
    reads = attempt;
    Append(path, Rule("r" + std::to_string(attempt), "no such user " + std::to_string(attempt)));
  });
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(reads, kRulesReadAttempts);
  EXPECT_EQ(text.error().rfind(path + ": changed while being read; try again", 0), 0u)
      << text.error();
}

// Rewritten in place with as many bytes: only the timestamps tell. The file's mtime is set an
// hour back first, so the rewrite's mtime differs whatever the clock's granularity.
TEST(RulesLoader, ASameSizeRewriteInPlaceIsNoticed) {
  TempDir dir;
  const std::string path = dir / "local.toml";
  const std::string old_text = Rule("old", "no such user aaaa");
  const std::string new_text = Rule("new", "no such user bbbb");
  ASSERT_EQ(old_text.size(), new_text.size());
  std::ofstream(path) << old_text;
  struct timespec times[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  int reads = 0;
  auto text = ReadRulesFile(path, [&](int attempt) {
    reads = attempt;
    if (attempt > 1) return;
    int fd = ::open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, new_text.data(), new_text.size(), 0),
              static_cast<ssize_t>(new_text.size()));
    ::close(fd);
  });
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(*text, new_text);
}

TEST(RulesLoader, AStableFileIsReadOnce) {
  TempDir dir;
  const std::string path = dir / "local.toml";
  std::ofstream(path) << Rule("only", "no such user");
  int reads = 0;
  auto text = ReadRulesFile(path, [&](int attempt) { reads = attempt; });
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(*text, Rule("only", "no such user"));
  auto missing = ReadRulesFile(dir / "missing.toml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().rfind(dir / "missing.toml" + ": cannot read rules file: ", 0), 0u)
      << missing.error();
}

// A FIFO (or any file that is not regular) cannot be read twice: it is read once, as before.
TEST(RulesLoader, AFifoIsReadOnceAsItComes) {
  TempDir dir;
  const std::string path = dir / "fifo.toml";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(path) << Rule("piped", "no such user"); });
  int reads = 0;
  auto text = ReadRulesFile(path, [&](int attempt) { reads = attempt; });
  writer.join();
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_EQ(reads, 0);
  EXPECT_EQ(*text, Rule("piped", "no such user"));
}

}  // namespace
}  // namespace bounced
