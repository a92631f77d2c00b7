// store_impl.h: the SQLite store's implementation (internal to storage/; store.h is the
// contract). StoreImpl's parts are defined in store.cc (open, migrate and load, Store::Open),
// store_writer.cc (the writer thread: group commit, events, policy, purge and retention),
// store_manual.cc (suppress, unsuppress, allow, import) and store_reads.cc (the read queries);
// this header holds what they share: limits, row readers, the job and view types, the class.
#pragma once

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

#include "storage/address.h"
#include "storage/hashed_key.h"
#include "storage/policy.h"
#include "storage/same_bounce_index.h"
#include "storage/sqlite.h"
#include "storage/suppression_view.h"
#include "storage/timefmt.h"

namespace bounced::store_detail {

// A log bounce and the DSN Postfix sends for it are the same incident when their queue id and
// recipient match within this window (longer than Postfix's default maximal_queue_lifetime).
inline constexpr int64_t kSameBounceWindowSeconds = 7 * 86400;
// The writer's index of recent DSN bounces (storage/same_bounce_index.h) keeps entries one day
// past that window of the newest one, and at most this many (56-64 bytes each, <= 64 MiB): a
// lookup it cannot answer runs the SELECT as before.
inline constexpr int64_t kSameBounceSlackSeconds = 86400;
inline constexpr size_t kSameBounceIndexMaxEntries = size_t{1} << 20;

// Expired suppressions no longer suppress (lookups check the time) but keep their rows until the
// writer purges them: at the first entry's expiry (at once after open for one expired before;
// the writer wakes for it without a batch) or after the interval, whichever comes first, at most
// kPurgeLimit rows per transaction (a bigger backlog continues in the next group at once). A
// purge that fails is tried again after kPurgeRetrySeconds.
inline constexpr int64_t kPurgeIntervalSeconds = 3600;
inline constexpr int64_t kPurgeRetrySeconds = 60;
inline constexpr int64_t kPurgeLimit = 10000;

// Retention (RetentionPolicy): at once after open, then hourly (a writer that no batch wakes
// wakes for it), at most kPruneLimit event rows (or one day of daily counters) per step, each
// step in a transaction of its own before the next group's: a batch waits for one step at most
// (~15-30 ms; bench/ingest_bench --part retention). A backlog (retention just turned on, a day
// of a busy server) goes on step by step between the groups, also when no batch comes.
inline constexpr int64_t kPruneIntervalSeconds = 3600;
inline constexpr int64_t kPruneLimit = 500;

// Event rows go into SQLite this many at a time, with one multi-row INSERT (see FlushRowsW).
inline constexpr int kRowsPerInsert = 16;
// The columns of an event_rows insert, bound as ?1..?16 (one row) or ?(16 r + 1).. (row r).
inline constexpr int kEventRowParams = 16;
inline constexpr std::string_view kEventRowColumns =
    "time, kind, counted, recipient_key, domain, queue_id, source_ref, recipient, message_id, "
    "sender, relay, diagnostic, remote_mta, time_text, original_recipient, bounce_queue_id";

// Event kinds (distinct classifications) the writer remembers; past this the cache starts over
// (the kinds stay in the table and are looked up again).
inline constexpr size_t kKindCacheSize = 100000;

inline int64_t Now() { return static_cast<int64_t>(std::time(nullptr)); }

inline bool IsLogFamily(EventSource s) {
  return s == EventSource::kLog || s == EventSource::kJournal;
}

inline SuppressionHit HitFor(const Suppression& s) {
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
inline const Actor kBouncedItself{-1, ""};
inline const Actor kExpired{-1, "expired"};

inline constexpr std::string_view kSuppressionColumns =
    "address, display, reason, category, source, first_event, last_event, created, expires, "
    "detail, delivered_after";

inline Suppression ReadSuppression(const sql::Stmt& st, int c = 0) {
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
inline Status PrepareList(sql::Db& db, const ListFilter& f, int64_t now, sql::Stmt* st) {
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

// Runs a read transaction so several SELECTs see one snapshot.
class ReadTxn {
 public:
  explicit ReadTxn(sql::Db& db) : db_(db) { ok_ = db_.Exec("BEGIN"); }
  ~ReadTxn() {
    if (ok_) db_.Exec("COMMIT");
  }
  ReadTxn(const ReadTxn&) = delete;
  ReadTxn& operator=(const ReadTxn&) = delete;
  Status status() const { return ok_; }

 private:
  sql::Db& db_;
  Status ok_;
};

// Runs `select` (one "?1" parameter, bound to `key`: text or an integer) and hands its first
// row, if any, to `read`.
template <typename Key, typename Read>
Status ReadFirstRow(sql::Db& db, std::string_view select, const Key& key, Read read) {
  sql::Stmt st;
  if (Status s = st.Prepare(db, select); !s) return s;
  st.Bind(1, key);
  auto r = st.Step();
  if (!r) return r.status();
  if (*r) read(st);
  return Status::Ok();
}

// The first event id of the day of `since` and the days after it (event_days), or -1 when they
// have no events: the rows from `since` on are then a range of ids, read without an index on
// time (a few rows of that day before `since` are the caller's to skip).
inline Expected<int64_t> FirstEventIdOfDays(sql::Db& db, int64_t since) {
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

// Candidate allowlist entries for a key: the address, its domain and the parent domains.
inline std::vector<std::string> AllowCandidates(std::string_view key) {
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
  // When the writer purges expired entries next: the earliest expiry it knows of, an hour away
  // at most (writer thread only).
  int64_t next_purge_ = 0;
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

}  // namespace bounced::store_detail
