// same_bounce_index.cc: see same_bounce_index.h. Reads and writes memory only.
#include "storage/same_bounce_index.h"

#include <algorithm>
#include <functional>

namespace bounced {

namespace {

// 9999-12-31T23:59:59Z: past it the writer's day ranges (event_days, which Store::Open reads
// the index from) are no longer in text order, so the index never answers for such times.
constexpr int64_t kMaxTime = 253402300799;

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return r;
}

}  // namespace

uint64_t SameBounceIndex::Fingerprint(std::string_view queue_id, std::string_view recipient_key) {
  // Two independent 64-bit string hashes, mixed: a collision only costs a SELECT.
  uint64_t a = std::hash<std::string_view>{}(queue_id);
  uint64_t b = std::hash<std::string_view>{}(recipient_key);
  return a ^ (b * 0x9e3779b97f4a7c15ULL + 0x7f4a7c159e3779b9ULL + (a << 6) + (a >> 2));
}

uint64_t SameBounceIndex::Check(std::string_view queue_id, std::string_view recipient_key) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](std::string_view s) {
    for (char c : s) {
      h ^= static_cast<unsigned char>(c);
      h *= 0x100000001b3ULL;
    }
  };
  mix(queue_id);
  h ^= 0x100;  // not a byte: "ab"+"c" and "a"+"bc" differ
  h *= 0x100000001b3ULL;
  mix(recipient_key);
  return h == 0 ? 1 : h;
}

void SameBounceIndex::Reset(int64_t covered_from) {
  newest_by_key_.clear();
  added_.clear();
  txn_added_.clear();
  tainted_.clear();
  covered_from_ = covered_from;
  newest_ = std::numeric_limits<int64_t>::min();
}

void SameBounceIndex::Add(std::string_view queue_id, std::string_view recipient_key, int64_t time,
                          int64_t now) {
  uint64_t fp = Fingerprint(queue_id, recipient_key);
  const uint64_t check = Check(queue_id, recipient_key);
  auto [it, inserted] = newest_by_key_.try_emplace(fp, Entry{time, check});
  if (!inserted) {
    it->second.newest = std::max(it->second.newest, time);
    if (it->second.check != check) it->second.check = 0;  // two pairs share the fingerprint
  }
  added_.push_back(Added{time, fp});
  txn_added_.push_back(fp);
  newest_ = std::max(newest_, std::min(time, SaturatingAdd(now, slack_)));
  // Entries a lookup around the newest time can no longer reach go first; then the oldest
  // added while over the cap.
  const int64_t horizon = SaturatingAdd(newest_, -SaturatingAdd(window_, slack_));
  while (!added_.empty() && (added_.front().time < horizon || added_.size() > max_entries_)) {
    DropOldest();
  }
}

void SameBounceIndex::DropOldest() {
  const Added a = added_.front();
  added_.pop_front();
  auto it = newest_by_key_.find(a.fingerprint);
  // A newer entry of the same fingerprint keeps it (its own turn comes later).
  if (it != newest_by_key_.end() && it->second.newest <= a.time) {
    newest_by_key_.erase(it);
    if (!tainted_.empty()) tainted_.erase(a.fingerprint);
  }
  // Whatever had this fingerprint at or before a.time may be gone now.
  covered_from_ = std::max(covered_from_, SaturatingAdd(a.time, 1));
}

void SameBounceIndex::Rollback() {
  // Only fingerprints still held: a dropped entry already answers kMaybe for its times.
  for (uint64_t fp : txn_added_) {
    if (newest_by_key_.count(fp)) tainted_.insert(fp);
  }
  txn_added_.clear();
}

SameBounceIndex::Match SameBounceIndex::Lookup(std::string_view queue_id,
                                               std::string_view recipient_key, int64_t time) const {
  if (time < SaturatingAdd(covered_from_, window_) || time > kMaxTime - window_) {
    return Match::kMaybe;
  }
  const uint64_t fp = Fingerprint(queue_id, recipient_key);
  auto it = newest_by_key_.find(fp);
  if (it == newest_by_key_.end() || it->second.newest < time - window_) return Match::kNo;
  // The newest time is that of a stored row; an older one may still be in the window when
  // the newest is past it: SQLite decides then.
  if (it->second.newest <= time + window_ && it->second.check != 0 &&
      it->second.check == Check(queue_id, recipient_key) &&
      (tainted_.empty() || !tainted_.count(fp))) {
    return Match::kYes;
  }
  return Match::kMaybe;
}

size_t SameBounceIndex::memory_bytes() const {
  // libstdc++: a node is the next pointer and the pair (32 bytes, 48 with malloc's header);
  // one bucket pointer per bucket; the deque stores 16-byte entries in 512-byte blocks.
  return newest_by_key_.size() * 48 + newest_by_key_.bucket_count() * sizeof(void*) +
         added_.size() * sizeof(Added) + tainted_.size() * 32 +
         txn_added_.capacity() * sizeof(uint64_t);
}

}  // namespace bounced
