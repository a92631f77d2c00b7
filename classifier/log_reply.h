// log_reply.h: internals of the log parser (log_parser.h) for the reply text of a delivery
// line: splitting Postfix's explanation into remote host, remote reply and SMTP stage, building
// the classification cache key, and the bounded caches themselves. Pure code, no I/O. Not a
// public contract: only log_parser.cc, its tests and its fuzz target use it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "classifier/result.h"

namespace bounced::log_internal {

// What Postfix's "(...)" explanation of a delivery says.
struct ReasonParts {
  std::string_view
      remote_host;         // "mx01.mail.icloud.com" from "host H[ip] said:", "connect to H[ip]"
  std::string_view reply;  // the remote server's reply, or Postfix's own text when none
  std::string_view stage;  // connect, helo, mail, rcpt, data, eom, or ""
  bool suspended = false;  // "delivery temporarily suspended: ..." (a cached earlier failure)
};

// Understands "host H[ip] said: REPLY (in reply to X command)", "host H[ip] refused to talk to
// me: REPLY", "connect to H[ip]:port: why", "lost connection with H[ip] while ...",
// "conversation with H[ip] timed out while ...", each optionally after "delivery temporarily
// suspended: ". Anything else is Postfix's (or a local transport's) own text and is kept whole.
ReasonParts AnalyzeReason(std::string_view reason);

// The host of "relay=H[ip]:port" ("" for relay=none, local, virtual and other transports).
std::string_view RelayHost(std::string_view relay);

// Cache key of a reply: provider, dsn, action and the reason text with per-message noise
// masked: tokens holding an address ('@'), a host[ip] pair, a long id or a time stamp (>= 16
// characters with >= 4 digits), or a number of >= 6 digits without letters become one placeholder
// byte. Two replies that differ only there classify the same: rules never key on such tokens.
void BuildReplyKey(std::string_view provider, std::string_view dsn, std::string_view action,
                   std::string_view reason, std::string* key);

// What the RuleSet decided for one reply, minus the per-recipient fields.
struct CachedClass {
  Category category = Category::kUndetermined;
  std::string status;
  std::string reply_code;
  std::string stage;
  std::string provider;
  std::string provider_code;
  std::string rule;
};

// A 128-bit hash of a cache key. Keys are not stored: with 128 bits and a per-process random
// seed, two different keys of one log colliding is not a practical concern, and comparing hashes
// instead of strings keeps a lookup to one pass over the key.
struct KeyHash {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const KeyHash& o) const { return lo == o.lo && hi == o.hi; }
};
KeyHash HashKey(std::string_view key, const KeyHash& seed);
// The same hash over several parts, as if they were joined with a separator byte.
KeyHash HashParts(std::initializer_list<std::string_view> parts, const KeyHash& seed);

// A bounded 2-way set-associative map from key hash to a non-zero 32-bit value (an index into a
// table the caller keeps): a lookup reads one 64-byte set, so it costs at most one cache miss
// and two hash compares; an insert replaces the less recently used entry of its set. Memory is
// fixed by the number of sets.
class BoundedIndexCache {
 public:
  explicit BoundedIndexCache(size_t sets) : sets_(RoundUpPow2(sets)) {}

  // The value stored for the key with this hash, or 0.
  uint32_t Find(const KeyHash& h) {
    Set& s = sets_[Index(h)];
    for (int w = 0; w < 2; ++w) {
      if (s.value[w] != 0 && s.hash[w] == h) {
        s.mru = static_cast<uint8_t>(w);
        return s.value[w];
      }
    }
    return 0;
  }
  // Stores `value` (not 0) for the key with this hash, evicting if needed.
  void Insert(const KeyHash& h, uint32_t value) {
    Set& s = sets_[Index(h)];
    int w = s.value[0] == 0 ? 0 : s.value[1] == 0 ? 1 : 1 - s.mru;
    s.hash[w] = h;
    s.value[w] = value;
    s.mru = static_cast<uint8_t>(w);
  }
  void Clear() {
    for (Set& s : sets_) s = Set{};
  }

 private:
  struct alignas(64) Set {
    KeyHash hash[2];
    uint32_t value[2] = {0, 0};  // 0 = empty way
    uint8_t mru = 0;             // the way used last
  };
  static size_t RoundUpPow2(size_t n) {
    size_t p = 1;
    while (p < n) p <<= 1;
    return p;
  }
  size_t Index(const KeyHash& h) const { return h.lo & (sets_.size() - 1); }
  std::vector<Set> sets_;
};

}  // namespace bounced::log_internal
