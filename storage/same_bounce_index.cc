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

void SameBounceIndex::Reset(int64_t covered_from) {
  newest_by_key_.clear();
  added_.clear();
  covered_from_ = covered_from;
  newest_ = std::numeric_limits<int64_t>::min();
}

void SameBounceIndex::Add(std::string_view queue_id, std::string_view recipient_key, int64_t time,
                          int64_t now) {
  uint64_t fp = Fingerprint(queue_id, recipient_key);
  auto [it, inserted] = newest_by_key_.try_emplace(fp, time);
  if (!inserted) it->second = std::max(it->second, time);
  added_.push_back(Added{time, fp});
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
  if (it != newest_by_key_.end() && it->second <= a.time) newest_by_key_.erase(it);
  // Whatever had this fingerprint at or before a.time may be gone now.
  covered_from_ = std::max(covered_from_, SaturatingAdd(a.time, 1));
}

bool SameBounceIndex::MayMatch(std::string_view queue_id, std::string_view recipient_key,
                               int64_t time) const {
  if (time < SaturatingAdd(covered_from_, window_) || time > kMaxTime - window_) return true;
  auto it = newest_by_key_.find(Fingerprint(queue_id, recipient_key));
  return it != newest_by_key_.end() && it->second >= time - window_;
}

size_t SameBounceIndex::memory_bytes() const {
  // libstdc++: a node is the next pointer and the pair (24 bytes, 32 with malloc's header);
  // one bucket pointer per bucket; the deque stores 16-byte entries in 512-byte blocks.
  return newest_by_key_.size() * 32 + newest_by_key_.bucket_count() * sizeof(void*) +
         added_.size() * sizeof(Added);
}

}  // namespace bounced
