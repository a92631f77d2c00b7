// stream_server.cc: Unix socket listener, connection limit, idle timeout, replies written in
// pieces as their producer thread makes them (see stream_server.h).
#include "daemon/stream_server.h"

#include <grp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/user_db.h"

namespace bounced {
namespace {

using boost::asio::local::stream_protocol;
constexpr size_t kReadChunkBytes = 64 * 1024;

// True when something accepts connections at `path` (another bounced already running).
bool SomeoneListens(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  bool live = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return live;
}

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(stream_protocol::socket socket, std::unique_ptr<Session> session,
             std::chrono::milliseconds idle_timeout, std::shared_ptr<StreamServerStats> stats,
             std::shared_ptr<StreamRegistry> streams)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        session_(std::move(session)),
        idle_timeout_(idle_timeout),
        stats_(std::move(stats)),
        streams_(std::move(streams)) {
    ++stats_->active;
  }
  ~Connection() {
    if (stream_) stream_->Cancel();
    --stats_->active;
  }

  void Start() {
    ArmTimer();
    Read();
  }

 private:
  void ArmTimer() {
    timer_.expires_after(idle_timeout_);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec) return;  // cancelled: there was activity
      ++self->stats_->idle_closed;
      boost::system::error_code ignored;
      self->socket_.shutdown(stream_protocol::socket::shutdown_both, ignored);
      self->socket_.close(ignored);
    });
  }

  void Read() {
    socket_.async_read_some(
        boost::asio::buffer(buf_),
        [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
          if (ec) {
            self->timer_.cancel();
            return;
          }
          self->ArmTimer();
          self->reply_.clear();
          bool keep = self->session_->OnData(std::string_view(self->buf_.data(), n), &self->reply_);
          self->WriteThen(keep);
        });
  }

  void WriteThen(bool keep) {
    if (reply_.empty()) return AfterWrite(keep);
    boost::asio::async_write(
        socket_, boost::asio::buffer(reply_),
        [self = shared_from_this(), keep](const boost::system::error_code& ec, size_t) {
          if (ec) {
            self->timer_.cancel();
            return;
          }
          // A large reply's memory goes back once written: a connection that stays open for
          // small requests keeps little.
          if (self->reply_.capacity() > kReadChunkBytes) std::string().swap(self->reply_);
          self->AfterWrite(keep);
        });
  }

  void AfterWrite(bool keep) {
    if (!keep) return Close();
    stream_ = session_->TakeStream();
    if (stream_) {
      streams_->Add(stream_);
      return NextPiece();
    }
    if (session_->HasPendingRequests()) return AnswerPending();
    Read();
  }

  // Requests the session received earlier but has not answered yet, before reading more. The
  // client took the previous reply: it is not idle.
  void AnswerPending() {
    ArmTimer();
    reply_.clear();
    bool keep = session_->OnData({}, &reply_);
    WriteThen(keep);
  }

  // Waits for the producer: that is not the client idling, so the idle timer rests meanwhile.
  void NextPiece() {
    timer_.cancel();
    stream_->Next([self = shared_from_this()](std::string piece, bool last) mutable {
      // Moves the reference into the posted handler: nothing of the connection stays with the
      // producer (see ReplyStream::Deliver).
      std::shared_ptr<Connection> conn = std::move(self);
      auto executor = conn->socket_.get_executor();
      boost::asio::post(executor, [conn = std::move(conn), piece = std::move(piece),
                                   last]() mutable { conn->WritePiece(std::move(piece), last); });
    });
  }

  // The client has idle_timeout to take each piece.
  void WritePiece(std::string piece, bool last) {
    if (!stream_) return;  // cancelled meanwhile
    piece_ = std::move(piece);
    ArmTimer();
    boost::asio::async_write(
        socket_, boost::asio::buffer(piece_),
        [self = shared_from_this(), last](const boost::system::error_code& ec, size_t) {
          if (ec) {
            self->timer_.cancel();
            self->EndStream();
            return;
          }
          if (!last) return self->NextPiece();
          self->EndStream();
          self->AfterWrite(true);
        });
  }

  void EndStream() {
    piece_.clear();
    piece_.shrink_to_fit();
    if (!stream_) return;
    stream_->Cancel();
    stream_.reset();  // joins the producer thread when this was the last reference
  }

  void Close() {
    timer_.cancel();
    boost::system::error_code ignored;
    socket_.shutdown(stream_protocol::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  stream_protocol::socket socket_;
  boost::asio::steady_timer timer_;
  std::unique_ptr<Session> session_;
  std::chrono::milliseconds idle_timeout_;
  std::shared_ptr<StreamServerStats> stats_;
  std::shared_ptr<StreamRegistry> streams_;
  std::array<char, kReadChunkBytes> buf_{};
  std::string reply_;
  std::shared_ptr<ReplyStream> stream_;  // a reply being produced and written piece by piece
  std::string piece_;                    // the piece being written
};

}  // namespace

