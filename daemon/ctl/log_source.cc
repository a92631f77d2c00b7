// log_source.cc: see log_source.h.
#include "daemon/ctl/log_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <utility>

namespace bounced::ctl {

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
    const bool is_stdin = name_ == "-";
    if (is_stdin) name_ = "stdin";
    const int fd = is_stdin ? STDIN_FILENO : ::open(name_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      Fail("cannot open " + name_ + ": " + std::strerror(errno));
      continue;
    }
    if (!is_stdin) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    // Stdin redirected from a file is read like one; from a pipe, its first bytes are checked.
    bool seekable = true;
    const char* tool = DecompressorForFile(fd, &seekable);
    if (*tool == '\0') {
      fd_ = fd;
      check_first_ = !seekable;
      return true;
    }
    std::string error;
    const bool started = StartDecompressor(tool, fd, &decompressor_, &error);
    if (!is_stdin) ::close(fd);
    if (!started) {
      Fail("cannot read " + name_ + ": " + error);
      continue;
    }
    fd_ = decompressor_.out;
    tool_ = tool;
    return true;
  }
  return false;
}

void LogSource::Close(bool read_to_end) {
  if (fd_ < 0) return;
  if (!tool_.empty()) {
    // Its output is fd_: closed there. Stopped early, it may have died of the closed pipe.
    const std::string failure = FinishDecompressor(tool_.c_str(), &decompressor_, read_to_end);
    if (!failure.empty())
      Fail("cannot read " + name_ + ": " + failure + "; its lines up to there were read");
    tool_.clear();
  } else if (fd_ != STDIN_FILENO) {
    ::close(fd_);
  }
  fd_ = -1;
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
    if (check_first_) {
      check_first_ = false;
      if (std::string refused = CompressedPipe(name_, buf, static_cast<size_t>(got));
          !refused.empty()) {
        Fail(refused);
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
