// log_follower.h: follows a growing log file (Postfix's mail.log) line by line, like `tail -F`,
// and says after each line exactly where in which file it is, so that position can be committed
// with the events the line produced.
//
// Reads: the file at `path` (or standard input for "-"); after a rename rotation while the
// daemon was down, also `path.1`: from the stored offset when it holds the stored inode, or
// whole when the stored file has been rotated on past it (two rotations while down) and path.1
// was written after the stored position was committed. The rest of a stored file rotated past
// path.1 is not read (it may be compressed); a warning says so. Writes: nothing; the caller
// persists positions. Never gives up: a missing or unreadable file is logged once per incident
// and retried on every Poll().
//
// Rotation: rename + new file (the old file is read to its end, including a last line without
// newline, then the new one from its start) and copytruncate (the file shrinks below the
// current offset: start again at 0). A "\r\n" line end loses its "\r" (as parse-log's
// LogLineSplitter). A line longer than max_line_bytes is skipped and counted, and never buffered
// whole: memory stays bounded by max_line_bytes.
//
// Standard input is waited on with poll(), never in read(): every Poll() returns what has come so
// far, so the caller commits it and can stop while the writer stays silent.
//
// Thread safety: one thread uses a LogFollower.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace bounced {

// Where the next unread byte is: the file's inode and the offset in it. inode 0 = unknown (no
// stored position: start at the beginning of the current file).
struct LogPosition {
  uint64_t inode = 0;
  uint64_t offset = 0;
  bool operator==(const LogPosition&) const = default;
};

struct LogFollowerStats {
  uint64_t lines = 0;
  uint64_t bytes = 0;
  uint64_t skipped_too_long = 0;
  uint64_t rotations = 0;      // rename + new file
  uint64_t truncations = 0;    // copytruncate (or the file was emptied)
  uint64_t open_failures = 0;  // incidents of missing/unreadable file
};

class LogFollower {
 public:
  struct Options {
    std::string path;  // "-" = standard input (no rotation, no resume)
    size_t max_line_bytes = 64 * 1024;
    // When the start position was committed (unix seconds; 0: unknown). After a restart that
    // missed two rotations, path.1 is read whole when it was written after then (see above).
    int64_t start_committed_at = 0;
  };
  // Called for each complete line (without the newline) with the position right after it.
  using LineSink = std::function<void(std::string_view line, const LogPosition& after)>;

  LogFollower(Options options, LogPosition start, LineSink sink);
  ~LogFollower();
  LogFollower(const LogFollower&) = delete;
  LogFollower& operator=(const LogFollower&) = delete;

  // Reads everything that is available now and hands out its complete lines. Returns true when
  // it made progress (bytes read, file opened or switched), false when there was nothing to do.
  bool Poll();
  // True when reading standard input and it reached its end.
  bool finished() const { return finished_; }
  // The position after the last line handed out (or the start position).
  const LogPosition& position() const { return position_; }
  const LogFollowerStats& stats() const { return stats_; }
  // Why the file cannot be read right now ("" when it can).
  const std::string& problem() const { return problem_; }

 private:
  bool Open();
  bool ReadAvailable(int fd, uint64_t inode, uint64_t* offset, bool flush_partial_at_eof);
  // Reads a rotated file (`fd`, whose lines are positioned in `inode`) from `offset` to its end,
  // a last line without newline included, before the current file is opened.
  void ReadRotatedFile(int fd, uint64_t inode, uint64_t offset);
  void Consume(const char* data, size_t n, uint64_t inode, uint64_t start_offset);
  void EmitPartial(uint64_t inode, uint64_t offset);
  void SetProblem(const std::string& problem);
  bool CheckRotation();
  void CloseCurrent();

  Options options_;
  LineSink sink_;
  LogPosition position_;  // after the last complete line
  int fd_ = -1;
  uint64_t inode_ = 0;
  uint64_t read_offset_ = 0;  // bytes read from fd_ (partial line included)
  std::string partial_;       // bytes of the current unfinished line
  bool skipping_ = false;     // inside a line that is too long: drop bytes until '\n'
  bool finished_ = false;
  bool at_eof_ = false;  // the last ReadAvailable reached the end of its file
  bool ended_ = false;   // read() returned 0 (standard input: its writer closed it)
  std::string problem_;
  LogFollowerStats stats_;
};

}  // namespace bounced