WorkerStream::WorkerStream(Produce produce) {
  thread_ = std::thread([this, produce = std::move(produce)] {
    std::string last = produce([this](std::string piece) { return Put(std::move(piece), false); });
    Put(std::move(last), true);
  });
}

WorkerStream::~WorkerStream() {
  Cancel();
  if (thread_.joinable()) thread_.join();
}

void WorkerStream::Next(Deliver deliver) {
  std::lock_guard lock(mu_);
  if (cancelled_) return;
  if (ready_.empty()) {
    waiting_ = std::move(deliver);
    return;
  }
  auto [piece, last] = std::move(ready_.front());
  ready_.pop_front();
  cv_.notify_all();
  deliver(std::move(piece), last);
}

void WorkerStream::Cancel() {
  Deliver dropped;  // may hold the last reference to the connection: released after the lock
  {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    dropped = std::move(waiting_);
    waiting_ = nullptr;
    ready_.clear();
  }
  cv_.notify_all();
}

bool WorkerStream::Put(std::string piece, bool last) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return cancelled_ || waiting_ || ready_.empty(); });
  if (cancelled_) return false;
  if (waiting_) {
    // Delivered under the lock, so that Cancel is a barrier: once it returns, nothing more is
    // handed to the connection's io_context.
    Deliver deliver = std::move(waiting_);
    waiting_ = nullptr;
    deliver(std::move(piece), last);
    return true;
  }
  ready_.emplace_back(std::move(piece), last);
  return true;
}

void StreamRegistry::Add(const std::shared_ptr<ReplyStream>& stream) {
  {
    std::lock_guard lock(mu_);
    if (!closed_) {
      std::erase_if(streams_, [](const std::weak_ptr<ReplyStream>& w) { return w.expired(); });
      streams_.push_back(stream);
      return;
    }
  }
  stream->Cancel();
}

void StreamRegistry::CancelAll() {
  std::vector<std::shared_ptr<ReplyStream>> live;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (auto& w : streams_) {
      if (auto s = w.lock()) live.push_back(std::move(s));
    }
    streams_.clear();
  }
  for (auto& s : live) s->Cancel();
  // `live` may hold the last references: their producer threads are joined here.
}

Expected<std::unique_ptr<StreamServer>> StreamServer::Listen(boost::asio::io_context& io,
                                                             StreamServerOptions options,
                                                             SessionFactory factory) {
  const std::string& path = options.path;
  if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return Status::Error(options.name + " socket " + path + ": path too long for a Unix socket");
  }
  std::error_code fec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, fec);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status::Error(options.name + " socket " + path + ": exists and is not a socket");
    }
    if (SomeoneListens(path)) {
      return Status::Error(options.name + " socket " + path +
                           ": another process is serving it (is bounced already running?)");
    }
    ::unlink(path.c_str());
  }
  boost::system::error_code ec;
  stream_protocol::acceptor acceptor(io);
  acceptor.open(stream_protocol(), ec);
  if (!ec) acceptor.bind(stream_protocol::endpoint(path), ec);
  if (!ec) acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::Error(options.name + " socket " + path + ": " + ec.message());
  if (::chmod(path.c_str(), options.mode) != 0) {
    return Status::Error(options.name + " socket " + path + ": chmod: " + std::strerror(errno));
  }
  if (!options.group.empty()) {
    std::optional<gid_t> gid = GroupId(options.group);
    if (!gid) {
      spdlog::warn("{} socket {}: group '{}' does not exist; only root may write", options.name,
                   path, options.group);
    } else if (::chown(path.c_str(), static_cast<uid_t>(-1), *gid) != 0) {
      spdlog::warn("{} socket {}: chown to group '{}': {}", options.name, path, options.group,
                   std::strerror(errno));
    }
  }
  return std::unique_ptr<StreamServer>(
      new StreamServer(io, std::move(options), std::move(factory), std::move(acceptor)));
}

