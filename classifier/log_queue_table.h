// log_queue_table.h: internals of the log parser (log_parser.h): the table of queue ids still in
// Postfix's queue, with what earlier lines said about each. An open-addressing hash table
// (linear probing, backward-shift deletion) whose slots hold the queue id inline, over a slab of
// states whose strings keep their capacity when reused, so a steady log allocates almost nothing.
// The table is capped: when it is full, the least recently seen tenth is evicted in one batch
// (amortised O(1) per insert) and counted. Pure code, one thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "classifier/log_reply.h"

namespace bounced::log_internal {

// A recipient whose latest status was deferred: what an expiry must report for it.
struct PendingRecipient {
  // A 128-bit hash of recipient and orig_recipient, which lookups compare instead of them.
  KeyHash key_hash;
  std::string recipient;
  std::string orig_recipient;
  std::string relay;
  std::string dsn;
  std::string reason;
};

struct QueueState {
  // First, in the cache line a lookup touches anyway (it updates last_seen).
  uint64_t last_seen = 0;  // sequence number of the last line about this queue id
  std::vector<PendingRecipient> pending;
  bool sender_known = false;
  int nrcpt = -1;
  int64_t size = -1;
  std::string sender;
  std::string message_id;
  std::string bounce_queue_id;
  // The facts above were handed out by LogCorrelator::TakeQueueFacts (or restored from there):
  // someone keeps a copy, so forgetting this queue id must be reported (set_forgotten_sink).
  bool stored = false;
  // Its facts changed since the last LogCorrelator::TakeQueueFacts (its id is in the list of
  // changed ids once).
  bool facts_dirty = false;
};

class QueueTable {
 public:
  // Longest queue id kept (Postfix's are at most 16 or so; longer ids are not queue ids).
  static constexpr size_t kMaxIdBytes = 23;

  explicit QueueTable(size_t max_entries) { set_max_entries(max_entries); }

