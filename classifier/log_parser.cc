// log_parser.cc: LogCorrelator (see log_parser.h). Reads parsed lines (log_line.cc), keeps a
// bounded per-queue-id table (sender, size, nrcpt, message-id, DSN queue id, recipients whose
// last status was deferred) and turns delivery lines into classified DeliveryEvents. The event
// object is reused between calls so a steady stream allocates almost nothing per line; fields
// are read as views into the line when they need no cleaning, and in counts-only (summary) mode
// events are counted by number without filling their strings.
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <ctime>
#include <deque>
#include <random>

#include "classifier/civil_time.h"
#include "classifier/log_bytes.h"
#include "classifier/log_parser.h"
#include "classifier/log_queue_table.h"
#include "classifier/log_reply.h"
#include "classifier/text.h"

namespace bounced {
namespace {

using sv = std::string_view;
using log_internal::BoundedIndexCache;
using log_internal::CachedClass;
using log_internal::Is;
using log_internal::PendingRecipient;
using log_internal::QueueState;
using log_internal::QueueTable;

// Cache sizes: distinct reply shapes and (domain, remote host) pairs kept at once.
constexpr size_t kReplyCacheSets = 4096;
constexpr size_t kProviderCacheSets = 4096;
// Rule evaluations kept in the class table before it (and the caches pointing into it) start
// afresh: a normal log needs a few hundred; this bounds memory against hostile reply texts.
constexpr size_t kMaxClasses = 1 << 16;

// Scans `s` sixteen bytes at a time (SSE2, part of every x86-64; eight elsewhere). Returns false
// when a byte is outside printable ASCII
// (< 0x20 or > 0x7e); otherwise sets *single_spaced to whether it has neither a run of spaces
// nor a space at either end (which Sanitize would fold or trim).
#if defined(__SSE2__)
bool IsPrintableAscii(sv s, bool* single_spaced) {
  const char* p = s.data();
  const size_t n = s.size();
  if (n < 16) {
    // Short fields (a dsn, most addresses' parts): a table-free byte loop.
    bool prev_space = false, adjacent = false;
    for (size_t i = 0; i < n; ++i) {
      unsigned char c = static_cast<unsigned char>(p[i]);
      if (c < 0x20 || c > 0x7e) return false;
      bool space = c == ' ';
      adjacent |= space & prev_space;
      prev_space = space;
    }
    *single_spaced = !adjacent && (n == 0 || (p[0] != ' ' && p[n - 1] != ' '));
    return true;
  }
  // 16 bytes at a time; the last block overlaps the one before it (re-checking bytes is
  // harmless, and a space pair across the last boundary then lies inside the last block).
  uint32_t adjacent = 0, carry = 0;
  size_t i = 0;
  for (;;) {
    const bool last = i + 16 >= n;
    if (last && i != n - 16) {
      carry = 0;  // overlapping: the byte before the block was already seen, with its pair
      i = n - 16;
    }
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    // Signed compare: bytes >= 0x80 are negative, so "< 0x20" catches them too.
    __m128i bad = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                               _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
    if (_mm_movemask_epi8(bad) != 0) return false;
    uint32_t sp = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(' '))));
    adjacent |= (sp & (sp >> 1)) | (sp & carry);
    if (last) break;
    carry = (sp >> 15) & 1;
    i += 16;
  }
  *single_spaced = adjacent == 0 && p[0] != ' ' && p[n - 1] != ' ';
  return true;
}
#else
bool IsPrintableAscii(sv s, bool* single_spaced) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7Full;
  const char* p = s.data();
  size_t n = s.size();
  uint64_t adjacent = 0, carry = 0;
  while (n > 0) {
    uint64_t w = 0x4141414141414141ull;  // 'A' pads the tail: printable, not a space
    size_t k = n < 8 ? n : 8;
    memcpy(&w, p, k);
    if ((((w - kOnes * 0x20) & ~w) | ((w + kOnes) | w)) & kHigh) return false;
    uint64_t x = w ^ (kOnes * 0x20);  // a space becomes a zero byte
    uint64_t sp = ~(((x & kLow7) + kLow7) | x) & kHigh;
    adjacent |= (sp & (sp << 8)) | (sp & carry);
    carry = sp >> 56;
    p += k;
    n -= k;
  }
  *single_spaced = adjacent == 0 && (s.empty() || (s.front() != ' ' && s.back() != ' '));
  return true;
}
#endif

