// log_follower.h: follows a growing log file (Postfix's mail.log) line by line, like `tail -F`,
// and says after each line exactly where in which file it is, so that position can be committed
// with the events the line produced.
//
// Reads: the file at `path` (or standard input for "-") and, after a rotation, its rotated files
// in its folder (path.1, path.2, path-20261201 ..., log_rotation.h). Writes: nothing; the caller
// persists positions. Never gives up: a missing or unreadable file is logged once per incident
// and retried on every Poll().
//
// Files are read one at a time, each to its end, in the order they were written: a position is
// always (inode, offset, fingerprint) of the one file being read, and everything before it, in
// that file and in the files read before it, has been handed out. That is what makes a committed
// position enough to resume after a restart or kill -9 with nothing lost and nothing read twice.
//
// Rename rotation (logrotate's create): when `path` names another file, the old one is still
// read, with the new one held open but not read yet, until the old one has been quiet for
// `rotation_grace` (nothing new read from it for that long; or, for a rotated file found after a
// restart, its mtime and ctime that old already): syslog keeps writing to the old file until
// logrotate's postrotate HUP makes it reopen its log. Only then is the old file's last line
// passed on even without a newline (until then it may still be completed) and the new file read
// from its start. Reading the two files in turn, not side by side, keeps the one-file position
// above: new lines wait for at most the grace period after the writer stops writing to the old
// file, and a kill -9 meanwhile leaves a position in the old file, which the restart finds under
// its rotated name (below) and reads on the same way.
//
// copytruncate (the file is shorter than what was read, or its bytes before the read offset
// changed): the copy is looked for among the rotated files (not the same inode, at least as long
// as the offset, the same fingerprint there) and read from the offset first, so what was written
// between the last read and the truncation is not lost; then the file from its start. Without a
// copy (compressed at once, or gone), a warning says what could not be read.
//
// At start, the stored position's file is looked for: `path` itself when it is the same inode
// with the same fingerprint; else a rotated file with the stored inode (renamed) or, with a
// fingerprint, with the same bytes before the offset (copytruncate's copy, or `path` replaced
// under the same inode by another file). It is read from the offset, then the rotated files
// written after it (newer in logrotate's naming), whole, then `path` from its start. When it is
// in none of them (compressed, deleted), the rest of it cannot be read (a warning, counted in
// unread_rotated): the rotated files written since the position was committed
// (start_committed_at) are read whole, then `path`. A position stored without a fingerprint (by
// an older bounced) is trusted by its inode as before.
//
// Lines: a "\r\n" end loses its "\r" (as parse-log's LogLineSplitter). A line longer than
// max_line_bytes is skipped and counted, and never buffered whole: memory stays bounded by
// max_line_bytes.
//
// Standard input is waited on with poll(), never in read(): every Poll() returns what has come so
// far, so the caller commits it and can stop while the writer stays silent.
//
// Thread safety: one thread uses a LogFollower.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>

namespace bounced {

// Where the next unread byte is: the file's inode and the offset in it, and a fingerprint of the
// file's bytes before the offset (its first and its last up to 64 bytes there), which tells the
// file from another that took its inode (reused after a delete) or its content (truncated and
// written again). inode 0 = unknown (no stored position: start at the beginning of the current
// file); fingerprint 0 = unknown (stored by an older bounced: the inode is trusted alone).
struct LogPosition {
  uint64_t inode = 0;
  uint64_t offset = 0;
  uint64_t fingerprint = 0;
  bool operator==(const LogPosition&) const = default;
};

// The fingerprint as stored with the position (input_positions.cursor of a file input): 15 hex
// digits, short enough for std::string's inline buffer so the position of each line costs no
// allocation; "" for 0. FingerprintFromText gives 0 for "" or anything else it cannot read.
std::string FingerprintText(uint64_t fingerprint);
uint64_t FingerprintFromText(std::string_view text);

struct LogFollowerStats {
  uint64_t lines = 0;
  uint64_t bytes = 0;
  uint64_t skipped_too_long = 0;
  uint64_t rotations = 0;       // rotated files read (rename + new file)
  uint64_t truncations = 0;     // copytruncate (or the file was emptied, or rewritten)
  uint64_t open_failures = 0;   // incidents of missing/unreadable file
  uint64_t unread_rotated = 0;  // rotated files whose unread rest could not be read
};

class LogFollower {
 public:
  struct Options {
    std::string path;  // "-" = standard input (no rotation, no resume)
    size_t max_line_bytes = 64 * 1024;
    // When the start position was committed (unix seconds; 0: unknown). When the stored file is
    // not found after a restart, the rotated files written since then are read whole.
    int64_t start_committed_at = 0;
    // How long a file renamed away must be quiet before it is given up (see above); 0: at once
    // (`--once`: read what is there and stop).
    std::chrono::milliseconds rotation_grace{5000};
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
  size_t max_line_bytes() const { return options_.max_line_bytes; }
  // A new cap (a reload) for the lines read from now on; a line already longer is skipped.
  void set_max_line_bytes(size_t n) { options_.max_line_bytes = n; }

 private:
  // A file to read: the current one, or one queued after it.
  struct File {
    int fd = -1;
    uint64_t inode = 0;
    uint64_t offset = 0;      // bytes read (queued: where reading starts)
    std::string name;         // for messages
    bool live = false;        // `path` itself, followed until it is rotated
    bool wait_quiet = false;  // renamed away: its writer may still hold it (rotation_grace)
  };

  bool Open();
  bool OpenPath();
  // Queues, after a restart, the files to read before `live` (see above).
  void QueueRotatedBefore(const File& live);
  // Makes `f` the file being read, from its offset (the stream's head/tail loaded from it).
  void Begin(File f);
  bool ReadAvailable();
  void Consume(const char* data, size_t n);
  void Hand(std::string_view line, size_t upto, const char* data);
  void EmitPartial();
  void SetProblem(const std::string& problem);
  bool CheckRotation();
  // Looks for copytruncate's copy of the current file (see above) and reads it first.
  bool ReadCopyFirst();
  bool Quiet();
  // Gives the (non-live) current file up and goes on with the next one.
  void FinishCurrent();
  void Close(File& f);
  uint64_t FingerprintAt(const char* data, size_t upto) const;
  uint64_t StreamFingerprint() const;

  Options options_;
  LineSink sink_;
  LogPosition position_;  // after the last complete line
  bool is_stdin_ = false;
  File cur_;
  std::deque<File> next_;
  // The current file's first and last (before cur_.offset) up to 64 bytes, for fingerprints;
  // head_hash_ is the hash state after all 64 bytes of head_. Not kept for standard input.
  std::string head_;
  std::string tail_;
  uint64_t head_hash_ = 0;
  bool fingerprints_ = false;
  // When a renamed file last grew (or began to be read), for rotation_grace.
  std::chrono::steady_clock::time_point quiet_since_;
  std::string partial_;    // bytes of the current unfinished line
  bool skipping_ = false;  // inside a line that is too long: drop bytes until '\n'
  bool finished_ = false;
  bool at_eof_ = false;  // the last ReadAvailable reached the end of its file
  bool ended_ = false;   // read() returned 0 (standard input: its writer closed it)
  std::string problem_;
  LogFollowerStats stats_;
};

}  // namespace bounced
