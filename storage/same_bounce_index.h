// same_bounce_index.h: the writer's in-memory pre-filter for the same-bounce lookup (internal
// to storage/).
//
// A permanent failure from the log (log, journal) and the DSN Postfix sends for it (dsn,
// milter) are one incident when their queue id and recipient key match within
// kSameBounceWindowSeconds (storage/store_impl.h); the writer confirms a match with a SELECT on
// event_rows. Once DSN bounces are stored that SELECT would run for every log bounce, although
// most have no DSN copy (yet). This index remembers, for the counted dsn/milter bounces with a
// time at or after covered_from(), a 64-bit fingerprint of (queue id, recipient key) and the
// newest such time, so the writer runs the SELECT only when a match is possible.
//
// Contract:
// - No false negatives: MayMatch() returns false only when no counted dsn/milter bounce of that
//   queue id and key with a time in [t - window, t + window] can be stored, provided every such
//   row with time >= covered_from() was Add()ed (the writer adds each one it writes; Store::Open
//   loads them from the file). When the window reaches below covered_from() (or past the year
//   9999) it answers true: the SELECT decides.
// - False positives are fine (fingerprint collisions, rows of a rolled-back transaction, older
//   entries still held): each costs the SELECT that would have run anyway.
// - Exact hits: Lookup() answers kYes only when a counted dsn/milter bounce of that queue id and
//   key with a time in the window is stored (or written by the running transaction), so the
//   writer can skip the SELECT. That needs (a) the pair itself, not just a fingerprint: each
//   entry also keeps a second, independent 64-bit hash of the pair, and a fingerprint added for
//   two different pairs is marked ambiguous (kMaybe from then on); so a wrong kYes needs both
//   64-bit hashes of two pairs to collide; (b) the row committed: the writer calls Commit()
//   after each COMMIT and Rollback() after a rollback, which marks the fingerprints added since
//   the last Commit() as tainted (kMaybe while they are held); (c) rows are never deleted or
//   changed behind the writer's back while it runs (Store::Open rebuilds the index); the
//   writer's own pruning of rows older than a time calls Forget(time) first.
// - Bounded: entries older than the newest added time minus window and slack are dropped, and
//   at most max_entries are held; dropping an entry raises covered_from() past its time.
//   64-72 bytes per entry: hash node 32 + 8 for the check (malloc chunk), bucket pointer 8-16
//   (load factor 0.5-1), age queue 16.
// - Not thread-safe: the writer thread alone uses it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace bounced {

class SameBounceIndex {
 public:
  // `window`: the lookup's half-width in seconds. `slack`: how far behind the window entries
  // are kept before dropping (dropping is then done in bulk, not per event).
  SameBounceIndex(int64_t window, int64_t slack, size_t max_entries)
      : window_(window), slack_(slack), max_entries_(max_entries) {}

  // Empties the index; it then claims to hold every row with time >= covered_from.
  // kEverything: no such row exists at all (a store that never stored a DSN bounce).
  static constexpr int64_t kEverything = std::numeric_limits<int64_t>::min();
  void Reset(int64_t covered_from);

  // A counted dsn/milter bounce was written. `now` bounds how far a future time may move the
  // dropping horizon (a bad clock in one event must not empty the index).
  void Add(std::string_view queue_id, std::string_view recipient_key, int64_t time, int64_t now);

  // Whether a counted dsn/milter bounce of (queue_id, recipient_key) within the window around
  // `time` is stored: kNo and kYes are certain, kMaybe asks SQLite (see the contract above).
  enum class Match { kNo, kMaybe, kYes };
  Match Lookup(std::string_view queue_id, std::string_view recipient_key, int64_t time) const;
  bool MayMatch(std::string_view queue_id, std::string_view recipient_key, int64_t time) const {
    return Lookup(queue_id, recipient_key, time) != Match::kNo;
  }

  // The writer's transaction ended: Commit() makes what was added since the last Commit() or
  // Rollback() count for kYes; Rollback() taints it (never kYes while held). Reset() commits.
  void Commit() { txn_added_.clear(); }
  void Rollback();

  // Rows before `time` may have been deleted (retention): lookups whose window reaches below it
  // answer kMaybe from now on. Entries are kept (they age out as usual).
  void Forget(int64_t time) { covered_from_ = std::max(covered_from_, time); }

  int64_t covered_from() const { return covered_from_; }
  size_t size() const { return newest_by_key_.size(); }
  size_t memory_bytes() const;

 private:
  static uint64_t Fingerprint(std::string_view queue_id, std::string_view recipient_key);
  // An independent hash of the pair (FNV-1a); never 0, which marks an ambiguous entry.
  static uint64_t Check(std::string_view queue_id, std::string_view recipient_key);
  void DropOldest();

  const int64_t window_;
  const int64_t slack_;
  const size_t max_entries_;
  int64_t covered_from_ = kEverything;
  int64_t newest_ = std::numeric_limits<int64_t>::min();
  // Fingerprint -> newest time added with it, and the pair's Check() (0: ambiguous). The
  // fingerprint is already a hash: identity.
  struct Identity {
    size_t operator()(uint64_t v) const { return static_cast<size_t>(v); }
  };
  struct Entry {
    int64_t newest;
    uint64_t check;
  };
  std::unordered_map<uint64_t, Entry, Identity> newest_by_key_;
  // Fingerprints added since the last Commit(); fingerprints added by rolled-back transactions
  // (dropped with their entry).
  std::vector<uint64_t> txn_added_;
  std::unordered_set<uint64_t, Identity> tainted_;
  // (time, fingerprint) in the order added: what to drop first.
  struct Added {
    int64_t time;
    uint64_t fingerprint;
  };
  std::deque<Added> added_;
};

}  // namespace bounced
