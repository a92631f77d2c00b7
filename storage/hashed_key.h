// hashed_key.h: string keys looked up with a hash worked out once (internal to storage/).
//
// The writer looks an event's recipient key up in several hash tables (the suppression view,
// the policy rows, the transaction's new suppressions); Submit hashes the key once, on the
// caller's thread, and the tables take the key with its hash (heterogeneous lookup) instead of
// hashing it again each time. KeyHash is std::hash<std::string_view>, so a table built with it
// gives the same buckets whichever way a key comes in.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

namespace bounced {

struct HashedKey {
  std::string_view key;
  size_t hash;  // KeyHash{}(key)
  static HashedKey Of(std::string_view k) { return {k, std::hash<std::string_view>{}(k)}; }
};

struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  size_t operator()(const HashedKey& k) const { return k.hash; }
};

struct KeyEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
  bool operator()(const HashedKey& a, std::string_view b) const { return a.key == b; }
  bool operator()(std::string_view a, const HashedKey& b) const { return a == b.key; }
};

}  // namespace bounced
