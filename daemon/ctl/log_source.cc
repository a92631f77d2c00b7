// log_source.cc: see log_source.h.
#include "daemon/ctl/log_source.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <utility>

extern char** environ;

namespace bounced::ctl {

const char* DecompressorFor(const char* head, size_t n) {
  auto starts = [&](const char* magic, size_t m) {
    return n >= m && std::memcmp(head, magic, m) == 0;
  };
  if (starts("\x1f\x8b", 2)) return "gzip";
  if (starts("BZh", 3)) return "bzip2";
  if (starts("\xfd"
             "7zXZ\0",
             6))
    return "xz";
  if (starts("\x28\xb5\x2f\xfd", 4)) return "zstd";
  return "";
}

LogSource::LogSource(std::vector<std::string> files) : files_(std::move(files)) {
  if (files_.empty()) files_.push_back("-");
}

LogSource::~LogSource() { Close(false); }

void LogSource::Fail(const std::string& what) {
  std::cerr << "bouncectl parse-log: " << what << '\n';
  failed_ = true;
}

bool LogSource::OpenNext() {
  while (next_ < files_.size()) {
    name_ = files_[next_++];
    if (name_ == "-") {
      fd_ = STDIN_FILENO;
      name_ = "stdin";
      stdin_first_ = true;
      return true;
    }
    const int fd = ::open(name_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      Fail("cannot open " + name_ + ": " + std::strerror(errno));
      continue;
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    // Told by the first bytes, read without moving the offset (a pipe or FIFO cannot be: its
    // bytes are read as they are).
    char head[8];
    const ssize_t got = ::pread(fd, head, sizeof head, 0);
    const char* tool = got > 0 ? DecompressorFor(head, static_cast<size_t>(got)) : "";
    if (*tool == '\0') {
      fd_ = fd;
      return true;
    }
    // The decompressor reads the file on its stdin and writes the log to a pipe.
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) {
      Fail("cannot read " + name_ + ": " + std::strerror(errno));
      ::close(fd);
      continue;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fd, STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    char arg0[16], arg1[] = "-dc";
    std::strncpy(arg0, tool, sizeof arg0 - 1);
    arg0[sizeof arg0 - 1] = '\0';
    char* argv[] = {arg0, arg1, nullptr};
    pid_t pid = -1;
    const int err = posix_spawnp(&pid, tool, &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    ::close(fd);
    if (err != 0) {
      Fail("cannot read " + name_ + ": it is " + tool + "-compressed and '" + tool +
           " -dc' cannot be run: " + std::strerror(err));
      ::close(out[0]);
      continue;
    }
    fd_ = out[0];
    decompressor_ = pid;
    tool_ = tool;
    return true;
  }
  return false;
}

void LogSource::Close(bool read_to_end) {
  if (fd_ < 0) return;
  if (fd_ != STDIN_FILENO) ::close(fd_);
  fd_ = -1;
  if (decompressor_ > 0) {
    int status = 0;
    while (::waitpid(decompressor_, &status, 0) < 0 && errno == EINTR) {
    }
    // Stopped early, it may have died of the closed pipe: no fault of the file's.
    if (read_to_end && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      Fail("cannot read " + name_ + ": '" + tool_ + " -dc' failed (" +
           (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                              : "signal " + std::to_string(WTERMSIG(status))) +
           "); its lines up to there were read");
    }
    decompressor_ = -1;
    tool_.clear();
  }
}

size_t LogSource::Read(char* buf, size_t n) {
  for (;;) {
    if (fd_ < 0) {
      if (next_ >= files_.size()) return 0;
      const bool between = any_;
      if (!OpenNext()) return 0;
      // The previous file left its last line open: end it, so that lines never join.
      if (between && last_ != '\n') {
        last_ = '\n';
        buf[0] = '\n';
        return 1;
      }
    }
    const ssize_t got = ::read(fd_, buf, n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      Fail("cannot read " + name_ + ": " + std::strerror(errno));
      Close(false);
      continue;
    }
    if (got == 0) {
      Close(true);
      continue;
    }
    if (stdin_first_) {
      stdin_first_ = false;
      const char* tool = DecompressorFor(buf, static_cast<size_t>(got));
      if (*tool != '\0') {
        Fail(std::string("stdin is ") + tool + "-compressed: give the file by name, or pipe it " +
             "through '" + tool + " -dc'");
        Close(false);
        continue;
      }
    }
    any_ = true;
    last_ = buf[got - 1];
    return static_cast<size_t>(got);
  }
}

}  // namespace bounced::ctl
