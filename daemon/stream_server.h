// stream_server.h: a Unix stream socket server (Boost.Asio) shared by the query socket and the
// Postfix socketmap. It owns the listening socket, the connection limit, the idle timeout and
// the peer credentials; what is said on a connection belongs to a Session.
//
// Reads and writes: the socket at `path` (its parent directory is created; a stale socket file
// is replaced, a live one (another bounced answering) is refused). The socket gets `mode` and,
// when `group` names an existing group, that group.
//
// Thread safety: handlers of one connection run one at a time (a strand each); several
// connections may be served at once when the io_context runs on several threads.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio.hpp>

#include "common/status.h"

namespace bounced {

// Who is on the other end of a connection (SO_PEERCRED).
struct PeerCred {
  pid_t pid = 0;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
};

// The conversation on one connection. OnData gets the bytes as they arrive and appends what to
// send back to *reply; returning false closes the connection once the reply is written.
class Session {
 public:
  virtual ~Session() = default;
  virtual bool OnData(std::string_view bytes, std::string* reply) = 0;
};

struct StreamServerOptions {
  std::string name;  // for logs: "query", "socketmap"
  std::string path;
  uint32_t mode = 0660;
  std::string group;  // "" keeps the daemon's group
  size_t max_connections = 64;
  std::chrono::milliseconds idle_timeout{60000};
  // Sent (then the connection is closed) to a client over the connection limit.
  std::string busy_reply;
};

struct StreamServerStats {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused_busy{0};
  std::atomic<uint64_t> idle_closed{0};
  std::atomic<uint64_t> active{0};
};

class StreamServer {
 public:
  using SessionFactory = std::function<std::unique_ptr<Session>(const PeerCred&)>;

  // Binds and listens; fails with the path and reason.
  static Expected<std::unique_ptr<StreamServer>> Listen(boost::asio::io_context& io,
                                                        StreamServerOptions options,
                                                        SessionFactory factory);
  ~StreamServer();
  void Start();
  // Stops accepting and removes the socket file; open connections finish on their own.
  void Stop();
  const StreamServerStats& stats() const { return *stats_; }
  const std::string& path() const { return options_.path; }

 private:
  StreamServer(boost::asio::io_context& io, StreamServerOptions options, SessionFactory factory,
               boost::asio::local::stream_protocol::acceptor acceptor);
  void Accept();

  boost::asio::io_context& io_;
  StreamServerOptions options_;
  SessionFactory factory_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::shared_ptr<StreamServerStats> stats_;
  std::atomic<bool> stopped_{false};
};

}  // namespace bounced