// Sanitize's result without allocating in the common cases (printable ASCII, possibly with runs
// of spaces to fold); anything else (controls, non-ASCII, too long) goes through Sanitize.
void AssignClean(std::string* dst, sv src, size_t max_bytes = kMaxDiagnosticBytes) {
  bool single_spaced = false;
  if (src.size() > max_bytes || !IsPrintableAscii(src, &single_spaced)) {
    *dst = Sanitize(src, max_bytes);
    return;
  }
  if (single_spaced) {
    dst->assign(src);
    return;
  }
  while (!src.empty() && src.front() == ' ') src.remove_prefix(1);
  while (!src.empty() && src.back() == ' ') src.remove_suffix(1);
  dst->clear();
  while (!src.empty()) {
    size_t sp = src.find("  ");
    if (sp == sv::npos) {
      dst->append(src);
      break;
    }
    dst->append(src.substr(0, sp + 1));
    src.remove_prefix(sp);
    while (!src.empty() && src.front() == ' ') src.remove_prefix(1);
  }
}

// Recipient as stored: sanitised, domain lower-cased, local part as given.
void AssignAddress(std::string* dst, sv src) {
  AssignClean(dst, src, 1024);
  size_t at = dst->rfind('@');
  if (at == std::string::npos) return;
  for (size_t i = at + 1; i < dst->size(); ++i) (*dst)[i] = AsciiLower((*dst)[i]);
}

// AssignClean's result as a view: `src` itself when cleaning would not change it (printable
// ASCII, single-spaced, short enough: nearly every field Postfix logs), else the cleaned copy in
// *scratch. Saves a copy per field when the caller only reads the value.
sv CleanView(sv src, size_t max_bytes, std::string* scratch) {
  bool single_spaced = false;
  if (src.size() <= max_bytes && IsPrintableAscii(src, &single_spaced) && single_spaced) {
    return src;
  }
  AssignClean(scratch, src, max_bytes);
  return *scratch;
}

// Whether AssignAddress would store `s` unchanged: printable ASCII, single-spaced, at most 1024
// bytes, no upper-case letter after the last '@'. One pass (16 bytes at a time when it is that
// long) that also tracks the last '@' and the last upper-case letter.
bool IsStoredAddress(sv s) {
  const char* p = s.data();
  const size_t n = s.size();
  if (n > 1024) return false;
  // Positions + 1 of the last '@' and the last upper-case letter (0: none).
  size_t last_at = 0, last_upper = 0;
#if defined(__SSE2__)
  if (n >= 16) {
    uint32_t adjacent = 0, carry = 0;
    size_t i = 0;
    for (;;) {
      const bool last = i + 16 >= n;
      if (last && i != n - 16) {
        carry = 0;  // overlapping: see IsPrintableAscii
        i = n - 16;
      }
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      __m128i bad = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                                 _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
      if (_mm_movemask_epi8(bad) != 0) return false;
      uint32_t sp = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(' '))));
      adjacent |= (sp & (sp >> 1)) | (sp & carry);
      uint32_t at = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('@'))));
      uint32_t upper = static_cast<uint32_t>(_mm_movemask_epi8(_mm_and_si128(
          _mm_cmpgt_epi8(v, _mm_set1_epi8('A' - 1)), _mm_cmplt_epi8(v, _mm_set1_epi8('Z' + 1)))));
      if (at != 0) last_at = i + 32 - static_cast<size_t>(__builtin_clz(at));
      if (upper != 0) last_upper = i + 32 - static_cast<size_t>(__builtin_clz(upper));
      if (last) break;
      carry = (sp >> 15) & 1;
      i += 16;
    }
    if (adjacent != 0 || p[0] == ' ' || p[n - 1] == ' ') return false;
    return last_at == 0 || last_upper < last_at;
  }
#endif
  bool prev_space = false, adjacent = false;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(p[i]);
    if (c < 0x20 || c > 0x7e) return false;
    bool space = c == ' ';
    adjacent |= space & prev_space;
    prev_space = space;
    if (c == '@') last_at = i + 1;
    if (c >= 'A' && c <= 'Z') last_upper = i + 1;
  }
  if (adjacent || (n != 0 && (p[0] == ' ' || p[n - 1] == ' '))) return false;
  return last_at == 0 || last_upper < last_at;
}

