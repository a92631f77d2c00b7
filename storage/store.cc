// store.cc: the SQLite store (see store.h): open and migrate, the writer thread with group
// commit and policy, and the read queries. Reads and writes the database at StoreOptions::path.
#include "storage/store.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "storage/address.h"
#include "storage/hashed_key.h"
#include "storage/policy.h"
#include "storage/same_bounce_index.h"
#include "storage/sqlite.h"
#include "storage/suppression_io.h"
#include "storage/suppression_view.h"
#include "storage/timefmt.h"

namespace bounced {

extern const std::string_view kSchemaV1Sql;  // storage/schema.sql, embedded at build time
extern const std::string_view kSchemaV2Sql;  // storage/migrate_2.sql
extern const std::string_view kSchemaV3Sql;  // storage/migrate_3.sql
extern const std::string_view kSchemaV4Sql;  // storage/migrate_4.sql
extern const std::string_view kSchemaV5Sql;  // storage/migrate_5.sql
extern const std::string_view kSchemaV6Sql;  // storage/migrate_6.sql
extern const std::string_view kSchemaV7Sql;  // storage/migrate_7.sql
extern const std::string_view kSchemaV8Sql;  // storage/migrate_8.sql

namespace {

// PRAGMA application_id of a bounced database ("boun"), to refuse someone else's SQLite file.
constexpr int32_t kApplicationId = 0x626f756e;
// Migration N turns schema N-1 into N. Index 0 is version 1 (the whole schema.sql).
const std::string_view* const kMigrations[] = {&kSchemaV1Sql, &kSchemaV2Sql, &kSchemaV3Sql,
                                               &kSchemaV4Sql, &kSchemaV5Sql, &kSchemaV6Sql,
                                               &kSchemaV7Sql, &kSchemaV8Sql};
static_assert(std::size(kMigrations) == kSchemaVersion);

// A log bounce and the DSN Postfix sends for it are the same incident when their queue id and
// recipient match within this window (longer than Postfix's default maximal_queue_lifetime).
constexpr int64_t kSameBounceWindowSeconds = 7 * 86400;
// The writer's index of recent DSN bounces (storage/same_bounce_index.h) keeps entries one day
// past that window of the newest one, and at most this many (56-64 bytes each, <= 64 MiB): a
// lookup it cannot answer runs the SELECT as before.
constexpr int64_t kSameBounceSlackSeconds = 86400;
constexpr size_t kSameBounceIndexMaxEntries = size_t{1} << 20;

// Expired suppressions no longer suppress (lookups check the time) but keep their rows until the
// writer purges them: at the first commit after open, then at most once per interval, at most
// kPurgeLimit rows per transaction (a bigger backlog continues in the next group at once).
constexpr int64_t kPurgeIntervalSeconds = 3600;
constexpr int64_t kPurgeLimit = 10000;

// Retention (RetentionPolicy): at the first commit after open, then hourly, at most kPruneLimit
// event rows (or one day of daily counters) per step, each step in a transaction of its own
// before the next group's: a batch waits for one step at most (~15-30 ms; bench/ingest_bench
// --part retention). A backlog (retention just turned on, a day of a busy server) goes on
// step by step between the groups, also when no batch comes.
constexpr int64_t kPruneIntervalSeconds = 3600;
constexpr int64_t kPruneLimit = 500;

// Event rows go into SQLite this many at a time, with one multi-row INSERT (see FlushRowsW).
constexpr int kRowsPerInsert = 16;
// The columns of an event_rows insert, bound as ?1..?16 (one row) or ?(16 r + 1).. (row r).
constexpr int kEventRowParams = 16;
constexpr std::string_view kEventRowColumns =
    "time, kind, counted, recipient_key, domain, queue_id, source_ref, recipient, message_id, "
    "sender, relay, diagnostic, remote_mta, time_text, original_recipient, bounce_queue_id";

// Event kinds (distinct classifications) the writer remembers; past this the cache starts over
// (the kinds stay in the table and are looked up again).
constexpr size_t kKindCacheSize = 100000;

int64_t Now() { return static_cast<int64_t>(std::time(nullptr)); }

bool IsLogFamily(EventSource s) { return s == EventSource::kLog || s == EventSource::kJournal; }

SuppressionHit HitFor(const Suppression& s) {
  SuppressionHit h;
  h.since = s.created;
  h.expires = s.expires;
  auto c = CategoryFromName(s.category);
  h.category = c ? *c : Category::kUndetermined;
  h.manual = s.source == "manual" || s.source == "import";
  return h;
}

// Who changes the list when no operator does: bounced itself, for a bounce (no note), and for an
// entry it removes once it expired.
const Actor kBouncedItself{-1, ""};
const Actor kExpired{-1, "expired"};

constexpr std::string_view kSuppressionColumns =
    "address, display, reason, category, source, first_event, last_event, created, expires, "
    "detail, delivered_after";

Suppression ReadSuppression(const sql::Stmt& st, int c = 0) {
  Suppression s;
  s.address = st.Text(c + 0);
  s.display = st.Text(c + 1);
  s.reason = st.Text(c + 2);
  s.category = st.Text(c + 3);
  s.source = st.Text(c + 4);
  s.first_event = st.Int(c + 5);
  s.last_event = st.Int(c + 6);
  s.created = st.Int(c + 7);
  s.expires = st.Int(c + 8);
  s.detail = st.Text(c + 9);
  s.delivered_after = st.Int(c + 10);
  return s;
}

// Prepares the suppressions `f` selects, ordered by key, on `db` into *st (kSuppressionColumns;
// `now` decides what is expired). Errors name a domain or category that is none.
Status PrepareList(sql::Db& db, const ListFilter& f, int64_t now, sql::Stmt* st) {
  std::string domain = NormalizeDomain(f.domain.empty() || f.domain[0] != '@'
                                           ? std::string_view(f.domain)
                                           : std::string_view(f.domain).substr(1));
  if (!f.domain.empty() && domain.empty()) {
    return Status::Error("list: invalid domain '" + f.domain + "'");
  }
  if (!f.category.empty() && !CategoryFromName(f.category)) {
    return Status::Error("list: unknown category '" + f.category + "'");
  }
  std::string q = "SELECT " + std::string(kSuppressionColumns) +
                  " FROM suppressions WHERE address > ?1 AND created >= ?2"
                  " AND (?3 = '' OR category = ?3) AND (?4 = '' OR domain = ?4)"
                  " AND (?5 = '' OR source = ?5) AND (?6 OR expires = 0 OR expires > ?7)"
                  " AND (?9 = 0 OR created < ?9) ORDER BY address LIMIT ?8";
  if (Status s = st->Prepare(db, q); !s) return s;
  st->Bind(1, f.after).Bind(2, f.since).Bind(3, f.category).Bind(4, domain).Bind(5, f.source);
  st->Bind(6, int64_t{f.include_expired}).Bind(7, now);
  st->Bind(8, f.limit == 0 ? int64_t{-1} : static_cast<int64_t>(f.limit));
  st->Bind(9, f.until);
  return Status::Ok();
}

// suppression_log rows (as `l`) as SuppressionChange (ReadChange).
constexpr std::string_view kChangeColumns =
    "l.id, l.time, l.address, l.action, l.source, l.reason, l.category, l.actor_uid, l.note";

SuppressionChange ReadChange(const sql::Stmt& st) {
  return {st.Int(0),  st.Int(1),  st.Text(2), st.Text(3), st.Text(4),
          st.Text(5), st.Text(6), st.Int(7),  st.Text(8)};
}

constexpr std::string_view kEventColumns =
    "id, time, time_text, source, source_ref, queue_id, message_id, sender, recipient, "
    "original_recipient, log_status, relay, program, bounce_queue_id, category, status, "
    "reply_code, stage, provider, provider_code, diagnostic, remote_mta, dsn_action, rule, counted";

StoredEvent ReadEvent(const sql::Stmt& st) {
  StoredEvent se;
  Event& e = se.event;
  se.id = st.Int(0);
  e.unix_time = st.Int(1);
  e.time_text = st.Text(2);
  e.source = EventSourceFromName(st.TextView(3)).value_or(EventSource::kManual);
  e.source_ref = st.Text(4);
  e.queue_id = st.Text(5);
  e.message_id = st.Text(6);
  e.sender = st.Text(7);
  e.result.recipient = st.Text(8);
  e.result.original_recipient = st.Text(9);
  e.log_status = st.Text(10);
  e.relay = st.Text(11);
  e.program = st.Text(12);
  e.bounce_queue_id = st.Text(13);
  e.result.category = CategoryFromName(st.TextView(14)).value_or(Category::kUndetermined);
  e.result.status = st.Text(15);
  e.result.reply_code = st.Text(16);
  e.result.stage = st.Text(17);
  e.result.provider = st.Text(18);
  e.result.provider_code = st.Text(19);
  e.result.diagnostic = st.Text(20);
  e.result.remote_mta = st.Text(21);
  e.result.dsn_action = st.Text(22);
  e.result.rule = st.Text(23);
  se.counted = st.Int(24) != 0;
  return se;
}

constexpr std::string_view kStateColumns =
    "address, first_seen, last_event, last_category, last_log_status, last_delivered, "
    "last_failure, incidents, incidents_since, last_incident, manual_unsuppressed, events, "
    "pending_delivery, pending_message_id, pending_earlier";

RecipientState ReadState(const sql::Stmt& st) {
  RecipientState r;
  r.address = st.Text(0);
  r.first_seen = st.Int(1);
  r.last_event = st.Int(2);
  r.last_category = st.Text(3);
  r.last_log_status = st.Text(4);
  r.last_delivered = st.Int(5);
  r.last_failure = st.Int(6);
  r.incidents = static_cast<int>(st.Int(7));
  r.incidents_since = st.Int(8);
  r.last_incident = st.Int(9);
  r.manual_unsuppressed = st.Int(10);
  r.events = st.Int(11);
  r.pending_delivery = st.Int(12);
  r.pending_message_id = st.Text(13);
  r.pending_earlier = st.Text(14);
  return r;
}

// Candidate allowlist entries for a key: the address, its domain and the parent domains.
std::vector<std::string> AllowCandidates(std::string_view key) {
  std::vector<std::string> out;
  out.emplace_back(key);
  std::string_view d = DomainOfKey(key);
  while (!d.empty()) {
    out.emplace_back(d);
    size_t dot = d.find('.');
    if (dot == std::string_view::npos) break;
    d.remove_prefix(dot + 1);
  }
  return out;
}

}  // namespace

std::string NormalizeDomain(std::string_view d) {
  while (!d.empty() && d.back() == '.') d.remove_suffix(1);
  if (d.empty() || d.size() > 253) return {};
  std::string out;
  for (char c : d) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!((l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '-' || l == '.' || l == '_')) {
      return {};
    }
    out.push_back(l);
  }
  return out;
}

namespace {

// What a committed job changes in the view, applied only after COMMIT succeeds.
struct ViewChange {
  enum Kind { kPut, kErase, kAllowAddress, kDisallowAddress, kAllowDomain, kDisallowDomain } kind;
  std::string key;
  SuppressionHit hit;
  // kPut of a new entry (logged as "add"): counted in SuppressionsAdded once committed, under
  // its source and category.
  bool added = false;
  std::string source = {};
  std::string category = {};
};

class StoreImpl;

// What Submit works out for each event on the caller's thread (PrepareEvents), so that the
// writer thread only looks up, binds and steps: the recipient key and the kind key (both in
// Job::prepared_text), their hashes, and the event's status tests.
struct PreparedEvent {
  size_t key_at = 0, key_size = 0;  // NormalizeAddress(recipient); empty when not an address
  size_t domain_at = 0;             // DomainOfKey(key) starts here (within the key)
  size_t kind_at = 0, kind_size = 0;
  size_t key_hash = 0;     // KeyHash of the key
  uint64_t kind_hash = 0;  // KindKeyHash of the kind key
  // NormalizeAddress(original_recipient) when that is an address whose key is not the key;
  // else empty (SuppressionPolicy::suppress_original_recipient).
  size_t original_at = 0, original_size = 0;
  size_t original_hash = 0;
  bool permanent = false;  // IsPermanentFailure
  bool delivery = false;   // IsDelivery
  bool failure = false;    // IsFailure
};

struct Job {
  Batch batch;
  // Manual changes run on the writer inside the job's savepoint.
  std::function<Status(StoreImpl&)> call;
  size_t events = 0;
  std::promise<Status> done;
  std::vector<ViewChange> changes;
  // batch.events' PreparedEvent, made with these address delimiters (the writer prepares again
  // if the policy changed them in between).
  std::string delimiters;
  std::vector<PreparedEvent> prepared;
  std::string prepared_text;
};

// The fields of an event that make its event_kinds row, in the table's column order (hard_bounce
// as "0"/"1").
using KindFields = std::array<std::string_view, 14>;
KindFields KindFieldsOf(const Event& ev, const CategoryInfo& info) {
  const Result& r = ev.result;
  return {ToString(ev.source),
          ev.log_status,
          info.name,
          ToString(info.fault),
          ToString(r.action()),
          info.hard_bounce ? "1" : "0",
          ev.program,
          r.provider,
          r.provider_code,
          r.status,
          r.reply_code,
          r.stage,
          r.dsn_action,
          r.rule};
}

// The writer's cache key of a kind: each field with a two-byte length, appended to `out` with
// plain copies (a std::string built by appends costs about twice as much). Fields are cut at
// 64 KiB in the key; the table keeps them whole. No classifier field comes near that.
void AppendKindKey(const KindFields& fields, std::string& out) {
  constexpr size_t kMaxField = 0xffff;
  size_t need = 0;
  for (std::string_view f : fields) need += 2 + std::min(f.size(), kMaxField);
  const size_t at = out.size();
  out.resize(at + need);
  char* p = out.data() + at;
  for (std::string_view f : fields) {
    const size_t n = std::min(f.size(), kMaxField);
    *p++ = static_cast<char>(n & 0xff);
    *p++ = static_cast<char>(n >> 8);
    if (n != 0) std::memcpy(p, f.data(), n);
    p += n;
  }
}

// A 64-bit hash of a kind key, 8 bytes at a time.
uint64_t KindKeyHash(std::string_view key) {
  const size_t need = key.size();
  uint64_t h = 0x243f6a8885a308d3ULL ^ need;
  size_t i = 0;
  for (; i + 8 <= need; i += 8) {
    uint64_t v;
    std::memcpy(&v, key.data() + i, 8);
    h = (h ^ v) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
  }
  if (i < need) {
    uint64_t v = 0;
    std::memcpy(&v, key.data() + i, need - i);
    h = (h ^ v) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
  }
  return h;
}

// Fills job.prepared and job.prepared_text for job.batch.events with `delimiters`.
void PrepareEvents(Job& job, const std::string& delimiters) {
  job.delimiters = delimiters;
  job.prepared.clear();
  job.prepared_text.clear();
  job.prepared.resize(job.batch.events.size());
  std::string key;
  for (size_t i = 0; i < job.batch.events.size(); ++i) {
    const Event& ev = job.batch.events[i];
    PreparedEvent& pe = job.prepared[i];
    NormalizeAddressInto(ev.result.recipient, delimiters, key);
    pe.key_at = job.prepared_text.size();
    pe.key_size = key.size();
    pe.domain_at = key.empty() ? 0 : key.size() - DomainOfKey(key).size();
    pe.key_hash = KeyHash{}(key);
    job.prepared_text += key;
    pe.kind_at = job.prepared_text.size();
    AppendKindKey(KindFieldsOf(ev, Describe(ev.result.category)), job.prepared_text);
    pe.kind_size = job.prepared_text.size() - pe.kind_at;
    pe.kind_hash =
        KindKeyHash(std::string_view(job.prepared_text).substr(pe.kind_at, pe.kind_size));
    if (!ev.result.original_recipient.empty() && !key.empty()) {
      NormalizeAddressInto(ev.result.original_recipient, delimiters, key);
      if (!key.empty() &&
          std::string_view(job.prepared_text).substr(pe.key_at, pe.key_size) != key) {
        pe.original_at = job.prepared_text.size();
        pe.original_size = key.size();
        pe.original_hash = KeyHash{}(key);
        job.prepared_text += key;
      }
    }
    pe.permanent = IsPermanentFailure(ev);
    pe.delivery = IsDelivery(ev);
    pe.failure = pe.permanent || ev.log_status == "deferred";
  }
}

// A recipient_policy row: what the policy remembers beyond the recipient's events. The writer
// holds the whole table in memory (rows exist only while a field is set: recipients with open
// incidents or a manual unsuppress), so events need no SELECT for it.
struct PolicyRow {
  std::string display;     // set with first_seen by an unsuppress before any event
  int64_t first_seen = 0;  // ditto
  PolicyFields fields;
  bool Empty() const { return fields == PolicyFields{}; }
};

// A daily counter increment by (day number, event kind, domain): the kind fixes the provider,
// category, provider code and log status of the counter row (kinds with the same four add up in
// the row's upsert), so an event's key is two integers and its domain, built without strings.
struct CounterKey {
  int64_t day = 0;  // days since the epoch
  int64_t kind = 0;
  std::string domain;
  bool operator==(const CounterKey& o) const {
    return day == o.day && kind == o.kind && domain == o.domain;
  }
};
struct CounterKeyHash {
  size_t operator()(const CounterKey& k) const {
    uint64_t h = static_cast<uint64_t>(k.day) * 0x9e3779b97f4a7c15ULL ^
                 static_cast<uint64_t>(k.kind) * 0xc2b2ae3d27d4eb4fULL;
    return static_cast<size_t>(h ^ std::hash<std::string_view>{}(k.domain));
  }
};
using Counters = std::unordered_map<CounterKey, int64_t, CounterKeyHash>;

// What a daily counter row needs of an event kind.
struct KindCounterFields {
  std::string provider, category, provider_code, log_status;
};

class StoreImpl final : public Store {
 public:
  explicit StoreImpl(const StoreOptions& o)
      : options_(o), policy_(o.policy), retention_(o.retention) {}
  ~StoreImpl() override;