Status StreamServer::SetModeAndGroup(uint32_t mode, const std::string& group) {
  const std::string& path = options_.path;
  if (::chmod(path.c_str(), mode) != 0) {
    return Status::Error(options_.name + " socket " + path + ": chmod: " + std::strerror(errno));
  }
  if (group.empty()) return Status::Ok();
  std::optional<gid_t> gid = GroupId(group);
  if (!gid) {
    return Status::Error(options_.name + " socket " + path + ": group '" + group +
                         "' does not exist; only root may write");
  }
  if (::chown(path.c_str(), static_cast<uid_t>(-1), *gid) != 0) {
    return Status::Error(options_.name + " socket " + path + ": chown to group '" + group +
                         "': " + std::strerror(errno));
  }
  return Status::Ok();
}

StreamServer::StreamServer(boost::asio::io_context& io, StreamServerOptions options,
                           SessionFactory factory,
                           boost::asio::local::stream_protocol::acceptor acceptor)
    : io_(io),
      options_(std::move(options)),
      factory_(std::move(factory)),
      acceptor_(std::move(acceptor)),
      stats_(std::make_shared<StreamServerStats>()),
      streams_(std::make_shared<StreamRegistry>()),
      max_connections_(options_.max_connections),
      idle_timeout_ms_(options_.idle_timeout.count()),
      accept_retry_(io) {}

StreamServer::~StreamServer() { Stop(); }

void StreamServer::SetLimits(size_t max_connections, std::chrono::milliseconds idle_timeout) {
  max_connections_ = max_connections;
  idle_timeout_ms_ = idle_timeout.count();
}

void StreamServer::Start() { Accept(); }

void StreamServer::Stop() {
  if (stopped_.exchange(true)) return;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  accept_retry_.cancel();
  ::unlink(options_.path.c_str());
  streams_->CancelAll();
}

void StreamServer::Accept() {
  acceptor_.async_accept(boost::asio::make_strand(io_), [this](const boost::system::error_code& ec,
                                                               stream_protocol::socket socket) {
    if (stopped_) return;
    if (ec) {
      if (ec == boost::asio::error::operation_aborted) return;
      return AcceptFailed(ec);
    }
    if (accept_backoff_.count() != 0) {
      spdlog::info("{} socket: accepting again ({} more failed accepts since the last warning)",
                   options_.name, accept_failures_unlogged_);
      accept_backoff_ = std::chrono::milliseconds(0);
      accept_failures_unlogged_ = 0;
    }
    ++stats_->accepted;
    if (const size_t max = max_connections_.load(); stats_->active >= max) {
      ++stats_->refused_busy;
      boost::system::error_code ignored;
      const std::string reply = options_.busy_reply ? options_.busy_reply(max) : std::string();
      boost::asio::write(socket, boost::asio::buffer(reply), ignored);
      socket.close(ignored);
      return Accept();
    }
    PeerCred cred;
    ucred uc{};
    socklen_t len = sizeof(uc);
    if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &uc, &len) == 0) {
      cred.pid = uc.pid;
      cred.uid = uc.uid;
      cred.gid = uc.gid;
    }
    std::make_shared<Connection>(std::move(socket), factory_(cred),
                                 std::chrono::milliseconds(idle_timeout_ms_.load()), stats_,
                                 streams_)
        ->Start();
    Accept();
  });
}

void StreamServer::AcceptFailed(const boost::system::error_code& ec) {
  // A client that went away before it was accepted is that connection's failure: the next one
  // is taken at once. Anything else (EMFILE and friends) would fail again right away.
  const bool that_connection_only =
      ec == boost::asio::error::connection_aborted || ec.value() == EPROTO;
  if (!that_connection_only) {
    accept_backoff_ = accept_backoff_.count() == 0 ? kAcceptRetryFirst
                                                   : std::min(2 * accept_backoff_, kAcceptRetryMax);
  }
  ++accept_failures_unlogged_;
  const auto now = std::chrono::steady_clock::now();
  if (!last_accept_warning_ || now - *last_accept_warning_ >= kAcceptWarningInterval) {
    spdlog::warn(
        "{} socket: accept failed: {} ({} time(s) since the last warning); retrying in {} ms",
        options_.name, ec.message(), accept_failures_unlogged_, accept_backoff_.count());
    last_accept_warning_ = now;
    accept_failures_unlogged_ = 0;
  }
  if (that_connection_only) return Accept();
  accept_retry_.expires_after(accept_backoff_);
  accept_retry_.async_wait([this](const boost::system::error_code& wait_ec) {
    if (wait_ec || stopped_) return;
    Accept();
  });
}

}  // namespace bounced
