// byte_scan.h: where the next byte of a kind is, sixteen bytes at a time (internal to the
// classifier; pure code). Used by the scans that skip prose to the few bytes that can start
// what they look for: reply-code digits, HTML tags, the digits of a status.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace bounced {

// Eight bytes as one little-endian word, whatever the machine's order (word-at-a-time compares
// of names and values).
inline uint64_t LoadWord(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

// The first position in [from, limit) of `p` holding one of the bytes C..., or `limit`. The
// bytes p[0, limit) must be readable: a tail shorter than a block is read as the block that
// ends at `limit` (callers pass the start of their text).
template <char... C>
inline size_t FindAnyOf(const char* p, size_t from, size_t limit) {
#if defined(__SSE2__)
  auto hits = [p](size_t at) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
    __m128i hit = _mm_setzero_si128();
    ((hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8(C)))), ...);
    return static_cast<unsigned>(_mm_movemask_epi8(hit));
  };
  for (; from + 32 <= limit; from += 32) {
    const unsigned mask = hits(from) | hits(from + 16) << 16;
    if (mask != 0) return from + static_cast<size_t>(__builtin_ctz(mask));
  }
  if (from + 16 <= limit) {
    const unsigned mask = hits(from);
    if (mask != 0) return from + static_cast<size_t>(__builtin_ctz(mask));
    from += 16;
  }
  if (from < limit && limit >= 16) {
    // The last bytes, as the block ending at `limit`, its bytes before `from` masked off.
    const size_t base = limit - 16;
    const unsigned mask = hits(base) & (~0u << (from - base));
    return mask != 0 ? base + static_cast<size_t>(__builtin_ctz(mask)) : limit;
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
// Whether the CPU has AVX2 (the scans that have a 32-byte step check it once per process).
inline bool HaveAvx2() {
  static const bool have = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return have;
}
#endif

}  // namespace bounced
