// user_db.h: group and user lookups that threads may make at once.
//
// getgrnam(3) and getpwuid(3) return a pointer into one static buffer of the process. bounced
// looks groups up on more than one thread: the query server checks each client's groups on its
// I/O thread, while a reload sets the sockets' groups on the main thread and the milter checks
// its socket_group. Two such calls at once could read each other's half-written entry. These
// use the _r forms, with a buffer of their own that grows when an entry is large (a group with
// many members).
#pragma once

#include <grp.h>
#include <pwd.h>
#include <sys/types.h>

#include <cerrno>
#include <optional>
#include <string>
#include <vector>

namespace bounced {

namespace user_db_detail {

// Calls lookup(buffer, size) -> errno-style result with a growing buffer, up to 1 MiB.
template <class Lookup>
bool WithBuffer(Lookup&& lookup) {
  std::vector<char> buffer(4096);
  while (true) {
    int rc = lookup(buffer.data(), buffer.size());
    if (rc != ERANGE) return rc == 0;
    if (buffer.size() >= (size_t{1} << 20)) return false;
    buffer.resize(buffer.size() * 2);
  }
}

}  // namespace user_db_detail

// The gid of the group called `name`, or nullopt when there is none (or it cannot be read).
inline std::optional<gid_t> GroupId(const std::string& name) {
  std::optional<gid_t> gid;
  user_db_detail::WithBuffer([&](char* buf, size_t size) {
    struct group entry {};
    struct group* found = nullptr;
    int rc = ::getgrnam_r(name.c_str(), &entry, buf, size, &found);
    if (rc == 0 && found != nullptr) gid = found->gr_gid;
    return rc;
  });
  return gid;
}

// The name and primary group of the user `uid`, or nullopt when there is none.
struct UserEntry {
  std::string name;
  gid_t gid = 0;
};
inline std::optional<UserEntry> UserById(uid_t uid) {
  std::optional<UserEntry> user;
  user_db_detail::WithBuffer([&](char* buf, size_t size) {
    struct passwd entry {};
    struct passwd* found = nullptr;
    int rc = ::getpwuid_r(uid, &entry, buf, size, &found);
    if (rc == 0 && found != nullptr) user = UserEntry{found->pw_name, found->pw_gid};
    return rc;
  });
  return user;
}

}  // namespace bounced