  Status OpenAll();

  std::future<Status> Submit(Batch batch) override;
  Status Write(Batch batch) override { return Submit(std::move(batch)).get(); }
  Status Flush() override;
  void SetPolicy(const SuppressionPolicy& policy) override;
  void SetRetention(const RetentionPolicy& retention) override;
  Expected<PruneResult> Prune() override;

  Expected<Suppression> Suppress(const ManualSuppression& s, const Actor& who) override;
  Expected<std::string> Unsuppress(std::string_view address, const Actor& who) override;
  Expected<BulkUnsuppressResult> UnsuppressMatching(const ListFilter& filter, const Actor& who,
                                                    bool dry_run) override;
  Expected<AllowEntry> Allow(std::string_view entry, const Actor& who) override;
  Status Disallow(std::string_view entry, const Actor& who) override;
  using Store::Import;
  Expected<ImportResult> Import(ExportFormat format, std::string_view data, const Actor& who,
                                const ImportOptions& options) override;

  const SuppressionView& view() const override { return view_; }
  std::vector<AddedSuppressions> SuppressionsAdded() const override {
    std::lock_guard lock(added_mu_);
    std::vector<AddedSuppressions> out;
    out.reserve(added_.size());
    for (const auto& [key, n] : added_) out.push_back({key.first, key.second, n});
    return out;
  }
  PruneTotals Pruned() const override {
    return {events_pruned_.load(), counter_rows_pruned_.load(), events_too_old_.load()};
  }
  Expected<std::optional<InputPosition>> LoadPosition(std::string_view input) override;
  Expected<std::vector<QueueFacts>> LoadQueueFacts(std::string_view input) override;
  Expected<AddressStatus> GetStatus(std::string_view address, size_t max_events) override;
  Status List(const ListFilter& filter,
              const std::function<bool(const Suppression&)>& sink) override;
  Status Export(ExportFormat format, const ListFilter& filter,
                const std::function<bool(std::string_view line)>& sink) override;
  Expected<std::vector<StatsRow>> Stats(const StatsQuery& q) override;
  Expected<std::vector<AllowEntry>> AllowList() override;
  Expected<Health> GetHealth() override;
  Expected<std::vector<StoredEvent>> EventsFor(std::string_view address,
                                               size_t max_events) override;
  Expected<std::vector<StoredEvent>> QueueEvents(const QueueEventsQuery& q) override;
  Expected<std::vector<StoredEvent>> FindEvents(const EventsQuery& q) override;
  Expected<std::vector<SuppressionChange>> Changes(const ChangesQuery& q) override;
  const std::string& path() const override { return options_.path; }

 private:
  // Open, migrate, load.
  Status Migrate();
  Status RekeyQuotedAddresses();
  // Migration 7: event_originals for the rows stored before it (see storage/migrate_7.sql).
  Status FillOriginalKeys();
  Status PrepareWriter();
  // Sets bounces_from_log_ / bounces_from_dsn_ from the kinds already stored and loads
  // dsn_bounces_ from the events of the last days.
  Status LoadBounceSources();
  Status LoadDsnBounceIndex();
  Status LoadView();
  Status LoadPolicyRows();

  // Writer thread.
  void WriterLoop();
  void CommitGroup(std::vector<std::unique_ptr<Job>>& group);
  // Runs the given jobs of `group` in one transaction; on error nothing of them holds and
  // *failed_job names the job that failed (kNoJob: BEGIN or COMMIT failed).
  static constexpr size_t kNoJob = static_cast<size_t>(-1);
  Status RunTransaction(std::vector<std::unique_ptr<Job>>& group, const std::vector<size_t>& jobs,
                        size_t* failed_job);
  Status ApplyBatch(Job& job);
  // Deletes the batch's forgotten queue facts, then stores its changed ones.
  Status ApplyQueueFactsW(const Batch& b);
  // The id of each queue id's row in queue_facts, per input, as the running transaction left
  // the table (storage/migrate_6.sql: rows are found by id, there is no index on queue_id).
  // An input's map is read from the table at its first batch with facts, and all are dropped
  // when a transaction fails, to be read again. As many ids as the input's correlator tracks
  // at most (kDefaultMaxTrackedQueueIds), ~70 bytes each. Writer thread only.
  std::unordered_map<std::string, std::unordered_map<std::string, int64_t>> queue_fact_ids_;
  Expected<std::unordered_map<std::string, int64_t>*> QueueFactIdsW(const std::string& input);
  // Ok when the stored position of want.input is `want` (see Batch::follows).
  Status CheckFollowsW(const InputPosition& want);
  Status ApplyEvent(const Event& ev, const PreparedEvent& pe, std::string_view prepared_text,
                    Counters& counters);
  // Whether the last ApplyEvent stored its event as counted (not a repeat, not a copy).
  bool last_event_counted_ = false;
  // The policy's part of ApplyEvent for one recipient key (the recipient's, or its original
  // recipient's: `display` is the address as the event gives it).
  Status ApplyPolicyW(const HashedKey& hkey, std::string_view display, const Event& ev,
                      const PreparedEvent& pe, const CategoryInfo& info, int64_t t);
  Status ApplyDecision(const HashedKey& key, std::string_view display, const Event& ev,
                       const PolicyDecision& d, int64_t t);
  Expected<std::optional<Suppression>> GetSuppressionW(std::string_view key);
  Status PutSuppressionW(const Suppression& s, std::string_view log_action, const Actor& who);
  // Lifts the entry `existing` (stored under `key`) as Unsuppress does: deleted, logged,
  // remembered in the recipient's policy state against older events, audited, erased from the view.
  Status LiftW(const std::string& key, const Suppression& existing, const Actor& who);
  // Logs a change of the list, with who made it and why (who.reason: the log's note).
  Status LogSuppressionW(const Suppression& s, std::string_view action, const Actor& who);
  Expected<bool> AllowedW(std::string_view key);
  // False only when no suppression row can exist for `key` (skips a pointless UPDATE).
  bool MayHaveSuppressionW(const HashedKey& key) const {
    return view_.HasKeyWriter(key) || txn_suppressed_.find(key) != txn_suppressed_.end();
  }
  Status AuditW(const Actor& who, std::string_view action, std::string_view target,
                std::string_view detail);
  // Deletes up to kPurgeLimit expired suppressions, logged as "remove" by bounced itself.
  Status PurgeExpiredW();
  // One step of pruning under txn_retention_: up to kPruneLimit event rows, then one day of
  // daily counters; sets prune_more_ when more is left.
  Status PruneW();
  // An automatic suppression for repeated failures that has run out gives the address a fresh
  // start: the incidents that made it are forgotten when it goes (ForgetIncidentsW), by the
  // purge or, when a failure finds it expired before the purge did, here (which removes it).
  Status EndExpiredRepeatedFailureW(const HashedKey& key);
  void ForgetIncidentsW(std::string_view address);
  // The event_kinds id of the event's classification (inserted when new); `key` and `hash`: its
  // kind key (AppendKindKey) and KindKeyHash.
  Expected<int64_t> KindW(const Event& ev, const CategoryInfo& info, std::string_view key,
                          uint64_t hash);
  // The policy row of `key` for changing (created empty when absent); remembers the row as it
  // was before the running transaction, for WritePendingW and for a rollback.
  PolicyRow& PolicyRowW(const HashedKey& key);
  // Writes what the running transaction kept in memory: event_days ranges, daily counters,
  // changed policy rows (in key order; rows that became empty are deleted).
  Status WritePendingW();
  // After a failed transaction: forgets what it changed in memory (policy rows, new kinds,
  // counters, queue fact ids).
  void DiscardPendingW();
  // Queues a manual change and waits for its commit.
  Status RunOnWriter(std::function<Status(StoreImpl&)> fn);

  // Readers.
  struct ReaderDeleter {
    StoreImpl* store;
    void operator()(sql::Db* db) const;
  };
  using Reader = std::unique_ptr<sql::Db, ReaderDeleter>;
  Expected<Reader> AcquireReader();
  std::string Delimiters();

  StoreOptions options_;
  MemorySuppressionView view_;

  std::mutex policy_mu_;
  SuppressionPolicy policy_;
  SuppressionPolicy txn_policy_;  // the writer's copy for the current transaction
  RetentionPolicy retention_;     // under policy_mu_
  RetentionPolicy txn_retention_;
  int64_t txn_event_horizon_ = 0;  // RetentionHorizon(txn_retention_.event_days, txn_now_)
  int64_t txn_now_ = 0;
  std::string txn_now_day_;  // DayOf(txn_now_)
  // DayOf(t) for the last day seen: most events of a batch fall on the same day.
  int64_t cached_day_number_ = std::numeric_limits<int64_t>::min();
  std::string cached_day_;
  const std::string& DayCached(int64_t t) {
    int64_t n = t >= 0 ? t / 86400 : (t - 86399) / 86400;
    if (n != cached_day_number_) {
      cached_day_number_ = n;
      cached_day_ = DayOf(t);
    }
    return cached_day_;
  }
  std::vector<ViewChange>* pending_ = nullptr;  // the running job's view changes
  // SuppressionsAdded: (source, category) -> count, as committed.
  mutable std::mutex added_mu_;
  std::map<std::pair<std::string, std::string>, int64_t> added_;
  CounterKey counter_key_;  // ApplyEvent's scratch key for daily counters
  // Whether the running transaction changed the allowlist (the view does not show it yet).
  bool txn_allowlist_changed_ = false;
  // Keys given a suppression row in the running transaction (not in the view yet).
  std::unordered_set<std::string, KeyHash, KeyEq> txn_suppressed_;
  // The whole recipient_policy table, as committed plus the running transaction's changes;
  // policy_before_ holds, for each key the transaction changed, the row before it (nullopt:
  // none), restored by DiscardPendingW.
  std::unordered_map<std::string, PolicyRow, KeyHash, KeyEq> policy_rows_;
  std::unordered_map<std::string, std::optional<PolicyRow>, KeyHash, KeyEq> policy_before_;
  // event_kinds ids by a 64-bit hash of the kind's fields (see KindW), with the fields as a
  // length-prefixed key to confirm a hit (a kind whose hash another kind holds is looked up in
  // SQL each time). Hashes inserted by the running transaction are listed in txn_new_kinds_
  // and dropped from the cache if it rolls back.
  struct CachedKind {
    std::string key;
    int64_t id;
  };
  struct IdentityHash {
    size_t operator()(uint64_t v) const { return static_cast<size_t>(v); }
  };
  std::unordered_map<uint64_t, CachedKind, IdentityHash> kind_ids_;
  std::vector<uint64_t> txn_new_kinds_;
  std::vector<int64_t> txn_new_kind_ids_;  // every id the running transaction inserted
  // The counter fields of every kind KindW returned since the cache was last cleared.
  std::unordered_map<int64_t, KindCounterFields> kind_counter_fields_;
  // Whether a bounced/expired event from the log family (log, journal) or the DSN family (dsn,
  // milter) may be stored. The same-bounce lookup for a permanent failure looks for one from
  // the other family; while there can be none (a log-only installation) it is skipped. Set from
  // event_kinds at open and whenever such an event is written; never cleared (a rolled-back
  // transaction leaves it set, which only costs the lookup).
  bool bounces_from_log_ = true;
  bool bounces_from_dsn_ = true;
  // The counted dsn/milter bounces of the last days, so a log bounce runs the same-bounce
  // SELECT only when the index cannot tell (see same_bounce_index.h). Rows of a rolled-back
  // transaction stay in it, tainted: they only cost the SELECT that finds nothing.
  SameBounceIndex dsn_bounces_{kSameBounceWindowSeconds, kSameBounceSlackSeconds,
                               kSameBounceIndexMaxEntries};
  // First and last event id per day written by the running transaction (usually one day).
  struct DayRange {
    int64_t day;  // days since the epoch
    int64_t first_id, last_id;
  };
  std::vector<DayRange> txn_days_;
  // Daily counter increments of the running transaction, written once per key before COMMIT
  // (one upsert per key and transaction instead of per key and batch: the milter submits one
  // DSN per batch).
  Counters txn_counters_;
  std::unordered_map<int64_t, std::string> txn_day_texts_;  // day number -> "YYYY-MM-DD"

  sql::Db wdb_;
  // What one row's parameters of an event insert hold from its last run. The bindings are kept
  // between runs (each bind is ~190 instructions in SQLite), so BindEventRow binds NULL only
  // where a text was, and skips a text or number equal to the one bound: texts that often
  // repeat from row to row (domain, sender, relay, ...) are bound from a copy kept here, so
  // the binding stays valid after the row's event is gone. Reset() after a failed run (SQLite
  // then clears the bindings).
  struct RowBindings {
    uint32_t texts = 0;   // bit i: ?i holds a text (else NULL or never bound)
    uint32_t copies = 0;  // bit i: ?i holds copy[i]
    int64_t kind = -1, counted = -1;
    std::array<std::string, kEventRowParams + 1> copy;
    void Reset() {
      texts = copies = 0;
      kind = counted = -1;
    }
  };
  RowBindings insert_bindings_;  // w_.insert_event
  // An event's row waiting for its INSERT: SQLite's work per statement (opening and closing
  // cursors, finding the table's end, halting) is ~2,000 instructions, so rows go in
  // kRowsPerInsert at a time through w_.insert_events. Anything that reads event_rows first
  // flushes (FlushRowsW), and so does the end of each batch: a failing INSERT is still its
  // batch's error. The texts are the batch's (events and prepared keys), alive until then.
  struct PendingRow {
    const Event* ev;
    int64_t time, kind, day;
    bool counted;
    std::string_view key, domain;
    std::string_view original_key;  // PreparedEvent's; non-empty: a row in event_originals
  };
  std::vector<PendingRow> pending_rows_;
  std::array<RowBindings, kRowsPerInsert> multi_bindings_;  // each row of w_.insert_events
  // Binds `row` at parameter offset `base`; `b`: what those parameters hold.
  static void BindEventRow(sql::Stmt& st, int base, const PendingRow& row, RowBindings& b);
  Status FlushRowsW();
  struct WriterStatements {
    sql::Stmt insert_event, insert_events, dsn_lookup, same_bounce, get_kind, put_kind, put_day,
        has_events, delivered_since, put_policy, delete_policy, get_suppression, put_suppression,
        delete_suppression, touch_suppression, delivered_after, log_suppression, allowed, counter,
        position, get_position, queue_fact_ids, put_queue_fact, update_queue_fact,
        delete_queue_fact, audit, put_original, prune_range, prune_ids, prune_rows, prune_originals,
        prune_days, oldest_counter_day, prune_counter_day;
  } w_;

  std::mutex queue_mu_;
  std::condition_variable queue_cv_, space_cv_;
  std::deque<std::unique_ptr<Job>> queue_;
  size_t queued_events_ = 0;
  bool stopping_ = false;
  std::string last_write_error_;
  int64_t next_purge_ = 0;  // writer thread only
  // Pruning (writer thread only, except prune_soon_): when next; whether a step left more (the
  // writer then runs another without waiting for a batch); the event id the next step's scan
  // starts at (0 after a finished pass or a rollback); what the running transaction pruned or
  // skipped, added to the totals when it commits.
  int64_t next_prune_ = 0;
  bool prune_more_ = false;
  std::atomic<bool> prune_soon_{false};  // SetRetention: prune at the next commit
  int64_t prune_cursor_ = 0;
  PruneResult txn_pruned_;
  int64_t txn_too_old_ = 0;
  std::atomic<int64_t> events_pruned_{0}, counter_rows_pruned_{0}, events_too_old_{0};
  std::thread writer_;

  // Finished jobs are destroyed here, off the writer thread: freeing a batch's event strings
  // costs ~1,000 instructions per event that the writer would otherwise spend between
  // commits. At most max_queued_events wait; past that the writer frees them itself.
  void ReaperLoop();
  std::mutex reap_mu_;
  std::condition_variable reap_cv_;
  std::vector<std::unique_ptr<Job>> reap_;
  size_t reap_events_ = 0;
  bool reap_stop_ = false;
  std::thread reaper_;

  // Checkpoints on their own thread and connection, so copying WAL pages into the database and
  // its fsync are off the writer's path. Durability does not change: a commit is durable once
  // its WAL frames are synced, checkpointed or not. The writer's WalHook (called by SQLite after
  // each commit with the WAL's frame count) asks for a checkpoint every ckpt_every_frames_;
  // past ckpt_cap_frames_ the writer waits for one (WaitForCheckpointW) so the WAL stays
  // bounded (see StoreOptions::wal_cap_bytes). PASSIVE checkpoints never wait for readers: a
  // long read only keeps the WAL from starting over, as with SQLite's own auto-checkpoint.
  static int WalHook(void* self, sqlite3* db, const char* name, int frames);
  void CheckpointerLoop();
  uint64_t RequestCheckpoint();  // returns the request's ticket
  void WaitForCheckpointW();
  sql::Db cdb_;
  int64_t ckpt_every_frames_ = 0;
  int64_t ckpt_cap_frames_ = 0;
  int64_t wal_frames_ = 0;         // writer: frames in the WAL after its last commit
  int64_t ckpt_asked_frames_ = 0;  // writer: wal_frames_ when it last asked for a checkpoint
  std::mutex ckpt_mu_;
  std::condition_variable ckpt_cv_, ckpt_done_cv_;
  uint64_t ckpt_wanted_ = 0;  // tickets: a checkpoint started after request N completes N
  uint64_t ckpt_done_ = 0;
  bool ckpt_stop_ = false;
  std::thread checkpointer_;

