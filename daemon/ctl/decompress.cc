// decompress.cc: see decompress.h.
#include "daemon/ctl/decompress.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

std::string CompressedPipe(const std::string& name, const char* data, size_t n) {
  const char* tool = DecompressorFor(data, n);
  if (*tool == '\0') return {};
  return name + " is " + tool + "-compressed and a pipe, which cannot be read again from its " +
         "start: give the file by name, or pipe it through '" + tool + " -dc'";
}

const char* DecompressorForFile(int fd, bool* seekable) {
  char head[8];
  const ssize_t got = ::pread(fd, head, sizeof head, 0);
  *seekable = !(got < 0 && errno == ESPIPE);
  return got > 0 ? DecompressorFor(head, static_cast<size_t>(got)) : "";
}

bool StartDecompressor(const char* tool, int fd, Decompressor* d, std::string* error) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    *error = std::strerror(errno);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  std::string name = tool;
  char dc[] = "-dc";
  char* argv[] = {name.data(), dc, nullptr};
  pid_t pid = -1;
  const int err = posix_spawnp(&pid, tool, &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (err != 0) {
    ::close(out[0]);
    *error = std::string("it is ") + tool + "-compressed and '" + tool +
             " -dc' cannot be run: " + std::strerror(err);
    return false;
  }
  d->out = out[0];
  d->pid = pid;
  return true;
}

std::string FinishDecompressor(const char* tool, Decompressor* d, bool read_to_end) {
  if (d->out >= 0) ::close(d->out);
  d->out = -1;
  if (d->pid <= 0) return {};
  int status = 0;
  while (::waitpid(d->pid, &status, 0) < 0 && errno == EINTR) {
  }
  d->pid = -1;
  if (!read_to_end || (WIFEXITED(status) && WEXITSTATUS(status) == 0)) return {};
  return std::string("'") + tool + " -dc' failed (" +
         (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                            : "signal " + std::to_string(WTERMSIG(status))) +
         ")";
}

DecompressedInput::DecompressedInput(const std::string& file, std::string* error)
    : name_(file == "-" ? "stdin" : file) {
  const bool is_stdin = file == "-";
  const int fd = is_stdin ? STDIN_FILENO : ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int saved = errno;
    *error = "cannot open " + name_ + ": " + std::strerror(saved);
    return;
  }
  if (!is_stdin) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  bool seekable = true;
  const char* tool = DecompressorForFile(fd, &seekable);
  pipe_ = !seekable;
  if (*tool == '\0') {
    fd_ = fd;
    return;
  }
  std::string why;
  const bool started = StartDecompressor(tool, fd, &d_, &why);
  if (!is_stdin) ::close(fd);
  if (!started) {
    *error = "cannot read " + name_ + ": " + why;
    return;
  }
  tool_ = tool;
  fd_ = d_.out;
}

std::string DecompressedInput::Refused(const char* data, size_t n) const {
  return pipe_ ? CompressedPipe(name_, data, n) : std::string();
}

std::string DecompressedInput::Finish(bool read_to_end) {
  std::string failure;
  if (*tool_ != '\0') {
    // Its output is fd_: closed there. Stopped early, it may have died of the closed pipe.
    failure = FinishDecompressor(tool_, &d_, read_to_end);
    tool_ = "";
  } else if (fd_ >= 0 && fd_ != STDIN_FILENO) {
    ::close(fd_);
  }
  fd_ = -1;
  return failure.empty() ? failure : "cannot read " + name_ + ": " + failure;
}

}  // namespace bounced::ctl
