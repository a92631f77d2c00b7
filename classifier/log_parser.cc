// log_parser.cc: LogCorrelator (see log_parser.h). Reads parsed lines (log_line.cc), keeps a
// bounded per-queue-id table (sender, size, nrcpt, message-id, DSN queue id, recipients whose
// last status was deferred) and turns delivery lines into classified DeliveryEvents. The event
// object is reused between calls so a steady stream allocates almost nothing per line.
#include <cstring>
#include <ctime>
#include <list>
#include <unordered_map>

#include "classifier/log_parser.h"
#include "classifier/log_reply.h"
#include "classifier/text.h"

namespace bounced {
namespace {

using sv = std::string_view;
using log_internal::BoundedCache;
using log_internal::CachedClass;

// Cache sizes: distinct reply shapes and (domain, remote host) pairs kept at once.
constexpr size_t kReplyCacheSets = 4096;
constexpr size_t kProviderCacheSets = 4096;

struct QueueKey {
  char id[24];
  uint8_t len = 0;
  explicit QueueKey(sv q) : len(static_cast<uint8_t>(q.size() < sizeof id ? q.size() : sizeof id)) {
    memcpy(id, q.data(), len);
  }
  sv view() const { return sv(id, len); }
  bool operator==(const QueueKey& o) const { return len == o.len && memcmp(id, o.id, len) == 0; }
};
struct QueueKeyHash {
  size_t operator()(const QueueKey& k) const { return std::hash<sv>{}(k.view()); }
};

// A recipient whose latest status was deferred: what an expiry must report for it.
struct Pending {
  std::string recipient;
  std::string orig_recipient;
  std::string relay;
  std::string dsn;
  std::string program;
  std::string reason;
};

struct QueueState {
  explicit QueueState(sv q) : key(q) {}
  QueueKey key;
  bool sender_known = false;
  std::string sender;
  std::string message_id;
  std::string bounce_queue_id;
  int64_t size = -1;
  int nrcpt = -1;
  std::vector<Pending> pending;
};

// Printable ASCII with single inner spaces: already what Sanitize would return.
bool IsClean(sv s) {
  if (s.empty()) return true;
  if (s.front() == ' ' || s.back() == ' ') return false;
  char prev = 0;
  for (char c : s) {
    if (c < 0x20 || c > 0x7e || (c == ' ' && prev == ' ')) return false;
    prev = c;
  }
  return true;
}

void AssignClean(std::string* dst, sv src, size_t max_bytes = kMaxDiagnosticBytes) {
  if (src.size() <= max_bytes && IsClean(src)) {
    dst->assign(src);
  } else {
    *dst = Sanitize(src, max_bytes);
  }
}

// Recipient as stored: sanitised, domain lower-cased, local part as given.
void AssignAddress(std::string* dst, sv src) {
  AssignClean(dst, src, 1024);
  size_t at = dst->rfind('@');
  if (at == std::string::npos) return;
  for (size_t i = at + 1; i < dst->size(); ++i) (*dst)[i] = AsciiLower((*dst)[i]);
}

int CurrentYear() {
  time_t now = time(nullptr);
  struct tm tm {};
  gmtime_r(&now, &tm);
  return tm.tm_year + 1900;
}

int ClassicMonth(sv ts) {
  static constexpr char kMonths[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  if (ts.size() < 3 || (ts[0] >= '0' && ts[0] <= '9')) return 0;
  for (int i = 0; i < 12; ++i) {
    if (memcmp(kMonths + 3 * i, ts.data(), 3) == 0) return i + 1;
  }
  return 0;
}

}  // namespace

struct LogCorrelator::Impl {
  Impl(std::shared_ptr<const RuleSet> r, Sink s)
      : rules(std::move(r)), sink(std::move(s)), year(CurrentYear()) {}

  std::shared_ptr<const RuleSet> rules;
  Sink sink;
  LogStats stats;
  int year;
  int utc_offset = 0;
  int last_month = 0;
  size_t max_tracked = kDefaultMaxTrackedQueueIds;

  // Least recently seen first; the index points into the list (stable iterators).
  std::list<QueueState> lru;
  std::unordered_map<QueueKey, std::list<QueueState>::iterator, QueueKeyHash> index;

  BoundedCache<CachedClass> classes{kReplyCacheSets};
  BoundedCache<std::string> providers{kProviderCacheSets};