  std::mutex readers_mu_;
  std::vector<std::unique_ptr<sql::Db>> readers_;
};

// ---------------------------------------------------------------------------------------------
// Open

Status StoreImpl::OpenAll() {
  if (options_.path.empty()) return Status::Error("storage: no database path configured");
  if (Status s = wdb_.Open(options_.path, false, options_.busy_timeout_ms); !s) return s;
  // Reading the header first turns "not a database" and "locked" into clear errors.
  {
    sql::Stmt st;
    if (Status s = st.Prepare(wdb_, "PRAGMA application_id"); !s) return s;
    auto r = st.Step();
    if (!r) return r.status();
    int32_t app = static_cast<int32_t>(st.Int(0));
    if (app != 0 && app != kApplicationId) {
      return Status::Error(options_.path + ": not a bounced database (application_id " +
                           std::to_string(app) + ")");
    }
  }
  // 16 KiB pages for a new file (an existing one keeps its size; the pragma must come before
  // WAL mode): shallower B-trees and fewer page splits for the events and recipient indexes,
  // measured ~2 % fewer instructions and 5-25 % less CPU per ingested event than 4 KiB.
  if (Status s = wdb_.Exec("PRAGMA page_size=16384"); !s) return s;
  {
    sql::Stmt st;
    if (Status s = st.Prepare(wdb_, "PRAGMA journal_mode=WAL"); !s) return s;
    auto r = st.Step();
    if (!r) return r.status();
    if (st.TextView(0) != "wal") {
      return Status::Error(options_.path + ": cannot switch to WAL mode (journal_mode is " +
                           st.Text(0) + ")");
    }
  }
  if (Status s = wdb_.Exec(options_.synchronous_full ? "PRAGMA synchronous=FULL"
                                                     : "PRAGMA synchronous=NORMAL");
      !s) {
    return s;
  }
  // A big page cache keeps the random-key indexes (recipients) in memory across group commits;
  // without it each transaction re-reads pages from the WAL through system calls.
  int64_t page_size = 4096;
  {
    sql::Stmt st;
    if (Status s = st.Prepare(wdb_, "PRAGMA page_size"); !s) return s;
    auto r = st.Step();
    if (!r) return r.status();
    if (*r && st.Int(0) > 0) page_size = st.Int(0);
  }
  if (Status s = wdb_.Exec("PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY"); !s) return s;
  // Checkpoints run on the checkpointer thread, not inside the writer's COMMIT (SQLite's
  // wal_autocheckpoint): the hook replaces it (see CheckpointerLoop). Sizes count pages.
  ckpt_every_frames_ = std::max<int64_t>(1, options_.checkpoint_bytes / page_size);
  ckpt_cap_frames_ = std::max<int64_t>(ckpt_every_frames_, options_.wal_cap_bytes / page_size);
  sqlite3_wal_hook(wdb_.get(), &StoreImpl::WalHook, this);
  if (Status s = Migrate(); !s) return s;
  if (Status s = RekeyQuotedAddresses(); !s) return s;
  // Opened after the migration: the file is a bounced database in WAL mode by now. A read makes
  // the connection open the WAL (a checkpoint on a connection that never read does nothing).
  if (Status s = cdb_.Open(options_.path, false, options_.busy_timeout_ms); !s) return s;
  if (Status s = cdb_.Exec("SELECT count(*) FROM sqlite_master"); !s) return s;
  if (Status s = PrepareWriter(); !s) return s;
  if (Status s = LoadBounceSources(); !s) return s;
  if (Status s = LoadPolicyRows(); !s) return s;
  view_.SetDelimiters(policy_.recipient_delimiters);
  if (Status s = LoadView(); !s) return s;
  reaper_ = std::thread(&StoreImpl::ReaperLoop, this);
  checkpointer_ = std::thread(&StoreImpl::CheckpointerLoop, this);
  // With a retention, the writer prunes at once, before any batch comes.
  prune_soon_ = retention_.event_days > 0 || retention_.counter_days > 0;
  writer_ = std::thread([this] { WriterLoop(); });
  return Status::Ok();
}

Status StoreImpl::Migrate() {
  sql::Stmt st;
  if (Status s = st.Prepare(wdb_, "PRAGMA user_version"); !s) return s;
  auto r = st.Step();
  if (!r) return r.status();
  int version = static_cast<int>(st.Int(0));
  st = sql::Stmt();
  if (version > kSchemaVersion) {
    return Status::Error(options_.path + ": database schema version " + std::to_string(version) +
                         " is newer than this bounced knows (" + std::to_string(kSchemaVersion) +
                         "); upgrade bounced or restore a backup");
  }
  if (version == 0) {
    // A fresh file has no tables; anything else with version 0 belongs to someone else.
    sql::Stmt count;
    if (Status s = count.Prepare(wdb_, "SELECT count(*) FROM sqlite_master"); !s) return s;
    auto c = count.Step();
    if (!c) return c.status();
    if (count.Int(0) != 0) {
      return Status::Error(options_.path +
                           ": not a bounced database (has tables but no schema version)");
    }
  }
  for (int v = version + 1; v <= kSchemaVersion; ++v) {
    if (Status s = wdb_.Exec("BEGIN IMMEDIATE"); !s) return s;
    Status s = wdb_.Exec(*kMigrations[v - 1]);
    if (s && v == 7) s = FillOriginalKeys();
    if (s) s = wdb_.Exec("PRAGMA application_id=" + std::to_string(kApplicationId));
    if (s) s = wdb_.Exec("PRAGMA user_version=" + std::to_string(v));
    if (s) s = wdb_.Exec("COMMIT");
    if (!s) {
      wdb_.Exec("ROLLBACK");
      return Status::Error(options_.path + ": migration to schema version " + std::to_string(v) +
                           " failed: " + s.message());
    }
  }
  return Status::Ok();
}

Status StoreImpl::FillOriginalKeys() {
  // Keyed with the policy's delimiters, as the writer keys what it stores from now on.
  const std::string delimiters = options_.policy.recipient_delimiters;
  struct Row {
    int64_t id, time;
    std::string key;
  };
  std::vector<Row> rows;
  {
    sql::Stmt st;
    if (Status s = st.Prepare(wdb_,
                              "SELECT id, time, original_recipient, recipient_key FROM event_rows "
                              "WHERE original_recipient IS NOT NULL");
        !s) {
      return s;
    }
    std::string key;
    Status walked = st.ForEachRow([&] {
      NormalizeAddressInto(st.TextView(2), delimiters, key);
      if (!key.empty() && key != st.TextView(3)) rows.push_back({st.Int(0), st.Int(1), key});
    });
    if (!walked) return walked;
  }
  sql::Stmt put;
  if (Status s = put.Prepare(wdb_,
                             "INSERT INTO event_originals (event_id, original_key, time) "
                             "VALUES (?1, ?2, ?3)");
      !s) {
    return s;
  }
  for (const Row& r : rows) {
    put.Bind(1, r.id).Bind(2, r.key).Bind(3, r.time);
    if (Status s = put.Run(); !s) return s;
  }
  return Status::Ok();
}

namespace {

// SQL condition: `column` holds a key whose local part starts with a quote (they sort from '"'
// up to '#', so an index on the column finds them in one probe).
std::string QuotedKey(std::string_view column) {
  std::string c(column);
  return c + " >= '\"' AND " + c + " < '#'";
}

// (stored key, key NormalizeAddress makes of it now) for each key `sql` returns that changed.
Expected<std::vector<std::pair<std::string, std::string>>> ChangedKeys(sql::Db& db,
                                                                       std::string_view sql) {
  std::vector<std::pair<std::string, std::string>> out;
  sql::Stmt st;
  if (Status s = st.Prepare(db, sql); !s) return s;
  Status walked = st.ForEachRow([&] {
    // No delimiters: a stored key keeps the extension cut it was written with.
    std::string now = NormalizeAddress(st.TextView(0), "");
    if (!now.empty() && now != st.TextView(0)) out.emplace_back(st.Text(0), std::move(now));
  });
  if (!walked) return walked;
  return out;
}

// How strongly a suppression row holds at `now`: one in force over an expired one, then manual
// and imported entries over automatic ones, then the one that never expires, then the later
// expiry.
std::tuple<bool, bool, bool, int64_t> SuppressionStrength(std::string_view source, int64_t expires,
                                                          int64_t now) {
  return {expires == 0 || expires > now, source == "manual" || source == "import", expires == 0,
          expires};
}

}  // namespace

// Keys written before NormalizeAddress unquoted quoted local parts: `"john.doe"@x` (now
// john.doe@x, as Postfix itself spells it), or `"john.doe@x` (an extension cut inside the
// quotes). Lookups no longer reach them, so they move to their present key, in one transaction,
// at every open: without such keys it costs one index probe per table, and a file written by an
// older bounced in between is put right the same way (which a schema version, run once, would
// not do; nor would an older bounced refuse the file afterwards). Where the present key already
// has a row, one row stays: for suppressions the one that holds more strongly
// (SuppressionStrength; a tie keeps the present key's), for the allowlist the present key's, for
// the policy rows the present key's with the later manual unsuppress of the two. Events only
// change their key (a NULL display, meaning "the key", becomes the old key). suppression_log and
// audit keep what they recorded.
Status StoreImpl::RekeyQuotedAddresses() {
  const std::string changed_suppressions =
      "SELECT address FROM suppressions WHERE " + QuotedKey("address");
  const std::string changed_allowed =
      "SELECT entry FROM allowlist WHERE kind = 'address' AND " + QuotedKey("entry");
  const std::string changed_policy =
      "SELECT address FROM recipient_policy WHERE " + QuotedKey("address");
  const std::string changed_events =
      "SELECT DISTINCT recipient_key FROM event_rows WHERE " + QuotedKey("recipient_key");
  // Read first, outside a transaction: usually there is nothing to move (keys that need their
  // quotes, "jane roe"@x, stay as they are), and then nothing is written.
  bool any = false;
  for (const std::string* sql :
       {&changed_suppressions, &changed_allowed, &changed_policy, &changed_events}) {
    auto changed = ChangedKeys(wdb_, *sql);
    if (!changed) return changed.status();
    any = any || !changed->empty();
  }
  if (!any) return Status::Ok();
  size_t moved = 0;
  auto rekey = [&]() -> Status {
    // Every statement below names the old key ?1 and the present key ?2.
    auto run = [&](std::string_view sql, std::string_view a, std::string_view b) -> Status {
      sql::Stmt st;
      if (Status s = st.Prepare(wdb_, sql); !s) return s;
      st.Bind(1, a).Bind(2, b);
      return st.Run();
    };
    // `table`'s row keyed `old_key` (in `column`) takes `new_key`; when a row has that key
    // already, the old row goes and the other stays.
    auto move_key = [&](std::string_view table, std::string_view column, std::string_view old_key,
                        std::string_view new_key) -> Status {
      const std::string t(table), c(column);
      if (Status s = run("DELETE FROM " + t + " WHERE " + c + " = ?1 AND EXISTS (SELECT 1 FROM " +
                             t + " WHERE " + c + " = ?2)",
                         old_key, new_key);
          !s) {
        return s;
      }
      ++moved;
      return run("UPDATE " + t + " SET " + c + " = ?2 WHERE " + c + " = ?1", old_key, new_key);
    };
    auto suppressions = ChangedKeys(wdb_, changed_suppressions);
    if (!suppressions) return suppressions.status();
    for (const auto& [old_key, new_key] : *suppressions) {
      sql::Stmt both;
      if (Status s = both.Prepare(wdb_,
                                  "SELECT o.source, o.expires, n.source, n.expires FROM "
                                  "suppressions o JOIN suppressions n ON n.address = ?2 "
                                  "WHERE o.address = ?1");
          !s) {
        return s;
      }
      both.Bind(1, old_key).Bind(2, new_key);
      auto collision = both.Step();
      if (!collision) return collision.status();
      const bool old_wins =
          *collision && SuppressionStrength(both.TextView(0), both.Int(1), Now()) >
                            SuppressionStrength(both.TextView(2), both.Int(3), Now());
      both = sql::Stmt();
      // The old row winning, the present key's goes first, and the old one takes its key.
      if (*collision && old_wins) {
        if (Status s = run("DELETE FROM suppressions WHERE address = ?2", old_key, new_key); !s)
          return s;
      }
      if (Status s = move_key("suppressions", "address", old_key, new_key); !s) return s;
    }
    auto allowed = ChangedKeys(wdb_, changed_allowed);
    if (!allowed) return allowed.status();
    for (const auto& [old_key, new_key] : *allowed) {
      if (Status s = move_key("allowlist", "entry", old_key, new_key); !s) return s;
    }
    auto policy = ChangedKeys(wdb_, changed_policy);
    if (!policy) return policy.status();
    for (const auto& [old_key, new_key] : *policy) {
      if (Status s =
              run("UPDATE recipient_policy SET manual_unsuppressed = max(manual_unsuppressed, "
                  "(SELECT manual_unsuppressed FROM recipient_policy WHERE address = ?1)) "
                  "WHERE address = ?2",
                  old_key, new_key);
          !s) {
        return s;
      }
      if (Status s = move_key("recipient_policy", "address", old_key, new_key); !s) return s;
    }
    auto events = ChangedKeys(wdb_, changed_events);
    if (!events) return events.status();
    for (const auto& [old_key, new_key] : *events) {
      if (Status s = run("UPDATE event_rows SET recipient = coalesce(recipient, recipient_key), "
                         "recipient_key = ?2 WHERE recipient_key = ?1",
                         old_key, new_key);
          !s) {
        return s;
      }
      ++moved;
    }
    return Status::Ok();
  };
  if (Status s = wdb_.Exec("BEGIN IMMEDIATE"); !s) return s;
  Status s = rekey();
  if (s) s = wdb_.Exec("COMMIT");
  if (!s) {
    wdb_.Exec("ROLLBACK");
    return Status::Error(
        options_.path +
        ": moving quoted address keys to their unquoted form failed: " + s.message());
  }
  if (moved != 0) {
    spdlog::info(
        "storage: {}: {} address key(s) written in quoted form moved to the form "
        "lookups use now",
        options_.path, moved);
  }
  return Status::Ok();
}

Status StoreImpl::LoadBounceSources() {
  sql::Stmt st;
  if (Status s = st.Prepare(wdb_,
                            "SELECT EXISTS (SELECT 1 FROM event_kinds WHERE log_status IN "
                            "('bounced', 'expired') AND source IN ('log', 'journal')), "
                            "EXISTS (SELECT 1 FROM event_kinds WHERE log_status IN "
                            "('bounced', 'expired') AND source IN ('dsn', 'milter'))");
      !s)
    return s;
  auto row = st.Step();
  if (!row) return row.status();
  if (*row) {
    bounces_from_log_ = st.Int(0) != 0;
    bounces_from_dsn_ = st.Int(1) != 0;
  }
  // Without any DSN bounce stored the empty index is complete (its default).
  return bounces_from_dsn_ ? LoadDsnBounceIndex() : Status::Ok();
}

namespace {

// The first event id of the day of `since` and the days after it (event_days), or -1 when they
// have no events: the rows from `since` on are then a range of ids, read without an index on
// time (a few rows of that day before `since` are the caller's to skip).
Expected<int64_t> FirstEventIdOfDays(sql::Db& db, int64_t since) {
  sql::Stmt first;
  if (Status s = first.Prepare(db,
                               "SELECT coalesce(min(first_id), -1) FROM event_days "
                               "WHERE day >= ?1 AND length(day) = 10");
      !s) {
    return s;
  }
  first.Bind(1, DayOf(since));
  auto r = first.Step();
  if (!r) return r.status();
  return *r ? first.Int(0) : int64_t{-1};
}

}  // namespace

Status StoreImpl::LoadDsnBounceIndex() {
  // The newest event day (a day in the future from a bad clock counts as tomorrow); the index
  // then covers the lookup's window before it and one day of slack. event_days holds every
  // event's id within its day's range, so the rows of those days are a range of ids, read in
  // one pass without an index on time.
  const int64_t now = Now();
  int64_t newest = now;
  {
    sql::Stmt st;
    if (Status s = st.Prepare(wdb_, "SELECT max(day) FROM event_days WHERE length(day) = 10"); !s) {
      return s;
    }
    auto r = st.Step();
    if (!r) return r.status();
    // NULL (no events) reads as "", which does not parse.
    if (*r) {
      if (auto day = ParseTime(st.TextView(0))) newest = std::min(*day + 86399, newest + 86400);
    }
  }
  // Not before 1970: days of those times may not sort as text.
  const int64_t covered_from =
      std::max<int64_t>(0, newest - kSameBounceWindowSeconds - kSameBounceSlackSeconds);
  dsn_bounces_.Reset(covered_from);
  auto first = FirstEventIdOfDays(wdb_, covered_from);
  if (!first) return first.status();
  const int64_t first_id = *first;
  if (first_id < 0) return Status::Ok();  // no events on those days
  sql::Stmt st;
  if (Status s = st.Prepare(wdb_,
                            // The kind first: it rejects most rows after one column (1.2M
                            // rows: 0.17 s against 0.29 s with it last).
                            "SELECT time, queue_id, recipient_key FROM event_rows WHERE id >= ?1 "
                            "AND kind IN (SELECT id FROM event_kinds WHERE log_status IN "
                            "('bounced', 'expired') AND source IN ('dsn', 'milter')) "
                            "AND time >= ?2 AND counted = 1 AND queue_id IS NOT NULL");
      !s) {
    return s;
  }
  st.Bind(1, first_id).Bind(2, covered_from);
  if (Status walked =
          st.ForEachRow([&] { dsn_bounces_.Add(st.TextView(1), st.TextView(2), st.Int(0), now); });
      !walked) {
    return walked;
  }
  dsn_bounces_.Commit();  // committed rows
  return Status::Ok();
}

Status StoreImpl::PrepareWriter() {
  struct {
    sql::Stmt* st;
    std::string_view sql;
  } all[] = {
      {&w_.insert_event,
       "INSERT INTO event_rows (time, kind, counted, recipient_key, domain, queue_id, source_ref, "
       "recipient, message_id, sender, relay, diagnostic, remote_mta, time_text, "
       "original_recipient, bounce_queue_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
       "?11, ?12, ?13, ?14, ?15, ?16)"},
      {&w_.put_original,
       "INSERT INTO event_originals (event_id, original_key, time) VALUES (?1, ?2, ?3)"},
      // Pruning (PruneW). Days are compared as text, so only those of four-digit years: the
      // rows of a clock past 9999 sort before 2026 and are not old.
      {&w_.prune_range,
       "SELECT min(first_id), max(last_id) FROM event_days WHERE day < ?1 AND length(day) = 10"},
      {&w_.prune_ids,
       "SELECT id FROM event_rows WHERE id >= ?1 AND id <= ?2 AND time < ?3 ORDER BY id "
       "LIMIT ?4"},
      {&w_.prune_rows, "DELETE FROM event_rows WHERE id >= ?1 AND id <= ?2 AND time < ?3"},
      {&w_.prune_originals,
       "DELETE FROM event_originals WHERE event_id >= ?1 AND event_id <= ?2 AND time < ?3"},
      {&w_.prune_days, "DELETE FROM event_days WHERE day < ?1 AND length(day) = 10"},
      {&w_.oldest_counter_day, "SELECT min(day) FROM daily_counters WHERE length(day) = 10"},
      {&w_.prune_counter_day, "DELETE FROM daily_counters WHERE day = ?1"},
      // A DSN is recorded once per (Message-ID, recipient), whichever of dsn/milter saw it.
      // A DSN event's two questions (recorded before? the copy of a counted log bounce?) in one
      // pass over the recipient's rows: only matching rows come back, usually none. ?3 (the
      // queue id) stays NULL when the event cannot repeat a log bounce.
      {&w_.dsn_lookup,
       "SELECT e.source_ref = ?2 AND k.source IN ('dsn', 'milter') FROM event_rows e "
       "JOIN event_kinds k ON k.id = e.kind WHERE e.recipient_key = ?1 AND "
       "((e.source_ref = ?2 AND k.source IN ('dsn', 'milter')) OR (e.queue_id = ?3 AND "
       "e.time BETWEEN ?4 AND ?5 AND e.counted = 1 AND k.log_status IN ('bounced', 'expired') "
       "AND k.source IN ('log', 'journal')))"},
      {&w_.same_bounce,
       "SELECT 1 FROM event_rows e JOIN event_kinds k ON k.id = e.kind "
       "WHERE e.recipient_key = ?2 AND e.time BETWEEN ?5 AND ?6 AND e.queue_id = ?1 "
       "AND e.counted = 1 AND k.log_status IN ('bounced', 'expired') AND k.source IN (?3, ?4) "
       "LIMIT 1"},
      {&w_.get_kind,
       "SELECT id FROM event_kinds WHERE source = ?1 AND log_status = ?2 AND category = ?3 "
       "AND fault = ?4 AND action = ?5 AND hard_bounce = ?6 AND program = ?7 AND provider = ?8 "
       "AND provider_code = ?9 AND status = ?10 AND reply_code = ?11 AND stage = ?12 "
       "AND dsn_action = ?13 AND rule = ?14"},
      {&w_.put_kind,
       "INSERT INTO event_kinds (source, log_status, category, fault, action, hard_bounce, "
       "program, provider, provider_code, status, reply_code, stage, dsn_action, rule) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"},
      {&w_.put_day,
       "INSERT INTO event_days (day, first_id, last_id) VALUES (?1, ?2, ?3) "
       "ON CONFLICT (day) DO UPDATE SET first_id = min(first_id, excluded.first_id), "
       "last_id = max(last_id, excluded.last_id)"},
      {&w_.has_events, "SELECT 1 FROM event_rows WHERE recipient_key = ?1 AND counted = 1 LIMIT 1"},
      {&w_.delivered_since,
       "SELECT coalesce(max(f.time), 0) FROM event_rows f JOIN event_kinds k ON k.id = f.kind "
       "WHERE f.recipient_key = ?1 AND f.counted = 1 AND f.time > ?2 AND k.log_status <> "
       "'blocked' AND (k.log_status = 'sent' OR k.category = 'delivered')"},
      {&w_.put_policy,
       "INSERT OR REPLACE INTO recipient_policy (address, display, first_seen, incidents, "
       "incidents_since, last_incident, manual_unsuppressed, pending_delivery, "
       "pending_message_id, pending_earlier) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"},
      {&w_.delete_policy, "DELETE FROM recipient_policy WHERE address = ?1"},
      {&w_.get_suppression,
       "SELECT address, display, reason, category, source, first_event, last_event, created, "
       "expires, detail, delivered_after FROM suppressions WHERE address = ?1"},
      {&w_.put_suppression,
       "INSERT OR REPLACE INTO suppressions (address, display, domain, reason, category, source, "
       "first_event, last_event, created, expires, detail, delivered_after, updated) VALUES "
       "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"},
      {&w_.delete_suppression, "DELETE FROM suppressions WHERE address = ?1"},
      {&w_.touch_suppression,
       "UPDATE suppressions SET last_event = max(last_event, ?2), updated = ?3 "
       "WHERE address = ?1"},
      {&w_.delivered_after,
       "UPDATE suppressions SET delivered_after = max(delivered_after, ?2), updated = ?3 "
       "WHERE address = ?1 AND created <= ?2"},
      {&w_.log_suppression,
       "INSERT INTO suppression_log (time, day, address, action, source, reason, category, "
       "actor_uid, note) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"},
      {&w_.allowed, "SELECT 1 FROM allowlist WHERE entry = ?1"},
      {&w_.counter,
       "INSERT INTO daily_counters (day, domain, provider, category, provider_code, log_status, "
       "count) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO UPDATE SET "
       "count = count + excluded.count"},
      {&w_.position,
       "INSERT OR REPLACE INTO input_positions (input, inode, offset, cursor, updated) "
       "VALUES (?1, ?2, ?3, ?4, ?5)"},
      {&w_.get_position, "SELECT inode, offset, cursor FROM input_positions WHERE input = ?1"},
      {&w_.queue_fact_ids, "SELECT id, queue_id FROM queue_facts WHERE input = ?1"},
      {&w_.put_queue_fact,
       "INSERT INTO queue_facts (input, queue_id, sender, sender_known, message_id, "
       "bounce_queue_id, size, nrcpt, updated) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"},
      {&w_.update_queue_fact,
       "UPDATE queue_facts SET sender = ?3, sender_known = ?4, message_id = ?5, "
       "bounce_queue_id = ?6, size = ?7, nrcpt = ?8, updated = ?9 WHERE id = ?1 AND queue_id = ?2"},
      {&w_.delete_queue_fact, "DELETE FROM queue_facts WHERE id = ?1"},
      {&w_.audit,
       "INSERT INTO audit (time, actor_uid, action, target, reason, detail) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"},
  };
  for (auto& p : all) {
    if (Status s = p.st->Prepare(wdb_, p.sql); !s) return s;
  }
  // OR FAIL: event_rows has no constraint but NOT NULL, and a failed statement rolls its whole
  // transaction back anyway; with the default ABORT, SQLite would copy every page the statement
  // changes into a statement journal first (it may have to undo part of a multi-row insert).
  std::string multi =
      "INSERT OR FAIL INTO event_rows (" + std::string(kEventRowColumns) + ") VALUES ";
  for (int r = 0; r < kRowsPerInsert; ++r) {
    multi += r ? ", (" : "(";
    for (int i = 1; i <= kEventRowParams; ++i) {
      multi += (i > 1 ? ", ?" : "?") + std::to_string(r * kEventRowParams + i);
    }
    multi += ")";
  }
  pending_rows_.reserve(kRowsPerInsert);
  return w_.insert_events.Prepare(wdb_, multi);
}

Status StoreImpl::LoadView() {
  // A connection of its own, closed after loading, so the writer's page cache does not keep
  // the whole suppression table in memory after start-up.
  sql::Db db;
  if (Status s = db.Open(options_.path, false, options_.busy_timeout_ms); !s) return s;
  sql::Stmt count;
  if (Status s = count.Prepare(db, "SELECT count(*) FROM suppressions"); !s) return s;
  auto c = count.Step();
  if (!c) return c.status();
  view_.Reserve(static_cast<size_t>(count.Int(0)));
  sql::Stmt st;
  if (Status s = st.Prepare(db,
                            "SELECT address, created, expires, category, source "
                            "FROM suppressions");
      !s) {
    return s;
  }
  if (Status walked = st.ForEachRow([&] {
        SuppressionHit h;
        h.since = st.Int(1);
        h.expires = st.Int(2);
        h.category = CategoryFromName(st.TextView(3)).value_or(Category::kUndetermined);
        std::string_view src = st.TextView(4);
        h.manual = src == "manual" || src == "import";
        view_.Put(st.Text(0), h);
      });
      !walked) {
    return walked;
  }
  sql::Stmt allow;
  if (Status s = allow.Prepare(db, "SELECT entry, kind FROM allowlist"); !s) return s;
  return allow.ForEachRow([&] {
    if (allow.TextView(1) == "domain") {
      view_.AllowDomain(allow.Text(0), true);
    } else {
      view_.AllowAddress(allow.Text(0), true);
    }
  });
}

Status StoreImpl::LoadPolicyRows() {
  sql::Stmt st;
  if (Status s = st.Prepare(wdb_,
                            "SELECT address, display, first_seen, incidents, incidents_since, "
                            "last_incident, manual_unsuppressed, pending_delivery, "
                            "pending_message_id, pending_earlier FROM recipient_policy");
      !s) {
    return s;
  }
  return st.ForEachRow([&] {
    PolicyRow p;
    p.display = st.Text(1);
    p.first_seen = st.Int(2);
    p.fields.incidents = st.Int(3);
    p.fields.incidents_since = st.Int(4);
    p.fields.last_incident = st.Int(5);
    p.fields.manual_unsuppressed = st.Int(6);
    p.fields.pending_delivery = st.Int(7);
    p.fields.pending_message_id = st.Text(8);
    p.fields.pending_earlier = st.Text(9);
    policy_rows_.emplace(st.Text(0), std::move(p));
  });
}

StoreImpl::~StoreImpl() {
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  space_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  {
    std::lock_guard lock(reap_mu_);
    reap_stop_ = true;
  }
  reap_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  {
    std::lock_guard lock(ckpt_mu_);
    ckpt_stop_ = true;
  }
  ckpt_cv_.notify_all();
  if (checkpointer_.joinable()) checkpointer_.join();
  // Closing the connections (members) checkpoints what is left and removes the WAL.
}

// ---------------------------------------------------------------------------------------------
// Writer

std::future<Status> StoreImpl::Submit(Batch batch) {
  auto job = std::make_unique<Job>();
  job->events = batch.events.size();
  job->batch = std::move(batch);
  if (job->events != 0) PrepareEvents(*job, Delimiters());  // on the caller's thread
  std::future<Status> f = job->done.get_future();
  std::unique_lock lock(queue_mu_);
  space_cv_.wait(lock, [&] {
    return stopping_ || queued_events_ == 0 ||
           queued_events_ + job->events <= options_.max_queued_events;
  });
  if (stopping_) {
    job->done.set_value(Status::Error("storage: store is closing"));
    return f;
  }
  queued_events_ += job->events;
  queue_.push_back(std::move(job));
  lock.unlock();
  queue_cv_.notify_one();
  return f;
}

Status StoreImpl::Flush() { return Submit(Batch{}).get(); }

void StoreImpl::SetRetention(const RetentionPolicy& retention) {
  {
    std::lock_guard lock(policy_mu_);
    if (retention_ == retention) return;
    retention_ = retention;
  }
  {
    std::lock_guard lock(queue_mu_);  // so the writer cannot miss the wake-up
    prune_soon_ = true;
  }
  queue_cv_.notify_one();
}

Expected<PruneResult> StoreImpl::Prune() {
  PruneResult total;
  for (bool more = true; more;) {
    PruneResult step;
    Status s = RunOnWriter([&](StoreImpl& self) {
      Status st = self.PruneW();
      more = self.prune_more_;
      step = self.txn_pruned_;
      return st;
    });
    if (!s) return s;
    total.events += step.events;
    total.counter_rows += step.counter_rows;
  }
  return total;
}

void StoreImpl::SetPolicy(const SuppressionPolicy& policy) {
  std::lock_guard lock(policy_mu_);
  policy_ = policy;
  view_.SetDelimiters(policy.recipient_delimiters);
}

std::string StoreImpl::Delimiters() {
  std::lock_guard lock(policy_mu_);
  return policy_.recipient_delimiters;
}

Status StoreImpl::RunOnWriter(std::function<Status(StoreImpl&)> fn) {
  auto job = std::make_unique<Job>();
  job->call = std::move(fn);
  std::future<Status> f = job->done.get_future();
  {
    std::lock_guard lock(queue_mu_);
    if (stopping_) return Status::Error("storage: store is closing");
    queue_.push_back(std::move(job));
  }
  queue_cv_.notify_one();
  return f.get();
}

void StoreImpl::WriterLoop() {
  for (;;) {
    std::vector<std::unique_ptr<Job>> group;
    {
      std::unique_lock lock(queue_mu_);
      // A pruning backlog goes on between batches, and without them.
      queue_cv_.wait(lock,
                     [&] { return stopping_ || !queue_.empty() || prune_more_ || prune_soon_; });
      if (queue_.empty() && stopping_) return;  // everything queued is committed
      size_t events = 0;
      while (!queue_.empty() &&
             (group.empty() || events + queue_.front()->events <= options_.max_batch_events)) {
        events += queue_.front()->events;
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    if (Now() >= next_purge_) {
      // First in the group, so the group's own new entries are never the ones it removes.
      next_purge_ = Now() + kPurgeIntervalSeconds;
      auto purge = std::make_unique<Job>();
      purge->call = [](StoreImpl& self) { return self.PurgeExpiredW(); };
      group.insert(group.begin(), std::move(purge));
    }
    if (prune_more_ || prune_soon_.exchange(false) || Now() >= next_prune_) {
      if (!prune_more_) next_prune_ = Now() + kPruneIntervalSeconds;
      std::vector<std::unique_ptr<Job>> step;
      step.push_back(std::make_unique<Job>());
      step.back()->call = [](StoreImpl& self) { return self.PruneW(); };
      if (wal_frames_ >= ckpt_cap_frames_) WaitForCheckpointW();
      CommitGroup(step);
      if (group.empty()) continue;  // woken for pruning alone
    }
    if (wal_frames_ >= ckpt_cap_frames_) WaitForCheckpointW();
    CommitGroup(group);
    size_t events = 0;
    {
      std::lock_guard lock(queue_mu_);
      for (auto& j : group) queued_events_ -= j->events;
      for (auto& j : group) events += j->events;
    }
    space_cv_.notify_all();
    {
      std::lock_guard lock(reap_mu_);
      if (reap_events_ + events <= options_.max_queued_events) {
        for (auto& j : group) reap_.push_back(std::move(j));
        reap_events_ += events;
      }
    }
    reap_cv_.notify_one();
    group.clear();  // what the reaper did not take
  }
}

int StoreImpl::WalHook(void* self_ptr, sqlite3*, const char*, int frames) {
  auto* self = static_cast<StoreImpl*>(self_ptr);
  self->wal_frames_ = frames;
  if (frames < self->ckpt_asked_frames_) self->ckpt_asked_frames_ = 0;  // the WAL started over
  if (frames - self->ckpt_asked_frames_ >= self->ckpt_every_frames_) {
    self->ckpt_asked_frames_ = frames;
    self->RequestCheckpoint();
  }
  return SQLITE_OK;
}

uint64_t StoreImpl::RequestCheckpoint() {
  uint64_t ticket;
  {
    std::lock_guard lock(ckpt_mu_);
    ticket = ++ckpt_wanted_;
  }
  ckpt_cv_.notify_one();
  return ticket;
}

void StoreImpl::WaitForCheckpointW() {
  const uint64_t ticket = RequestCheckpoint();
  std::unique_lock lock(ckpt_mu_);
  ckpt_done_cv_.wait(lock, [&] { return ckpt_stop_ || ckpt_done_ >= ticket; });
}

void StoreImpl::CheckpointerLoop() {
  for (;;) {
    uint64_t ticket;
    {
      std::unique_lock lock(ckpt_mu_);
      ckpt_cv_.wait(lock, [&] { return ckpt_stop_ || ckpt_wanted_ > ckpt_done_; });
      if (ckpt_stop_) return;
      ticket = ckpt_wanted_;  // this run covers every commit made before these requests
    }
    // BUSY: another connection (a bouncectl report closing its file) is checkpointing; the next
    // request or the close does it. Other errors leave the frames in the WAL, where they are
    // durable; the next request tries again.
    int rc =
        sqlite3_wal_checkpoint_v2(cdb_.get(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
      spdlog::warn("storage: {}: WAL checkpoint failed: {}", options_.path,
                   sqlite3_errmsg(cdb_.get()));
    }
    {
      std::lock_guard lock(ckpt_mu_);
      ckpt_done_ = ticket;
    }
    ckpt_done_cv_.notify_all();
  }
}

void StoreImpl::ReaperLoop() {
  std::vector<std::unique_ptr<Job>> done;
  for (;;) {
    {
      std::unique_lock lock(reap_mu_);
      reap_cv_.wait(lock, [&] { return reap_stop_ || !reap_.empty(); });
      if (reap_.empty()) return;  // stopping, everything freed
      done.swap(reap_);
      reap_events_ = 0;
    }
    done.clear();
  }
}

Status StoreImpl::RunTransaction(std::vector<std::unique_ptr<Job>>& group,
                                 const std::vector<size_t>& jobs, size_t* failed_job) {
  *failed_job = kNoJob;
  auto discard = [&] {
    if (!sqlite3_get_autocommit(wdb_.get())) wdb_.Exec("ROLLBACK");
    // A failed pruning step waits for the next hourly one (no retry loop on a full disk).
    prune_more_ = false;
    prune_cursor_ = 0;
    pending_rows_.clear();
    for (size_t i : jobs) group[i]->changes.clear();
    DiscardPendingW();
  };
  for (size_t i : jobs) group[i]->changes.clear();
  txn_suppressed_.clear();
  txn_allowlist_changed_ = false;
  policy_before_.clear();
  txn_new_kinds_.clear();
  txn_new_kind_ids_.clear();
  txn_days_.clear();
  txn_counters_.clear();
  txn_day_texts_.clear();
  txn_pruned_ = PruneResult{};
  txn_too_old_ = 0;
  if (kind_ids_.size() >= kKindCacheSize || kind_counter_fields_.size() >= kKindCacheSize) {
    // Together: every cached kind has its counter fields.
    kind_ids_.clear();
    kind_counter_fields_.clear();
  }
  if (Status s = wdb_.Exec("BEGIN IMMEDIATE"); !s) return s;
  for (size_t i : jobs) {
    Job& job = *group[i];
    pending_ = &job.changes;
    Status s = job.call ? job.call(*this) : ApplyBatch(job);
    pending_ = nullptr;
    if (!s) {
      discard();
      *failed_job = i;
      return s;
    }
  }
  if (Status s = WritePendingW(); !s) {
    discard();
    // These rows belong to every job of the transaction: the failure is not one job's.
    return s;
  }
  if (Status s = wdb_.Exec("COMMIT"); !s) {
    discard();
    return s;
  }
  dsn_bounces_.Commit();
  events_pruned_ += txn_pruned_.events;
  counter_rows_pruned_ += txn_pruned_.counter_rows;
  events_too_old_ += txn_too_old_;
  return Status::Ok();
}

void StoreImpl::CommitGroup(std::vector<std::unique_ptr<Job>>& group) {
  {
    std::lock_guard lock(policy_mu_);
    txn_policy_ = policy_;
    txn_retention_ = retention_;
  }
  txn_now_ = Now();
  txn_now_day_ = DayOf(txn_now_);
  txn_event_horizon_ = RetentionHorizon(txn_retention_.event_days, txn_now_);
  std::vector<Status> results(group.size());
  std::vector<size_t> all(group.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::string write_error;
  size_t failed = kNoJob;
  Status txn = RunTransaction(group, all, &failed);
  if (!txn && failed != kNoJob && group.size() > 1) {
    // One job failed (bad input, or trouble that may be its alone): rerun each job in its own
    // transaction so the others still commit. Jobs are functions of the database state, so a
    // rerun gives what the first run would have. Rare, so its cost does not matter.
    for (size_t i = 0; i < group.size(); ++i) {
      Status s = RunTransaction(group, {i}, &failed);
      if (!s && failed == kNoJob) {
        write_error = s.message();
        s = Status::Error("storage: commit failed: " + s.message());
      }
      results[i] = s;
    }
  } else if (!txn) {
    if (failed == kNoJob) {
      write_error = txn.message();
      txn = Status::Error("storage: commit failed: " + txn.message());
    }
    for (auto& r : results) r = txn;
  }
  for (size_t i = 0; i < group.size(); ++i) {
    for (const ViewChange& c : group[i]->changes) {
      switch (c.kind) {
        case ViewChange::kPut:
          view_.Put(c.key, c.hit);
          if (c.added) {
            std::lock_guard lock(added_mu_);
            ++added_[{c.source, c.category}];
          }
          break;
        case ViewChange::kErase:
          view_.Erase(c.key);
          break;
        case ViewChange::kAllowAddress:
          view_.AllowAddress(c.key, true);
          break;
        case ViewChange::kDisallowAddress:
          view_.AllowAddress(c.key, false);
          break;
        case ViewChange::kAllowDomain:
          view_.AllowDomain(c.key, true);
          break;
        case ViewChange::kDisallowDomain:
          view_.AllowDomain(c.key, false);
          break;
      }
    }
  }
  {
    std::lock_guard lock(queue_mu_);
    last_write_error_ = write_error;
  }
  for (size_t i = 0; i < group.size(); ++i) group[i]->done.set_value(results[i]);
}

Status StoreImpl::ApplyBatch(Job& job) {
  // A policy reload between Submit and now changed the delimiters: the keys follow the policy
  // of the transaction, as they would have without the preparation.
  if (job.delimiters != txn_policy_.recipient_delimiters) {
    PrepareEvents(job, txn_policy_.recipient_delimiters);
  }
  pending_rows_.clear();
  if (const auto& f = job.batch.follows) {
    // Checked first, so a refused batch costs one lookup and writes nothing.
    if (Status s = CheckFollowsW(*f); !s) return s;
  }
  if (job.batch.counted) job.batch.counted->assign(job.batch.events.size(), 0);
  for (size_t i = 0; i < job.batch.events.size(); ++i) {
    // Older than the retention keeps: not recorded, as if pruned already (it would be within
    // the hour, and a second feed of it would then count it again).
    if (const int64_t t = job.batch.events[i].unix_time;
        txn_event_horizon_ != 0 && t != 0 && t < txn_event_horizon_) {
      ++txn_too_old_;
      continue;
    }
    if (Status s =
            ApplyEvent(job.batch.events[i], job.prepared[i], job.prepared_text, txn_counters_);
        !s) {
      return s;
    }
    if (job.batch.counted) (*job.batch.counted)[i] = last_event_counted_;
  }
  if (Status s = FlushRowsW(); !s) return s;
  if (Status s = ApplyQueueFactsW(job.batch); !s) return s;
  if (const auto& p = job.batch.position) {
    if (p->input.empty()) return Status::Error("storage: input position without an input name");
    w_.position.Bind(1, p->input)
        .Bind(2, static_cast<int64_t>(p->inode))
        .Bind(3, static_cast<int64_t>(p->offset))
        .Bind(4, p->cursor)
        .Bind(5, txn_now_);
    if (Status s = w_.position.Run(); !s) return s;
  }
  return Status::Ok();
}

Status StoreImpl::ApplyQueueFactsW(const Batch& b) {
  if (b.queue_facts.empty() && b.queue_facts_forgotten.empty()) return Status::Ok();
  if (!b.position || b.position->input.empty()) {
    return Status::Error("storage: queue facts without an input position");
  }
  const std::string& input = b.position->input;
  auto ids = QueueFactIdsW(input);
  if (!ids) return ids.status();
  std::unordered_map<std::string, int64_t>& id_of = **ids;
  // Every parameter is bound before each run, so the bindings need not be cleared, and the
  // texts, the batch's, need not be copied.
  for (const std::string& queue_id : b.queue_facts_forgotten) {
    auto it = id_of.find(queue_id);
    if (it == id_of.end()) continue;  // never stored
    w_.delete_queue_fact.Bind(1, it->second);
    if (Status s = w_.delete_queue_fact.RunKeepBindings(); !s) return s;
    id_of.erase(it);
  }
  for (const QueueFacts& f : b.queue_facts) {
    auto it = id_of.find(f.queue_id);
    sql::Stmt& st = it == id_of.end() ? w_.put_queue_fact : w_.update_queue_fact;
    if (it == id_of.end()) {
      st.BindRef(1, input);
    } else {
      st.Bind(1, it->second);
    }
    st.BindRef(2, f.queue_id)
        .BindRef(3, f.sender)
        .Bind(4, static_cast<int64_t>(f.sender_known))
        .BindRef(5, f.message_id)
        .BindRef(6, f.bounce_queue_id)
        .Bind(7, f.size)
        .Bind(8, static_cast<int64_t>(f.nrcpt))
        .Bind(9, txn_now_);
    if (Status s = st.RunKeepBindings(); !s) return s;
    if (it == id_of.end()) {
      id_of.emplace(f.queue_id, sqlite3_last_insert_rowid(wdb_.get()));
    } else if (wdb_.changes() != 1) {
      // The map is wrong (someone else changed the table): failing the transaction drops it,
      // and the input's next try reads it again.
      return Status::Error("storage: the queue facts of " + f.queue_id + " in " + input +
                           " are not where the writer left them");
    }
  }
  return Status::Ok();
}

Expected<std::unordered_map<std::string, int64_t>*> StoreImpl::QueueFactIdsW(
    const std::string& input) {
  auto it = queue_fact_ids_.find(input);
  if (it != queue_fact_ids_.end()) return &it->second;
  std::unordered_map<std::string, int64_t> id_of;
  sql::Stmt& st = w_.queue_fact_ids;
  st.Bind(1, input);
  Status read = st.ForEachRow([&] { id_of.emplace(st.Text(1), st.Int(0)); });
  st.Reset();
  if (!read) return read;
  return &queue_fact_ids_.emplace(input, std::move(id_of)).first->second;
}

Status StoreImpl::CheckFollowsW(const InputPosition& want) {
  InputPosition stored;
  sql::Stmt& st = w_.get_position;
  st.Bind(1, want.input);
  auto row = st.Step();
  if (row && *row) {
    stored.inode = static_cast<uint64_t>(st.Int(0));
    stored.offset = static_cast<uint64_t>(st.Int(1));
    stored.cursor = st.Text(2);
  }
  st.Reset();
  if (!row) return row.status();
  if (stored.inode == want.inode && stored.offset == want.offset && stored.cursor == want.cursor) {
    return Status::Ok();
  }
  auto text = [](const InputPosition& p) {
    return p.cursor.empty()
               ? "inode " + std::to_string(p.inode) + " offset " + std::to_string(p.offset)
               : "cursor " + p.cursor;
  };
  return Status::Error("storage: batch of input " + want.input + " refused: it follows " +
                       text(want) + " but the stored position is " + text(stored) +
                       " (a batch before it was not committed)");
}

Status StoreImpl::ApplyEvent(const Event& ev, const PreparedEvent& pe,
                             std::string_view prepared_text, Counters& counters) {
  last_event_counted_ = false;
  const int64_t t = ev.unix_time ? ev.unix_time : txn_now_;
  const Result& r = ev.result;
  const HashedKey hkey{prepared_text.substr(pe.key_at, pe.key_size), pe.key_hash};
  const std::string_view key = hkey.key;
  // Something that is not an address is still recorded (nothing is lost), under its own text.
  std::string_view stored_key = key.empty() ? std::string_view(r.recipient) : key;
  std::string_view domain = key.substr(pe.domain_at);
  const std::string& day = DayCached(t);
  const int64_t day_number = cached_day_number_;

  const bool log = IsLogFamily(ev.source);
  const bool dsn = ev.source == EventSource::kDsn || ev.source == EventSource::kMilter;
  // Whether this permanent failure may repeat one of the other family (Postfix logs a bounce and
  // also sends its DSN, which the milter sees: one incident). A log bounce asks the index of
  // DSN bounces first: most have no DSN copy (yet).
  // An exact hit of that index is the answer; only its kMaybe runs the SELECT.
  using Match = SameBounceIndex::Match;
  Match copy = Match::kNo;
  if (!ev.queue_id.empty() && pe.permanent && !key.empty()) {
    if (log) {
      if (bounces_from_dsn_) copy = dsn_bounces_.Lookup(ev.queue_id, key, t);
    } else if (bounces_from_log_) {
      copy = Match::kMaybe;
    }
  }
  const bool may_repeat = copy != Match::kNo;
  bool counted = true;
  if (dsn && !ev.source_ref.empty()) {
    // Recorded before (Postfix retrying the milter, the DSN fed twice), or the copy of a log
    // bounce: one SELECT for both. BindRef: the texts outlive the statement's use (reset below).
    if (Status s = FlushRowsW(); !s) return s;  // the SELECT must see the batch's rows
    sql::Stmt& q = w_.dsn_lookup;
    q.BindRef(1, stored_key).BindRef(2, ev.source_ref);
    if (may_repeat) {
      q.BindRef(3, ev.queue_id)
          .Bind(4, t - kSameBounceWindowSeconds)
          .Bind(5, t + kSameBounceWindowSeconds);
    }
    bool seen = false, dup = false;
    Expected<bool> row = true;
    while (!seen && (row = q.Step()) && *row) {
      (q.Int(0) != 0 ? seen : dup) = true;
    }
    q.Reset();
    if (!row) return row.status();
    if (seen) return Status::Ok();
    counted = !dup;
  } else if (copy == Match::kYes) {
    counted = false;
  } else if (may_repeat) {
    if (Status s = FlushRowsW(); !s) return s;
    w_.same_bounce.BindRef(1, ev.queue_id)
        .BindRef(2, key)
        .BindRef(3, log ? "dsn" : "log")
        .BindRef(4, log ? "milter" : "journal")
        .Bind(5, t - kSameBounceWindowSeconds)
        .Bind(6, t + kSameBounceWindowSeconds);
    auto found = w_.same_bounce.Step();
    bool dup = found && *found;
    w_.same_bounce.Reset();
    if (!found) return found.status();
    counted = !dup;
  }
  last_event_counted_ = counted;

  const CategoryInfo& info = Describe(r.category);
  auto kind = KindW(ev, info, prepared_text.substr(pe.kind_at, pe.kind_size), pe.kind_hash);
  if (!kind) return kind.status();
  if (pe.permanent) {
    (log ? bounces_from_log_ : bounces_from_dsn_) = true;
    // What a later log bounce's SELECT would find (any key: the stored one is what it matches).
    if (counted && !ev.queue_id.empty() &&
        (ev.source == EventSource::kDsn || ev.source == EventSource::kMilter)) {
      dsn_bounces_.Add(ev.queue_id, stored_key, t, txn_now_);
    }
  }
  pending_rows_.push_back(PendingRow{&ev, t, *kind, day_number, counted, stored_key, domain,
                                     prepared_text.substr(pe.original_at, pe.original_size)});
  if (pending_rows_.size() == kRowsPerInsert) {
    if (Status s = FlushRowsW(); !s) return s;
  }

  if (!counted) return Status::Ok();
  // A reused key: the map copies the domain only for a combination new in this transaction.
  CounterKey& ck = counter_key_;
  ck.day = day_number;
  ck.kind = *kind;
  ck.domain.assign(domain);
  if (auto it = counters.find(ck); it != counters.end()) {
    ++it->second;
  } else {
    counters.emplace(ck, 1);
    txn_day_texts_.try_emplace(day_number, day);  // DayOf(t) as the counter row's day
  }
  if (key.empty()) return Status::Ok();
  if (Status s = ApplyPolicyW(hkey, r.recipient, ev, pe, info, t); !s) return s;
  // The address as the sender gave it (a VERP return path's, a DSN's Original-Recipient,
  // Postfix's orig_to=), when it is another one: it is the one mailed again.
  if (pe.original_size != 0 && txn_policy_.suppress_original_recipient) {
    const HashedKey original{prepared_text.substr(pe.original_at, pe.original_size),
                             pe.original_hash};
    return ApplyPolicyW(original, r.original_recipient, ev, pe, info, t);
  }
  return Status::Ok();
}

Status StoreImpl::ApplyPolicyW(const HashedKey& hkey, std::string_view display, const Event& ev,
                               const PreparedEvent& pe, const CategoryInfo& info, int64_t t) {
  const std::string_view key = hkey.key;
  // The policy reads and folds only the recipient_policy fields; the rest of RecipientState
  // (first_seen, last_event, counts, ...) is derived from the events when read. An event the
  // policy ignores (a deferral for rate limiting, a sender-fault bounce, ...) skips the row.
  PolicyDecision d;
  if (PolicyConcerns(txn_policy_, ev)) {
    // Only a failure the count takes (a hard bounce suppresses whatever the count says) looks
    // for an expired count entry: other failures of a suppressed address skip the SELECT.
    if (pe.failure && info.action == Action::kCount && MayHaveSuppressionW(hkey)) {
      if (Status s = EndExpiredRepeatedFailureW(hkey); !s) return s;
    }
    // Most events (deliveries to recipients without incidents) have no row: their fields are
    // the defaults, and stay so.
    auto row = policy_rows_.find(hkey);
    const bool had_row = row != policy_rows_.end();
    PolicyFields fields = had_row ? row->second.fields : PolicyFields{};
    d = ApplyPolicy(txn_policy_, fields, ev, t);
    if (had_row ? !(fields == row->second.fields) : !(fields == PolicyFields{})) {
      PolicyRowW(hkey).fields = std::move(fields);
    }
  }
  if (pe.delivery && MayHaveSuppressionW(hkey)) {
    w_.delivered_after.BindRef(1, key).Bind(2, t).Bind(3, txn_now_);
    if (Status s = w_.delivered_after.Run(); !s) return s;
  }
  if (d.suppress) return ApplyDecision(hkey, display, ev, d, t);
  if (pe.failure && MayHaveSuppressionW(hkey)) {
    w_.touch_suppression.BindRef(1, key).Bind(2, t).Bind(3, txn_now_);
    if (Status s = w_.touch_suppression.Run(); !s) return s;
  }
  return Status::Ok();
}

void StoreImpl::BindEventRow(sql::Stmt& in, int base, const PendingRow& row, RowBindings& b) {
  const Event& ev = *row.ev;
  const Result& r = ev.result;
  in.Bind(base + 1, row.time);
  if (row.kind != b.kind) in.Bind(base + 2, row.kind);
  if (int64_t{row.counted} != b.counted) in.Bind(base + 3, int64_t{row.counted});
  b.kind = row.kind;
  b.counted = row.counted;
  in.BindRef(base + 4, row.key);
  // Empty texts are NULL (the domain, NOT NULL, is always bound).
  struct Text {
    int i;
    std::string_view text;
    bool repeats;  // bound from a copy, skipped when equal to it
  };
  const Text texts[] = {
      {5, row.domain, true},
      {6, ev.queue_id, false},
      {7, ev.source_ref, false},
      // NULL in the usual case, where the display form is the key.
      {8, r.recipient != row.key ? std::string_view(r.recipient) : std::string_view(), false},
      {9, ev.message_id, true},
      {10, ev.sender, true},
      {11, ev.relay, true},
      {12, r.diagnostic, false},
      {13, r.remote_mta, true},
      {14, ev.time_text, false},
      {15, r.original_recipient, false},
      {16, ev.bounce_queue_id, false}};
  for (const Text& t : texts) {
    const uint32_t bit = uint32_t{1} << t.i;
    if (t.text.empty() && t.i != 5) {
      if (b.texts & bit) in.BindNull(base + t.i);
      b.texts &= ~bit;
      b.copies &= ~bit;
    } else if (!t.repeats) {
      in.BindRef(base + t.i, t.text);
      b.texts |= bit;
      b.copies &= ~bit;
    } else if (!(b.copies & bit) || b.copy[t.i] != t.text) {
      b.copy[t.i].assign(t.text);
      in.BindRef(base + t.i, b.copy[t.i]);
      b.texts |= bit;
      b.copies |= bit;
    }
  }
}

Status StoreImpl::FlushRowsW() {
  const size_t n = pending_rows_.size();
  if (n == 0) return Status::Ok();
  int64_t last_id = 0;
  if (n == kRowsPerInsert) {
    for (size_t r = 0; r < n; ++r) {
      BindEventRow(w_.insert_events, static_cast<int>(r) * kEventRowParams, pending_rows_[r],
                   multi_bindings_[r]);
    }
    Status s = w_.insert_events.RunKeepBindings();
    if (!s) {
      for (RowBindings& b : multi_bindings_) b.Reset();  // an error clears the bindings
      pending_rows_.clear();
      return s;
    }
    last_id = sqlite3_last_insert_rowid(wdb_.get());
  } else {
    for (const PendingRow& row : pending_rows_) {
      BindEventRow(w_.insert_event, 0, row, insert_bindings_);
      if (Status s = w_.insert_event.RunKeepBindings(); !s) {
        insert_bindings_.Reset();
        pending_rows_.clear();
        return s;
      }
    }
    last_id = sqlite3_last_insert_rowid(wdb_.get());
  }
  // The rows took consecutive ids ending at last_id: each is appended after the largest.
  int64_t id = last_id - static_cast<int64_t>(n);
  for (const PendingRow& row : pending_rows_) {
    ++id;
    if (!row.original_key.empty()) {
      w_.put_original.Bind(1, id).BindRef(2, row.original_key).Bind(3, row.time);
      if (Status s = w_.put_original.Run(); !s) {
        pending_rows_.clear();
        return s;
      }
    }
    if (txn_days_.empty() || txn_days_.back().day != row.day) {
      auto it = std::find_if(txn_days_.begin(), txn_days_.end(),
                             [&](const DayRange& d) { return d.day == row.day; });
      if (it == txn_days_.end()) {
        txn_days_.push_back(DayRange{row.day, id, id});
      } else {
        std::rotate(it, it + 1, txn_days_.end());  // the day seen last goes to the back
      }
    }
    txn_days_.back().last_id = id;  // ids only grow within a transaction
  }
  pending_rows_.clear();
  return Status::Ok();
}

Status StoreImpl::ApplyDecision(const HashedKey& hkey, std::string_view display, const Event& ev,
                                const PolicyDecision& d, int64_t t) {
  const std::string_view key = hkey.key;
  auto allowed = AllowedW(key);
  if (!allowed) return allowed.status();
  if (*allowed) return Status::Ok();  // the allowlist always wins
  // No row can exist when neither the view nor this transaction has the key: skip the SELECT.
  auto existing = MayHaveSuppressionW(hkey) ? GetSuppressionW(key)
                                            : Expected<std::optional<Suppression>>(std::nullopt);
  if (!existing) return existing.status();
  if (*existing && ((*existing)->expires == 0 || (*existing)->expires > txn_now_)) {
    // Already suppressed (automatic or manual): only note the newer failure.
    w_.touch_suppression.Bind(1, key).Bind(2, t).Bind(3, txn_now_);
    return w_.touch_suppression.Run();
  }
  Suppression s;
  s.address = std::string(key);
  s.display = std::string(display);
  s.reason = std::string(d.reason);
  s.category = std::string(ToString(ev.result.category));
  s.source = std::string(d.source);
  s.first_event = d.first_event;
  s.last_event = t;
  s.created = t;
  s.expires = d.expires;
  s.detail = ev.result.diagnostic;
  // An event read late (an older log, a DSN that took days) may suppress after a delivery to
  // the address that is already stored: the entry notes it from the start, as it would have had
  // the events come in order (delivered_after).
  if (Status f = FlushRowsW(); !f) return f;
  w_.delivered_since.Bind(1, key).Bind(2, t);
  auto row = w_.delivered_since.Step();
  if (row && *row) s.delivered_after = w_.delivered_since.Int(0);
  w_.delivered_since.Reset();
  if (!row) return row.status();
  return PutSuppressionW(s, "add", kBouncedItself);
}

Expected<std::optional<Suppression>> StoreImpl::GetSuppressionW(std::string_view key) {
  w_.get_suppression.Bind(1, key);
  auto r = w_.get_suppression.Step();
  std::optional<Suppression> out;
  if (r && *r) out = ReadSuppression(w_.get_suppression);
  w_.get_suppression.Reset();
  if (!r) return r.status();
  return out;
}

Status StoreImpl::PutSuppressionW(const Suppression& s, std::string_view log_action,
                                  const Actor& who) {
  // BindRef: `s` outlives the statement's run (Run resets it).
  w_.put_suppression.BindRef(1, s.address)
      .BindRef(2, s.display)
      .BindRef(3, DomainOfKey(s.address))
      .BindRef(4, s.reason)
      .BindRef(5, s.category)
      .BindRef(6, s.source)
      .Bind(7, s.first_event)
      .Bind(8, s.last_event)
      .Bind(9, s.created)
      .Bind(10, s.expires)
      .BindRef(11, s.detail)
      .Bind(12, s.delivered_after)
      .Bind(13, txn_now_);
  if (Status st = w_.put_suppression.Run(); !st) return st;
  if (Status st = LogSuppressionW(s, log_action, who); !st) return st;
  txn_suppressed_.insert(s.address);
  pending_->push_back(ViewChange{ViewChange::kPut, s.address, HitFor(s), log_action == "add",
                                 s.source, s.category});
  return Status::Ok();
}

Status StoreImpl::LogSuppressionW(const Suppression& s, std::string_view action, const Actor& who) {
  w_.log_suppression.Bind(1, txn_now_)
      .BindRef(2, txn_now_day_)
      .BindRef(3, s.address)
      .BindRef(4, action)
      .BindRef(5, s.source)
      .BindRef(6, s.reason)
      .BindRef(7, s.category)
      .Bind(8, who.uid)
      .BindRef(9, who.reason);
  return w_.log_suppression.Run();
}

Expected<bool> StoreImpl::AllowedW(std::string_view key) {
  // The view holds the committed allowlist: it answers unless this transaction changed it.
  if (!txn_allowlist_changed_) return view_.Allowed(key);
  for (const std::string& c : AllowCandidates(key)) {
    w_.allowed.Bind(1, c);
    auto r = w_.allowed.Step();
    w_.allowed.Reset();
    if (!r) return r.status();
    if (*r) return true;
  }
  return false;
}

Status StoreImpl::PurgeExpiredW() {
  sql::Stmt del;
  if (Status s = del.Prepare(wdb_,
                             "DELETE FROM suppressions WHERE address IN (SELECT address FROM "
                             "suppressions WHERE expires <> 0 AND expires <= ?1 LIMIT ?2) "
                             "RETURNING address, reason, category, source");
      !s) {
    return s;
  }
  del.Bind(1, txn_now_).Bind(2, kPurgeLimit);
  std::vector<Suppression> gone;
  if (Status walked = del.ForEachRow([&] {
        Suppression s;
        s.address = del.Text(0);
        s.reason = del.Text(1);
        s.category = del.Text(2);
        s.source = del.Text(3);
        gone.push_back(std::move(s));
      });
      !walked) {
    return walked;
  }
  del.Reset();
  for (const Suppression& s : gone) {
    if (Status st = LogSuppressionW(s, "remove", kExpired); !st) return st;
    pending_->push_back(ViewChange{ViewChange::kErase, s.address, {}});
    if (s.reason == kReasonRepeatedFailure) ForgetIncidentsW(s.address);
  }
  if (gone.size() == static_cast<size_t>(kPurgeLimit)) next_purge_ = 0;  // more are waiting
  return Status::Ok();
}

Status StoreImpl::PruneW() {
  prune_more_ = false;
  if (txn_retention_.event_days > 0) {
    const int64_t horizon = txn_event_horizon_;
    const std::string horizon_day = DayOf(horizon);
    // Every row of a day lies within that day's id range (event_days), so the rows before the
    // horizon are within the ranges of the days before it: walked by id, without an index on
    // time. A late event (an old mailbox fed yesterday) widens its day's range over newer rows,
    // which the time test keeps; the cursor saves walking them again in the next step.
    sql::Stmt& range = w_.prune_range;
    range.Bind(1, horizon_day);
    auto r = range.Step();
    const bool any = r && *r && !range.IsNull(0);
    const int64_t first = any ? std::max(range.Int(0), prune_cursor_) : 0;
    const int64_t last = any ? range.Int(1) : 0;
    range.Reset();
    if (!r) return r.status();
    if (any) {
      // The step's rows: up to kPruneLimit old ones from `first` on, up to the id of the last.
      sql::Stmt& ids = w_.prune_ids;
      ids.Bind(1, first).Bind(2, last).Bind(3, horizon).Bind(4, kPruneLimit);
      int64_t n = 0, end = 0;
      Status walked = ids.ForEachRow([&] {
        ++n;
        end = ids.Int(0);
      });
      ids.Reset();
      if (!walked) return walked;
      if (n != 0) {
        for (sql::Stmt* del : {&w_.prune_rows, &w_.prune_originals}) {
          del->Bind(1, first).Bind(2, end).Bind(3, horizon);
          if (Status s = del->Run(); !s) return s;
        }
        txn_pruned_.events += n;
        // The same-bounce index must not answer "stored" for a row pruned here.
        dsn_bounces_.Forget(horizon);
      }
      if (n == kPruneLimit) {
        prune_cursor_ = end + 1;
        prune_more_ = true;
        return Status::Ok();
      }
      w_.prune_days.Bind(1, horizon_day);
      if (Status s = w_.prune_days.Run(); !s) return s;
    }
    prune_cursor_ = 0;
  }
  if (txn_retention_.counter_days > 0) {
    // One day a step (its rows are adjacent: the key starts with the day).
    const std::string horizon_day = DayOf(RetentionHorizon(txn_retention_.counter_days, txn_now_));
    sql::Stmt& oldest = w_.oldest_counter_day;
    auto r = oldest.Step();
    const std::string day = r && *r && !oldest.IsNull(0) ? oldest.Text(0) : std::string();
    oldest.Reset();
    if (!r) return r.status();
    if (!day.empty() && day < horizon_day) {
      w_.prune_counter_day.Bind(1, day);
      if (Status s = w_.prune_counter_day.Run(); !s) return s;
      txn_pruned_.counter_rows += wdb_.changes();
      prune_more_ = true;  // the next day may be old too
    }
  }
  return Status::Ok();
}

Status StoreImpl::EndExpiredRepeatedFailureW(const HashedKey& hkey) {
  auto existing = GetSuppressionW(hkey.key);
  if (!existing) return existing.status();
  if (!*existing) return Status::Ok();
  const Suppression& s = **existing;
  if (s.expires == 0 || s.expires > txn_now_ || s.reason != kReasonRepeatedFailure)
    return Status::Ok();
  w_.delete_suppression.Bind(1, hkey.key);
  if (Status r = w_.delete_suppression.Run(); !r) return r;
  if (Status r = LogSuppressionW(s, "remove", kExpired); !r) return r;
  pending_->push_back(ViewChange{ViewChange::kErase, s.address, {}});
  ForgetIncidentsW(s.address);
  return Status::Ok();
}

void StoreImpl::ForgetIncidentsW(std::string_view address) {
  HashedKey key = HashedKey::Of(address);
  auto it = policy_rows_.find(key);
  if (it == policy_rows_.end() || it->second.fields.incidents == 0) return;
  PolicyFields& f = PolicyRowW(key).fields;
  const int64_t unsuppressed = f.manual_unsuppressed;
  f = PolicyFields{};
  f.manual_unsuppressed = unsuppressed;
}

Status StoreImpl::AuditW(const Actor& who, std::string_view action, std::string_view target,
                         std::string_view detail) {
  w_.audit.Bind(1, txn_now_)
      .Bind(2, who.uid)
      .Bind(3, action)
      .Bind(4, target)
      .Bind(5, who.reason)
      .Bind(6, detail);
  return w_.audit.Run();
}

Expected<int64_t> StoreImpl::KindW(const Event& ev, const CategoryInfo& info, std::string_view key,
                                   uint64_t h) {
  const Result& r = ev.result;
  auto cached = kind_ids_.find(h);
  if (cached != kind_ids_.end() && cached->second.key == key) return cached->second.id;
  const KindFields fields = KindFieldsOf(ev, info);
  // The SELECT and the INSERT take the fields as ?1..?14 (hard_bounce as a number).
  auto bind_fields = [&](sql::Stmt& st) {
    for (int i = 0; i < 14; ++i) {
      if (i == 5) {
        st.Bind(6, int64_t{info.hard_bounce});
      } else {
        st.BindRef(i + 1, fields[i]);
      }
    }
  };
  sql::Stmt& get = w_.get_kind;
  bind_fields(get);
  auto found = get.Step();
  int64_t id = found && *found ? get.Int(0) : 0;
  get.Reset();
  if (!found) return found.status();
  bool inserted = false;
  if (id == 0) {
    sql::Stmt& put = w_.put_kind;
    bind_fields(put);
    if (Status s = put.Run(); !s) return s;
    id = sqlite3_last_insert_rowid(wdb_.get());
    inserted = true;
    txn_new_kind_ids_.push_back(id);
  }
  kind_counter_fields_.try_emplace(
      id, KindCounterFields{std::string(r.provider), std::string(info.name),
                            std::string(r.provider_code), std::string(ev.log_status)});
  if (cached == kind_ids_.end()) {  // else another kind holds the hash: this one asks SQL
    kind_ids_.emplace(h, CachedKind{std::string(key), id});
    if (inserted) txn_new_kinds_.push_back(h);
  }
  return id;
}

PolicyRow& StoreImpl::PolicyRowW(const HashedKey& key) {
  auto it = policy_rows_.find(key);
  if (policy_before_.find(key) == policy_before_.end()) {
    policy_before_.emplace(key.key, it == policy_rows_.end()
                                        ? std::optional<PolicyRow>()
                                        : std::optional<PolicyRow>(it->second));
  }
  if (it == policy_rows_.end()) it = policy_rows_.emplace(key.key, PolicyRow{}).first;
  return it->second;
}

Status StoreImpl::WritePendingW() {
  for (const DayRange& d : txn_days_) {
    const std::string day = DayOf(d.day * 86400);
    w_.put_day.BindRef(1, day).Bind(2, d.first_id).Bind(3, d.last_id);
    if (Status s = w_.put_day.Run(); !s) return s;
  }
  for (const auto& [k, n] : txn_counters_) {
    auto day = txn_day_texts_.find(k.day);
    auto fields = kind_counter_fields_.find(k.kind);
    if (fields == kind_counter_fields_.end() || day == txn_day_texts_.end()) {
      return Status::Error("storage: daily counter of event kind " + std::to_string(k.kind) +
                           " without its fields or day");
    }
    const KindCounterFields& f = fields->second;
    w_.counter.BindRef(1, day->second)
        .BindRef(2, k.domain)
        .BindRef(3, f.provider)
        .BindRef(4, f.category)
        .BindRef(5, f.provider_code)
        .BindRef(6, f.log_status)
        .Bind(7, n);
    if (Status s = w_.counter.Run(); !s) return s;
  }
  std::vector<const std::string*> keys;
  keys.reserve(policy_before_.size());
  for (const auto& [key, before] : policy_before_) keys.push_back(&key);
  // Key order: the B-tree pages are visited once, in order.
  std::sort(keys.begin(), keys.end(), [](const auto* a, const auto* b) { return *a < *b; });
  for (const std::string* key : keys) {
    auto it = policy_rows_.find(*key);
    if (it == policy_rows_.end() || it->second.Empty()) {
      if (!policy_before_[*key]) continue;  // never written
      w_.delete_policy.BindRef(1, *key);
      if (Status s = w_.delete_policy.Run(); !s) return s;
      continue;
    }
    const PolicyRow& p = it->second;
    const PolicyFields& f = p.fields;
    w_.put_policy.BindRef(1, *key)
        .BindRef(2, p.display)
        .Bind(3, p.first_seen)
        .Bind(4, f.incidents)
        .Bind(5, f.incidents_since)
        .Bind(6, f.last_incident)
        .Bind(7, f.manual_unsuppressed)
        .Bind(8, f.pending_delivery)
        .BindRef(9, f.pending_message_id)
        .BindRef(10, f.pending_earlier);
    if (Status s = w_.put_policy.Run(); !s) return s;
  }
  // The memory now matches what COMMIT will hold; an empty row is no row.
  for (const std::string* key : keys) {
    auto it = policy_rows_.find(*key);
    if (it != policy_rows_.end() && it->second.Empty()) policy_rows_.erase(it);
  }
  return Status::Ok();
}

void StoreImpl::DiscardPendingW() {
  queue_fact_ids_.clear();
  for (auto& [key, before] : policy_before_) {
    if (before) {
      policy_rows_[key] = *before;
    } else {
      policy_rows_.erase(key);
    }
  }
  policy_before_.clear();
  for (uint64_t h : txn_new_kinds_) kind_ids_.erase(h);
  txn_new_kinds_.clear();
  // A later transaction may give these ids to other kinds.
  for (int64_t id : txn_new_kind_ids_) kind_counter_fields_.erase(id);
  txn_new_kind_ids_.clear();
  txn_days_.clear();
  txn_counters_.clear();
  txn_day_texts_.clear();
  dsn_bounces_.Rollback();
}

// ---------------------------------------------------------------------------------------------
// Manual changes

Expected<Suppression> StoreImpl::Suppress(const ManualSuppression& m, const Actor& who) {
  std::string key = NormalizeAddress(m.address, Delimiters());
  if (key.empty()) return Status::Error("suppress: invalid address '" + m.address + "'");
  if (who.reason.empty()) return Status::Error("suppress: a reason is required");
  if (!m.category.empty() && !CategoryFromName(m.category)) {
    return Status::Error("suppress: unknown category '" + m.category + "'");
  }
  auto out = std::make_shared<Suppression>();
  Status st = RunOnWriter([&](StoreImpl& self) -> Status {
    auto allowed = self.AllowedW(key);
    if (!allowed) return allowed.status();
    if (*allowed) {
      return Status::Error("suppress: " + key + " is on the allowlist; disallow it first");
    }
    auto existing = self.GetSuppressionW(key);
    if (!existing) return existing.status();
    Suppression s;
    bool live = *existing && ((*existing)->expires == 0 || (*existing)->expires > txn_now_);
    if (live) s = **existing;
    s.address = key;
    if (s.display.empty()) s.display = m.address;
    s.reason = who.reason;
    s.category = m.category.empty() && live ? s.category : m.category;
    s.source = "manual";
    if (!live) s.created = txn_now_;
    s.expires = m.expires;
    s.detail = "manual: uid " + std::to_string(who.uid);
    if (Status r = self.PutSuppressionW(s, live ? "update" : "add", who); !r) return r;
    if (Status r = self.AuditW(who, "suppress", key, s.category); !r) return r;
    *out = s;
    return Status::Ok();
  });
  if (!st) return st;
  return *out;
}

Expected<std::string> StoreImpl::Unsuppress(std::string_view address, const Actor& who) {
  std::string key = NormalizeAddress(address, Delimiters());
  if (key.empty())
    return Status::Error("unsuppress: invalid address '" + std::string(address) + "'");
  if (who.reason.empty()) return Status::Error("unsuppress: a reason is required");
  // An entry stored while other extension delimiters were in force ([policy] plus_extension
  // turned on since: a+x@b is stored so, and lookups now ask for a@b) is reached by its own
  // spelling only; no lookup matches it any more, and this is how it is lifted.
  const std::string exact = NormalizeAddress(address, "");
  Status done = RunOnWriter([&](StoreImpl& self) -> Status {
    auto existing = self.GetSuppressionW(key);
    if (!existing) return existing.status();
    if (!*existing && !exact.empty() && exact != key) {
      existing = self.GetSuppressionW(exact);
      if (!existing) return existing.status();
      if (*existing) key = exact;
    }
    if (!*existing) return Status::Error("unsuppress: " + key + " is not suppressed");
    return self.LiftW(key, **existing, who);
  });
  if (!done) return done;
  return key;
}

Status StoreImpl::LiftW(const std::string& key, const Suppression& existing, const Actor& who) {
  w_.delete_suppression.Bind(1, key);
  if (Status r = w_.delete_suppression.Run(); !r) return r;
  if (Status r = LogSuppressionW(existing, "remove", who); !r) return r;
  PolicyRow& state = PolicyRowW(HashedKey::Of(key));
  state.fields = PolicyFields{};
  state.fields.manual_unsuppressed = txn_now_;
  if (state.first_seen == 0) {
    // A recipient without events is first seen now (its events set first_seen otherwise).
    w_.has_events.BindRef(1, key);
    auto any = w_.has_events.Step();
    bool seen = any && *any;
    w_.has_events.Reset();
    if (!any) return any.status();
    if (!seen) {
      state.first_seen = txn_now_;
      state.display = existing.display;
    }
  }
  if (Status r = AuditW(who, "unsuppress", key, existing.source + ": " + existing.reason); !r) {
    return r;
  }
  pending_->push_back(ViewChange{ViewChange::kErase, key, {}});
  return Status::Ok();
}

Expected<BulkUnsuppressResult> StoreImpl::UnsuppressMatching(const ListFilter& filter,
                                                             const Actor& who, bool dry_run) {
  if (!dry_run && who.reason.empty()) return Status::Error("unsuppress: a reason is required");
  ListFilter f = filter;
  f.after.clear();
  f.limit = 0;
  f.include_expired = false;
  BulkUnsuppressResult out;
  if (dry_run) {
    Status listed = List(f, [&](const Suppression& s) {
      if (out.sample.size() < BulkUnsuppressResult::kBulkSample) out.sample.push_back(s.address);
      ++out.count;
      return true;
    });
    if (!listed) return listed;
    return out;
  }
  Status done = RunOnWriter([&](StoreImpl& self) -> Status {
    // The keys first (a statement that steps over the rows it deletes has no defined result),
    // then each entry, read again by key, lifted.
    std::vector<std::string> keys;
    sql::Stmt st;
    if (Status r = PrepareList(self.wdb_, f, self.txn_now_, &st); !r) return r;
    if (Status walked = st.ForEachRow([&] {
          keys.push_back(st.Text(0));
          return true;
        });
        !walked) {
      return walked;
    }
    for (const std::string& key : keys) {
      auto existing = self.GetSuppressionW(key);
      if (!existing) return existing.status();
      if (!*existing) continue;
      if (Status r = self.LiftW(key, **existing, who); !r) return r;
      if (out.sample.size() < BulkUnsuppressResult::kBulkSample) out.sample.push_back(key);
      ++out.count;
    }
    return Status::Ok();
  });
  if (!done) return done;
  return out;
}

Expected<AllowEntry> StoreImpl::Allow(std::string_view entry, const Actor& who) {
  AllowEntry a;
  if (entry.find('@') != std::string_view::npos && entry.front() != '@') {
    a.entry = NormalizeAddress(entry, Delimiters());
  } else {
    a.entry = NormalizeDomain(entry.front() == '@' ? entry.substr(1) : entry);
    a.domain = true;
  }
  if (entry.empty() || a.entry.empty()) {
    return Status::Error("allow: '" + std::string(entry) + "' is neither an address nor a domain");
  }
  a.reason = who.reason;
  a.actor_uid = who.uid;
  Status st = RunOnWriter([&](StoreImpl& self) -> Status {
    a.created = self.txn_now_;
    sql::Stmt ins;
    if (Status r = ins.Prepare(self.wdb_,
                               "INSERT OR REPLACE INTO allowlist (entry, kind, reason, created, "
                               "actor_uid) VALUES (?1, ?2, ?3, ?4, ?5)");
        !r) {
      return r;
    }
    ins.Bind(1, a.entry).Bind(2, a.domain ? "domain" : "address").Bind(3, a.reason);
    ins.Bind(4, a.created).Bind(5, a.actor_uid);
    if (Status r = ins.Run(); !r) return r;
    self.txn_allowlist_changed_ = true;
    if (Status r = self.AuditW(who, "allow", a.entry, a.domain ? "domain" : "address"); !r) {
      return r;
    }
    self.pending_->push_back(
        ViewChange{a.domain ? ViewChange::kAllowDomain : ViewChange::kAllowAddress, a.entry, {}});
    return Status::Ok();
  });
  if (!st) return st;
  return a;
}

Status StoreImpl::Disallow(std::string_view entry, const Actor& who) {
  std::string key;
  if (entry.find('@') != std::string_view::npos && entry.front() != '@') {
    key = NormalizeAddress(entry, Delimiters());
  } else if (!entry.empty()) {
    key = NormalizeDomain(entry.front() == '@' ? entry.substr(1) : entry);
  }
  if (key.empty()) {
    return Status::Error("disallow: '" + std::string(entry) +
                         "' is neither an address nor a domain");
  }
  return RunOnWriter([&](StoreImpl& self) -> Status {
    sql::Stmt del;
    if (Status r = del.Prepare(self.wdb_, "DELETE FROM allowlist WHERE entry = ?1 RETURNING kind");
        !r) {
      return r;
    }
    del.Bind(1, key);
    auto row = del.Step();
    if (!row) return row.status();
    if (!*row) return Status::Error("disallow: " + key + " is not on the allowlist");
    bool domain = del.TextView(0) == "domain";
    del.Reset();
    self.txn_allowlist_changed_ = true;
    if (Status r = self.AuditW(who, "disallow", key, domain ? "domain" : "address"); !r) return r;
    self.pending_->push_back(
        ViewChange{domain ? ViewChange::kDisallowDomain : ViewChange::kDisallowAddress, key, {}});
    return Status::Ok();
  });
}

Expected<ImportResult> StoreImpl::Import(ExportFormat format, std::string_view data,
                                         const Actor& who, const ImportOptions& options) {
  // Two passes over the text instead of a parsed copy of it: the first checks every line (all
  // or nothing: any error and nothing is written), the second parses again inside the writer's
  // transaction and writes each entry as it is read. A million-line import so holds the text
  // and one entry at a time, not a million parsed entries (~1 GB).
  const std::string delimiters = Delimiters();
  const int64_t now = Now();
  size_t entries = 0;
  ParsedImport checked = ParseImportEach(
      format, data, delimiters, now, [&entries](Suppression&&) { ++entries; }, options);
  ImportResult result;
  result.ignored_columns = std::move(checked.ignored_columns);
  if (!checked.errors.empty()) {
    result.errors = std::move(checked.errors);
    return result;
  }
  Status st = RunOnWriter([&](StoreImpl& self) -> Status {
    result.added = result.updated = 0;  // a rerun starts over
    Status failed = Status::Ok();
    ParsedImport again = ParseImportEach(
        format, data, delimiters, now,
        [&](Suppression&& s) {
          if (!failed) return;
          auto existing = self.GetSuppressionW(s.address);
          if (!existing) {
            failed = existing.status();
            return;
          }
          bool update = existing->has_value();
          if (update) {
            result.updated++;
          } else {
            result.added++;
          }
          failed = self.PutSuppressionW(s, update ? "update" : "add", who);
        },
        options);
    if (!failed) return failed;
    if (!again.errors.empty()) return Status::Error("import: " + again.errors.front());
    return self.AuditW(
        who, "import", std::to_string(entries) + " entries",
        std::to_string(result.added) + " added, " + std::to_string(result.updated) + " updated");
  });
  if (!st) return st;
  return result;
}

// ---------------------------------------------------------------------------------------------
// Reads

void StoreImpl::ReaderDeleter::operator()(sql::Db* db) const {
  std::lock_guard lock(store->readers_mu_);
  store->readers_.emplace_back(db);
}

Expected<StoreImpl::Reader> StoreImpl::AcquireReader() {
  {
    std::lock_guard lock(readers_mu_);
    if (!readers_.empty()) {
      sql::Db* db = readers_.back().release();
      readers_.pop_back();
      return Reader(db, ReaderDeleter{this});
    }
  }
  auto db = std::make_unique<sql::Db>();
  if (Status s = db->Open(options_.path, false, options_.busy_timeout_ms); !s) return s;
  if (Status s = db->Exec("PRAGMA query_only=1"); !s) return s;
  return Reader(db.release(), ReaderDeleter{this});
}

Expected<std::optional<InputPosition>> StoreImpl::LoadPosition(std::string_view input) {
  auto db = AcquireReader();
  if (!db) return db.status();
  sql::Stmt st;
  if (Status s = st.Prepare(**db,
                            "SELECT inode, offset, cursor, updated FROM input_positions "
                            "WHERE input = ?1");
      !s) {
    return s;
  }
  st.Bind(1, input);
  auto r = st.Step();
  if (!r) return r.status();
  if (!*r) return std::optional<InputPosition>();
  InputPosition p;
  p.input = std::string(input);
  p.inode = static_cast<uint64_t>(st.Int(0));
  p.offset = static_cast<uint64_t>(st.Int(1));
  p.cursor = st.Text(2);
  p.updated = st.Int(3);
  return std::optional<InputPosition>(std::move(p));
}

Expected<std::vector<QueueFacts>> StoreImpl::LoadQueueFacts(std::string_view input) {
  auto db = AcquireReader();
  if (!db) return db.status();
  sql::Stmt st;
  if (Status s = st.Prepare(**db,
                            "SELECT queue_id, sender, sender_known, message_id, bounce_queue_id, "
                            "size, nrcpt, updated FROM queue_facts WHERE input = ?1 "
                            "ORDER BY updated, queue_id");
      !s) {
    return s;
  }
  st.Bind(1, input);
  std::vector<QueueFacts> out;
  for (;;) {
    auto r = st.Step();
    if (!r) return r.status();
    if (!*r) break;
    QueueFacts& f = out.emplace_back();
    f.queue_id = st.Text(0);
    f.sender = st.Text(1);
    f.sender_known = st.Int(2) != 0;
    f.message_id = st.Text(3);
    f.bounce_queue_id = st.Text(4);
    f.size = st.Int(5);
    f.nrcpt = static_cast<int>(st.Int(6));
    f.updated = st.Int(7);
  }
  return out;
}

namespace {

// The events of `key`, newest first, at most `max`: those recorded under it, and those of
// another address it is the original recipient of (a forward, a VERP return path's), each
// found through its own index. Callers run both reads in one transaction (one snapshot).
Expected<std::vector<StoredEvent>> ReadEvents(sql::Db& db, std::string_view key, size_t max) {
  std::vector<StoredEvent> out;
  const struct {
    const char* rows;
    bool original;
  } reads[] = {
      {"SELECT id FROM event_rows WHERE recipient_key = ?1 ORDER BY time DESC, id DESC LIMIT ?2",
       false},
      {"SELECT event_id FROM event_originals WHERE original_key = ?1 "
       "ORDER BY time DESC, event_id DESC LIMIT ?2",
       true}};
  for (const auto& read : reads) {  // not a structured binding: clang 14 cannot capture one
    sql::Stmt st;
    std::string q =
        "SELECT " + std::string(kEventColumns) + " FROM events WHERE id IN (" + read.rows + ")";
    if (Status s = st.Prepare(db, q); !s) return s;
    st.Bind(1, key).Bind(2, static_cast<int64_t>(max));
    Status walked = st.ForEachRow([&] {
      out.push_back(ReadEvent(st));
      out.back().as_original_recipient = read.original;
    });
    if (!walked) return walked;
  }
  std::sort(out.begin(), out.end(), [](const StoredEvent& a, const StoredEvent& b) {
    return std::tie(a.event.unix_time, a.id) > std::tie(b.event.unix_time, b.id);
  });
  if (out.size() > max) out.resize(max);
  return out;
}

// Runs a read transaction so several SELECTs see one snapshot.
class ReadTxn {
 public:
  explicit ReadTxn(sql::Db& db) : db_(db) { ok_ = db_.Exec("BEGIN"); }
  ~ReadTxn() {
    if (ok_) db_.Exec("COMMIT");
  }
  Status status() const { return ok_; }

 private:
  sql::Db& db_;
  Status ok_;
};

}  // namespace

Expected<std::vector<StoredEvent>> StoreImpl::EventsFor(std::string_view address,
                                                        size_t max_events) {
  std::string key = NormalizeAddress(address, Delimiters());
  if (key.empty()) return Status::Error("invalid address '" + std::string(address) + "'");
  auto db = AcquireReader();
  if (!db) return db.status();
  ReadTxn txn(**db);
  if (!txn.status()) return txn.status();
  return ReadEvents(**db, key, max_events);
}

Expected<std::vector<StoredEvent>> StoreImpl::QueueEvents(const QueueEventsQuery& q) {
  std::vector<StoredEvent> out;
  if (q.queue_id.empty()) return out;
  // Not before 1970: days of those times may not sort as text.
  const int64_t since = std::max<int64_t>(0, q.since);
  auto db = AcquireReader();
  if (!db) return db.status();
  ReadTxn txn(**db);  // the first id and the rows: one snapshot
  if (!txn.status()) return txn.status();
  std::string key;
  int64_t first_id = -1;
  std::string rows;
  if (!q.recipient.empty()) {
    key = NormalizeAddress(q.recipient, Delimiters());
    if (key.empty()) key = q.recipient;  // stored under its own text (see ApplyEvent)
    rows = "SELECT id FROM event_rows WHERE recipient_key = ?1 AND time >= ?2 AND queue_id = ?3";
  } else {
    // The ids of the days from `since` on are a range (event_days), read in one pass without
    // an index on time, as LoadDsnBounceIndex does.
    auto first = FirstEventIdOfDays(**db, since);
    if (!first) return first.status();
    first_id = *first;
    if (first_id < 0) return out;  // no events on those days
    rows = "SELECT id FROM event_rows WHERE id >= ?1 AND queue_id = ?3 AND time >= ?2";
  }
  sql::Stmt st;
  if (Status s =
          st.Prepare(**db, "SELECT " + std::string(kEventColumns) + " FROM events WHERE id IN (" +
                               rows + ") AND source IN ('log', 'journal') ORDER BY id");
      !s) {
    return s;
  }
  if (key.empty()) {
    st.Bind(1, first_id);
  } else {
    st.Bind(1, key);
  }
  st.Bind(2, since).Bind(3, q.queue_id);
  if (Status walked = st.ForEachRow([&] { out.push_back(ReadEvent(st)); }); !walked) {
    return walked;
  }
  return out;
}

Expected<std::vector<SuppressionChange>> StoreImpl::Changes(const ChangesQuery& q) {
  std::string domain;
  if (!q.domain.empty()) {
    domain = NormalizeDomain(q.domain[0] == '@' ? std::string_view(q.domain).substr(1) : q.domain);
    if (domain.empty()) return Status::Error("changes: invalid domain '" + q.domain + "'");
  }
  auto db = AcquireReader();
  if (!db) return db.status();
  // The id range walks the table in order; `day` (indexed) narrows a `since` without an id. The
  // log has no domain column: a key ends in "@domain".
  sql::Stmt st;
  if (Status s = st.Prepare(**db, "SELECT " + std::string(kChangeColumns) +
                                      " FROM suppression_log l WHERE l.id > ?1 AND l.day >= ?2 "
                                      "AND l.time >= ?3 AND (?4 = '' OR substr(l.address, "
                                      "-length(?4) - 1) = '@' || ?4) ORDER BY l.id LIMIT ?5");
      !s) {
    return s;
  }
  st.Bind(1, std::max<int64_t>(q.after_id, 0))
      .Bind(2, q.since > 0 ? DayOf(q.since) : std::string())
      .Bind(3, q.since)
      .Bind(4, domain)
      .Bind(5, static_cast<int64_t>(std::clamp<size_t>(q.limit, 1, kMaxChanges)));
  std::vector<SuppressionChange> out;
  Status walked = st.ForEachRow([&] { out.push_back(ReadChange(st)); });
  if (!walked) return walked;
  return out;
}

Expected<std::vector<StoredEvent>> StoreImpl::FindEvents(const EventsQuery& q) {
  std::vector<StoredEvent> out;
  const size_t limit = std::min(q.limit, kMaxFoundEvents);
  std::string recipient_key;
  if (!q.recipient.empty()) {
    recipient_key = NormalizeAddress(q.recipient, Delimiters());
    if (recipient_key.empty()) return Status::Error("invalid address '" + q.recipient + "'");
  }
  if (limit == 0) return out;
  // Not before 1970: days of those times may not sort as text.
  const int64_t since = std::max<int64_t>(0, q.since);
  auto db = AcquireReader();
  if (!db) return db.status();
  ReadTxn txn(**db);  // the first id and the rows: one snapshot
  if (!txn.status()) return txn.status();
  // The ids of the days from `since` on are a range (event_days), walked from its end without
  // an index on time; the kind's fields are matched once per kind, not per row. Only the
  // filters that are set are in the statement; their texts are bound.
  auto first = FirstEventIdOfDays(**db, since);
  if (!first) return first.status();
  if (*first < 0) return out;  // no events on those days
  std::vector<const std::string*> texts;
  auto text_filter = [&](std::string& where, std::string_view column, const std::string& value) {
    texts.push_back(&value);
    where += " AND " + std::string(column) + " = ?" + std::to_string(texts.size() + 3);
  };
  std::string rows = "SELECT id FROM event_rows WHERE id >= ?1 AND time >= ?2";
  if (q.after_id >= 0) rows += " AND id > " + std::to_string(q.after_id);
  if (q.until != 0) rows += " AND time < ?3";
  static const std::string kNone;
  if (!recipient_key.empty()) text_filter(rows, "recipient_key", recipient_key);
  if (!q.domain.empty()) text_filter(rows, "domain", q.domain);
  if (q.sender == "<>") {
    rows += " AND sender IS NULL";  // stored as NULL (event_rows keeps "" as NULL)
  } else if (!q.sender.empty()) {
    text_filter(rows, "sender", q.sender);
  }
  const std::string sender_domain = SenderDomainSql("sender");
  if (!q.sender_domain.empty()) text_filter(rows, sender_domain, q.sender_domain);
  std::string kinds;
  if (!q.category.empty()) text_filter(kinds, "category", q.category);
  if (q.provider == "-") {
    text_filter(kinds, "provider", kNone);
  } else if (!q.provider.empty()) {
    text_filter(kinds, "provider", q.provider);
  }
  if (!q.provider_code.empty()) text_filter(kinds, "provider_code", q.provider_code);
  if (!q.log_status.empty()) text_filter(kinds, "log_status", q.log_status);
  if (!q.source.empty()) text_filter(kinds, "source", q.source);
  if (!kinds.empty()) rows += " AND kind IN (SELECT id FROM event_kinds WHERE 1" + kinds + ")";
  const char* order = q.after_id >= 0 ? " ORDER BY id" : " ORDER BY id DESC";
  rows += order + std::string(" LIMIT ") + std::to_string(limit);
  sql::Stmt st;
  if (Status s = st.Prepare(**db, "SELECT " + std::string(kEventColumns) +
                                      " FROM events WHERE id IN (" + rows + ")" + order);
      !s) {
    return s;
  }
  st.Bind(1, *first).Bind(2, since);
  if (q.until != 0) st.Bind(3, q.until);
  for (size_t i = 0; i < texts.size(); ++i) st.BindRef(static_cast<int>(i + 4), *texts[i]);
  if (Status walked = st.ForEachRow([&] { out.push_back(ReadEvent(st)); }); !walked) {
    return walked;
  }
  return out;
}

Expected<AddressStatus> StoreImpl::GetStatus(std::string_view address, size_t max_events) {
  AddressStatus out;
  out.address = std::string(address);
  out.key = NormalizeAddress(address, Delimiters());
  if (out.key.empty()) return Status::Error("invalid address '" + std::string(address) + "'");
  auto db = AcquireReader();
  if (!db) return db.status();
  ReadTxn txn(**db);
  if (!txn.status()) return txn.status();
  {
    sql::Stmt st;
    if (Status s = st.Prepare(**db, "SELECT " + std::string(kSuppressionColumns) +
                                        " FROM suppressions WHERE address = ?1");
        !s) {
      return s;
    }
    st.Bind(1, out.key);
    auto r = st.Step();
    if (!r) return r.status();
    if (*r) out.suppression = ReadSuppression(st);
  }
  {
    sql::Stmt st;
    if (Status s = st.Prepare(**db,
                              "SELECT entry, kind, reason, created, actor_uid "
                              "FROM allowlist WHERE entry = ?1");
        !s) {
      return s;
    }
    for (const std::string& c : AllowCandidates(out.key)) {
      st.Bind(1, c);
      auto r = st.Step();
      if (!r) return r.status();
      if (*r) {
        AllowEntry a;
        a.entry = st.Text(0);
        a.domain = st.TextView(1) == "domain";
        a.reason = st.Text(2);
        a.created = st.Int(3);
        a.actor_uid = st.Int(4);
        out.allowed_by = a;
        break;
      }
      st.Reset();
    }
  }
  {
    sql::Stmt st;
    if (Status s = st.Prepare(**db, "SELECT " + std::string(kStateColumns) +
                                        " FROM recipient_state WHERE address = ?1");
        !s) {
      return s;
    }
    st.Bind(1, out.key);
    auto r = st.Step();
    if (!r) return r.status();
    if (*r) out.state = ReadState(st);
  }
  {
    sql::Stmt st;
    if (Status s = st.Prepare(**db, "SELECT " + std::string(kChangeColumns) +
                                        " FROM suppression_log l WHERE l.address = ?1 "
                                        "ORDER BY l.id DESC LIMIT " +
                                        std::to_string(AddressStatus::kMaxHistory));
        !s) {
      return s;
    }
    st.Bind(1, out.key);
    if (Status walked = st.ForEachRow([&] { out.history.push_back(ReadChange(st)); }); !walked) {
      return walked;
    }
  }
  auto events = ReadEvents(**db, out.key, max_events);
  if (!events) return events.status();
  out.events = std::move(*events);
  const int64_t now = Now();
  out.suppressed = out.suppression && !out.allowed_by &&
                   (out.suppression->expires == 0 || out.suppression->expires > now);
  return out;
}

Status StoreImpl::List(const ListFilter& f, const std::function<bool(const Suppression&)>& sink) {
  auto db = AcquireReader();
  if (!db) return db.status();
  sql::Stmt st;
  if (Status r = PrepareList(**db, f, Now(), &st); !r) return r;
  if (Status walked = st.ForEachRow([&] { return sink(ReadSuppression(st)); }); !walked) {
    return walked;
  }
  return Status::Ok();
}

Status StoreImpl::Export(ExportFormat format, const ListFilter& filter,
                         const std::function<bool(std::string_view line)>& sink) {
  if (format == ExportFormat::kCsv) {
    std::string header = std::string(kCsvHeader) + "\n";
    if (!sink(header)) return Status::Ok();
  }
  return List(filter, [&](const Suppression& s) { return sink(FormatExportLine(format, s)); });
}

Expected<std::vector<StatsRow>> StoreImpl::Stats(const StatsQuery& q) {
  if (q.days < 1 || q.days > 3660) return Status::Error("stats: days must be 1..3660");
  const int64_t now = q.now ? q.now : Now();
  const int64_t first_time = (now / 86400 - (q.days - 1)) * 86400;  // the first day's start
  std::string first_day = DayOf(first_time);
  const bool by_sender = q.by == StatsQuery::By::kSenderDomain;
  std::string only = q.only;
  if (q.by != StatsQuery::By::kProvider && !only.empty() && only != "<>") {
    only = NormalizeDomain(only[0] == '@' ? std::string_view(only).substr(1) : only);
    if (only.empty()) return Status::Error("stats: invalid domain '" + q.only + "'");
  }
  std::string sql;
  if (by_sender) {
    // The counted events of those days (the rows of event_days' range, as FindEvents reads
    // them), grouped as daily_counters groups them, by the sender's domain.
    const std::string key = SenderDomainSql("r.sender");
    const std::string day =
        q.per_day ? "strftime('%Y-%m-%d', r.time, 'unixepoch')" : std::string("''");
    sql = "SELECT " + key + ", " + day +
          ", k.category, k.provider_code, k.log_status, count(*) "
          "FROM event_rows r JOIN event_kinds k ON k.id = r.kind "
          "WHERE r.id >= ?4 AND r.time >= ?5 AND r.time < ?6 AND r.counted = 1 "
          "AND (?3 = '' OR " +
          key + " = ?3) GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 6 DESC, 3, 4, 5";
  } else {
    std::string col = q.by == StatsQuery::By::kDomain ? "domain" : "provider";
    std::string day_col = q.per_day ? "day" : "''";
    sql = "SELECT " + col + ", " + day_col +
          ", category, provider_code, log_status, sum(count) FROM daily_counters "
          "WHERE day >= ?1 AND day <= ?2 AND (?3 = '' OR " +
          col +
          " = ?3) "
          "GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 6 DESC, 3, 4, 5";
  }
  auto db = AcquireReader();
  if (!db) return db.status();
  ReadTxn txn(**db);  // the first id and the rows: one snapshot
  if (!txn.status()) return txn.status();
  std::vector<StatsRow> rows;
  sql::Stmt st;
  if (Status s = st.Prepare(**db, sql); !s) return s;
  st.Bind(3, only);
  if (by_sender) {
    auto first = FirstEventIdOfDays(**db, first_time);
    if (!first) return first.status();
    if (*first < 0) return rows;  // no events on those days
    st.Bind(4, *first).Bind(5, first_time).Bind(6, (now / 86400 + 1) * 86400);
  } else {
    st.Bind(1, first_day).Bind(2, DayOf(now));
  }
  if (Status walked = st.ForEachRow([&] {
        StatsRow row;
        row.key = st.Text(0);
        row.day = st.Text(1);
        row.category = st.Text(2);
        row.provider_code = st.Text(3);
        row.log_status = st.Text(4);
        row.count = st.Int(5);
        rows.push_back(std::move(row));
      });
      !walked) {
    return walked;
  }
  return rows;
}

Expected<std::vector<AllowEntry>> StoreImpl::AllowList() {
  auto db = AcquireReader();
  if (!db) return db.status();
  sql::Stmt st;
  if (Status s = st.Prepare(**db,
                            "SELECT entry, kind, reason, created, actor_uid FROM allowlist "
                            "ORDER BY kind, entry");
      !s) {
    return s;
  }
  std::vector<AllowEntry> out;
  if (Status walked = st.ForEachRow([&] {
        AllowEntry a;
        a.entry = st.Text(0);
        a.domain = st.TextView(1) == "domain";
        a.reason = st.Text(2);
        a.created = st.Int(3);
        a.actor_uid = st.Int(4);
        out.push_back(std::move(a));
      });
      !walked) {
    return walked;
  }
  return out;
}

Expected<Health> StoreImpl::GetHealth() {
  Health h;
  h.path = options_.path;
  auto db = AcquireReader();
  if (!db) return db.status();
  auto scalar = [&](std::string_view q, int64_t& out) -> Status {
    sql::Stmt st;
    if (Status s = st.Prepare(**db, q); !s) return s;
    auto r = st.Step();
    if (!r) return r.status();
    out = *r ? st.Int(0) : 0;
    return Status::Ok();
  };
  int64_t version = 0;
  {
    ReadTxn txn(**db);
    if (!txn.status()) return txn.status();
    for (auto [q, out] : {std::pair<std::string_view, int64_t*>{"PRAGMA user_version", &version},
                          {"SELECT count(*) FROM events", &h.events},
                          {"SELECT count(*) FROM suppressions", &h.suppressions},
                          {"SELECT count(*) FROM allowlist", &h.allowlist},
                          // recipient_state's rows, counted without computing each one.
                          {"SELECT (SELECT count(DISTINCT recipient_key) FROM event_rows "
                           "WHERE counted = 1 AND domain <> '') + (SELECT count(*) FROM "
                           "recipient_policy q WHERE NOT EXISTS (SELECT 1 FROM event_rows f "
                           "WHERE f.recipient_key = q.address AND f.counted = 1))",
                           &h.recipients}}) {
      if (Status s = scalar(q, *out); !s) return s;
    }
  }
  h.schema_version = static_cast<int>(version);
  {
    sql::Stmt oldest;
    if (Status s = oldest.Prepare(**db, "SELECT coalesce(min(day), '') FROM event_days"); !s) {
      return s;
    }
    auto r = oldest.Step();
    if (!r) return r.status();
    if (*r) h.oldest_event_day = oldest.Text(0);
  }
  sql::Stmt check;
  if (Status s = check.Prepare(**db, "PRAGMA quick_check"); !s) return s;
  std::string detail;
  for (;;) {
    auto r = check.Step();
    if (!r) {
      detail = r.error();
      break;
    }
    if (!*r) break;
    if (!detail.empty()) detail += "; ";
    detail += check.Text(0);
  }
  h.integrity_ok = detail == "ok";
  h.integrity_detail = detail;
  {
    std::lock_guard lock(queue_mu_);
    h.queued_batches = static_cast<int64_t>(queue_.size());
    h.last_write_error = last_write_error_;
  }
  {
    std::lock_guard lock(policy_mu_);
    h.retention = retention_;
  }
  h.pruned = Pruned();
  return h;
}

}  // namespace

int64_t RetentionHorizon(int days, int64_t now) {
  if (days <= 0) return 0;
  const int64_t t = now - int64_t{days} * 86400;
  const int64_t day = t >= 0 ? t / 86400 : (t - 86399) / 86400;
  return day * 86400;
}

std::optional<ExportFormat> ExportFormatFromName(std::string_view name) {
  if (name == "csv") return ExportFormat::kCsv;
  if (name == "jsonl" || name == "json") return ExportFormat::kJsonl;
  if (name == "text" || name == "txt") return ExportFormat::kText;
  return std::nullopt;
}

const char* ExportFormatName(ExportFormat format) {
  switch (format) {
    case ExportFormat::kCsv:
      return "csv";
    case ExportFormat::kJsonl:
      return "jsonl";
    case ExportFormat::kText:
      return "text";
  }
  return "csv";
}

Expected<std::unique_ptr<Store>> Store::Open(const StoreOptions& options) {
  // SQLite's memory statistics (sqlite3_memory_used, unused by bounced) take a global mutex on
  // every allocation; the writer allocates and frees a few cursors and records per statement.
  // Only possible before SQLite initialises; if something used it first, it stays on.
  static std::once_flag memstatus_off;
  std::call_once(memstatus_off, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
  auto store = std::make_unique<StoreImpl>(options);
  if (Status s = store->OpenAll(); !s) return s;
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace bounced
