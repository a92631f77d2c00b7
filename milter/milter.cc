// milter.cc: the libmilter glue. Registers the callbacks, runs libmilter's listener on a
// background thread, keeps per-connection state (milter/session.h decides), records through the
// daemon's dependencies on worker threads, and keeps counters and the RCPT latency histogram.
//
// libmilter's smfi_main() would also start a thread that sigwait()s for SIGHUP/SIGTERM/SIGINT and
// stops the milter on any of them, stealing the daemon's reload signal. So StartMilter calls
// libmilter's listener (mi_listener, exported by libmilter) directly, on a thread that blocks
// those signals; the daemon keeps its own signal handling.
#include "milter/milter.h"

#include <arpa/inet.h>
#include <grp.h>
#include <libmilter/mfapi.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "common/user_db.h"
#include "milter/session.h"

extern "C" int mi_listener(char* conn, int dbg, smfiDesc_ptr smfi, time_t timeout, int backlog);

namespace bounced {
namespace {

using namespace milter_internal;
using Clock = std::chrono::steady_clock;

// How long libmilter waits for the next command from Postfix before dropping the connection;
// an idle SMTP session holds its milter connection (smtpd_timeout is 300 s by default).
constexpr time_t kMtaIoTimeoutSeconds = 900;
constexpr int kListenBacklog = 256;
// Jobs waiting for one worker (enforcement records, or bounce work); beyond this they are
// dropped and counted, so a stuck storage never grows memory without bound.
constexpr size_t kMaxWorkerQueue = 20000;

struct Counters {
  std::atomic<uint64_t> connections{0}, smtpd_messages{0}, non_smtpd_messages{0}, rcpt_checked{0},
      rcpt_rejected{0}, rcpt_tempfailed{0}, rcpt_logged{0}, rcpt_removed{0}, bounces_seen{0},
      bounce_recipients{0}, bounces_discarded{0}, bounces_quarantined{0}, bounces_truncated{0},
      bounces_incomplete{0}, bounces_verp{0}, storage_errors{0}, storage_incidents{0},
      callback_timeouts{0}, dropped_records{0};
  std::array<std::atomic<uint64_t>, MilterStats::kRcptBuckets> rcpt_latency{};
};

// One thread running queued jobs in order.
class Worker {
 public:
  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  bool Post(std::function<void()> job) {
    std::lock_guard l(mu_);
    if (stopping_ || jobs_.size() >= kMaxWorkerQueue) return false;
    jobs_.push_back(std::move(job));
    cv_.notify_one();
    return true;
  }
  // Runs what is queued, then joins.
  void Stop() {
    {
      std::lock_guard l(mu_);
      stopping_ = true;
      cv_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Run() {
    std::unique_lock l(mu_);
    for (;;) {
      cv_.wait(l, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      l.unlock();
      job();
      l.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

struct Global {
  // Guards `active` and `deps`: callbacks hold it shared while they use the dependencies;
  // StopMilter takes it exclusively, so after it returns nothing touches them.
  std::shared_mutex mu;
  bool active = false;
  MilterDependencies deps;
  // The configuration in force; ReconfigureMilter swaps it. A session takes it at MAIL FROM.
  std::mutex config_mu;
  std::shared_ptr<const MilterConfig> config = std::make_shared<const MilterConfig>();
  Counters counters;
  std::atomic<bool> in_storage_incident{false};
  std::atomic<bool> started{false};
  std::mutex lifecycle_mu;
  // Two queues: each enforcement record waits for its commit (up to the dependency's
  // commit_wait), so on a busy or locked database a few of them would hold a single worker for
  // seconds, and the bounce work that end of message waits for (bounded by callback_timeout)
  // would time out behind them.
  Worker record_worker;  // enforcement records (RecordEnforcementAsync)
  Worker bounce_worker;  // end-of-message bounce work (ProcessBounce)
  std::thread listener;
  std::atomic<bool> listener_done{false};
  std::string conn;
  std::string unix_path;
};

// Leaked on purpose: libmilter session threads are detached and may still run a callback while
// the process exits; they must never see a destroyed object.
Global& G() {
  static Global* g = new Global;
  return *g;
}

std::shared_ptr<const MilterConfig> ConfigInForce() {
  Global& g = G();
  std::lock_guard l(g.config_mu);
  return g.config;
}

void NoteStorage(const Status& s, std::string_view what) {
  Global& g = G();
  if (s.ok()) {
    if (g.in_storage_incident.load(std::memory_order_relaxed) &&
        g.in_storage_incident.exchange(false)) {
      spdlog::info("milter: storage available again ({})", what);
    }
    return;
  }
  g.counters.storage_errors.fetch_add(1, std::memory_order_relaxed);
  if (!g.in_storage_incident.exchange(true)) {
    g.counters.storage_incidents.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn(
        "milter: storage unavailable ({}: {}); answering per on_storage_error = {} "
        "until it recovers (logged once per incident)",
        what, s.message(), ToString(ConfigInForce()->on_storage_error));
  }
}

void RecordEnforcementAsync(Enforcement e) {
  Global& g = G();
  bool posted = g.record_worker.Post([e = std::move(e)] {
    Global& g = G();
    std::shared_lock l(g.mu);
    if (!g.active) return;
    NoteStorage(g.deps.record_enforcement(e), "record enforcement");
  });
  if (!posted) g.counters.dropped_records.fetch_add(1, std::memory_order_relaxed);
}

struct Session {
  unsigned long protocol = 0;  // negotiated SMFIP_* flags
  MailPath path = MailPath::kSmtpd;
  // The current message (reset at MAIL FROM and on abort).
  // The configuration in force at its MAIL FROM, kept to its end.
  std::shared_ptr<const MilterConfig> config;
  std::string sender;
  bool null_sender = false;
  size_t kept_rcpts = 0;
  bool lookup_failed = false;
  std::vector<PendingRemoval> removals;
  std::optional<BounceSniffer> sniffer;
  std::unique_ptr<MessageBuffer> buffer;
  // While a bounce may be captured: its envelope recipients, brackets stripped (at most
  // two: with more than one it is no VERP bounce anyway).
  std::vector<std::string> rcpts;

  void ResetMessage() {
    config.reset();
    sender.clear();
    rcpts.clear();
    null_sender = false;
    kept_rcpts = 0;
    lookup_failed = false;
    removals.clear();
    sniffer.reset();
    buffer.reset();
  }
  sfsistat Reply(unsigned long noreply_flag, sfsistat otherwise) const {
    return (protocol & noreply_flag) ? SMFIS_NOREPLY : otherwise;
  }
};

Session* Get(SMFICTX* ctx) { return static_cast<Session*>(smfi_getpriv(ctx)); }

std::string Macro(SMFICTX* ctx, const char* name) {
  const char* v = smfi_getsymval(ctx, const_cast<char*>(name));
  return v ? std::string(v) : std::string();
}

sfsistat OnNegotiate(SMFICTX* ctx, unsigned long f0, unsigned long f1, unsigned long, unsigned long,
                     unsigned long* pf0, unsigned long* pf1, unsigned long* pf2,
                     unsigned long* pf3) {
  auto* s = Get(ctx);
  if (s == nullptr) {
    s = new Session;
    smfi_setpriv(ctx, s);
  }
  *pf0 = f0 & (SMFIF_ADDHDRS | SMFIF_DELRCPT);
  // Skip steps the milter does not use, and do not answer each header (one round trip fewer
  // per header). SKIP lets the body of a message that is no bounce go unsent.
  // EOH is answered: for a message that is no bounce and needs no change, ACCEPT there spares
  // Postfix sending the body and the end-of-message round trip.
  unsigned long want = SMFIP_NOHELO | SMFIP_NOUNKNOWN | SMFIP_NODATA | SMFIP_NR_HDR |
                       SMFIP_NR_CONN | SMFIP_NR_MAIL | SMFIP_SKIP;
  *pf1 = f1 & want;
  *pf2 = 0;
  *pf3 = 0;
  s->protocol = *pf1;
  return SMFIS_CONTINUE;
}

sfsistat OnConnect(SMFICTX* ctx, char* hostname, _SOCK_ADDR* hostaddr) {
  auto* s = Get(ctx);
  if (s == nullptr) {
    s = new Session;
    smfi_setpriv(ctx, s);
  }
  G().counters.connections.fetch_add(1, std::memory_order_relaxed);
  int family = 0, port = 0;
  char addr[INET6_ADDRSTRLEN] = "";
  if (hostaddr != nullptr) {
    family = hostaddr->sa_family;
    if (family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(hostaddr);
      inet_ntop(AF_INET, &in->sin_addr, addr, sizeof addr);
      port = ntohs(in->sin_port);
    } else if (family == AF_INET6) {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(hostaddr);
      inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof addr);
      port = ntohs(in6->sin6_port);
    }
  }
  s->path = ClassifyPath(hostname ? hostname : "", family, addr, port);
  spdlog::debug("milter: connect host={} addr={} port={} path={}", hostname ? hostname : "", addr,
                port, s->path == MailPath::kNonSmtpd ? "non_smtpd" : "smtpd");
  return s->Reply(SMFIP_NR_CONN, SMFIS_CONTINUE);
}

sfsistat OnEnvFrom(SMFICTX* ctx, char** argv) {
  auto* s = Get(ctx);
  if (s == nullptr) return SMFIS_CONTINUE;
  s->ResetMessage();
  s->config = ConfigInForce();
  s->sender = std::string(StripAngles(argv && argv[0] ? argv[0] : ""));
  s->null_sender = s->sender.empty();
  s->sniffer.emplace(s->null_sender);
  s->buffer = std::make_unique<MessageBuffer>(s->config->max_bounce_bytes);
  auto& c = G().counters;
  (s->path == MailPath::kNonSmtpd ? c.non_smtpd_messages : c.smtpd_messages)
      .fetch_add(1, std::memory_order_relaxed);
  return s->Reply(SMFIP_NR_MAIL, SMFIS_CONTINUE);
}

sfsistat OnEnvRcpt(SMFICTX* ctx, char** argv) {
  auto start = Clock::now();
  auto* s = Get(ctx);
  if (s == nullptr || argv == nullptr || argv[0] == nullptr) return SMFIS_CONTINUE;
  Global& g = G();
  std::string_view raw = argv[0];
  std::string_view address = StripAngles(raw);
  sfsistat verdict = SMFIS_CONTINUE;
  if (!s->config) s->config = ConfigInForce();  // RCPT before any MAIL FROM: not from Postfix
  {
    std::shared_lock l(g.mu);
    if (!g.active) return SMFIS_CONTINUE;
    Expected<std::optional<MilterSuppression>> hit = g.deps.lookup(address);
    RcptDecision d = DecideRcpt(*s->config, s->path, s->null_sender, address, hit);
    if (d.storage_error) {
      s->lookup_failed = true;
      NoteStorage(hit.status(), "suppression lookup");
    } else if (g.in_storage_incident.load(std::memory_order_relaxed)) {
      NoteStorage(Status::Ok(), "suppression lookup");
    }
    switch (d.kind) {
      case RcptDecision::Kind::kReject:
      case RcptDecision::Kind::kTempfail:
        smfi_setreply(ctx, d.reply.code.data(), d.reply.xcode.data(), d.reply.text.data());
        verdict = d.kind == RcptDecision::Kind::kReject ? SMFIS_REJECT : SMFIS_TEMPFAIL;
        break;
      case RcptDecision::Kind::kContinue:
        break;
    }
    if (s->buffer && verdict == SMFIS_CONTINUE && s->rcpts.size() < 2) {
      s->rcpts.emplace_back(address);
    }
    if (d.remove_at_eom) {
      s->removals.push_back(PendingRemoval{std::string(raw), std::string(address), *d.hit});
    } else if (verdict == SMFIS_CONTINUE) {
      ++s->kept_rcpts;
    }
    if (d.record) {
      auto& ctr = *d.record == EnforcementKind::kRejected     ? g.counters.rcpt_rejected
                  : *d.record == EnforcementKind::kTempfailed ? g.counters.rcpt_tempfailed
                                                              : g.counters.rcpt_logged;
      ctr.fetch_add(1, std::memory_order_relaxed);
      RecordEnforcementAsync(
          Enforcement{*d.record, std::string(address), s->sender, Macro(ctx, "i"), *d.hit});
    }
  }
  g.counters.rcpt_checked.fetch_add(1, std::memory_order_relaxed);
  uint64_t ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
  size_t bucket =
      std::min<uint64_t>(ns / MilterStats::kRcptBucketNs, MilterStats::kRcptBuckets - 1);
  g.counters.rcpt_latency[bucket].fetch_add(1, std::memory_order_relaxed);
  return verdict;
}

sfsistat OnHeader(SMFICTX* ctx, char* name, char* value) {
  auto* s = Get(ctx);
  if (s == nullptr) return SMFIS_CONTINUE;
  if (s->buffer && name && value) {
    s->sniffer->Header(name, value);
    s->buffer->Header(name, value);
  }
  return s->Reply(SMFIP_NR_HDR, SMFIS_CONTINUE);
}

sfsistat OnEoh(SMFICTX* ctx) {
  auto* s = Get(ctx);
  if (s == nullptr) return SMFIS_CONTINUE;
  if (s->buffer) {
    if (s->sniffer && s->sniffer->candidate()) {
      s->buffer->EndOfHeaders();
      return SMFIS_CONTINUE;
    }
    s->buffer.reset();  // not a bounce: nothing of the body is needed
  }
  // Nothing left to do at end of message (no removal, no tempfail pending): accept now.
  bool eom_work =
      !s->removals.empty() || (s->lookup_failed && s->path == MailPath::kNonSmtpd && s->config &&
                               s->config->on_storage_error == StorageErrorPolicy::kTempfail);
  if (!eom_work) {
    s->ResetMessage();
    return SMFIS_ACCEPT;
  }
  return SMFIS_CONTINUE;
}

sfsistat OnBody(SMFICTX* ctx, unsigned char* chunk, size_t len) {
  auto* s = Get(ctx);
  bool can_skip = s && (s->protocol & SMFIP_SKIP);
  if (s == nullptr || !s->buffer) return can_skip ? SMFIS_SKIP : SMFIS_CONTINUE;
  s->buffer->Body(std::string_view(reinterpret_cast<const char*>(chunk), len));
  if (s->buffer->truncated() && can_skip) return SMFIS_SKIP;
  return SMFIS_CONTINUE;
}

// Outcome of the end-of-message bounce work (run on the worker).
struct BounceOutcome {
  bool is_bounce = false;
  bool discard = false;
};

// The recipient a bounce is about by its VERP return path: its one envelope recipient, when
// [verp] is on and that address is one.
std::optional<std::string> VerpRecipient(const MilterConfig& config,
                                         const std::vector<std::string>& rcpts) {
  const std::optional<VerpFormat>& verp = config.verp;
  if (!verp || rcpts.size() != 1) return std::nullopt;
  return DecodeVerp(rcpts[0], *verp);
}

BounceOutcome ProcessBounce(const MilterConfig& config, const std::string& raw, bool truncated,
                            const std::string& queue_id, const std::vector<std::string>& rcpts) {
  BounceOutcome out;
  Global& g = G();
  std::shared_lock l(g.mu);
  if (!g.active) return out;
  std::shared_ptr<const RuleSet> rules = g.deps.rules ? g.deps.rules() : nullptr;
  if (!rules) return out;
  // A capture cut at max_bounce_bytes is read as cut short: a line it cut (a recipient's
  // address), even inside a base64 part, is not read as if it were whole.
  ParsedBounce parsed = ParseBounce(raw, *rules, truncated);
  if (parsed.kind == MessageKind::kNotBounce || parsed.recipients.empty()) return out;
  if (std::optional<std::string> ours = VerpRecipient(config, rcpts);
      ours && ApplyVerp(&parsed, *ours, *rules) != 0) {
    g.counters.bounces_verp.fetch_add(1, std::memory_order_relaxed);
  }
  out.is_bounce = true;
  g.counters.bounces_seen.fetch_add(1, std::memory_order_relaxed);
  // Read in part: the capture stopped at max_bounce_bytes, or a parser limit cut the message
  // short. What was read is recorded; the message itself is never discarded then.
  if (truncated) {
    g.counters.bounces_truncated.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn(
        "milter: bounce {} is longer than milter.max_bounce_bytes ({}); only that much "
        "was read",
        queue_id, config.max_bounce_bytes);
  }
  if (!parsed.warnings.empty()) {
    g.counters.bounces_incomplete.fetch_add(1, std::memory_order_relaxed);
    for (const std::string& w : parsed.warnings) spdlog::warn("milter: bounce {}: {}", queue_id, w);
  }
  CapturedBounce cb;
  cb.parsed = &parsed;
  cb.raw_message = raw;
  cb.dedup_key = BounceDedupKey(parsed, raw);
  cb.queue_id = queue_id;
  cb.truncated = truncated;
  Status recorded = g.deps.record_bounce(cb);
  NoteStorage(recorded, "record bounce");
  if (!recorded.ok()) return out;  // keep what could not be recorded
  g.counters.bounce_recipients.fetch_add(parsed.recipients.size(), std::memory_order_relaxed);
  if (config.bounces != BounceDisposition::kKeep &&
      !MayRemoveBounce(config.bounces, !truncated, parsed.warnings.empty())) {
    spdlog::warn("milter: bounce {} kept, not {}: {}", queue_id,
                 config.bounces == BounceDisposition::kDiscard ? "discarded" : "quarantined",
                 truncated ? "only part of it was captured" : "a parser limit cut it short");
    return out;
  }
  switch (config.bounces) {
    case BounceDisposition::kKeep:
      break;
    case BounceDisposition::kDiscard:
      out.discard = true;
      break;
    case BounceDisposition::kQuarantine: {
      auto path = WriteQuarantine(config.quarantine_dir, cb.dedup_key, raw);
      if (!path.ok()) {
        spdlog::warn("milter: bounce {} kept: {}", queue_id, path.error());
        break;
      }
      spdlog::info("milter: bounce {} quarantined to {}", queue_id, path.value());
      g.counters.bounces_quarantined.fetch_add(1, std::memory_order_relaxed);
      out.discard = true;
      break;
    }
  }
  if (out.discard && config.bounces == BounceDisposition::kDiscard) {
    g.counters.bounces_discarded.fetch_add(1, std::memory_order_relaxed);
  }
  return out;
}

sfsistat OnEom(SMFICTX* ctx) {
  auto* s = Get(ctx);
  if (s == nullptr) return SMFIS_CONTINUE;
  Global& g = G();
  if (!s->config) s->config = ConfigInForce();
  const std::shared_ptr<const MilterConfig> config = s->config;
  std::string queue_id = Macro(ctx, "i");
  sfsistat verdict = SMFIS_CONTINUE;
  // Only a message the parser read as a bounce keeps its suppressed recipients (a bounce is never
  // refused). A timeout or a full queue leaves it unknown: removals (which exist only for a
  // non-null sender) still apply, as they would to any message of that sender.
  bool is_bounce = false;
  if (s->buffer) {
    auto task = std::make_shared<std::packaged_task<BounceOutcome()>>(
        [config, raw = s->buffer->bytes(), truncated = s->buffer->truncated(), queue_id,
         rcpts = s->rcpts] { return ProcessBounce(*config, raw, truncated, queue_id, rcpts); });
    auto done = task->get_future();
    if (g.bounce_worker.Post([task] { (*task)(); })) {
      if (done.wait_for(config->callback_timeout) == std::future_status::ready) {
        BounceOutcome out = done.get();
        is_bounce = out.is_bounce;
        if (out.discard) verdict = SMFIS_DISCARD;
      } else {
        // Not discarded or quarantined as a bounce; the worker still records it when it gets
        // there.
        g.counters.callback_timeouts.fetch_add(1, std::memory_order_relaxed);
        spdlog::warn(
            "milter: bounce processing of {} exceeded {} ms; handled as no bounce (recorded "
            "later if it is one)",
            queue_id, config->callback_timeout.count());
      }
    } else {
      g.counters.dropped_records.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (!is_bounce && !s->removals.empty()) {
    bool all = s->kept_rcpts == 0;
    if (all) {
      verdict = SMFIS_DISCARD;
    } else {
      for (const auto& r : s->removals) smfi_delrcpt(ctx, const_cast<char*>(r.raw.c_str()));
      std::string header = RemovalHeaderValue(s->removals);
      smfi_addheader(ctx, const_cast<char*>(config->removed_header.c_str()), header.data());
    }
    for (const auto& r : s->removals) {
      g.counters.rcpt_removed.fetch_add(1, std::memory_order_relaxed);
      RecordEnforcementAsync(
          Enforcement{all ? EnforcementKind::kMessageDiscarded : EnforcementKind::kRemoved,
                      r.address, s->sender, queue_id, r.suppression});
    }
    spdlog::info("milter: {}: {} suppressed recipient(s) of sendmail(1) mail {}: {}", queue_id,
                 s->removals.size(), all ? "discarded (no recipient left)" : "removed",
                 RemovalHeaderValue(s->removals));
  }
  if (verdict == SMFIS_CONTINUE && s->lookup_failed && s->path == MailPath::kNonSmtpd &&
      !s->null_sender && config->on_storage_error == StorageErrorPolicy::kTempfail) {
    verdict = SMFIS_TEMPFAIL;
  }
  s->ResetMessage();
  return verdict;
}

sfsistat OnAbort(SMFICTX* ctx) {
  if (auto* s = Get(ctx)) s->ResetMessage();
  return SMFIS_CONTINUE;
}

sfsistat OnClose(SMFICTX* ctx) {
  delete Get(ctx);
  smfi_setpriv(ctx, nullptr);
  return SMFIS_CONTINUE;
}

smfiDesc MakeDesc() {
  smfiDesc d{};
  d.xxfi_name = const_cast<char*>("bounced");
  d.xxfi_version = SMFI_VERSION;
  d.xxfi_flags = SMFIF_ADDHDRS | SMFIF_DELRCPT;
  d.xxfi_connect = OnConnect;
  d.xxfi_envfrom = OnEnvFrom;
  d.xxfi_envrcpt = OnEnvRcpt;
  d.xxfi_header = OnHeader;
  d.xxfi_eoh = OnEoh;
  d.xxfi_body = OnBody;
  d.xxfi_eom = OnEom;
  d.xxfi_abort = OnAbort;
  d.xxfi_close = OnClose;
  d.xxfi_negotiate = OnNegotiate;
  return d;
}

smfiDesc& Desc() {
  static smfiDesc d = MakeDesc();
  return d;
}

std::string UnixPathOf(const std::string& spec) {
  if (spec.starts_with("unix:")) return spec.substr(5);
  if (spec.starts_with("local:")) return spec.substr(6);
  if (spec.starts_with("/")) return spec;
  return "";
}

// Wakes libmilter's accept loop (it checks for stop every few seconds otherwise).
void PokeListener(const std::string& spec, const std::string& unix_path) {
  int fd = -1;
  if (!unix_path.empty()) {
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", unix_path.c_str());
    if (fd >= 0) (void)connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  } else if (spec.starts_with("inet:")) {
    std::string rest = spec.substr(5);
    auto at = rest.find('@');
    int port = std::atoi(rest.substr(0, at).c_str());
    std::string host = at == std::string::npos ? "127.0.0.1" : rest.substr(at + 1);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1 || sa.sin_addr.s_addr == 0) {
      inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) (void)connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  }
  if (fd >= 0) close(fd);
}

// What a configuration needs of this machine beyond ValidateMilterConfig: a writable quarantine
// directory when bounces are quarantined, and a socket_group that exists (its gid, or -1 for
// none).
Expected<gid_t> CheckOnThisMachine(const MilterConfig& config) {
  if (Status s = ValidateMilterConfig(config); !s.ok()) return s;
  if (config.bounces == BounceDisposition::kQuarantine &&
      access(config.quarantine_dir.c_str(), W_OK | X_OK) != 0) {
    return Status::Error("milter.quarantine_dir: " + config.quarantine_dir +
                         " is not a writable directory: " + strerror(errno));
  }
  if (config.socket_group.empty()) return static_cast<gid_t>(-1);
  std::optional<gid_t> gid = GroupId(config.socket_group);
  if (!gid) return Status::Error("milter.socket_group: no group " + config.socket_group);
  return *gid;
}

// Gives a unix socket's file its mode and group (libmilter creates it with the process umask;
// Postfix, user postfix, must connect). A failure is said, not fatal.
void SetSocketModeAndGroup(const std::string& unix_path, uint32_t mode, gid_t group) {
  if (unix_path.empty()) return;
  if (chmod(unix_path.c_str(), mode) != 0 ||
      (group != static_cast<gid_t>(-1) && chown(unix_path.c_str(), -1, group) != 0)) {
    spdlog::warn("milter: cannot set mode/group of {}: {}", unix_path, strerror(errno));
  }
}

}  // namespace

Status StartMilter(const MilterConfig& config, MilterDependencies deps) {
  Global& g = G();
  std::lock_guard lifecycle(g.lifecycle_mu);
  if (config.socket.empty()) return Status::Error("milter: no socket configured");
  Expected<gid_t> group = CheckOnThisMachine(config);
  if (!group.ok()) return group.status();
  if (!deps.lookup || !deps.record_enforcement || !deps.record_bounce || !deps.rules) {
    return Status::Error(
        "milter: missing dependency (lookup, record_enforcement, record_bounce "
        "and rules are all required)");
  }
  if (g.started.load()) {
    return Status::Error("milter: already started in this process (libmilter is process-global)");
  }
  g.conn = config.socket;
  g.unix_path = UnixPathOf(config.socket);
  if (smfi_register(Desc()) != MI_SUCCESS) return Status::Error("milter: smfi_register failed");
  if (smfi_setconn(g.conn.data()) != MI_SUCCESS) {
    return Status::Error("milter: bad socket spec " + config.socket);
  }
  smfi_setbacklog(kListenBacklog);
  // Writes to a Postfix that went away must fail with EPIPE, not kill the daemon.
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
  if (smfi_opensocket(true) != MI_SUCCESS) {
    return Status::Error("milter: cannot listen on " + config.socket +
                         " (in use, or directory missing / not writable)");
  }
  g.started = true;
  SetSocketModeAndGroup(g.unix_path, config.socket_mode, *group);
  {
    std::lock_guard l(g.config_mu);
    g.config = std::make_shared<const MilterConfig>(config);
  }
  {
    std::unique_lock l(g.mu);
    g.deps = std::move(deps);
    g.active = true;
  }
  g.record_worker.Start();
  g.bounce_worker.Start();
  g.listener = std::thread([] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGPIPE);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);  // inherited by libmilter's session threads
    Global& g = G();
    int r = mi_listener(g.conn.data(), 0, &Desc(), kMtaIoTimeoutSeconds, kListenBacklog);
    g.listener_done = true;
    bool active;
    {
      std::shared_lock l(g.mu);
      active = g.active;
    }
    if (active) {
      spdlog::error(
          "milter: listener on {} stopped unexpectedly (rc {}); Postfix applies "
          "milter_default_action",
          g.conn, r);
    }
  });
  spdlog::info("milter: listening on {} (action {}, bounces {}, on_storage_error {})",
               config.socket, ToString(config.default_action), ToString(config.bounces),
               ToString(config.on_storage_error));
  return Status::Ok();
}

void StopMilter() {
  Global& g = G();
  std::lock_guard lifecycle(g.lifecycle_mu);
  if (!g.started.load() || !g.listener.joinable()) return;
  {
    std::unique_lock l(g.mu);
    g.active = false;
  }
  // smfi_stop() marks the stop at once, then waits for the listener's lock, which the listener
  // holds in select() for up to 5 s; a connection wakes it, so it sees the stop and returns.
  std::thread stopper([] { smfi_stop(); });
  for (int i = 0; i < 200 && !g.listener_done.load(); ++i) {
    PokeListener(g.conn, g.unix_path);
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  g.listener.join();
  stopper.join();
  g.bounce_worker.Stop();
  g.record_worker.Stop();
  std::unique_lock l(g.mu);
  g.deps = MilterDependencies{};
  spdlog::info("milter: stopped");
}

Status ReconfigureMilter(const MilterConfig& config) {
  Global& g = G();
  std::lock_guard lifecycle(g.lifecycle_mu);
  if (!MilterRunning()) return Status::Error("milter: not running");
  Expected<gid_t> group = CheckOnThisMachine(config);
  if (!group.ok()) return group.status();
  auto next = std::make_shared<MilterConfig>(config);
  std::shared_ptr<const MilterConfig> running = ConfigInForce();
  next->socket = running->socket;
  if (next->socket_mode != running->socket_mode || next->socket_group != running->socket_group) {
    SetSocketModeAndGroup(g.unix_path, next->socket_mode, *group);
  }
  {
    std::lock_guard l(g.config_mu);
    g.config = std::move(next);
  }
  spdlog::info("milter: action {}, bounces {}, on_storage_error {} for the next messages",
               ToString(config.default_action), ToString(config.bounces),
               ToString(config.on_storage_error));
  return Status::Ok();
}

MilterConfig CurrentMilterConfig() { return *ConfigInForce(); }

bool MilterRunning() {
  Global& g = G();
  std::shared_lock l(g.mu);
  return g.active;
}

MilterStats GetMilterStats() {
  const Counters& c = G().counters;
  MilterStats s;
  auto ld = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  s.connections = ld(c.connections);
  s.smtpd_messages = ld(c.smtpd_messages);
  s.non_smtpd_messages = ld(c.non_smtpd_messages);
  s.rcpt_checked = ld(c.rcpt_checked);
  s.rcpt_rejected = ld(c.rcpt_rejected);
  s.rcpt_tempfailed = ld(c.rcpt_tempfailed);
  s.rcpt_logged = ld(c.rcpt_logged);
  s.rcpt_removed = ld(c.rcpt_removed);
  s.bounces_seen = ld(c.bounces_seen);
  s.bounce_recipients = ld(c.bounce_recipients);
  s.bounces_discarded = ld(c.bounces_discarded);
  s.bounces_quarantined = ld(c.bounces_quarantined);
  s.bounces_truncated = ld(c.bounces_truncated);
  s.bounces_incomplete = ld(c.bounces_incomplete);
  s.bounces_verp = ld(c.bounces_verp);
  s.storage_errors = ld(c.storage_errors);
  s.storage_incidents = ld(c.storage_incidents);
  s.callback_timeouts = ld(c.callback_timeouts);
  s.dropped_records = ld(c.dropped_records);
  s.rcpt_latency.resize(MilterStats::kRcptBuckets);
  for (size_t i = 0; i < MilterStats::kRcptBuckets; ++i) s.rcpt_latency[i] = ld(c.rcpt_latency[i]);
  return s;
}

}  // namespace bounced
