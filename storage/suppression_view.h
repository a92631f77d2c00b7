// suppression_view.h: the in-memory suppression list (internal to storage/).
//
// A hash table per shard, each behind its own reader/writer lock, so milter and socketmap
// threads look up concurrently while the writer applies a commit to one shard at a time. Keys
// are normalised addresses; allowlist entries (addresses and domains) are held beside them and
// win. The Store fills it at open and changes it only after a successful commit.
#pragma once

#include <array>
#include <atomic>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "storage/hashed_key.h"
#include "storage/store.h"

namespace bounced {

class MemorySuppressionView final : public SuppressionView {
 public:
  std::optional<SuppressionHit> Lookup(std::string_view address, int64_t now) const override;
  std::optional<SuppressionHit> LookupKey(std::string_view key, int64_t now) const override;
  size_t size() const override;
  size_t memory_bytes() const override;

  // Writer side.
  void Put(const std::string& key, const SuppressionHit& hit);
  void Erase(const std::string& key);
  void AllowAddress(const std::string& key, bool allowed);
  void AllowDomain(const std::string& domain, bool allowed);
  bool Allowed(std::string_view key) const;
  // Whether an entry for `key` is held at all (expired or allowlisted ones included).
  bool HasKey(std::string_view key) const;
  // Same, without the shard lock: only for the writer thread, the one thread that changes the
  // view (so nothing can change it during the call).
  bool HasKeyWriter(const HashedKey& key) const;
  // At most 8 characters are kept (Postfix's recipient_delimiter is one or a few).
  void SetDelimiters(const std::string& delimiters);
  void Reserve(size_t n);

 private:
  static constexpr size_t kShards = 64;
  using Hash = KeyHash;
  using Map = std::unordered_map<std::string, SuppressionHit, KeyHash, KeyEq>;
  struct alignas(64) Shard {
    mutable std::shared_mutex mu;
    Map map;
    size_t key_heap_bytes = 0;  // heap held by keys longer than the small-string buffer
  };
  Shard& ShardFor(std::string_view key, size_t h) const;
  static size_t KeyHeapBytes(const std::string& key);

  mutable std::array<Shard, kShards> shards_;
  mutable std::shared_mutex allow_mu_;
  std::unordered_set<std::string, KeyHash, KeyEq> allow_addresses_;
  std::unordered_set<std::string, KeyHash, KeyEq> allow_domains_;
  // Up to 8 delimiter characters packed in one word, so lookups read them without a lock.
  std::atomic<uint64_t> delimiters_{'+'};
  // Allowlist entries held; lookups skip the allowlist lock while there are none.
  std::atomic<size_t> allow_entries_{0};
};

}  // namespace bounced
