// stream_server.h: a Unix stream socket server (Boost.Asio) shared by the query socket and the
// Postfix socketmap. It owns the listening socket, the connection limit, the idle timeout and
// the peer credentials; what is said on a connection belongs to a Session.
//
// Reads and writes: the socket at `path` (its parent directory is created; a stale socket file
// is replaced, a live one (another bounced answering) is refused). The socket gets `mode` and,
// when `group` names an existing group, that group.
//
// Accepting: a failed accept that would fail again at once (out of descriptors: EMFILE, ENFILE;
// out of memory: ENOBUFS, ENOMEM; anything but a client that left before it was accepted) is
// retried after kAcceptRetryFirst, doubling up to kAcceptRetryMax while it keeps failing, so a
// full descriptor table neither spins a core nor floods the log; the warning is logged at most
// once per kAcceptWarningInterval, with a count.
//
// Thread safety: handlers of one connection run one at a time (a strand each); several
// connections may be served at once when the io_context runs on several threads. A reply that
// takes long (a ReplyStream: a list, an export, an import's commit) is produced on its own thread
// and written piece by piece, the next piece only once the client has taken the previous one.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio.hpp>

#include "common/status.h"

namespace bounced {

inline constexpr std::chrono::milliseconds kAcceptRetryFirst{100};
inline constexpr std::chrono::milliseconds kAcceptRetryMax{1000};
inline constexpr std::chrono::seconds kAcceptWarningInterval{10};

// Who is on the other end of a connection (SO_PEERCRED).
struct PeerCred {
  pid_t pid = 0;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
};

// A reply written in pieces as something else produces them (e.g. an export as SQLite reads
// it). The connection asks for one piece at a time and asks for the next only once the previous
// one is written, so a client that reads slowly slows the producer instead of filling memory.
class ReplyStream {
 public:
  // Hands over one piece; `last` ends the stream. It may be called on any thread, possibly while
  // the stream holds its lock: it must only pass the piece on (post it), never call back into
  // the stream, and must leave nothing behind that it owns once called (move its captures out).
  using Deliver = std::function<void(std::string piece, bool last)>;
  virtual ~ReplyStream() = default;
  // Asks for the next piece; `deliver` is called exactly once, unless the stream is cancelled.
  virtual void Next(Deliver deliver) = 0;
  // The connection is gone or the server stops: stop producing, drop a pending `deliver`.
  virtual void Cancel() = 0;
};

// A ReplyStream produced on its own thread. `produce` calls emit(piece) for each piece but the
// last, which it returns; emit blocks while one piece already waits to be written (so at most
// two pieces exist at once) and returns false once the stream is cancelled, when `produce`
// should stop (what it then returns is dropped). Destroying the stream cancels it and waits for
// the thread.
class WorkerStream : public ReplyStream {
 public:
  using Emit = std::function<bool(std::string piece)>;
  using Produce = std::function<std::string(const Emit& emit)>;
  explicit WorkerStream(Produce produce);
  ~WorkerStream() override;
  WorkerStream(const WorkerStream&) = delete;
  WorkerStream& operator=(const WorkerStream&) = delete;
  void Next(Deliver deliver) override;
  void Cancel() override;

 private:
  bool Put(std::string piece, bool last);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::string, bool>> ready_;  // at most one piece waits here
  Deliver waiting_;                                 // the connection waits for a piece
  bool cancelled_ = false;
  std::thread thread_;  // last: started once everything above exists
};

// The conversation on one connection. OnData gets the bytes as they arrive and appends what to
// send back to *reply; returning false closes the connection once the reply is written.
// After the reply is written the connection calls TakeStream: a stream it gets is written out.
// Then, while HasPendingRequests says the session still holds requests it has not answered
// (it stopped at a stream, or because its reply had grown large), OnData is called with no new
// bytes; only then are more bytes read. Nothing is read while a reply or a stream is being
// written, so a client that sends requests but does not read the replies stops being read from
// once the socket buffers are full, and the replies it is owed wait as requests, not as memory.
class Session {
 public:
  virtual ~Session() = default;
  virtual bool OnData(std::string_view bytes, std::string* reply) = 0;
  virtual std::shared_ptr<ReplyStream> TakeStream() { return nullptr; }
  virtual bool HasPendingRequests() const { return false; }
};

struct StreamServerOptions {
  std::string name;  // for logs: "query", "socketmap"
  std::string path;
  uint32_t mode = 0660;
  std::string group;  // "" keeps the daemon's group
  size_t max_connections = 64;
  std::chrono::milliseconds idle_timeout{60000};
  // Sent (then the connection is closed) to a client over the connection limit, which it is
  // given (SetLimits may have changed it since the start).
  std::function<std::string(size_t max_connections)> busy_reply;
};

struct StreamServerStats {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused_busy{0};
  std::atomic<uint64_t> idle_closed{0};
  std::atomic<uint64_t> active{0};
};

// The streams of a server's live connections, so that Stop can cancel them: after Stop no
// producer thread hands anything to the io_context any more (it may be destroyed next).
class StreamRegistry {
 public:
  // A stream added after CancelAll is cancelled at once: a connection on another io thread may
  // take its stream while the server stops, and a producer left running would hand its next
  // piece to an io_context that is being destroyed.
  void Add(const std::shared_ptr<ReplyStream>& stream);
  void CancelAll();

 private:
  std::mutex mu_;
  std::vector<std::weak_ptr<ReplyStream>> streams_;
  bool closed_ = false;
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
  // Stops accepting and removes the socket file; open connections finish on their own, except
  // that replies still being produced (exports, imports' commits) are cancelled.
  void Stop();
  const StreamServerStats& stats() const { return *stats_; }
  const std::string& path() const { return options_.path; }
  // Gives the socket file a new mode and group (reload): who may connect changes now, for the
  // connections that follow. Errors name the socket and the reason.
  Status SetModeAndGroup(uint32_t mode, const std::string& group);
  // New connection limit and idle timeout (reload), for the connections accepted after it; the
  // open ones keep theirs. Thread-safe.
  void SetLimits(size_t max_connections, std::chrono::milliseconds idle_timeout);

 private:
  StreamServer(boost::asio::io_context& io, StreamServerOptions options, SessionFactory factory,
               boost::asio::local::stream_protocol::acceptor acceptor);
  void Accept();
  // Logs (rate-limited) and accepts again: at once after a failure of that one connection,
  // later after one that would repeat (see the header comment).
  void AcceptFailed(const boost::system::error_code& ec);

  boost::asio::io_context& io_;
  StreamServerOptions options_;
  SessionFactory factory_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::shared_ptr<StreamServerStats> stats_;
  std::shared_ptr<StreamRegistry> streams_;
  // options_' max_connections and idle_timeout, as SetLimits may change them from another thread.
  std::atomic<size_t> max_connections_;
  std::atomic<int64_t> idle_timeout_ms_;
  std::atomic<bool> stopped_{false};
  // Accepting again after a failure. Used by the accept handler only (one accept at a time).
  boost::asio::steady_timer accept_retry_;
  std::chrono::milliseconds accept_backoff_{0};  // 0: the last accept worked
  uint64_t accept_failures_unlogged_ = 0;
  std::optional<std::chrono::steady_clock::time_point> last_accept_warning_;
};

}  // namespace bounced
