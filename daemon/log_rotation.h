// log_rotation.h: the names logrotate gives a log's rotated files (mail.log.1, mail.log.2.gz,
// mail.log-20261201, mail.log-2026120112.xz), shared by bouncectl parse-log (which puts the files
// it is given oldest first) and the daemon's log follower (which looks for the file it was reading
// among them after a rotation while it was down, or for the copy copytruncate made).
//
// Reads: a folder's names (RotatedFiles). Writes: nothing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bounced {

// Where a file stands in its rotated log: the log's name, and a key that sorts oldest first.
struct Rotation {
  std::string log;      // the log's own name (the path without the rotation's suffixes)
  int kind = 2;         // 0 numbered (log.N), 1 dated (log-YYYYMMDD), 2 the log itself
  uint64_t number = 0;  // N
  std::string date;
  bool compressed = false;  // named with a compression suffix (.gz, .bz2, .xz, .zst)
};

// What `name` (a path) is in its log's rotation. A compression suffix is not part of the name.
Rotation RotationOf(std::string_view name);

// True when `a` is an older file of its log than `b` (both of the same log): numbered files
// highest number first, then dated ones by date, then the log itself.
bool RotatedBefore(const Rotation& a, const Rotation& b);

// The rotated files of the log at `path` that are in its folder now, oldest first (the log itself
// not included); empty when the folder cannot be read.
struct RotatedFile {
  std::string path;
  Rotation rotation;
};
std::vector<RotatedFile> RotatedFiles(const std::string& path);

}  // namespace bounced