// AssignAddress's result as a view, the same way: `src` when it is stored unchanged.
sv AddressView(sv src, std::string* scratch) {
  if (IsStoredAddress(src)) return src;
  AssignAddress(scratch, src);
  return *scratch;
}

// The domain of a stored address ("" without '@').
sv StoredDomain(sv address) {
  size_t at = address.rfind('@');
  return at == sv::npos ? sv() : address.substr(at + 1);
}

// Cache keys are hashed with a per-process random seed, so reply texts chosen by a remote server
// cannot be crafted to collide with another reply's cache entry.
log_internal::KeyHash RandomSeed() {
  std::random_device rd;
  auto word = [&rd] { return (static_cast<uint64_t>(rd()) << 32) ^ rd(); };
  return log_internal::KeyHash{word(), word()};
}

// The statuses an event can have, and their names in events.
enum class EventStatus : uint8_t { kSent, kDeferred, kBounced, kExpired };
sv StatusName(EventStatus s) {
  switch (s) {
    case EventStatus::kSent:
      return "sent";
    case EventStatus::kDeferred:
      return "deferred";
    case EventStatus::kBounced:
      return "bounced";
    case EventStatus::kExpired:
      return "expired";
  }
  return "bounced";
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

// The year of a classic timestamp (month `month`, its day read from `ts`) read at local time
// `local_now` (seconds since the epoch, shifted into the log's zone): this year, unless that
// puts the line more than a day in the future, then last year.
int ClassicYear(sv ts, int month, int64_t local_now) {
  int64_t days = local_now >= 0 ? local_now / 86400 : (local_now - 86399) / 86400;
  int y = 0;
  unsigned m = 0, d = 0;
  CivilFromDays(days, &y, &m, &d);
  size_t i = 4;
  if (i < ts.size() && ts[i] == ' ') ++i;
  unsigned day = 0;
  for (; i < ts.size() && ts[i] >= '0' && ts[i] <= '9' && day < 100; ++i) {
    day = day * 10 + static_cast<unsigned>(ts[i] - '0');
  }
  int64_t line_days = DaysFromCivil(y, static_cast<unsigned>(month), day == 0 ? 1 : day);
  return line_days > days + 1 ? y - 1 : y;
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
  int64_t reference_time = 0;  // set_reference_time: infer `year` at the next classic line
  bool counts_only = false;

  QueueTable queues{kDefaultMaxTrackedQueueIds};
  // set_track_queue_facts: ids whose facts changed, and ids of stored states removed, since
  // the last TakeQueueFacts (both may hold an id more than once).
  bool track_facts = false;
  std::vector<std::string> facts_changed;
  std::vector<std::string> facts_forgotten;
  std::string scratch_fact;
  // `st` is qid's state: listed once until the next take.
  void FactsChanged(sv qid, QueueState* st) {
    if (!track_facts || st->facts_dirty) return;
    st->facts_dirty = true;
    facts_changed.emplace_back(qid.substr(0, QueueTable::kMaxIdBytes));
  }

  // The caches map key hashes to 1-based indexes into small tables, so a lookup reads one
  // cache line and a hit copies nothing but the few short strings of the event.
  BoundedIndexCache exact{kReplyCacheSets};         // by exact reply text -> class_table
  BoundedIndexCache classes{kReplyCacheSets};       // by masked reply text -> class_table
  BoundedIndexCache providers{kProviderCacheSets};  // -> provider_names
  std::vector<CachedClass> class_table;             // one entry per rule evaluation
  // Distinct provider names (few: they come from the rules), interned so that events can be
  // counted by number; kept across set_rules so the counts' indexes stay valid.
  std::deque<std::string> provider_names;
  // counts_only: events per (provider, log status, category), see Emit.
  std::vector<uint64_t> tally;
  // What Emit counts: set by Classify (and OnExpired).
  EventStatus cur_status = EventStatus::kSent;
  uint32_t cur_provider = 0;

  ParsedLogLine line;  // what Feed parses into (reused)
  DeliveryEvent event;
  std::vector<PendingRecipient> expiring;  // reused buffer for OnExpired
  std::string last_timestamp;              // the last timestamp converted, as written
  std::string last_time;                   // ... as RFC 3339
  int64_t last_unix_time = 0;
  int last_year = 0;
  std::string key;
  // Cleaned copies of fields that needed cleaning (see CleanView), reused.
  std::string scratch_recipient, scratch_orig_recipient, scratch_dsn, scratch_relay;
  log_internal::KeyHash seed = RandomSeed();

  void FeedParsed(sv text, const ParsedLogLine& p);
  QueueState* Find(sv qid);
  QueueState* FindOrCreate(sv qid);
  void Erase(sv qid);
  void UpdateTableStats() {
    stats.tracked_queue_ids = queues.size();
    stats.evicted_queue_ids = queues.evicted();
    if (stats.tracked_queue_ids > stats.max_tracked_queue_ids) {
      stats.max_tracked_queue_ids = stats.tracked_queue_ids;
    }
  }
  void OnDelivery(const ParsedLogLine& p);
  void OnExpired(const ParsedLogLine& p);
  void FillCommon(const ParsedLogLine& p, const QueueState* st);
  // `queue_id`, when not empty, is the one the caller looks up after this: its first pending
  // recipient is prefetched half-way (see OnDelivery).
  // `recipient`, `orig_recipient`, `relay` and `dsn` as stored (cleaned).
  void Classify(sv recipient, sv orig_recipient, sv relay, sv dsn, sv reason,
                EventStatus log_status, sv queue_id = {});
  uint32_t Provider(sv domain, sv remote);  // index into provider_names
  uint32_t InternProvider(sv name);
  void ClearClassCaches();
  void Emit() {
    ++stats.events;
    if (counts_only) {
      ++tally[(cur_provider * 4 + static_cast<size_t>(cur_status)) * kCategoryCount +
              static_cast<size_t>(event.result.category)];
    }
    if (sink) sink(event);
  }
};

QueueState* LogCorrelator::Impl::Find(sv qid) { return queues.Find(qid); }

QueueState* LogCorrelator::Impl::FindOrCreate(sv qid) {
  QueueState* st = queues.FindOrCreate(qid);
  UpdateTableStats();
  return st;
}

void LogCorrelator::Impl::Erase(sv qid) {
  queues.Erase(qid);
  UpdateTableStats();
}

uint32_t LogCorrelator::Impl::InternProvider(sv name) {
  size_t i = 0;
  while (i < provider_names.size() && provider_names[i] != name) ++i;
  if (i == provider_names.size()) {
    provider_names.emplace_back(name);
    tally.resize(provider_names.size() * 4 * kCategoryCount);
  }
  return static_cast<uint32_t>(i);
}

uint32_t LogCorrelator::Impl::Provider(sv domain, sv remote) {
  log_internal::KeyHash h = log_internal::HashParts({domain, remote}, seed);
  if (uint32_t i = providers.Find(h)) return i - 1;
  uint32_t i = InternProvider(ProviderFor(*rules, domain, remote));
  providers.Insert(h, i + 1);
  return i;
}

void LogCorrelator::Impl::ClearClassCaches() {
  exact.Clear();
  classes.Clear();
  class_table.clear();
}

void LogCorrelator::Impl::Classify(sv recipient, sv orig_recipient, sv relay, sv dsn, sv reason,
                                   EventStatus log_status, sv queue_id) {
  // A summary needs the reply's parts only to find the remote host when the relay names none,
  // and on a cache miss: split the reason lazily then.
  log_internal::ReasonParts rp;
  bool analyzed = false;
  auto analyze = [&] {
    if (!analyzed) rp = log_internal::AnalyzeReason(reason);
    analyzed = true;
  };
  if (!counts_only) analyze();
  sv remote = log_internal::RelayHost(relay);
  if (remote.empty()) {
    analyze();
    remote = rp.remote_host;
  }
  Result& r = event.result;
  // The DSN Action Postfix would write; "expired" tells the rules the queue lifetime ran out.
  sv action = log_status == EventStatus::kSent       ? sv("delivered")
              : log_status == EventStatus::kDeferred ? sv("delayed")
              : log_status == EventStatus::kExpired  ? sv("expired")
                                                     : sv("failed");
  const uint32_t provider_id = Provider(StoredDomain(recipient), remote);
  const sv provider = provider_names[provider_id];
  cur_status = log_status;
  if (!queue_id.empty()) queues.PrefetchPending(queue_id);
  if (log_status == EventStatus::kSent) {
    // Postfix's status=sent is authoritative: no rule can make a delivery a failure.
    r.category = Category::kDelivered;
    cur_provider = provider_id;
    if (sink) r.provider.assign(provider);
    if (!counts_only) {
      r.status.assign(dsn);
      r.provider_code.clear();
      r.reply_code = ExtractReplyCode(rp.reply);
      r.stage.clear();
      r.rule.assign("postfix-status");
    }
  } else {
    // Two levels: the exact text first (one fast pass; retries repeat their text verbatim),
    // then the text with per-message noise masked (see BuildReplyKey). `provider` points into
    // the provider cache, which neither touches.
    log_internal::KeyHash exact_hash =
        log_internal::HashParts({provider, dsn, action, reason}, seed);
    uint32_t id = exact.Find(exact_hash);
    if (id != 0) {
      ++stats.classify_cache_hits;
    } else {
      log_internal::BuildReplyKey(provider, dsn, action, reason, &key);
      log_internal::KeyHash h = log_internal::HashKey(key, seed);
      id = classes.Find(h);
      if (id != 0) {
        ++stats.classify_cache_hits;
      } else {
        ++stats.classify_calls;
        analyze();
        ReplyInput in;
        in.diagnostic = rp.reply;
        in.status = dsn;
        in.stage = rp.stage;
        in.recipient = recipient;
        in.remote_mta = remote;
        in.dsn_action = action;
        Result fresh = rules->Classify(in);
        if (class_table.size() >= kMaxClasses) ClearClassCaches();
        CachedClass& c = class_table.emplace_back();
        c.category = fresh.category;
        c.status = std::move(fresh.status);
        c.reply_code = std::move(fresh.reply_code);
        c.stage = fresh.stage.empty() ? std::string(rp.stage) : std::move(fresh.stage);
        c.provider = std::move(fresh.provider);
        c.provider_id = InternProvider(c.provider);
        c.provider_code = std::move(fresh.provider_code);
        c.rule = std::move(fresh.rule);
        id = static_cast<uint32_t>(class_table.size());
        classes.Insert(h, id);
      }
      exact.Insert(exact_hash, id);
    }
    const CachedClass& c = class_table[id - 1];
    r.category = c.category;
    cur_provider = c.provider_id;
    if (sink) r.provider.assign(c.provider);
    if (!counts_only) {
      if (c.status.empty()) {
        r.status.assign(dsn);
      } else {
        r.status.assign(c.status);
      }
      r.provider_code.assign(c.provider_code);
      r.reply_code.assign(c.reply_code);
      r.stage.assign(c.stage);
      r.rule.assign(c.rule);
    }
  }
  if (counts_only) return;
  r.dsn_action.assign(action);
  r.recipient.assign(recipient);
  r.original_recipient.assign(orig_recipient);
  AssignClean(&r.diagnostic, rp.reply);
  AssignClean(&r.remote_mta, remote, 1024);
}

void LogCorrelator::Impl::FillCommon(const ParsedLogLine& p, const QueueState* st) {
  if (counts_only) return;
  event.queue_id.assign(p.queue_id);
  if (int m = ClassicMonth(p.timestamp); m != 0) {
    if (last_month == 0 && reference_time != 0) {
      year = ClassicYear(p.timestamp, m, reference_time + utc_offset);
      reference_time = 0;
    }
    if (last_month != 0 && m + 6 < last_month) ++year;  // Dec -> Jan
    last_month = m;
  }
  // Many lines share a second: reuse the last conversion when the text is the same.
  if (p.timestamp != last_timestamp || year != last_year) {
    if (!ParseLogTimestamp(p.timestamp, year, utc_offset, &last_unix_time, &last_time)) {
      AssignClean(&last_time, p.timestamp, 64);
      last_unix_time = 0;
    }
    last_timestamp.assign(p.timestamp);
    last_year = year;
  }
  event.time.assign(last_time);
  event.unix_time = last_unix_time;
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
  EventStatus status;
  if (Is(p.status, "sent")) {
    status = EventStatus::kSent;
  } else if (Is(p.status, "deferred") || Is(p.status, "SOFTBOUNCE")) {
    // soft_bounce=yes turns a bounce into a deferral: it stays queued
    status = EventStatus::kDeferred;
  } else if (Is(p.status, "bounced")) {
    status = EventStatus::kBounced;
  } else {
    // deliverable/undeliverable (address verification probes) and anything unknown.
    ++stats.ignored_statuses;
    return;
  }
  // The queue id's slot and state are most likely not in the CPU cache: start loading the slot
  // now, the state once the slot is likely there, and look the queue id up after the recipient
  // and the classification, which do not depend on it.
  queues.Prefetch(p.queue_id);
  // The fields as stored (sanitised; domain lower-cased), as views: the logged text itself when
  // it needs no cleaning, which is the rule. A summary copies none of them into the event.
  const sv recipient = AddressView(p.recipient, &scratch_recipient);
  const sv orig_recipient =
      p.orig_recipient.empty() ? sv() : AddressView(p.orig_recipient, &scratch_orig_recipient);
  const sv dsn = CleanView(p.dsn, 32, &scratch_dsn);
  const sv relay = counts_only ? p.relay : CleanView(p.relay, 1024, &scratch_relay);
  if (sink) event.log_status.assign(StatusName(status));
  if (!counts_only) {
    event.recipient.assign(recipient);
    event.orig_recipient.assign(orig_recipient);
    event.dsn.assign(dsn);
    event.relay.assign(relay);
  }
  queues.PrefetchState(p.queue_id);
  if (p.reason_cut) ++stats.cut_reasons;
  Classify(recipient, orig_recipient, relay, dsn, p.reason, status, p.queue_id);
  QueueState* st = status == EventStatus::kDeferred ? FindOrCreate(p.queue_id) : Find(p.queue_id);
  FillCommon(p, st);

  if (st != nullptr) {
    // Recipients are matched by a 128-bit hash of (recipient, orig_recipient), as the
    // classification caches match reply texts: no string of theirs is read (memory stalls).
    const log_internal::KeyHash key_hash =
        log_internal::HashParts({recipient, orig_recipient}, seed);
    auto it = st->pending.begin();
    while (it != st->pending.end() && !(it->key_hash == key_hash)) ++it;
    if (status == EventStatus::kDeferred) {
      PendingRecipient* pd = nullptr;
      if (it != st->pending.end()) {
        pd = &*it;
      } else if (st->pending.size() < kMaxPendingPerQueueId) {
        pd = &queues.AddPending(st);
        pd->key_hash = key_hash;
        pd->recipient.assign(recipient);
        pd->orig_recipient.assign(orig_recipient);
      } else {
        ++stats.dropped_pending;
      }
      if (pd != nullptr) {
        pd->relay.assign(relay);
        pd->dsn.assign(dsn);
        pd->reason.assign(p.reason);
      }
    } else if (it != st->pending.end()) {
      queues.ErasePending(st, static_cast<size_t>(it - st->pending.begin()));
    }
  }
  Emit();
}

void LogCorrelator::Impl::OnExpired(const ParsedLogLine& p) {
  QueueState* st = Find(p.queue_id);
  FillCommon(p, st);
  if (!counts_only) {
    event.sender_known = true;
    AssignAddress(&event.sender, p.sender);
  }
  event.log_status.assign("expired");
  std::vector<PendingRecipient>& pending = expiring;
  for (PendingRecipient& pd : pending) queues.Recycle(std::move(pd));
  pending.clear();
  if (st != nullptr) pending.swap(st->pending);
  if (pending.empty()) {
    // The recipients' deferrals were before this log began, or before this correlator started
    // (a reader that stored them finishes the event: ExpiredResultAfter): report the expiry
    // itself.
    ++stats.expired_without_recipients;
    event.recipient.clear();
    event.orig_recipient.clear();
    event.dsn.clear();
    event.relay.clear();
    event.result = Result{};
    event.result.category = Category::kExpired;
    event.result.dsn_action = "expired";
    event.result.rule = "postfix-status";
    cur_status = EventStatus::kExpired;
    cur_provider = InternProvider("");
    Emit();
    return;
  }
  for (const PendingRecipient& pd : pending) {
    if (!counts_only) {
      event.recipient.assign(pd.recipient);
      event.orig_recipient.assign(pd.orig_recipient);
      event.dsn.assign(pd.dsn);
      event.relay.assign(pd.relay);
    }
    // The last deferral's reply, classified as given up on: the RuleSet makes a transient
    // cause `expired` and keeps a telling one (mailbox_full ...), as it does for the DSN
    // Postfix sends for the same message.
    Classify(pd.recipient, pd.orig_recipient, pd.relay, pd.dsn, pd.reason, EventStatus::kExpired);
    Emit();
  }
}

Result ExpiredResultAfter(const RuleSet& rules, const Result& deferral) {
  // Classify's input for the deferral was the reply's parts; its result holds them normalised
  // (status, stage, cleaned reply and host), and normalising them again changes nothing, so
  // the rules see what they saw then, with the Action of an expiry. The reply code is left to
  // the rules, as Classify leaves it. Fields are then filled as Classify fills them.
  ReplyInput in = ReplyInputOf(deferral);
  in.reply_code = {};
  in.dsn_action = "expired";
  Result r = deferral;
  r.reply_code.clear();  // the rules' alone, as said
  ClassifyAgain(rules, in, &r);
  r.dsn_action = "expired";
  return r;
}

namespace {

// What a line of kind p.kind is to a correlator in counts_only mode: queue, message-id and
// notification lines only add to the count of Postfix lines there, and blank and other programs'
// lines change nothing but counts in any mode. Impl::FeedParsed and UseOf both go by it.
LogCorrelator::LineUse CountsOnlyUse(const ParsedLogLine& p) {
  using LineUse = LogCorrelator::LineUse;
  switch (p.kind) {
    case LogLineKind::kBlank:
      return LineUse::kSkip;
    case LogLineKind::kOther:
      return p.daemon.empty() ? LineUse::kSkip : LineUse::kSkipPostfixLine;
    case LogLineKind::kQueued:
    case LogLineKind::kMessageId:
    case LogLineKind::kNotification:
      return LineUse::kSkipPostfixLine;
    default:
      return LineUse::kFeed;
  }
}

}  // namespace

void LogCorrelator::Impl::FeedParsed(sv text, const ParsedLogLine& p) {
  ++stats.lines;
  if (text.size() > kMaxLogLineBytes) {
    ++stats.skipped_too_long;
    return;
  }
  if (counts_only) {
    const LineUse use = CountsOnlyUse(p);
    if (use == LineUse::kSkipPostfixLine) ++stats.postfix_lines;
    if (use != LineUse::kFeed) return;
  }
  switch (p.kind) {
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
      if (track_facts) {
        // Every retry of a deferred message logs its qmgr line again: a change only if it says
        // something new. The sender is cleaned once, into the scratch string, then swapped in.
        AssignAddress(&scratch_fact, p.sender);
        if (st->sender_known && st->size == p.size && st->nrcpt == p.nrcpt &&
            st->sender == scratch_fact) {
          return;
        }
        FactsChanged(p.queue_id, st);
        st->sender.swap(scratch_fact);
      } else {
        AssignAddress(&st->sender, p.sender);
      }
      st->sender_known = true;
      st->size = p.size;
      st->nrcpt = p.nrcpt;
      return;
    }
    case LogLineKind::kExpired:
      ++stats.postfix_lines;
      OnExpired(p);
      return;
    case LogLineKind::kMessageId: {
      ++stats.postfix_lines;
      QueueState* st = FindOrCreate(p.queue_id);
      if (track_facts) {
        AssignClean(&scratch_fact, p.message_id, 1024);
        if (st->message_id == scratch_fact) return;
        FactsChanged(p.queue_id, st);
        st->message_id.swap(scratch_fact);
      } else {
        AssignClean(&st->message_id, p.message_id, 1024);
      }
      return;
    }
    case LogLineKind::kNotification:
      ++stats.postfix_lines;
      // Only the non-delivery notice is the bounce; delay and success notices are not.
      if (p.notification.find("non-delivery") != sv::npos) {
        if (QueueState* st = Find(p.queue_id)) {
          st->bounce_queue_id.assign(p.notification_queue_id);
          FactsChanged(p.queue_id, st);
        }
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

void LogCorrelator::Feed(std::string_view text) {
  // A too-long line is not parsed: FeedParsed only counts it.
  if (text.size() <= kMaxLogLineBytes) ParseLogLine(text, &impl_->line);
  impl_->FeedParsed(text, impl_->line);
}
void LogCorrelator::FeedParsed(std::string_view text, const ParsedLogLine& parsed) {
  impl_->FeedParsed(text, parsed);
}
LogCorrelator::LineUse LogCorrelator::UseOf(std::string_view text, const ParsedLogLine& p) const {
  if (!impl_->counts_only || text.size() > kMaxLogLineBytes) return LineUse::kFeed;
  return CountsOnlyUse(p);
}
void LogCorrelator::AddLeftOutLines(uint64_t lines, uint64_t postfix_lines) {
  impl_->stats.lines += lines;
  impl_->stats.postfix_lines += postfix_lines;
}
const LogStats& LogCorrelator::stats() const { return impl_->stats; }
void LogCorrelator::set_year(int year) {
  impl_->year = year;
  impl_->last_month = 0;
}
void LogCorrelator::set_counts_only(bool on) { impl_->counts_only = on; }
std::vector<EventCount> LogCorrelator::counts() const {
  std::vector<EventCount> out;
  const std::vector<uint64_t>& t = impl_->tally;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == 0) continue;
    size_t category = i % kCategoryCount;
    size_t status = (i / kCategoryCount) % 4;
    size_t provider = i / kCategoryCount / 4;
    out.push_back(EventCount{StatusName(static_cast<EventStatus>(status)),
                             impl_->provider_names[provider], static_cast<Category>(category),
                             t[i]});
  }
  return out;
}
void LogCorrelator::set_reference_time(int64_t unix_time) {
  impl_->reference_time = unix_time;
  impl_->last_month = 0;
}
void LogCorrelator::set_utc_offset(int seconds) {
  impl_->utc_offset = seconds;
  impl_->last_timestamp.clear();
}
void LogCorrelator::set_max_tracked_queue_ids(size_t n) {
  impl_->queues.set_max_entries(n);
  impl_->UpdateTableStats();
}
void LogCorrelator::set_rules(std::shared_ptr<const RuleSet> rules) {
  impl_->rules = std::move(rules);
  impl_->ClearClassCaches();
  impl_->providers.Clear();
}

void LogCorrelator::set_track_queue_facts(bool on) {
  impl_->track_facts = on;
  impl_->queues.set_forgotten_sink(on ? &impl_->facts_forgotten : nullptr);
  if (!on) {
    impl_->facts_changed.clear();
    impl_->facts_forgotten.clear();
  }
}

void LogCorrelator::TakeQueueFacts(std::vector<QueueFacts>* changed,
                                   std::vector<std::string>* forgotten) {
  // Each list holds an id at most once: a state is listed as changed only while not already
  // listed (facts_dirty), and as forgotten only when removed while stored, which a take
  // always comes between.
  std::vector<std::string>& ids = impl_->facts_changed;
  std::vector<std::string>& gone = impl_->facts_forgotten;
  for (std::string& id : gone) forgotten->push_back(std::move(id));
  for (const std::string& id : ids) {
    QueueState* st = impl_->queues.Peek(id);
    // Gone since (came and went between two takes), or a new state of a reused id listed
    // again below.
    if (st == nullptr || !st->facts_dirty) continue;
    QueueFacts& f = changed->emplace_back();
    f.queue_id = id;
    f.sender = st->sender;
    f.sender_known = st->sender_known;
    f.message_id = st->message_id;
    f.bounce_queue_id = st->bounce_queue_id;
    f.size = st->size;
    f.nrcpt = st->nrcpt;
    st->stored = true;
    st->facts_dirty = false;
  }
  ids.clear();
  gone.clear();
}

void LogCorrelator::RestoreQueueFacts(const QueueFacts& facts) {
  if (facts.queue_id.empty() || facts.queue_id.size() > QueueTable::kMaxIdBytes) return;
  QueueState* st = impl_->FindOrCreate(facts.queue_id);
  st->sender = facts.sender;
  st->sender_known = facts.sender_known;
  st->message_id = facts.message_id;
  st->bounce_queue_id = facts.bounce_queue_id;
  st->size = facts.size;
  st->nrcpt = facts.nrcpt;
  st->stored = true;
}

void LogLineSplitter::Carry(std::string_view part) {
  carrying_ = true;
  // Feed only needs to see that the line is too long (see kLogLineCarryBytes).
  size_t room = kLogLineCarryBytes > carry_.size() ? kLogLineCarryBytes - carry_.size() : 0;
  carry_.append(part.substr(0, room));
}

}  // namespace bounced