  // Starts loading the slot where a lookup of `id` begins, so that a lookup a little later
  // finds it in the cache instead of waiting for memory.
  void Prefetch(std::string_view id) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[Home(Hash(id))]);
  }

  // When `id` is in the table, starts loading its state (the slot itself is read now: call
  // Prefetch first, then do other work, then this, then other work, then PrefetchPending).
  void PrefetchState(std::string_view id) const {
    if (const QueueState* st = Peek(id)) __builtin_prefetch(st);
  }
  // When `id` is in the table, starts loading its first pending recipient (the state is read
  // now: call it a while after PrefetchState, and look `id` up a while later).
  void PrefetchPending(std::string_view id) const {
    const QueueState* st = Peek(id);
    if (st != nullptr && !st->pending.empty()) __builtin_prefetch(st->pending.data());
  }

  // The state of `id`, or nullptr, without marking it as seen.
  QueueState* Peek(std::string_view id) {
    return const_cast<QueueState*>(std::as_const(*this).Peek(id));
  }
  const QueueState* Peek(std::string_view id) const {
    if (size_ == 0) return nullptr;
    size_t i = Home(Hash(id));
    for (;;) {
      const Slot& s = slots_[i];
      if (s.state == 0) return nullptr;
      if (s.len == id.size() && SameId(s.id, id.data(), id.size())) return &states_[s.state - 1];
      i = (i + 1) & mask_;
    }
  }

  // The state of `id`, or nullptr. Marks it as just seen.
  QueueState* Find(std::string_view id) {
    if (size_ == 0) return nullptr;
    size_t i = Home(Hash(id));
    for (;;) {
      const Slot& s = slots_[i];
      if (s.state == 0) return nullptr;
      if (s.len == id.size() && SameId(s.id, id.data(), id.size())) {
        QueueState* st = &states_[s.state - 1];
        st->last_seen = ++clock_;
        return st;
      }
      i = (i + 1) & mask_;
    }
  }

  // The state of `id`, created empty when missing (which may evict the oldest entries).
  QueueState* FindOrCreate(std::string_view id) {
    if (QueueState* st = Find(id)) return st;
    if (id.size() > kMaxIdBytes) id = id.substr(0, kMaxIdBytes);
    while (size_ >= max_entries_) EvictOldest();
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    uint32_t index = AllocState();
    Insert(id, index);
    QueueState* st = &states_[index - 1];
    st->last_seen = ++clock_;
    return st;
  }

  void Erase(std::string_view id) {
    if (size_ == 0) return;
    size_t i = Home(Hash(id));
    for (;;) {
      Slot& s = slots_[i];
      if (s.state == 0) return;
      if (s.len == id.size() && SameId(s.id, id.data(), id.size())) break;
      i = (i + 1) & mask_;
    }
    RemoveAt(i);
  }

  // Appends a pending recipient to `st`, reusing the strings of a recycled one when there is
  // one: recipients come and go by the hundred thousand in a busy log, and their strings need
  // not be allocated and freed each time. Every field of the result must be assigned.
  PendingRecipient& AddPending(QueueState* st) {
    if (spare_.empty()) return st->pending.emplace_back();
    PendingRecipient& p = st->pending.emplace_back(std::move(spare_.back()));
    spare_.pop_back();
    return p;
  }
  // Keeps a pending recipient that is done with for AddPending (up to a fixed number).
  void Recycle(PendingRecipient&& p) {
    if (spare_.size() < kMaxSpare) spare_.push_back(std::move(p));
  }
  // Removes pending[i] from `st`, recycling it.
  void ErasePending(QueueState* st, size_t i) {
    Recycle(std::move(st->pending[i]));
    st->pending.erase(st->pending.begin() + static_cast<ptrdiff_t>(i));
  }

  size_t size() const { return size_; }
  uint64_t evicted() const { return evicted_; }
  // From now on, the id of every removed (erased or evicted) state whose `stored` is set is
  // appended to *sink; nullptr stops it.
  void set_forgotten_sink(std::vector<std::string>* sink) { forgotten_sink_ = sink; }
  void set_max_entries(size_t n) {
    max_entries_ = n == 0 ? 1 : n;
    while (size_ > max_entries_) EvictOldest();
  }

 private:
  struct Slot {
    char id[kMaxIdBytes];
    uint8_t len = 0;
    uint32_t state = 0;  // index into states_ + 1; 0 = empty slot
  };

  static constexpr size_t kMaxSpare = 4096;

  // memcmp(a, b, n) == 0 for n <= kMaxIdBytes, as at most six overlapping word loads instead of
  // a library call (every queue-id line makes one or two of these compares).
  static bool SameId(const char* a, const char* b, size_t n) {
    auto load8 = [](const char* p) {
      uint64_t w;
      memcpy(&w, p, 8);
      return w;
    };
    auto load4 = [](const char* p) {
      uint32_t w;
      memcpy(&w, p, 4);
      return w;
    };
    if (n >= 8) {
      uint64_t diff = (load8(a) ^ load8(b)) | (load8(a + n - 8) ^ load8(b + n - 8));
      if (n > 16) diff |= load8(a + 8) ^ load8(b + 8);
      return diff == 0;
    }
    if (n >= 4) return ((load4(a) ^ load4(b)) | (load4(a + n - 4) ^ load4(b + n - 4))) == 0;
    for (size_t i = 0; i < n; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }

  static uint64_t Hash(std::string_view id) {
    uint64_t w[3] = {0, 0, 0};
    memcpy(w, id.data(), id.size() < sizeof w ? id.size() : sizeof w);
    uint64_t h = (w[0] * 0x9E3779B97F4A7C15ull) ^ (w[1] * 0xC2B2AE3D27D4EB4Full) ^
                 (w[2] * 0x165667B19E3779F9ull) ^ id.size();
    h ^= h >> 32;
    h *= 0xD6E8FEB86659FD93ull;
    return h ^ (h >> 29);
  }
  size_t Home(uint64_t h) const { return static_cast<size_t>(h) & mask_; }

  void Insert(std::string_view id, uint32_t state) {
    size_t i = Home(Hash(id));
    while (slots_[i].state != 0) i = (i + 1) & mask_;
    Slot& s = slots_[i];
    memcpy(s.id, id.data(), id.size());
    s.len = static_cast<uint8_t>(id.size());
    s.state = state;
    ++size_;
  }

  // Backward-shift deletion keeps every probe chain unbroken without tombstones.
  void RemoveAt(size_t i) {
    if (forgotten_sink_ != nullptr && states_[slots_[i].state - 1].stored) {
      forgotten_sink_->emplace_back(slots_[i].id, slots_[i].len);
    }
    FreeState(slots_[i].state);
    slots_[i].state = 0;
    --size_;
    size_t j = i;
    for (;;) {
      j = (j + 1) & mask_;
      if (slots_[j].state == 0) return;
      size_t home = Home(Hash(std::string_view(slots_[j].id, slots_[j].len)));
      // Move slot j back to i when i lies cyclically in [home, j).
      bool movable = (j > i) ? (home <= i || home > j) : (home <= i && home > j);
      if (movable) {
        slots_[i] = slots_[j];
        slots_[j].state = 0;
        i = j;
      }
    }
  }

  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    size_ = 0;
    for (const Slot& s : old) {
      if (s.state != 0) Insert(std::string_view(s.id, s.len), s.state);
    }
  }

  uint32_t AllocState() {
    if (!free_.empty()) {
      uint32_t index = free_.back();
      free_.pop_back();
      return index;
    }
    states_.emplace_back();
    return static_cast<uint32_t>(states_.size());
  }

  // Clears a state for reuse; its strings keep their capacity.
  void FreeState(uint32_t index) {
    QueueState& st = states_[index - 1];
    st.sender_known = false;
    st.sender.clear();
    st.message_id.clear();
    st.bounce_queue_id.clear();
    st.size = -1;
    st.nrcpt = -1;
    st.stored = false;
    st.facts_dirty = false;
    for (PendingRecipient& p : st.pending) Recycle(std::move(p));
    st.pending.clear();
    free_.push_back(index);
  }

  // Drops the least recently seen tenth of the cap (at least one entry).
  void EvictOldest() {
    size_t target = max_entries_ - max_entries_ / 10;
    if (target >= size_) target = size_ - 1;
    std::vector<uint64_t> seen;
    seen.reserve(size_);
    for (const Slot& s : slots_) {
      if (s.state != 0) seen.push_back(states_[s.state - 1].last_seen);
    }
    size_t drop = size_ - target;
    std::nth_element(seen.begin(), seen.begin() + static_cast<ptrdiff_t>(drop - 1), seen.end());
    uint64_t cutoff = seen[drop - 1];
    // Deleting shifts later slots back, so rescan until nothing at or below the cutoff is left.
    for (size_t i = 0; i < slots_.size();) {
      if (slots_[i].state != 0 && states_[slots_[i].state - 1].last_seen <= cutoff) {
        RemoveAt(i);
        ++evicted_;
      } else {
        ++i;
      }
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
  size_t max_entries_ = 1;
  std::vector<QueueState> states_;
  std::vector<uint32_t> free_;
  std::vector<PendingRecipient> spare_;  // recycled, strings keep their capacity
  uint64_t clock_ = 0;
  uint64_t evicted_ = 0;
  std::vector<std::string>* forgotten_sink_ = nullptr;
};

}  // namespace bounced::log_internal