  ParsedLogLine line;
  DeliveryEvent event;
  std::string key;

  void Feed(sv text);
  QueueState* Find(sv qid);
  QueueState* FindOrCreate(sv qid);
  void Erase(sv qid);
  void OnDelivery(const ParsedLogLine& p);
  void OnExpired(const ParsedLogLine& p);
  void FillCommon(const ParsedLogLine& p, const QueueState* st);
  void Classify(sv recipient_domain, sv relay, sv dsn, sv reason, sv log_status);
  sv Provider(sv domain, sv remote);
  void Emit() {
    ++stats.events;
    if (sink) sink(event);
  }
};

QueueState* LogCorrelator::Impl::Find(sv qid) {
  auto it = index.find(QueueKey(qid));
  if (it == index.end()) return nullptr;
  lru.splice(lru.end(), lru, it->second);  // now the most recently seen
  return &*it->second;
}

QueueState* LogCorrelator::Impl::FindOrCreate(sv qid) {
  if (QueueState* st = Find(qid)) return st;
  lru.emplace_back(qid);
  auto last = std::prev(lru.end());
  index.emplace(last->key, last);
  while (index.size() > max_tracked) {
    index.erase(lru.front().key);
    lru.pop_front();
    ++stats.evicted_queue_ids;
  }
  stats.tracked_queue_ids = index.size();
  if (stats.tracked_queue_ids > stats.max_tracked_queue_ids) {
    stats.max_tracked_queue_ids = stats.tracked_queue_ids;
  }
  return &*last;
}

void LogCorrelator::Impl::Erase(sv qid) {
  auto it = index.find(QueueKey(qid));
  if (it == index.end()) return;
  lru.erase(it->second);
  index.erase(it);
  stats.tracked_queue_ids = index.size();
}

sv LogCorrelator::Impl::Provider(sv domain, sv remote) {
  key.assign(domain);
  key.push_back('\x1f');
  key.append(remote);
  uint64_t h = BoundedCache<std::string>::Hash(key);
  if (std::string* hit = providers.Find(key, h)) return *hit;
  std::string* slot = providers.Insert(key, h);
  slot->assign(ProviderFor(*rules, domain, remote));
  return *slot;
}

void LogCorrelator::Impl::Classify(sv recipient_domain, sv relay, sv dsn, sv reason,
                                   sv log_status) {
  log_internal::ReasonParts rp = log_internal::AnalyzeReason(reason);
  sv remote = log_internal::RelayHost(relay);
  if (remote.empty()) remote = rp.remote_host;
  Result& r = event.result;
  // The DSN Action Postfix would write; "expired" tells the rules the queue lifetime ran out.
  sv action = log_status == "sent"       ? sv("delivered")
              : log_status == "deferred" ? sv("delayed")
              : log_status == "expired"  ? sv("expired")
                                         : sv("failed");
  sv provider = Provider(recipient_domain, remote);
  if (log_status == "sent") {
    // Postfix's status=sent is authoritative: no rule can make a delivery a failure.
    r.category = Category::kDelivered;
    r.status.assign(dsn);
    r.reply_code = ExtractReplyCode(rp.reply);
    r.stage.clear();
    r.provider.assign(provider);
    r.provider_code.clear();
    r.rule.assign("postfix-status");
  } else {
    // `provider` points into the provider cache, which building the key does not touch.
    log_internal::BuildReplyKey(provider, dsn, action, reason, &key);
    uint64_t h = BoundedCache<CachedClass>::Hash(key);
    CachedClass* c = classes.Find(key, h);
    if (c != nullptr) {
      ++stats.classify_cache_hits;
    } else {
      ++stats.classify_calls;
      ReplyInput in;
      in.diagnostic = rp.reply;
      in.status = dsn;
      in.stage = rp.stage;
      in.recipient = event.recipient;
      in.remote_mta = remote;
      in.dsn_action = action;
      Result fresh = rules->Classify(in);
      c = classes.Insert(key, h);
      c->category = fresh.category;
      c->status = std::move(fresh.status);
      c->reply_code = std::move(fresh.reply_code);
      c->stage = fresh.stage.empty() ? std::string(rp.stage) : std::move(fresh.stage);
      c->provider = std::move(fresh.provider);
      c->provider_code = std::move(fresh.provider_code);
      c->rule = std::move(fresh.rule);
    }
    r.category = c->category;
    if (c->status.empty()) {
      r.status.assign(dsn);
    } else {
      r.status.assign(c->status);
    }
    r.reply_code.assign(c->reply_code);
    r.stage.assign(c->stage);
    r.provider.assign(c->provider);
    r.provider_code.assign(c->provider_code);
    r.rule.assign(c->rule);
  }
  r.recipient.assign(event.recipient);
  r.original_recipient.assign(event.orig_recipient);
  AssignClean(&r.diagnostic, rp.reply);
  AssignClean(&r.remote_mta, remote, 1024);
  r.dsn_action.assign(action);
}

void LogCorrelator::Impl::FillCommon(const ParsedLogLine& p, const QueueState* st) {
  if (int m = ClassicMonth(p.timestamp); m != 0) {
    if (last_month != 0 && m + 6 < last_month) ++year;  // Dec -> Jan
    last_month = m;
  }
  if (!ParseLogTimestamp(p.timestamp, year, utc_offset, &event.unix_time, &event.time)) {
    AssignClean(&event.time, p.timestamp, 64);
    event.unix_time = 0;
  }
  event.queue_id.assign(p.queue_id);
  AssignClean(&event.program, p.program, 256);
  if (st != nullptr) {
    event.sender_known = st->sender_known;
    event.sender.assign(st->sender);
    event.message_id.assign(st->message_id);
    event.bounce_queue_id.assign(st->bounce_queue_id);
    event.size = st->size;
    event.nrcpt = st->nrcpt;
  } else {
    event.sender_known = false;
    event.sender.clear();
    event.message_id.clear();
    event.bounce_queue_id.clear();
    event.size = -1;
    event.nrcpt = -1;
  }
}

void LogCorrelator::Impl::OnDelivery(const ParsedLogLine& p) {
  sv status;
  if (p.status == "sent") {
    status = "sent";
  } else if (p.status == "deferred" || p.status == "SOFTBOUNCE") {
    status = "deferred";  // soft_bounce=yes turns a bounce into a deferral: it stays queued
  } else if (p.status == "bounced") {
    status = "bounced";
  } else {
    // deliverable/undeliverable (address verification probes) and anything unknown.
    ++stats.ignored_statuses;
    return;
  }
  QueueState* st = status == "deferred" ? FindOrCreate(p.queue_id) : Find(p.queue_id);
  FillCommon(p, st);
  AssignAddress(&event.recipient, p.recipient);
  AssignAddress(&event.orig_recipient, p.orig_recipient);
  event.log_status.assign(status);
  AssignClean(&event.dsn, p.dsn, 32);
  AssignClean(&event.relay, p.relay, 1024);
  if (p.reason_cut) ++stats.cut_reasons;
  size_t at = event.recipient.rfind('@');
  sv domain = at == std::string::npos ? sv() : sv(event.recipient).substr(at + 1);
  Classify(domain, event.relay, event.dsn, p.reason, status);

  if (st != nullptr) {
    auto it = st->pending.begin();
    for (; it != st->pending.end(); ++it) {
      if (it->recipient == event.recipient && it->orig_recipient == event.orig_recipient) break;
    }
    if (status == "deferred") {
      Pending* pd = nullptr;
      if (it != st->pending.end()) {
        pd = &*it;
      } else if (st->pending.size() < kMaxPendingPerQueueId) {
        pd = &st->pending.emplace_back();
        pd->recipient = event.recipient;
        pd->orig_recipient = event.orig_recipient;
      } else {
        ++stats.dropped_pending;
      }
      if (pd != nullptr) {
        pd->relay = event.relay;
        pd->dsn = event.dsn;
        pd->program = event.program;
        pd->reason.assign(p.reason);
      }
    } else if (it != st->pending.end()) {
      st->pending.erase(it);
    }
  }
  Emit();
}

void LogCorrelator::Impl::OnExpired(const ParsedLogLine& p) {
  QueueState* st = Find(p.queue_id);
  FillCommon(p, st);
  event.sender_known = true;
  AssignAddress(&event.sender, p.sender);
  event.log_status.assign("expired");
  std::vector<Pending> pending;
  if (st != nullptr) pending.swap(st->pending);
  if (pending.empty()) {
    // The recipients' deferrals were before this log began: report the expiry itself.
    ++stats.expired_without_recipients;
    event.recipient.clear();
    event.orig_recipient.clear();
    event.dsn.clear();
    event.relay.clear();
    event.result = Result{};
    event.result.category = Category::kExpired;
    event.result.dsn_action = "expired";
    event.result.rule = "postfix-status";
    Emit();
    return;
  }
  for (const Pending& pd : pending) {
    event.recipient.assign(pd.recipient);
    event.orig_recipient.assign(pd.orig_recipient);
    event.dsn.assign(pd.dsn);
    event.relay.assign(pd.relay);
    size_t at = event.recipient.rfind('@');
    sv domain = at == std::string::npos ? sv() : sv(event.recipient).substr(at + 1);
    // The last deferral's reply, classified as given up on: the RuleSet makes a transient
    // cause `expired` and keeps a telling one (mailbox_full ...), as it does for the DSN
    // Postfix sends for the same message.
    Classify(domain, pd.relay, pd.dsn, pd.reason, "expired");
    Emit();
  }
}

void LogCorrelator::Impl::Feed(sv text) {
  ++stats.lines;
  if (text.size() > kMaxLogLineBytes) {
    ++stats.skipped_too_long;
    return;
  }
  const ParsedLogLine& p = line;
  switch (ParseLogLine(text, &line)) {
    case LogLineKind::kBlank:
      return;
    case LogLineKind::kGarbage:
      ++stats.skipped_garbage;
      return;
    case LogLineKind::kOther:
      if (!p.daemon.empty()) ++stats.postfix_lines;
      return;
    case LogLineKind::kTruncated:
      ++stats.postfix_lines;
      ++stats.skipped_truncated;
      return;
    case LogLineKind::kDelivery:
      ++stats.postfix_lines;
      OnDelivery(p);
      return;
    case LogLineKind::kQueued: {
      ++stats.postfix_lines;
      QueueState* st = FindOrCreate(p.queue_id);
      st->sender_known = true;
      AssignAddress(&st->sender, p.sender);
      st->size = p.size;
      st->nrcpt = p.nrcpt;
      return;
    }
    case LogLineKind::kExpired:
      ++stats.postfix_lines;
      OnExpired(p);
      return;
    case LogLineKind::kMessageId:
      ++stats.postfix_lines;
      AssignClean(&FindOrCreate(p.queue_id)->message_id, p.message_id, 1024);
      return;
    case LogLineKind::kNotification:
      ++stats.postfix_lines;
      // Only the non-delivery notice is the bounce; delay and success notices are not.
      if (p.notification.find("non-delivery") != sv::npos) {
        if (QueueState* st = Find(p.queue_id)) st->bounce_queue_id.assign(p.notification_queue_id);
      }
      return;
    case LogLineKind::kRemoved:
      ++stats.postfix_lines;
      Erase(p.queue_id);
      return;
  }
}

LogCorrelator::LogCorrelator(std::shared_ptr<const RuleSet> rules, Sink sink)
    : impl_(std::make_unique<Impl>(std::move(rules), std::move(sink))) {}
LogCorrelator::~LogCorrelator() = default;

void LogCorrelator::Feed(std::string_view line) { impl_->Feed(line); }
const LogStats& LogCorrelator::stats() const { return impl_->stats; }
void LogCorrelator::set_year(int year) {
  impl_->year = year;
  impl_->last_month = 0;
}
void LogCorrelator::set_utc_offset(int seconds) { impl_->utc_offset = seconds; }
void LogCorrelator::set_max_tracked_queue_ids(size_t n) {
  impl_->max_tracked = n == 0 ? 1 : n;
  while (impl_->index.size() > impl_->max_tracked) {
    impl_->index.erase(impl_->lru.front().key);
    impl_->lru.pop_front();
    ++impl_->stats.evicted_queue_ids;
  }
  impl_->stats.tracked_queue_ids = impl_->index.size();
}
void LogCorrelator::set_rules(std::shared_ptr<const RuleSet> rules) {
  impl_->rules = std::move(rules);
  impl_->classes.Clear();
  impl_->providers.Clear();
}

void LogLineSplitter::Carry(std::string_view part) {
  carrying_ = true;
  // Keep at most one byte past the limit: Feed only needs to see that the line is too long.
  size_t room = kMaxLogLineBytes + 1 > carry_.size() ? kMaxLogLineBytes + 1 - carry_.size() : 0;
  carry_.append(part.substr(0, room));
}

}  // namespace bounced
