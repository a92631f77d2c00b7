// byte_scan.h: where the next byte of a kind is, sixteen bytes at a time (internal to the
// classifier; pure code). Used by the scans that skip prose to the few bytes that can start
// what they look for: reply-code digits, HTML tags, the digits of a status; and where a string
// occurs, for the searches through a whole message or body.
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace bounced {

// The first position in [from, limit) of `p` holding one of the bytes C..., or `limit`.
template <char... C>
inline size_t FindAnyOf(const char* p, size_t from, size_t limit) {
#if defined(__SSE2__)
  for (; from + 16 <= limit; from += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + from));
    __m128i hit = _mm_setzero_si128();
    ((hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8(C)))), ...);
    const unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(hit));
    if (mask != 0) return from + static_cast<size_t>(__builtin_ctz(mask));
  }
#endif
  for (; from < limit; ++from) {
    const char c = p[from];
    if (((c == C) || ...)) return from;
  }
  return limit;
}

// The first position in [from, limit) of `p` holding a byte from lo to hi (both ASCII, lo <=
// hi), or `limit`.
inline size_t FindInRange(const char* p, size_t from, size_t limit, char lo, char hi) {
#if defined(__SSE2__)
  const __m128i below = _mm_set1_epi8(static_cast<char>(lo - 1));
  const __m128i above = _mm_set1_epi8(static_cast<char>(hi + 1));
  for (; from + 16 <= limit; from += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + from));
    const unsigned mask = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_and_si128(_mm_cmpgt_epi8(v, below), _mm_cmplt_epi8(v, above))));
    if (mask != 0) return from + static_cast<size_t>(__builtin_ctz(mask));
  }
#endif
  for (; from < limit; ++from) {
    if (static_cast<unsigned char>(p[from] - lo) <= static_cast<unsigned char>(hi - lo)) {
      return from;
    }
  }
  return limit;
}

#if defined(__x86_64__) && defined(__GNUC__)
// Bit k set: p[k] is the needle's first byte and p[k + m - 1] its last (k < 32).
__attribute__((target("avx2"))) inline __m256i FindStringHitsAvx2(const char* p, size_t m,
                                                                  __m256i first, __m256i last) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + m - 1));
  return _mm256_and_si256(_mm256_cmpeq_epi8(a, first), _mm256_cmpeq_epi8(b, last));
}

// The first candidate position in `mask` (bit k: at + k) where the needle q (m bytes) occurs,
// or npos.
inline size_t FindStringMatch(const char* p, const char* q, size_t m, size_t at, uint64_t mask) {
  for (; mask != 0; mask &= mask - 1) {
    const size_t k = at + static_cast<size_t>(__builtin_ctzll(mask));
    if (std::memcmp(p + k + 1, q + 1, m - 2) == 0) return k;
  }
  return std::string_view::npos;
}

// FindString's candidate test, 64 positions a step (two 32-byte halves, one branch for both:
// most steps of a long body hold no candidate), then 32: from `*i` while the loads stay inside
// the n bytes at p; returns the match or npos, and in *i where the scan stopped.
__attribute__((target("avx2"))) inline size_t FindStringAvx2(const char* p, size_t n, const char* q,
                                                             size_t m, size_t* i) {
  const __m256i first = _mm256_set1_epi8(q[0]);
  const __m256i last = _mm256_set1_epi8(q[m - 1]);
  size_t j = *i;
  // The loads for j + 32 read up to p[j + m + 62].
  for (; j + m + 63 <= n; j += 64) {
    const __m256i low = FindStringHitsAvx2(p + j, m, first, last);
    const __m256i high = FindStringHitsAvx2(p + j + 32, m, first, last);
    const __m256i any = _mm256_or_si256(low, high);
    if (_mm256_testz_si256(any, any)) continue;
    const uint64_t mask = static_cast<uint32_t>(_mm256_movemask_epi8(low)) |
                          static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(high)))
                              << 32;
    if (size_t k = FindStringMatch(p, q, m, j, mask); k != std::string_view::npos) return k;
  }
  for (; j + m + 31 <= n; j += 32) {
    const uint64_t mask =
        static_cast<uint32_t>(_mm256_movemask_epi8(FindStringHitsAvx2(p + j, m, first, last)));
    if (size_t k = FindStringMatch(p, q, m, j, mask); k != std::string_view::npos) return k;
  }
  *i = j;
  return std::string_view::npos;
}

inline bool HaveAvx2() {
  static const bool have = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return have;
}
#endif

// Where `needle` first occurs in `text` at or after `from`, or npos: std::string_view::find's
// answer. That find stops at every occurrence of the needle's first byte (every line of a
// message, for "\nFrom "); here a position is compared in full only when it holds the needle's
// first byte and, needle.size() - 1 bytes on, its last, tested for 32 (AVX2) or 16 (SSE2)
// positions at a time. Reads no byte outside `text`.
inline size_t FindString(std::string_view text, std::string_view needle, size_t from = 0) {
  const size_t n = text.size(), m = needle.size();
  if (from > n || m > n - from) return std::string_view::npos;
  if (m == 0) return from;
  const char* p = text.data();
  const char* q = needle.data();
  size_t i = from;
#if defined(__SSE2__)
  if (m >= 2) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (HaveAvx2()) {
      if (size_t k = FindStringAvx2(p, n, q, m, &i); k != std::string_view::npos) return k;
    }
#endif
    const __m128i first = _mm_set1_epi8(q[0]);
    const __m128i last = _mm_set1_epi8(q[m - 1]);
    // The loads at i and i + m - 1 read up to p[i + m + 14].
    for (; i + m + 15 <= n; i += 16) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + m - 1));
      unsigned mask = static_cast<unsigned>(
          _mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last))));
      for (; mask != 0; mask &= mask - 1) {
        const size_t k = i + static_cast<size_t>(__builtin_ctz(mask));
        if (std::memcmp(p + k + 1, q + 1, m - 2) == 0) return k;
      }
    }
  }
#endif
  for (; i + m <= n; ++i) {
    if (p[i] == q[0] && std::memcmp(p + i + 1, q + 1, m - 1) == 0) return i;
  }
  return std::string_view::npos;
}

}  // namespace bounced
