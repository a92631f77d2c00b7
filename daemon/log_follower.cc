// log_follower.cc: tail -F with exact positions (see log_follower.h).
#include "daemon/log_follower.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "classifier/log_parser.h"
#include "common/read_buffer.h"

namespace bounced {
namespace {

constexpr size_t kReadChunkBytes = 256 * 1024;
// One Poll() reads at most this much so the caller can commit and look at its stop flag.
constexpr uint64_t kMaxBytesPerPoll = 16 * 1024 * 1024;

}  // namespace

LogFollower::LogFollower(Options options, LogPosition start, LineSink sink)
    : options_(std::move(options)), sink_(std::move(sink)), position_(start) {
  if (options_.path == "-") position_ = {};
}

LogFollower::~LogFollower() { CloseCurrent(); }

void LogFollower::CloseCurrent() {
  if (fd_ > 0) ::close(fd_);  // never close standard input (fd 0)
  fd_ = -1;
}

void LogFollower::SetProblem(const std::string& problem) {
  if (problem == problem_) return;
  if (problem.empty()) {
    spdlog::info("log input: reading {} again", options_.path);
  } else {
    ++stats_.open_failures;
    spdlog::warn("log input: {} (retrying until it works)", problem);
  }
  problem_ = problem;
}

void LogFollower::ReadRotatedFile(int fd, uint64_t inode, uint64_t offset) {
  ::lseek(fd, static_cast<off_t>(offset), SEEK_SET);
  partial_.clear();
  skipping_ = false;
  do {
    ReadAvailable(fd, inode, &offset, true);
  } while (!at_eof_);
  ++stats_.rotations;
}

bool LogFollower::Open() {
  if (options_.path == "-") {
    fd_ = 0;
    inode_ = 0;
    read_offset_ = 0;
    return true;
  }
  int fd = ::open(options_.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    SetProblem("cannot open " + options_.path + ": " + std::strerror(errno));
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    SetProblem("cannot stat " + options_.path + ": " + std::strerror(errno));
    ::close(fd);
    return false;
  }
  const uint64_t ino = st.st_ino;
  uint64_t offset = 0;
  if (position_.inode == ino) {
    offset = position_.offset;
    if (static_cast<uint64_t>(st.st_size) < offset) {
      spdlog::warn(
          "log input: {} is shorter ({} bytes) than the stored offset {}: it was "
          "truncated, reading it from the start",
          options_.path, st.st_size, offset);
      ++stats_.truncations;
      offset = 0;
    }
  } else if (position_.inode != 0) {
    // Rotated while we were not reading: finish the old file first if it is still next door.
    std::string rotated = options_.path + ".1";
    int old_fd = ::open(rotated.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat old_st {};
    const bool have_old = old_fd >= 0 && ::fstat(old_fd, &old_st) == 0;
    if (have_old && old_st.st_ino == position_.inode &&
        static_cast<uint64_t>(old_st.st_size) >= position_.offset) {
      spdlog::info("log input: {} was rotated; finishing {} from offset {} first", options_.path,
                   rotated, position_.offset);
      ReadRotatedFile(old_fd, position_.inode, position_.offset);
    } else if (have_old && old_st.st_ino != ino && options_.start_committed_at != 0 &&
               old_st.st_mtime >= options_.start_committed_at) {
      // Rotated more than once while we were not reading: the stored file has moved on (to
      // path.2, compressed, or away), but path.1 came after it and was written since the stored
      // position was committed, so none of it was read: read it whole first. (An older path.1,
      // last written before that, was read before: it is left alone, as below.)
      spdlog::warn(
          "log input: the stored position (inode {}, offset {}) is in neither {} nor {}: {} was "
          "rotated more than once while bounced was not reading it, and the rest of that file "
          "is not read; reading {} (written since) whole, then {}",
          position_.inode, position_.offset, options_.path, rotated, options_.path, rotated,
          options_.path);
      ReadRotatedFile(old_fd, old_st.st_ino, 0);
    } else {
      spdlog::warn(
          "log input: the stored position (inode {}, offset {}) is in neither {} nor "
          "{}; reading {} from its start",
          position_.inode, position_.offset, options_.path, rotated, options_.path);
    }
    if (old_fd >= 0) ::close(old_fd);
  }
  if (::lseek(fd, static_cast<off_t>(offset), SEEK_SET) < 0) {
    SetProblem("cannot seek in " + options_.path + ": " + std::strerror(errno));
    ::close(fd);
    return false;
  }
  fd_ = fd;
  inode_ = ino;
  read_offset_ = offset;
  partial_.clear();
  skipping_ = false;
  if (position_.inode != ino) position_ = {ino, offset};
  SetProblem("");
  spdlog::info("log input: following {} (inode {}) from offset {}", options_.path, ino, offset);
  return true;
}

void LogFollower::Consume(const char* data, size_t n, uint64_t inode, uint64_t start_offset) {
  size_t i = 0;
  while (i < n) {
    const char* nl = static_cast<const char*>(std::memchr(data + i, '\n', n - i));
    size_t end = nl != nullptr ? static_cast<size_t>(nl - data) : n;
    size_t seg = end - i;
    if (skipping_) {
      if (nl != nullptr) {
        skipping_ = false;
        position_ = {inode, start_offset + end + 1};
      }
    } else if (partial_.size() + seg > options_.max_line_bytes) {
      ++stats_.skipped_too_long;
      spdlog::warn(
          "log input: skipped a line longer than {} bytes at offset {} of {} ({} such "
          "lines so far)",
          options_.max_line_bytes, start_offset + i - partial_.size(), options_.path,
          stats_.skipped_too_long);
      partial_.clear();
      if (nl != nullptr) {
        position_ = {inode, start_offset + end + 1};
      } else {
        skipping_ = true;
      }
    } else if (nl != nullptr) {
      position_ = {inode, start_offset + end + 1};
      ++stats_.lines;
      if (partial_.empty()) {
        sink_(LogLineSplitter::Chomp(std::string_view(data + i, seg)), position_);
      } else {
        partial_.append(data + i, seg);
        sink_(LogLineSplitter::Chomp(partial_), position_);
        partial_.clear();
      }
    } else {
      partial_.append(data + i, seg);
    }
    i = nl != nullptr ? end + 1 : n;
  }
}

void LogFollower::EmitPartial(uint64_t inode, uint64_t offset) {
  if (skipping_) {
    skipping_ = false;
    position_ = {inode, offset};
    return;
  }
  if (partial_.empty()) return;
  position_ = {inode, offset};
  ++stats_.lines;
  sink_(LogLineSplitter::Chomp(partial_), position_);
  partial_.clear();
}

// Reads until end of file or the per-poll budget. Returns true when it read anything.
bool LogFollower::ReadAvailable(int fd, uint64_t inode, uint64_t* offset,
                                bool flush_partial_at_eof) {
  // Page-aligned, and each read lands at its file offset's place within a page, so the kernel's
  // copy out of the page cache runs page onto page (common/read_buffer.h).
  static thread_local PageBuffer buf(kReadChunkBytes + kPageBytes);
  const bool is_stdin = options_.path == "-";
  bool progress = false;
  uint64_t budget = kMaxBytesPerPoll;
  while (budget > 0) {
    if (is_stdin) {
      // A pipe's writer may stay silent for as long as it likes: never wait in read(), so what
      // came is committed and Stop() is seen.
      struct pollfd p {
        fd, POLLIN, 0
      };
      int ready = ::poll(&p, 1, 0);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        at_eof_ = true;  // as far as this poll goes
        return progress;
      }
    }
    char* at = buf.data() + ReadAlignment(*offset);
    ssize_t n = ::read(fd, at, kReadChunkBytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      SetProblem("read error on " + options_.path + ": " + std::strerror(errno));
      if (is_stdin) ended_ = true;  // cannot be opened again
      at_eof_ = true;               // as far as this poll goes
      return progress;
    }
    if (n == 0) {
      ended_ = true;
      if (flush_partial_at_eof) EmitPartial(inode, *offset);
      at_eof_ = true;
      return progress;
    }
    Consume(at, static_cast<size_t>(n), inode, *offset);
    *offset += static_cast<uint64_t>(n);
    stats_.bytes += static_cast<uint64_t>(n);
    budget -= std::min<uint64_t>(budget, static_cast<uint64_t>(n));
    progress = true;
  }
  at_eof_ = false;
  return progress;
}

bool LogFollower::CheckRotation() {
  struct stat st {};
  if (::stat(options_.path.c_str(), &st) != 0) {
    // Renamed away and the new file is not there yet: keep reading the old one meanwhile.
    return false;
  }
  if (static_cast<uint64_t>(st.st_ino) != inode_) {
    // The writer may have appended to the old file after our last read: drain it, then its
    // last line even without a newline, then switch.
    do {
      ReadAvailable(fd_, inode_, &read_offset_, true);
    } while (!at_eof_);
    spdlog::info("log input: {} was rotated (inode {} -> {}); old file read to its end at {}",
                 options_.path, inode_, st.st_ino, read_offset_);
    ++stats_.rotations;
    CloseCurrent();
    position_ = {static_cast<uint64_t>(st.st_ino), 0};
    Open();
    return true;
  }
  if (static_cast<uint64_t>(st.st_size) < read_offset_) {
    spdlog::info(
        "log input: {} shrank from {} to {} bytes (copytruncate); reading it from the "
        "start",
        options_.path, read_offset_, st.st_size);
    ++stats_.truncations;
    ::lseek(fd_, 0, SEEK_SET);
    read_offset_ = 0;
    partial_.clear();
    skipping_ = false;
    position_ = {inode_, 0};
    return true;
  }
  return false;
}

bool LogFollower::Poll() {
  if (finished_) return false;
  bool progress = false;
  if (fd_ < 0) {
    if (!Open()) return false;
    progress = true;
  }
  const bool is_stdin = options_.path == "-";
  progress |= ReadAvailable(fd_, inode_, &read_offset_, is_stdin);
  if (!at_eof_) return true;
  if (is_stdin) {
    if (ended_) finished_ = true;
    return progress;
  }
  return CheckRotation() || progress;
}

}  // namespace bounced
