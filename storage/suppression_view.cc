// suppression_view.cc: sharded in-memory suppression list (see suppression_view.h).
#include "storage/suppression_view.h"

#include "storage/address.h"

#include <ctime>
#include <mutex>

namespace bounced {

MemorySuppressionView::Shard& MemorySuppressionView::ShardFor(std::string_view, size_t h) const {
  // The low bits pick the bucket inside the shard's table; the high bits pick the shard.
  return shards_[(h >> 58) % kShards];
}

size_t MemorySuppressionView::KeyHeapBytes(const std::string& key) {
  // libstdc++ keeps up to 15 bytes inline; longer keys hold capacity+1 bytes plus malloc's header.
  return key.capacity() > 15 ? ((key.capacity() + 1 + 8 + 15) & ~size_t{15}) : 0;
}

std::optional<SuppressionHit> MemorySuppressionView::Lookup(std::string_view address,
                                                            int64_t now) const {
  uint64_t packed = delimiters_.load(std::memory_order_relaxed);
  char delimiters[8];
  size_t n = 0;
  for (; n < 8 && (packed >> (8 * n)) & 0xff; ++n) {
    delimiters[n] = static_cast<char>((packed >> (8 * n)) & 0xff);
  }
  thread_local std::string key;  // reused: no allocation per lookup
  if (!NormalizeAddressInto(address, std::string_view(delimiters, n), key)) return std::nullopt;
  return LookupKey(key, now);
}

std::optional<SuppressionHit> MemorySuppressionView::LookupKey(std::string_view key,
                                                               int64_t now) const {
  if (Allowed(key)) return std::nullopt;
  size_t h = Hash{}(key);
  Shard& shard = ShardFor(key, h);
  SuppressionHit hit;
  {
    std::shared_lock lock(shard.mu);
    auto it = shard.map.find(key);
    if (it == shard.map.end()) return std::nullopt;
    hit = it->second;
  }
  if (hit.expires != 0) {
    if (now == 0) now = static_cast<int64_t>(std::time(nullptr));
    if (hit.expires <= now) return std::nullopt;
  }
  return hit;
}

bool MemorySuppressionView::HasKey(std::string_view key) const {
  size_t h = Hash{}(key);
  Shard& shard = ShardFor(key, h);
  std::shared_lock lock(shard.mu);
  return shard.map.find(key) != shard.map.end();
}

bool MemorySuppressionView::HasKeyWriter(const HashedKey& key) const {
  const Shard& shard = ShardFor(key.key, key.hash);
  return shard.map.find(key) != shard.map.end();
}

bool MemorySuppressionView::Allowed(std::string_view key) const {
  if (allow_entries_.load(std::memory_order_acquire) == 0) return false;
  std::shared_lock lock(allow_mu_);
  if (allow_addresses_.find(key) != allow_addresses_.end()) return true;
  std::string_view domain = DomainOfKey(key);
  // A domain entry covers its subdomains too (example.com covers mx.example.com).
  while (!domain.empty()) {
    if (allow_domains_.find(domain) != allow_domains_.end()) return true;
    size_t dot = domain.find('.');
    if (dot == std::string_view::npos) break;
    domain.remove_prefix(dot + 1);
  }
  return false;
}

size_t MemorySuppressionView::size() const {
  size_t n = 0;
  for (auto& s : shards_) {
    std::shared_lock lock(s.mu);
    n += s.map.size();
  }
  return n;
}

size_t MemorySuppressionView::memory_bytes() const {
  // Node: next pointer + key string + hit, rounded to malloc's 16-byte granules with its header.
  constexpr size_t kNode =
      (sizeof(void*) + sizeof(std::string) + sizeof(SuppressionHit) + 8 + 15) & ~size_t{15};
  size_t bytes = sizeof(*this);
  for (auto& s : shards_) {
    std::shared_lock lock(s.mu);
    bytes += s.map.size() * kNode + s.map.bucket_count() * sizeof(void*) + s.key_heap_bytes;
  }
  return bytes;
}

void MemorySuppressionView::Put(const std::string& key, const SuppressionHit& hit) {
  size_t h = Hash{}(key);
  Shard& shard = ShardFor(key, h);
  std::unique_lock lock(shard.mu);
  auto [it, inserted] = shard.map.try_emplace(key, hit);
  if (inserted) {
    shard.key_heap_bytes += KeyHeapBytes(it->first);
  } else {
    it->second = hit;
  }
}

void MemorySuppressionView::Erase(const std::string& key) {
  size_t h = Hash{}(key);
  Shard& shard = ShardFor(key, h);
  std::unique_lock lock(shard.mu);
  auto it = shard.map.find(key);
  if (it == shard.map.end()) return;
  shard.key_heap_bytes -= KeyHeapBytes(it->first);
  shard.map.erase(it);
}

void MemorySuppressionView::AllowAddress(const std::string& key, bool allowed) {
  std::unique_lock lock(allow_mu_);
  if (allowed) {
    allow_addresses_.insert(key);
  } else {
    allow_addresses_.erase(key);
  }
  allow_entries_.store(allow_addresses_.size() + allow_domains_.size(), std::memory_order_release);
}

void MemorySuppressionView::AllowDomain(const std::string& domain, bool allowed) {
  std::unique_lock lock(allow_mu_);
  if (allowed) {
    allow_domains_.insert(domain);
  } else {
    allow_domains_.erase(domain);
  }
  allow_entries_.store(allow_addresses_.size() + allow_domains_.size(), std::memory_order_release);
}

void MemorySuppressionView::SetDelimiters(const std::string& delimiters) {
  uint64_t packed = 0;
  for (size_t i = 0; i < delimiters.size() && i < 8; ++i) {
    packed |= static_cast<uint64_t>(static_cast<unsigned char>(delimiters[i])) << (8 * i);
  }
  delimiters_.store(packed, std::memory_order_relaxed);
}

void MemorySuppressionView::Reserve(size_t n) {
  for (auto& s : shards_) {
    std::unique_lock lock(s.mu);
    s.map.reserve(n / kShards + 1);
  }
}

}  // namespace bounced
