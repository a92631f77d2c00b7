// file_write.h: putting a whole file in place at once, so that a reader of `path` sees the old
// contents or the new, never part of them (the milter's quarantine, `bouncectl metrics
// --output`).
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "common/status.h"

namespace bounced {

// Writes `bytes` to `fd`, an open new file at `temp` (beside `path`, on its file system),
// fsyncs it when `sync`, closes it and renames `temp` to `path`. Takes `fd` whatever happens;
// on an error `temp` is removed, `path` is as it was, and the message is "write TEMP: why",
// "sync TEMP: why" or "rename TEMP to PATH: why".
inline Status WriteAndRename(int fd, const std::string& temp, const std::string& path,
                             std::string_view bytes, bool sync) {
  auto fail = [&](const std::string& what, int err) {
    ::unlink(temp.c_str());
    return Status::Error(what + ": " + std::strerror(err));
  };
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      return fail("write " + temp, err);
    }
    done += static_cast<size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return fail("sync " + temp, err);
  }
  if (::close(fd) != 0) return fail((sync ? "sync " : "write ") + temp, errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    return fail("rename " + temp + " to " + path, errno);
  }
  return Status::Ok();
}

}  // namespace bounced
