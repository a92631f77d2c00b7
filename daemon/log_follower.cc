// log_follower.cc: tail -F with exact positions (see log_follower.h).
#include "daemon/log_follower.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <vector>

#include "classifier/log_parser.h"
#include "common/read_buffer.h"
#include "daemon/log_rotation.h"

namespace bounced {
namespace {

constexpr size_t kReadChunkBytes = 256 * 1024;
// One Poll() reads at most this much so the caller can commit and look at its stop flag.
constexpr uint64_t kMaxBytesPerPoll = 16 * 1024 * 1024;

// A fingerprint hashes the file's first and its last kFingerprintBytes before the offset: the
// last bytes alone are often the same in many places of a log (Postfix lines end alike), the
// first line's timestamp, pid and queue id tell one file from another.
constexpr size_t kFingerprintBytes = 64;
constexpr uint64_t kFnvBasis = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;
// 60 bits: 15 hex digits (FingerprintText).
constexpr uint64_t kFingerprintMask = (uint64_t{1} << 60) - 1;

// FNV-1a, 64 bits, continuing from `h`.
uint64_t Fnv(uint64_t h, const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= kFnvPrime;
  }
  return h;
}

uint64_t FinishFingerprint(uint64_t h) {
  h &= kFingerprintMask;
  return h == 0 ? 1 : h;  // 0 means "unknown"
}

bool PreadAll(int fd, char* buf, size_t n, uint64_t offset) {
  while (n > 0) {
    ssize_t got = ::pread(fd, buf, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    buf += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

// The file's first and last (before `offset`) min(offset, 64) bytes; false when it is shorter.
bool ReadAround(int fd, uint64_t offset, std::string* head, std::string* tail) {
  const size_t n = static_cast<size_t>(std::min<uint64_t>(offset, kFingerprintBytes));
  head->resize(n);
  tail->resize(n);
  return PreadAll(fd, head->data(), n, 0) && PreadAll(fd, tail->data(), n, offset - n);
}

// The fingerprint of the file open at `fd` at `offset` (see LogPosition); 0 when it is shorter.
uint64_t FileFingerprint(int fd, uint64_t offset) {
  std::string head, tail;
  if (!ReadAround(fd, offset, &head, &tail)) return 0;
  return FinishFingerprint(Fnv(Fnv(kFnvBasis, head.data(), head.size()), tail.data(), tail.size()));
}

// Whether the file open at `fd` (`size` bytes) holds what `p` was read from, up to its offset.
bool HoldsPosition(int fd, uint64_t size, const LogPosition& p) {
  if (size < p.offset) return false;
  return p.fingerprint == 0 || FileFingerprint(fd, p.offset) == p.fingerprint;
}

// A rotated file next to the log, opened (uncompressed ones) so that renames while it is read do
// not matter.
struct Candidate {
  RotatedFile file;
  int fd = -1;
  struct stat st {};
};

std::vector<Candidate> OpenRotated(const std::string& path, uint64_t skip_inode) {
  std::vector<Candidate> out;
  for (RotatedFile& f : RotatedFiles(path)) {
    Candidate c{std::move(f)};
    if (!c.file.rotation.compressed) {
      c.fd = ::open(c.file.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (c.fd >= 0 && (::fstat(c.fd, &c.st) != 0 || !S_ISREG(c.st.st_mode))) {
        ::close(c.fd);
        c.fd = -1;
      }
      // A hard link to the log itself is the log, not one of its rotations.
      if (c.fd >= 0 && static_cast<uint64_t>(c.st.st_ino) == skip_inode) {
        ::close(c.fd);
        continue;
      }
      if (c.fd < 0) continue;
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string CompressedNames(const std::vector<Candidate>& files, size_t from = 0) {
  std::string names;
  for (size_t i = from; i < files.size(); ++i) {
    if (!files[i].file.rotation.compressed) continue;
    names += (names.empty() ? "" : ", ") + files[i].file.path;
  }
  return names;
}

int64_t Nanos(const struct timespec& t) { return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec; }

}  // namespace

std::string FingerprintText(uint64_t fingerprint) {
  if (fingerprint == 0) return "";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%015llx",
                static_cast<unsigned long long>(fingerprint & kFingerprintMask));
  return buf;
}

uint64_t FingerprintFromText(std::string_view text) {
  if (text.size() != 15) return 0;
  uint64_t v = 0;
  for (char c : text) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return 0;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

LogFollower::LogFollower(Options options, LogPosition start, LineSink sink)
    : options_(std::move(options)), sink_(std::move(sink)), position_(start) {
  is_stdin_ = options_.path == "-";
  if (is_stdin_) position_ = {};
}

LogFollower::~LogFollower() {
  Close(cur_);
  for (File& f : next_) Close(f);
}

void LogFollower::Close(File& f) {
  if (f.fd > 0) ::close(f.fd);  // never close standard input (fd 0)
  f.fd = -1;
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

uint64_t LogFollower::FingerprintAt(const char* data, size_t upto) const {
  if (!fingerprints_) return 0;
  // The stream is head_/tail_ (before cur_.offset), then data[0, upto).
  const uint64_t offset = cur_.offset + upto;
  const size_t want = static_cast<size_t>(std::min<uint64_t>(offset, kFingerprintBytes));
  uint64_t h;
  if (head_.size() == kFingerprintBytes) {
    h = head_hash_;
  } else {
    // head_ is all of the file before cur_.offset: its first bytes go on in data.
    h = Fnv(kFnvBasis, head_.data(), head_.size());
    h = Fnv(h, data, want - head_.size());
  }
  if (upto >= want) {
    h = Fnv(h, data + upto - want, want);
  } else {
    const size_t before = want - upto;
    h = Fnv(h, tail_.data() + tail_.size() - before, before);
    h = Fnv(h, data, upto);
  }
  return FinishFingerprint(h);
}

uint64_t LogFollower::StreamFingerprint() const { return FingerprintAt(nullptr, 0); }

void LogFollower::Begin(File f) {
  Close(cur_);
  cur_ = std::move(f);
  head_.clear();
  tail_.clear();
  fingerprints_ = !is_stdin_;
  if (!is_stdin_) {
    ::lseek(cur_.fd, static_cast<off_t>(cur_.offset), SEEK_SET);
    if (cur_.offset > 0 && !ReadAround(cur_.fd, cur_.offset, &head_, &tail_)) {
      // Shorter than checked a moment ago: positions in it go without a fingerprint (their
      // inode is trusted on a restart, as before fingerprints).
      fingerprints_ = false;
      head_.clear();
      tail_.clear();
    }
  }
  head_hash_ = head_.size() == kFingerprintBytes ? Fnv(kFnvBasis, head_.data(), head_.size()) : 0;
  partial_.clear();
  skipping_ = false;
  at_eof_ = false;
  quiet_since_ = std::chrono::steady_clock::now();
  position_ = is_stdin_ ? LogPosition{} : LogPosition{cur_.inode, cur_.offset, StreamFingerprint()};
}

bool LogFollower::Open() {
  if (is_stdin_) {
    Begin(File{0, 0, 0, "standard input", true, false});
    return true;
  }
  return OpenPath();
}

bool LogFollower::OpenPath() {
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
  for (File& f : next_) Close(f);
  next_.clear();
  File live{fd, static_cast<uint64_t>(st.st_ino), 0, options_.path, true, false};
  const LogPosition stored = position_;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (stored.inode == live.inode && HoldsPosition(fd, size, stored)) {
    live.offset = stored.offset;
  } else if (stored.inode == live.inode && stored.fingerprint == 0) {
    // Shorter than the offset; stored without a fingerprint, its copy cannot be told: as before.
    spdlog::warn(
        "log input: {} is shorter ({} bytes) than the stored offset {}: it was truncated, "
        "reading it from the start",
        options_.path, size, stored.offset);
    ++stats_.truncations;
  } else if (stored.inode != 0) {
    if (stored.inode == live.inode) {
      spdlog::warn(
          "log input: {} (inode {}) no longer holds what was read up to offset {} ({} bytes "
          "now): it was truncated or replaced while bounced was not reading it",
          options_.path, live.inode, stored.offset, size);
      ++stats_.truncations;
    }
    QueueRotatedBefore(live);
  }
  SetProblem("");
  spdlog::info("log input: following {} (inode {}) from offset {}{}", options_.path, live.inode,
               live.offset, next_.empty() ? "" : ", after the rotated files above");
  if (next_.empty()) {
    Begin(std::move(live));
  } else {
    next_.push_back(std::move(live));
    File first = std::move(next_.front());
    next_.pop_front();
    Begin(std::move(first));
  }
  return true;
}

void LogFollower::QueueRotatedBefore(const File& live) {
  const LogPosition stored = position_;
  std::vector<Candidate> files = OpenRotated(options_.path, live.inode);
  auto holds = [&](const Candidate& c) {
    return c.fd >= 0 && HoldsPosition(c.fd, static_cast<uint64_t>(c.st.st_size), stored);
  };
  // Renamed (the stored inode), else copied (copytruncate) or the log replaced: the same bytes.
  int found = -1;
  bool renamed = false;
  for (int i = static_cast<int>(files.size()) - 1; i >= 0 && found < 0; --i) {
    if (static_cast<uint64_t>(files[i].st.st_ino) == stored.inode && holds(files[i])) {
      found = i;
      renamed = true;
    }
  }
  for (int i = static_cast<int>(files.size()) - 1; i >= 0 && found < 0; --i) {
    if (stored.fingerprint != 0 && holds(files[i])) found = i;
  }
  std::vector<bool> queued(files.size(), false);
  auto queue = [&](size_t i, uint64_t offset, bool wait_quiet) {
    next_.push_back(File{files[i].fd, static_cast<uint64_t>(files[i].st.st_ino), offset,
                         files[i].file.path, false, wait_quiet});
    queued[i] = true;
    ++stats_.rotations;
  };
  if (found >= 0) {
    spdlog::info(
        "log input: the stored position (inode {}, offset {}) is in {} ({}): finishing it first, "
        "then the files written after it",
        stored.inode, stored.offset, files[found].file.path,
        renamed ? "rotated away" : "a copy of what was read");
    queue(static_cast<size_t>(found), stored.offset, renamed);
    for (size_t j = static_cast<size_t>(found) + 1; j < files.size(); ++j) {
      if (files[j].fd >= 0) {
        queue(j, 0, true);
      } else {
        ++stats_.unread_rotated;
        spdlog::warn(
            "log input: {} was written after the stored position but is compressed: its lines "
            "are not read (bouncectl parse-log reads it)",
            files[j].file.path);
      }
    }
  } else {
    ++stats_.unread_rotated;
    const std::string compressed = CompressedNames(files);
    spdlog::warn(
        "log input: the stored position (inode {}, offset {}) is in neither {} nor an "
        "uncompressed rotated file next to it{}: {} was rotated or replaced while bounced was "
        "not reading it, and the rest of that file is not read",
        stored.inode, stored.offset, options_.path,
        compressed.empty() ? "" : " (compressed, not read: " + compressed + ")", options_.path);
    // Rotated files written since the position was committed hold nothing that was read (the
    // stored file is not among them): read them whole, oldest first. An older one was read
    // before; without a fingerprint, a copy of the log under the same inode could not be told
    // from them.
    if (options_.start_committed_at != 0 &&
        (stored.inode != live.inode || stored.fingerprint != 0)) {
      for (size_t j = 0; j < files.size(); ++j) {
        if (files[j].fd < 0 || files[j].st.st_mtime < options_.start_committed_at) continue;
        spdlog::warn("log input: reading {} (written since) whole first", files[j].file.path);
        queue(j, 0, true);
      }
    }
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (!queued[i] && files[i].fd >= 0) ::close(files[i].fd);
  }
}

void LogFollower::Hand(std::string_view line, size_t upto, const char* data) {
  position_ = {cur_.inode, cur_.offset + upto, FingerprintAt(data, upto)};
  ++stats_.lines;
  sink_(LogLineSplitter::Chomp(line), position_);
}

void LogFollower::Consume(const char* data, size_t n) {
  size_t i = 0;
  while (i < n) {
    const char* nl = static_cast<const char*>(std::memchr(data + i, '\n', n - i));
    size_t end = nl != nullptr ? static_cast<size_t>(nl - data) : n;
    size_t seg = end - i;
    if (skipping_) {
      if (nl != nullptr) {
        skipping_ = false;
        position_ = {cur_.inode, cur_.offset + end + 1, FingerprintAt(data, end + 1)};
      }
    } else if (partial_.size() + seg > options_.max_line_bytes) {
      ++stats_.skipped_too_long;
      spdlog::warn(
          "log input: skipped a line longer than {} bytes at offset {} of {} ({} such "
          "lines so far)",
          options_.max_line_bytes, cur_.offset + i - partial_.size(), cur_.name,
          stats_.skipped_too_long);
      partial_.clear();
      if (nl != nullptr) {
        position_ = {cur_.inode, cur_.offset + end + 1, FingerprintAt(data, end + 1)};
      } else {
        skipping_ = true;
      }
    } else if (nl != nullptr) {
      if (partial_.empty()) {
        Hand(std::string_view(data + i, seg), end + 1, data);
      } else {
        partial_.append(data + i, seg);
        Hand(partial_, end + 1, data);
        partial_.clear();
      }
    } else {
      partial_.append(data + i, seg);
    }
    i = nl != nullptr ? end + 1 : n;
  }
}

void LogFollower::EmitPartial() {
  if (skipping_) {
    skipping_ = false;
    position_ = {cur_.inode, cur_.offset, StreamFingerprint()};
    return;
  }
  if (partial_.empty()) return;
  Hand(partial_, 0, nullptr);
  partial_.clear();
}

// Reads until end of file (standard input: until nothing more is there now) or the per-poll
// budget. Returns true when it read anything.
bool LogFollower::ReadAvailable() {
  // Page-aligned, and each read lands at its file offset's place within a page, so the kernel's
  // copy out of the page cache runs page onto page (common/read_buffer.h).
  static thread_local PageBuffer buf(kReadChunkBytes + kPageBytes);
  bool progress = false;
  uint64_t budget = kMaxBytesPerPoll;
  while (budget > 0) {
    if (is_stdin_) {
      // A pipe's writer may stay silent for as long as it likes: never wait in read(), so what
      // came is committed and Stop() is seen.
      struct pollfd p {
        cur_.fd, POLLIN, 0
      };
      int ready = ::poll(&p, 1, 0);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        at_eof_ = true;  // as far as this poll goes
        return progress;
      }
    }
    char* at = buf.data() + ReadAlignment(cur_.offset);
    ssize_t n = ::read(cur_.fd, at, kReadChunkBytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      SetProblem("read error on " + cur_.name + ": " + std::strerror(errno));
      if (is_stdin_) ended_ = true;  // cannot be opened again
      at_eof_ = true;                // as far as this poll goes
      return progress;
    }
    if (n == 0) {
      ended_ = true;
      if (is_stdin_) EmitPartial();
      at_eof_ = true;
      return progress;
    }
    const size_t got = static_cast<size_t>(n);
    Consume(at, got);
    if (fingerprints_) {
      if (head_.size() < kFingerprintBytes) {
        head_.append(at, std::min(got, kFingerprintBytes - head_.size()));
        if (head_.size() == kFingerprintBytes)
          head_hash_ = Fnv(kFnvBasis, head_.data(), head_.size());
      }
      if (got >= kFingerprintBytes) {
        tail_.assign(at + got - kFingerprintBytes, kFingerprintBytes);
      } else {
        tail_.append(at, got);
        if (tail_.size() > kFingerprintBytes) tail_.erase(0, tail_.size() - kFingerprintBytes);
      }
    }
    cur_.offset += got;
    stats_.bytes += got;
    budget -= std::min<uint64_t>(budget, got);
    progress = true;
    if (!cur_.live) quiet_since_ = std::chrono::steady_clock::now();
  }
  at_eof_ = false;
  return progress;
}

bool LogFollower::Quiet() {
  if (!cur_.wait_quiet || options_.rotation_grace.count() <= 0) return true;
  if (std::chrono::steady_clock::now() - quiet_since_ >= options_.rotation_grace) return true;
  // Untouched for longer than the grace already (found so after a restart): no need to wait.
  // The ctime counts too: a rename sets it, and the writer may not have reopened its log yet.
  struct stat st {};
  if (::fstat(cur_.fd, &st) != 0 || static_cast<uint64_t>(st.st_size) > cur_.offset) return false;
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const int64_t last = std::max(Nanos(st.st_mtim), Nanos(st.st_ctim));
  return Nanos(now) - last >= int64_t{options_.rotation_grace.count()} * 1000000;
}

void LogFollower::FinishCurrent() {
  EmitPartial();        // its last line, even without a newline: nothing will complete it now
  if (next_.empty()) {  // cannot happen (the live file comes last): start over from `path`
    Close(cur_);
    return;
  }
  spdlog::info("log input: {} (inode {}) read to its end at {}; now reading {} (inode {})",
               cur_.name, cur_.inode, cur_.offset, next_.front().name, next_.front().inode);
  File f = std::move(next_.front());
  next_.pop_front();
  Begin(std::move(f));
}

bool LogFollower::ReadCopyFirst() {
  const uint64_t fingerprint = StreamFingerprint();
  std::vector<Candidate> files = OpenRotated(options_.path, cur_.inode);
  int found = -1;
  for (int i = static_cast<int>(files.size()) - 1; i >= 0 && found < 0; --i) {
    const Candidate& c = files[i];
    if (c.fd >= 0 && static_cast<uint64_t>(c.st.st_size) >= cur_.offset &&
        FileFingerprint(c.fd, cur_.offset) == fingerprint) {
      found = i;
    }
  }
  for (int i = 0; i < static_cast<int>(files.size()); ++i) {
    if (i != found && files[i].fd >= 0) ::close(files[i].fd);
  }
  if (found >= 0) {
    // The copy goes on with the very bytes read so far: the stream (partial line, fingerprint
    // bytes) carries on into it; then the truncated file from its start.
    const Candidate& c = files[found];
    spdlog::info(
        "log input: {} was truncated at offset {} (copytruncate); reading its copy {} from "
        "there first",
        options_.path, cur_.offset, c.file.path);
    File live = std::move(cur_);
    const uint64_t offset = live.offset;
    live.offset = 0;
    cur_ = File{c.fd, static_cast<uint64_t>(c.st.st_ino), offset, c.file.path, false, false};
    ::lseek(cur_.fd, static_cast<off_t>(offset), SEEK_SET);
    next_.push_front(std::move(live));
    return true;
  }
  return false;
}

bool LogFollower::CheckRotation() {
  struct stat st {};
  if (::stat(options_.path.c_str(), &st) != 0) {
    // Renamed away and the new file is not there yet: keep reading the old one meanwhile.
    return false;
  }
  if (static_cast<uint64_t>(st.st_ino) != cur_.inode) {
    int fd = ::open(options_.path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat now {};
    if (fd < 0 || ::fstat(fd, &now) != 0 || static_cast<uint64_t>(now.st_ino) == cur_.inode) {
      if (fd >= 0) ::close(fd);
      return false;  // gone again, or back: look again on the next poll
    }
    // The writer may go on appending to the old file until it reopens its log: keep reading it
    // until it is quiet (log_follower.h), with the new file held open for afterwards.
    spdlog::info(
        "log input: {} was rotated (inode {} -> {}); reading the old file on until it has been "
        "quiet for {} ms, then the new one",
        options_.path, cur_.inode, now.st_ino, options_.rotation_grace.count());
    ++stats_.rotations;
    cur_.live = false;
    cur_.wait_quiet = true;
    quiet_since_ = std::chrono::steady_clock::now();
    next_.push_back(File{fd, static_cast<uint64_t>(now.st_ino), 0, options_.path, true, false});
    return true;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size >= cur_.offset &&
      (!fingerprints_ || FileFingerprint(cur_.fd, cur_.offset) == StreamFingerprint())) {
    return false;
  }
  // Shorter than what was read, or not the bytes that were read: truncated (and maybe written
  // again already).
  ++stats_.truncations;
  if (ReadCopyFirst()) return true;
  std::vector<Candidate> files = OpenRotated(options_.path, cur_.inode);
  for (Candidate& c : files) {
    if (c.fd >= 0) ::close(c.fd);
  }
  const std::string compressed = CompressedNames(files);
  if (!compressed.empty()) {
    ++stats_.unread_rotated;
    spdlog::warn(
        "log input: {} was truncated at offset {} (copytruncate) and no uncompressed copy of it "
        "is next to it (compressed, not read: {}): what was written to it after bounced last "
        "read it is not read; reading it from the start",
        options_.path, cur_.offset, compressed);
  } else {
    spdlog::info(
        "log input: {} shrank from {} to {} bytes (copytruncate, no copy next to it); reading it "
        "from the start",
        options_.path, cur_.offset, size);
  }
  File live = std::move(cur_);
  cur_ = File{};
  live.offset = 0;
  Begin(std::move(live));
  return true;
}

bool LogFollower::Poll() {
  if (finished_) return false;
  bool progress = false;
  if (cur_.fd < 0) {
    if (!Open()) return false;
    progress = true;
  }
  progress |= ReadAvailable();
  if (!at_eof_) return true;
  if (is_stdin_) {
    if (ended_) finished_ = true;
    return progress;
  }
  if (!cur_.live) {
    if (!Quiet()) return progress;
    FinishCurrent();
    return true;
  }
  return CheckRotation() || progress;
}

}  // namespace bounced
