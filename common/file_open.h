// file_open.h: opening many files by name, one path lookup per folder.
//
// `bouncectl parse /var/spool/bounces/*` names thousands of files in one folder. open(2)
// resolves every component of every path again; openat(2) from a descriptor of the folder
// resolves only the file's own name. On the bench machine that saves ~0.25 us of kernel time a
// file (an open and close cost ~2.8 us there; bench/RESULTS.md, "Thirteenth session").
//
// Permissions and errors are those of open(path): the folder is opened with O_PATH (which needs
// no read permission), the kernel checks search permission on it at each openat, and when the
// folder cannot be opened the file is opened by its whole path, so the caller sees the errno
// open(2) gives. One folder is remembered (the last one), which is what a shell glob produces.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <string_view>

namespace bounced {

class FolderOpener {
 public:
  FolderOpener() = default;
  FolderOpener(const FolderOpener&) = delete;
  FolderOpener& operator=(const FolderOpener&) = delete;
  ~FolderOpener() {
    if (folder_fd_ >= 0) ::close(folder_fd_);
  }

  // open(path, O_RDONLY | O_CLOEXEC | extra_flags): a descriptor, or -1 with errno set.
  int Open(const std::string& path, int extra_flags = 0) {
    const int flags = O_RDONLY | O_CLOEXEC | extra_flags;
    size_t slash = path.rfind('/');
    // A bare name is already relative to the working directory; a name ending in '/' is a
    // folder itself.
    if (slash == std::string::npos || slash + 1 == path.size()) return ::open(path.c_str(), flags);
    std::string_view folder(path.data(), slash == 0 ? 1 : slash);
    if (!has_folder_ || folder != folder_) {
      if (folder_fd_ >= 0) ::close(folder_fd_);
      folder_.assign(folder);
      folder_fd_ = ::open(folder_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      has_folder_ = true;
    }
    if (folder_fd_ < 0) return ::open(path.c_str(), flags);
    return ::openat(folder_fd_, path.c_str() + slash + 1, flags);
  }

 private:
  std::string folder_;
  bool has_folder_ = false;
  int folder_fd_ = -1;  // -1 also when folder_ could not be opened
};

}  // namespace bounced
