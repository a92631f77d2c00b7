// read_floor_bench: the cost of only reading the bounce files `bouncectl parse` is given, with
// the same system calls it makes per file (openat from the file's folder, a read into a reused
// page-aligned buffer and one more to see the end, close) and no parsing at all. dsn_bench.sh runs
// it on the same argument list as bouncectl and Sisimai, so the kernel's share of a parse run (the
// part no parser can remove) is shown in the same run, next to the ratio it bounds.
//
// Reads: the files named on the command line. Writes: one line to stdout:
//   files=N bytes=B wall=S cpu=S user=S sys=S
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "common/file_open.h"
#include "common/read_buffer.h"

namespace {

double Seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: read_floor_bench FILE...\n");
    return 2;
  }
  auto start = std::chrono::steady_clock::now();
  bounced::PageBuffer buffer(1 << 16);
  unsigned long long bytes = 0;
  int files = 0;
  bounced::FolderOpener opener;
  for (int i = 1; i < argc; ++i) {
    int fd = opener.Open(argv[i]);
    if (fd < 0) continue;
    // As bouncectl reads a file: into a kept page-aligned buffer, to the end.
    size_t size = 0;
    bounced::ReadToEnd(fd, &buffer, SIZE_MAX, &size);
    bytes += size;
    ::close(fd);
    ++files;
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  double user = Seconds(ru.ru_utime);
  double sys = Seconds(ru.ru_stime);
  std::printf("files=%d bytes=%llu wall=%.3f cpu=%.3f user=%.3f sys=%.3f\n", files, bytes, wall,
              user + sys, user, sys);
  return 0;
}
