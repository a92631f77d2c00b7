// log_source.h: the bytes of one or more Postfix logs, one after another, for bouncectl
// parse-log. A log that logrotate compressed (gzip, bzip2, xz or zstd, told by its first bytes,
// not its name) is read through the system's own decompressor ("gzip -dc" and so on, as zgrep
// does), so `parse-log mail.log.2.gz mail.log.1 mail.log` (which OldestFirst makes of
// `mail.log*`) reads a week in one pass and its queue ids correlate across the files. Where a file
// does not end its last line, a newline is added: lines of two files never join.
//
// Never fails as a whole: a file that cannot be opened or read, or whose decompressor fails or is
// not installed, is named on stderr with the reason and marks the source failed(); what was read
// of it counts, and reading goes on with the next file. Stdin redirected from a compressed file
// is read like the file; compressed data from a pipe (stdin, a FIFO) is refused the same way (it
// cannot be handed to a decompressor once its first bytes are read): give the file by name.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon/ctl/decompress.h"

namespace bounced::ctl {

class LogSource {
 public:
  // `files` in the order to read them; "-" is stdin. None: stdin.
  explicit LogSource(std::vector<std::string> files);
  ~LogSource();
  LogSource(const LogSource&) = delete;
  LogSource& operator=(const LogSource&) = delete;

  // Reads at most `n` (> 0) bytes into `buf`; 0 once every file has been read.
  size_t Read(char* buf, size_t n);
  // Whether some file could not be read whole (each was named on stderr).
  bool failed() const { return failed_; }

 private:
  bool OpenNext();               // the next file that opens; false when there is none
  void Close(bool read_to_end);  // the current file, and its decompressor
  void Fail(const std::string& what);

  std::vector<std::string> files_;
  size_t next_ = 0;
  std::optional<DecompressedInput> input_;  // the current file
  bool check_first_ = false;  // its first read is next: check it is not compressed on a pipe
  bool any_ = false;          // some byte was given out
  char last_ = '\n';          // the last byte given out
  bool failed_ = false;
};

// The files of one rotated log put oldest first, whatever order they came in (a shell's
// `mail.log*` gives mail.log, mail.log.1, mail.log.2.gz ...): logrotate's numbered files
// (mail.log.2.gz, then mail.log.1) and dated ones (mail.log-20261101, then mail.log-20261108),
// then the log itself. A compression suffix is not part of the name. Files of different logs,
// and "-", keep the order in which their log first appears.
std::vector<std::string> OldestFirst(std::vector<std::string> files);

}  // namespace bounced::ctl
