// log_reply.h: internals of the log parser (log_parser.h) for the reply text of a delivery
// line: splitting Postfix's explanation into remote host, remote reply and SMTP stage, building
// the classification cache key, its 128-bit hash, and the bounded caches themselves. Pure code,
// no I/O. Not a
// public contract: only log_parser.cc, its tests and its fuzz target use it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "classifier/log_bytes.h"
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
  uint32_t provider_id = 0;  // `provider`, interned by the caller
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
// 128-bit hash over 16-byte blocks, two independent lanes, each a 64x64->128-bit multiply
// folded by xor per block (the "mum" step of wyhash): about half the instructions and half the
// dependency chain of an 8-byte-word hash, which mattered because every failed delivery's reply
// text is hashed. Both lanes are keyed by the per-process random seed, so a block that zeroes a
// product cannot be chosen from outside. Inline: it runs for every delivery line.
class Hasher {
 public:
  explicit Hasher(const KeyHash& seed)
      : a_(seed.lo),
        b_(seed.hi),
        ka_(seed.hi ^ 0xA0761D6478BD642Full),
        kb_(seed.lo ^ 0xE7037ED1A0B428DBull) {}
  void Add(std::string_view s) {
    const char* p = s.data();
    size_t n = s.size();
    while (n >= 16) {
      Block(LoadU64(p), LoadU64(p + 8));
      p += 16;
      n -= 16;
    }
    // The last 0..15 bytes, loaded so that, for a given n, different bytes give different words;
    // n is added after the multiply, so parts of different lengths cannot be lined up to collide.
    uint64_t t0 = 0, t1 = 0;
    if (n >= 8) {
      t0 = LoadU64(p);
      t1 = LoadU64(p + n - 8);
    } else if (n >= 4) {
      t0 = LoadU32(p) | (static_cast<uint64_t>(LoadU32(p + n - 4)) << 32);
    } else if (n > 0) {
      t0 = static_cast<uint8_t>(p[0]) |
           (static_cast<uint64_t>(static_cast<uint8_t>(p[n / 2])) << 8) |
           (static_cast<uint64_t>(static_cast<uint8_t>(p[n - 1])) << 16);
    }
    Block(t0, t1);
    a_ += n + 1;
    b_ += n + 1;
  }
  KeyHash Finish() const {
    uint64_t a = a_ ^ ((b_ << 17) | (b_ >> 47));
    a *= 0xFF51AFD7ED558CCDull;
    a ^= a >> 33;
    uint64_t b = b_ ^ a;
    b *= 0xC4CEB9FE1A85EC53ull;
    b ^= b >> 33;
    return KeyHash{a, b};
  }

 private:
  static uint64_t Mum(uint64_t x, uint64_t y) {
    unsigned __int128 r = static_cast<unsigned __int128>(x) * y;
    return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
  }
  void Block(uint64_t w0, uint64_t w1) {
    a_ = Mum(w0 ^ a_, w1 ^ ka_);
    b_ = Mum(w0 ^ kb_, w1 ^ b_);
  }
  uint64_t a_;
  uint64_t b_;
  uint64_t ka_;
  uint64_t kb_;
};

// The hash of a whole key.
inline KeyHash HashKey(std::string_view key, const KeyHash& seed) {
  Hasher h(seed);
  h.Add(key);
  return h.Finish();
}
// The same hash over several parts (each part's length is mixed in after it).
inline KeyHash HashParts(std::initializer_list<std::string_view> parts, const KeyHash& seed) {
  Hasher h(seed);
  for (std::string_view p : parts) h.Add(p);
  return h.Finish();
}

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
