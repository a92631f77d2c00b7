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

}  // namespace bounced::ctl
