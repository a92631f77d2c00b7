// log_bytes.h: internals of the log parser (log_line.cc, log_parser.cc, log_reply.cc): byte
// compares against string literals and unchecked substrings, written so that GCC inlines them.
// Why: on the per-line path, `memcmp(p, "literal", N)` became a libc call per compare (1.6
// million calls on a 1M-line log) and std::string_view::substr an out-of-line call with a range
// check; these are a few loads and compares instead. Pure code, no I/O, not a public contract.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace bounced::log_internal {

inline uint64_t LoadU64(const char* p) {
  uint64_t w;
  memcpy(&w, p, 8);
  return w;
}
inline uint32_t LoadU32(const char* p) {
  uint32_t w;
  memcpy(&w, p, 4);
  return w;
}
inline uint16_t LoadU16(const char* p) {
  uint16_t w;
  memcpy(&w, p, 2);
  return w;
}

// memcmp(a, b, N) == 0 for a compile-time N, as overlapping word loads.
template <size_t N>
inline bool SameBytes(const char* a, const char* b) {
  if constexpr (N == 0) {
    return true;
  } else if constexpr (N >= 8) {
    uint64_t diff = 0;
    size_t i = 0;
    for (; i + 8 <= N; i += 8) diff |= LoadU64(a + i) ^ LoadU64(b + i);
    if (i < N) diff |= LoadU64(a + N - 8) ^ LoadU64(b + N - 8);
    return diff == 0;
  } else if constexpr (N >= 4) {
    return ((LoadU32(a) ^ LoadU32(b)) | (LoadU32(a + N - 4) ^ LoadU32(b + N - 4))) == 0;
  } else if constexpr (N >= 2) {
    return ((LoadU16(a) ^ LoadU16(b)) | (LoadU16(a + N - 2) ^ LoadU16(b + N - 2))) == 0;
  } else {
    return a[0] == b[0];
  }
}

// s == the literal.
template <size_t N>
inline bool Is(std::string_view s, const char (&literal)[N]) {
  return s.size() == N - 1 && SameBytes<N - 1>(s.data(), literal);
}

// s starts with the literal.
template <size_t N>
inline bool StartsWith(std::string_view s, const char (&literal)[N]) {
  return s.size() >= N - 1 && SameBytes<N - 1>(s.data(), literal);
}

// s.substr(pos, n) for pos <= s.size() (the caller's guarantee), without the range check.
inline std::string_view Sub(std::string_view s, size_t pos, size_t n = std::string_view::npos) {
  size_t room = s.size() - pos;
  return std::string_view(s.data() + pos, n < room ? n : room);
}

}  // namespace bounced::log_internal
