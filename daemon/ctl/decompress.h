// decompress.h: compressed inputs for bouncectl (logs rotated by logrotate, archived mailboxes,
// saved messages). The kind is told by the data's first bytes, not the file's name, and the data
// is read through the system's own decompressor ("gzip -dc" and so on, as zgrep does): gzip is
// always installed on Debian, bzip2, xz and zstd when their packages are.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace bounced::ctl {

// The decompressor for data starting with `head` ("gzip", "bzip2", "xz", "zstd"), or "" when it
// is not compressed (or is too short to tell).
const char* DecompressorFor(const char* head, size_t n);

// Compressed data from a pipe (stdin, a FIFO, `<(...)`) cannot be handed to a decompressor once
// its first bytes are read: the refusal, naming `name` and saying what to do instead, when `data`
// (the pipe's first bytes) is compressed; else "".
std::string CompressedPipe(const std::string& name, const char* data, size_t n);

// The decompressor for the file open at `fd`, told by its first bytes without moving its offset.
// A pipe cannot be read so: "", with *seekable false (check its first bytes with CompressedPipe
// once they are read).
const char* DecompressorForFile(int fd, bool* seekable);

// A running "TOOL -dc" reading `fd` (which it gets a copy of: the caller may close its own).
struct Decompressor {
  int out = -1;  // the read end of its output (close-on-exec)
  pid_t pid = -1;
};

// Starts `tool` on `fd`; false with *error set ("it is xz-compressed and 'xz -dc' cannot be run:
// No such file or directory") when it cannot be.
bool StartDecompressor(const char* tool, int fd, Decompressor* d, std::string* error);

// Closes its output and waits for it: "" when it exited 0, else what went wrong ("'gzip -dc'
// failed (exit status 1)"). With `read_to_end` false (the caller stopped reading early) a
// failure is not reported: the closed pipe may have been what stopped it.
std::string FinishDecompressor(const char* tool, Decompressor* d, bool read_to_end);

// An input read from start to end: a file, or "-" for stdin, read as it is or, when compressed,
// through its decompressor. Stdin redirected from a file is read like one; from a pipe (stdin, a
// FIFO), its first bytes must be checked with Refused before they are used.
class DecompressedInput {
 public:
  // Opens `file`. When it cannot be opened or its decompressor cannot start, sets *error
  // ("cannot open FILE: ..." or "cannot read FILE: ...") and fd() is -1.
  DecompressedInput(const std::string& file, std::string* error);
  ~DecompressedInput() { Finish(false); }
  DecompressedInput(const DecompressedInput&) = delete;
  DecompressedInput& operator=(const DecompressedInput&) = delete;

  // What to read: the file, or the decompressor's output; -1 after Finish.
  int fd() const { return fd_; }
  // The input's name in messages: the file, or "stdin".
  const std::string& name() const { return name_; }
  // Given the input's first bytes: "" or, when a pipe holds compressed data, why it is refused
  // (CompressedPipe).
  std::string Refused(const char* data, size_t n) const;
  // After the last read (`read_to_end`: to its end): "" or what went wrong with the
  // decompressor ("cannot read FILE: ..."). Closes the input; stdin is never closed.
  std::string Finish(bool read_to_end);

 private:
  std::string name_;
  int fd_ = -1;
  const char* tool_ = "";  // the decompressor's program, or ""
  Decompressor d_;
  bool pipe_ = false;
};

}  // namespace bounced::ctl
