// text.cc: see text.h. Hand-written scanners rather than regular expressions: these run for
// every bounce line of multi-million-line logs, and each one is a single linear pass.
#include "classifier/text.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#include <tmmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "classifier/byte_scan.h"

namespace bounced {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAlnum(char c) { return IsDigit(c) || IsAlpha(c); }

// Number of consecutive digits at s[i...], at most `max` + 1 (so callers can see "too long").
size_t DigitRun(std::string_view s, size_t i, size_t max) {
  size_t n = 0;
  while (i + n < s.size() && IsDigit(s[i + n]) && n <= max) ++n;
  return n;
}

// True when s[i..i+3) is a reply code shape: [245][0-5][0-9] not followed by another digit.
bool IsReplyCodeAt(std::string_view s, size_t i) {
  if (i + 3 > s.size()) return false;
  char a = s[i], b = s[i + 1], c = s[i + 2];
  if (a != '2' && a != '4' && a != '5') return false;
  if (b < '0' || b > '5' || !IsDigit(c)) return false;
  if (i + 3 == s.size()) return true;
  char n = s[i + 3];
  return n == ' ' || n == '-' || n == '\t' || n == '\r' || n == '\n';
}

// When s[i...] is an enhanced status code, its length; else 0. See ExtractEnhancedStatus.
size_t EnhancedStatusAt(std::string_view s, size_t i) {
  if (i + 5 > s.size()) return 0;
  char cls = s[i];
  if (cls != '2' && cls != '4' && cls != '5') return 0;
  if (i > 0) {
    char p = s[i - 1];
    if (IsAlnum(p) || p == '.' || p == '_') return 0;
  }
  if (s[i + 1] != '.') return 0;
  if (s[i + 2] < '0' || s[i + 2] > '7') return 0;
  if (s[i + 3] != '.') return 0;
  size_t d = DigitRun(s, i + 4, 3);
  if (d == 0 || d > 3) return 0;
  size_t end = i + 4 + d;
  if (end < s.size()) {
    char n = s[end];
    if (IsAlpha(n) || n == '_') return 0;
    // A further ".digit" makes it an IP address or a version number ("2.4.1-beta" too).
    if (n == '.' && end + 1 < s.size() && IsDigit(s[end + 1])) return 0;
    if (n == '-' && end + 1 < s.size() && IsAlnum(s[end + 1])) return 0;
  }
  return end - i;
}

// True when the text just before position i (skipping one optional '#', spaces and one '-')
// is a reply code: "550 5.1.1", "550-5.1.1", "550 #5.1.1".
bool FollowsReplyCode(std::string_view s, size_t i) {
  size_t j = i;
  if (j > 0 && s[j - 1] == '#') --j;
  size_t spaces = 0;
  while (j > 0 && (s[j - 1] == ' ' || s[j - 1] == '-') && spaces < 3) {
    --j;
    ++spaces;
  }
  if (spaces == 0 || j < 3) return false;
  if (!IsReplyCodeAt(s, j - 3)) return false;
  return j - 3 == 0 || !IsAlnum(s[j - 4]);
}

// The first position in [from, limit) whose byte is '2', '4' or '5' (the classes a reply code
// and an enhanced status start with), or `limit`; sixteen positions at a time, since prose has
// few of them. `limit` is at most s.size().
size_t NextClassDigit(std::string_view s, size_t from, size_t limit) {
  return FindAnyOf<'2', '4', '5'>(s.data(), from, limit);
}

// Appends one code point as UTF-8.
void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Decodes one UTF-8 sequence at s[i...]. Returns its length and sets cp, or returns 0 when
// the bytes there are not a valid, shortest-form, non-surrogate sequence.
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t& cp) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t len;
  uint32_t min;
  if (c < 0x80) {
    cp = c;
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    len = 2, min = 0x80, cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, min = 0x800, cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, min = 0x10000, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

struct StagePhrase {
  std::string_view phrase;
  std::string_view stage;
};

// Postfix's "(in reply to X)" and "while X" and Exim's "after X". Longer phrases that contain
// shorter ones come first ("end of DATA" before "DATA").
constexpr std::array<StagePhrase, 36> kStagePhrases = {{
    {"in reply to end of data command", "eom"},
    {"in reply to bdat command", "eom"},
    {"in reply to data command", "data"},
    {"in reply to rcpt to command", "rcpt"},
    {"in reply to mail from command", "mail"},
    {"in reply to helo command", "helo"},
    {"in reply to ehlo command", "helo"},
    {"in reply to lhlo command", "helo"},
    {"in reply to starttls command", "helo"},
    {"in reply to auth command", "helo"},
    {"in reply to xforward command", "helo"},
    {"in reply to initial greeting", "connect"},
    {"refused to talk to me", "connect"},
    {"while sending end of data", "eom"},
    {"while sending message body", "data"},
    {"while sending data command", "data"},
    {"while sending rcpt to", "rcpt"},
    {"while sending mail from", "mail"},
    {"while performing the ehlo handshake", "helo"},
    {"while performing the helo handshake", "helo"},
    {"while performing the lhlo handshake", "helo"},
    {"while receiving the initial server greeting", "connect"},
    {"after end of data", "eom"},
    {"after pipelined data", "data"},
    {"after data", "data"},
    {"after pipelined rcpt to", "rcpt"},
    {"after rcpt to", "rcpt"},
    {"after pipelined mail from", "mail"},
    {"after mail from", "mail"},
    {"after ehlo", "helo"},
    {"after helo", "helo"},
    {"after lhlo", "helo"},
    {"after starttls", "helo"},
    {"after initial connection", "connect"},
    {"smtp:rcpt", "rcpt"},
    {"after connection", "connect"},
}};

// Generic phrasing, tried only when nothing more specific is found.
constexpr std::array<StagePhrase, 16> kGenericStagePhrases = {{
    {"end of data", "eom"},
    {"end-of-data", "eom"},
    {"end of message", "eom"},
    {"rcpt to", "rcpt"},
    {"rcpt command", "rcpt"},
    {"mail from:", "mail"},
    {"mail from command", "mail"},
    {"data command", "data"},
    {"ehlo command", "helo"},
    {"helo command", "helo"},
    {"initial greeting", "connect"},
    {"server greeting", "connect"},
    {"connect to ", "connect"},
    {"connection refused", "connect"},
    {"while connecting", "connect"},
    {"unable to connect", "connect"},
}};

// Stage of the last command in a Sendmail-style transcript (">>> RCPT To:<a@b>"), or "".
std::string_view StageFromTranscript(std::string_view text) {
  size_t last = std::string_view::npos;
  for (size_t p = text.find(">>> "); p != std::string_view::npos; p = text.find(">>> ", p + 4)) {
    last = p;
  }
  if (last == std::string_view::npos) return {};
  std::string_view cmd = text.substr(last + 4);
  if (StartsWithNoCase(cmd, "RCPT")) return "rcpt";
  if (StartsWithNoCase(cmd, "MAIL")) return "mail";
  if (StartsWithNoCase(cmd, "DATA")) return "data";
  if (StartsWithNoCase(cmd, "BDAT")) return "eom";
  if (StartsWithNoCase(cmd, "EHLO") || StartsWithNoCase(cmd, "HELO") ||
      StartsWithNoCase(cmd, "LHLO") || StartsWithNoCase(cmd, "STARTTLS")) {
    return "helo";
  }
  if (!cmd.empty() && cmd[0] == '.' && (cmd.size() == 1 || IsSpace(cmd[1]))) return "eom";
  return {};
}

// Whether the needle.size() bytes at h are `needle`, exactly or (kFold) ignoring ASCII case.
template <bool kFold>
inline bool NeedleAt(const char* h, std::string_view needle) {
  if constexpr (!kFold) {
    return std::memcmp(h, needle.data(), needle.size()) == 0;
  } else {
    for (size_t k = 0; k < needle.size(); ++k) {
      if (AsciiLower(h[k]) != AsciiLower(needle[k])) return false;
    }
    return true;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// FindFiltered's filter for the 32 starts at h: bit k set when h[k] and h[k + n - 1] are the
// needle's first and last bytes (f1, f2: 0x20 where a letter is folded).
__attribute__((target("avx2"))) inline __m256i FilterHitsAvx2(const char* h, size_t n, __m256i v1,
                                                              __m256i v2, __m256i f1, __m256i f2) {
  __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h));
  __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + n - 1));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_or_si256(a, f1), v1),
                          _mm256_cmpeq_epi8(_mm256_or_si256(b, f2), v2));
}

// FindFiltered's filter, 64 starts a step (one branch for both halves), then 32: from *i while
// a step's loads stay inside `hay`. Returns the first match, or npos with *i where the SSE2 loop
// goes on.
template <bool kFold>
__attribute__((target("avx2"))) size_t FindFilteredAvx2(std::string_view hay,
                                                        std::string_view needle, size_t* i) {
  const char* h = hay.data();
  const size_t n = needle.size();
  const char first = kFold ? AsciiLower(needle[0]) : needle[0];
  const char last = kFold ? AsciiLower(needle[n - 1]) : needle[n - 1];
  const __m256i v1 = _mm256_set1_epi8(first), v2 = _mm256_set1_epi8(last);
  const __m256i f1 = _mm256_set1_epi8(kFold && IsAlpha(first) ? 0x20 : 0);
  const __m256i f2 = _mm256_set1_epi8(kFold && IsAlpha(last) ? 0x20 : 0);
  auto match = [&](size_t at, uint64_t mask) {
    for (; mask != 0; mask &= mask - 1) {
      size_t k = at + static_cast<size_t>(__builtin_ctzll(mask));
      if (NeedleAt<kFold>(h + k, needle)) return k;
    }
    return std::string_view::npos;
  };
  size_t j = *i;
  for (; j + n - 1 + 64 <= hay.size(); j += 64) {
    __m256i low = FilterHitsAvx2(h + j, n, v1, v2, f1, f2);
    __m256i high = FilterHitsAvx2(h + j + 32, n, v1, v2, f1, f2);
    __m256i any = _mm256_or_si256(low, high);
    if (_mm256_testz_si256(any, any)) continue;
    uint64_t mask = static_cast<uint32_t>(_mm256_movemask_epi8(low)) |
                    static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(high))) << 32;
    if (size_t at = match(j, mask); at != std::string_view::npos) return at;
  }
  for (; j + n - 1 + 32 <= hay.size(); j += 32) {
    uint64_t mask =
        static_cast<uint32_t>(_mm256_movemask_epi8(FilterHitsAvx2(h + j, n, v1, v2, f1, f2)));
    if (size_t at = match(j, mask); at != std::string_view::npos) return at;
  }
  *i = j;
  return std::string_view::npos;
}
#endif

// Where `needle` occurs in `hay` at or after `from`, exactly or (kFold) ignoring ASCII case.
// The scanners look for dozens of short phrases per message, many starting with common letters,
// so a first-byte memchr stops at most words and memmem's set-up costs more than the text:
// sixteen starts are checked at a time on the needle's first and last bytes (OR-ing 0x20 folds
// exactly the upper-case letters onto the lower-case ones, so it is applied only to letters),
// then in full (thirty-two at a time where the CPU has AVX2); a scalar loop does the tail and
// non-SSE2 builds.
template <bool kFold>
size_t FindFiltered(std::string_view hay, std::string_view needle, size_t from = 0) {
  size_t n = needle.size();
  if (n == 0) return from <= hay.size() ? from : std::string_view::npos;
  if (hay.size() < n || from > hay.size() - n) return std::string_view::npos;
  const char* h = hay.data();
  auto fold = [](char c) { return kFold ? AsciiLower(c) : c; };
  auto matches_at = [&](size_t at) { return NeedleAt<kFold>(h + at, needle); };
  size_t i = from;
#if defined(__x86_64__) && defined(__GNUC__)
  if (HaveAvx2()) {
    if (size_t at = FindFilteredAvx2<kFold>(hay, needle, &i); at != std::string_view::npos)
      return at;
  }
#endif
#if defined(__SSE2__)
  char first = fold(needle[0]), last = fold(needle[n - 1]);
  const __m128i v1 = _mm_set1_epi8(first), v2 = _mm_set1_epi8(last);
  const __m128i f1 = _mm_set1_epi8(kFold && IsAlpha(first) ? 0x20 : 0);
  const __m128i f2 = _mm_set1_epi8(kFold && IsAlpha(last) ? 0x20 : 0);
  auto block_mask = [&](size_t at) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + at));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + at + n - 1));
    __m128i hit = _mm_and_si128(_mm_cmpeq_epi8(_mm_or_si128(a, f1), v1),
                                _mm_cmpeq_epi8(_mm_or_si128(b, f2), v2));
    return static_cast<unsigned>(_mm_movemask_epi8(hit));
  };
  for (; i + n - 1 + 16 <= hay.size(); i += 16) {
    for (unsigned mask = block_mask(i); mask != 0; mask &= mask - 1) {
      size_t at = i + static_cast<size_t>(__builtin_ctz(mask));
      if (matches_at(at)) return at;
    }
  }
  // The last positions (up to size - n) as one more block ending there; it overlaps positions
  // already checked, which are masked off so that the first match is still the one returned.
  if (i + n <= hay.size() && hay.size() >= n - 1 + 16) {
    size_t last = hay.size() - (n - 1) - 16;  // i - last is 1 to 15 here
    for (unsigned mask = block_mask(last) & (~0u << (i - last)); mask != 0; mask &= mask - 1) {
      size_t at = last + static_cast<size_t>(__builtin_ctz(mask));
      if (matches_at(at)) return at;
    }
    return std::string_view::npos;
  }
#endif
  for (; i + n <= hay.size(); ++i) {
    if (fold(h[i]) == fold(needle[0]) && matches_at(i)) return i;
  }
  return std::string_view::npos;
}

}  // namespace

namespace {

// AsciiLower on each of eight bytes at once: a byte gets 0x20 added when it is 'A'..'Z' (its
// low seven bits are >= 'A' and <= 'Z', and its high bit is clear). No sum carries out of its
// byte (seven bits plus at most 0x3F).
uint64_t AsciiLower8(uint64_t x) {
  constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7Full, kHigh = 0x8080808080808080ull;
  uint64_t h = x & kLow7;
  uint64_t at_least_a = h + 0x3F3F3F3F3F3F3F3Full;  // high bit set when h >= 'A' (0x41)
  uint64_t above_z = h + 0x2525252525252525ull;     // high bit set when h > 'Z' (0x5A)
  uint64_t upper = at_least_a & ~above_z & ~x & kHigh;
  return x | (upper >> 2);
}

// AsciiLower on p[0, n) in place, eight bytes at a time; a last partial word is done as the
// word ending at p + n (lowering a byte twice changes nothing).
void LowerInPlace(char* p, size_t n) {
  auto lower_word = [p](size_t at) {
    uint64_t x = 0;
    std::memcpy(&x, p + at, 8);
    x = AsciiLower8(x);
    std::memcpy(p + at, &x, 8);
  };
  if (n < 8) {
    for (size_t i = 0; i < n; ++i) p[i] = AsciiLower(p[i]);
    return;
  }
  size_t i = 0;
  for (; i + 8 <= n; i += 8) lower_word(i);
  if (i < n) lower_word(n - 8);
}

// The small letter of a two-byte code point (U+0080-U+07FF), or the code point itself.
uint32_t LowerTwoByteLetter(uint32_t c) {
  if (c >= 0xC0 && c <= 0xDE) return c == 0xD7 ? c : c + 0x20;  // Latin-1, not ×
  if (c >= 0x100 && c <= 0x17F) {                               // Latin Extended-A
    if (c == 0x130 || c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17F) return c;
    if (c == 0x178) return 0xFF;  // Ÿ
    const bool odd_capitals = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    return (c % 2 == 1) == odd_capitals ? c + 1 : c;
  }
  if (c >= 0x391 && c <= 0x3AB) return c == 0x3A2 ? c : c + 0x20;  // Greek
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 0x25;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 0x3F;
  if (c >= 0x400 && c <= 0x40F) return c + 0x50;  // Cyrillic: Ѐ-Џ
  if (c >= 0x410 && c <= 0x42F) return c + 0x20;  // А-Я
  if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x4FF)) {
    return c % 2 == 0 ? c + 1 : c;
  }
  if (c == 0x4C0) return 0x4CF;
  if (c >= 0x4C1 && c <= 0x4CE) return c % 2 == 1 ? c + 1 : c;
  return c;
}

}  // namespace

void LowerNonAsciiLetters(std::string& s) {
  auto* p = reinterpret_cast<unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i + 1 < n; ++i) {
    const unsigned char lead = p[i];
    // Only lead bytes C3-C5 (U+00C0-U+017F), CE-CF (Greek) and D0-D3 (Cyrillic) hold capitals.
    if (lead < 0xC3 || lead > 0xD3 || (p[i + 1] & 0xC0) != 0x80) continue;
    const uint32_t c = (uint32_t{lead & 0x1Fu} << 6) | (p[i + 1] & 0x3Fu);
    const uint32_t lower = LowerTwoByteLetter(c);
    if (lower != c) {
      p[i] = static_cast<unsigned char>(0xC0 | (lower >> 6));
      p[i + 1] = static_cast<unsigned char>(0x80 | (lower & 0x3F));
    }
    ++i;
  }
}

std::string AsciiLowerCopy(std::string_view s) {
  std::string out(s);
  LowerInPlace(out.data(), out.size());
  return out;
}

bool EqualsNoCaseSameSize(std::string_view a, std::string_view b) {
  size_t i = 0;
  for (; i + 8 <= a.size(); i += 8) {
    uint64_t x = 0;
    uint64_t y = 0;
    std::memcpy(&x, a.data() + i, 8);
    std::memcpy(&y, b.data() + i, 8);
    if (x != y && AsciiLower8(x) != AsciiLower8(y)) return false;
  }
  if (i < a.size() && a.size() >= 8) {
    // The last partial word as the word ending at the end (its first bytes compared again).
    uint64_t x = 0;
    uint64_t y = 0;
    std::memcpy(&x, a.data() + a.size() - 8, 8);
    std::memcpy(&y, b.data() + a.size() - 8, 8);
    return x == y || AsciiLower8(x) == AsciiLower8(y);
  }
  if (a.size() >= 4) {
    // Four to seven bytes (an encoding, a charset, a short word): as one word of the first
    // four and the last four bytes, which overlap.
    uint32_t a0, a1, b0, b1;
    std::memcpy(&a0, a.data(), 4);
    std::memcpy(&a1, a.data() + a.size() - 4, 4);
    std::memcpy(&b0, b.data(), 4);
    std::memcpy(&b1, b.data() + a.size() - 4, 4);
    uint64_t x = a0 | uint64_t{a1} << 32;
    uint64_t y = b0 | uint64_t{b1} << 32;
    return x == y || AsciiLower8(x) == AsciiLower8(y);
  }
  for (; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

size_t FindNoCase(std::string_view haystack, std::string_view needle, size_t from) {
  return FindFiltered<true>(haystack, needle, from);
}

size_t FindString(std::string_view haystack, std::string_view needle, size_t from) {
  return FindFiltered<false>(haystack, needle, from);
}

std::string FoldWhitespace(std::string_view s) {
  s = TrimSpace(s);
  std::string out;
  out.reserve(s.size());
  bool in_space = false;
  for (char c : s) {
    if (IsSpace(c)) {
      in_space = true;
      continue;
    }
    if (in_space) out.push_back(' ');
    in_space = false;
    out.push_back(c);
  }
  return out;
}

namespace {

// True when Sanitize(s, max_bytes) is s itself: printable ASCII and single spaces, no space at
// either end, within max_bytes. Most replies are; checking is cheaper than rebuilding them.
bool AlreadySanitized(std::string_view s, size_t max_bytes) {
  if (s.size() > max_bytes) return false;
  if (s.empty()) return true;
  if (s.front() == ' ' || s.back() == ' ') return false;
  const char* p = s.data();
  size_t n = s.size(), i = 0;
  bool prev_space = false;
#if defined(__SSE2__)
  // Sixteen bytes at a time: every byte in 0x20..0x7E (signed compares: bytes >= 0x80 are
  // negative), and no space followed by a space (the mask shifted by one, plus the carry of
  // the previous block's last byte).
  const __m128i lo = _mm_set1_epi8(0x1F), hi = _mm_set1_epi8(0x7F), sp = _mm_set1_epi8(' ');
  auto block_ok = [&](size_t at, bool space_before) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
    __m128i ok = _mm_and_si128(_mm_cmpgt_epi8(v, lo), _mm_cmplt_epi8(v, hi));
    if (_mm_movemask_epi8(ok) != 0xFFFF) return false;
    unsigned spaces = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, sp)));
    if ((spaces & ((spaces << 1) | (space_before ? 1u : 0u))) != 0) return false;
    prev_space = (spaces & 0x8000u) != 0;
    return true;
  };
  for (; i + 16 <= n; i += 16) {
    if (!block_ok(i, prev_space)) return false;
  }
  // The rest as the block ending at the end: bytes checked twice pass twice.
  if (i < n && n >= 16) return block_ok(n - 16, n > 16 && p[n - 17] == ' ');
#endif
  for (; i < n; ++i) {
    char c = p[i];
    if (c < ' ' || c > '~') return false;
    if (c == ' ' && prev_space) return false;
    prev_space = c == ' ';
  }
  return true;
}

}  // namespace

std::string MaskControls(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = '?';
  }
  return out;
}

std::string Sanitize(std::string_view s, size_t max_bytes) {
  if (AlreadySanitized(s, max_bytes)) return std::string(s);
  std::string out;
  out.reserve(s.size() < max_bytes ? s.size() : max_bytes);
  bool pending_space = false;
  for (size_t i = 0; i < s.size();) {
    // Fast path: a run of printable ASCII other than space is copied as is.
    size_t run = i;
    while (run < s.size() && s[run] > ' ' && s[run] < 0x7F) ++run;
    if (run > i) {
      size_t n = run - i + (pending_space ? 1 : 0);
      if (out.size() + n > max_bytes) {
        size_t room = max_bytes - out.size();
        if (pending_space) {
          if (room < 2) break;  // never end on the separating space
          out.push_back(' ');
          --room;
        }
        out.append(s.substr(i, room));
        break;
      }
      if (pending_space) out.push_back(' ');
      pending_space = false;
      out.append(s.substr(i, run - i));
      i = run;
      continue;
    }
    uint32_t cp = 0;
    size_t len = DecodeUtf8(s, i, cp);
    if (len == 0) {
      cp = 0xFFFD;  // one replacement character per invalid byte
      len = 1;
    }
    i += len;
    if (cp == ' ' || cp == '\t' || cp == '\r' || cp == '\n' || cp == '\v' || cp == '\f') {
      pending_space = !out.empty();
      continue;
    }
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) continue;
    size_t need = (cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4) + (pending_space ? 1 : 0);
    if (out.size() + need > max_bytes) break;
    if (pending_space) out.push_back(' ');
    pending_space = false;
    AppendUtf8(out, cp);
  }
  return out;
}

bool HasEnhancedStatus(std::string_view text) {
  size_t limit = text.size() >= 5 ? text.size() - 4 : 0;  // positions i with i + 5 <= size
  for (size_t i = NextClassDigit(text, 0, limit); i < limit;
       i = NextClassDigit(text, i + 1, limit)) {
    if (EnhancedStatusAt(text, i) != 0) return true;
  }
  return false;
}

std::string ExtractEnhancedStatus(std::string_view text) {
  std::string_view first;
  size_t limit = text.size() >= 5 ? text.size() - 4 : 0;
  for (size_t i = NextClassDigit(text, 0, limit); i < limit;
       i = NextClassDigit(text, i + 1, limit)) {
    size_t len = EnhancedStatusAt(text, i);
    if (len == 0) continue;
    if (FollowsReplyCode(text, i)) return std::string(text.substr(i, len));
    if (first.empty()) first = text.substr(i, len);
  }
  return std::string(first);
}

namespace {

// Where ExtractReplyCode's code starts in `text`, or npos.
size_t ReplyCodePos(std::string_view text) {
  size_t start = 0;
  while (start < text.size() && (IsSpace(text[start]) || text[start] == '\'' ||
                                 text[start] == '"' || text[start] == '(')) {
    ++start;
  }
  if (IsReplyCodeAt(text, start)) return start;
  size_t limit = text.size() >= 3 ? text.size() - 2 : 0;  // positions i with i + 3 <= size
  for (size_t i = NextClassDigit(text, std::min(start + 1, limit), limit); i < limit;
       i = NextClassDigit(text, i + 1, limit)) {
    if (!IsReplyCodeAt(text, i)) continue;
    // Look back over spaces and tabs for what introduces the code.
    size_t j = i;
    while (j > 0 && (text[j - 1] == ' ' || text[j - 1] == '\t')) --j;
    if (j == 0) return i;
    char p = text[j - 1];
    bool ok = false;
    if (p == '\n' || p == '\r' || p == ';' || p == '\'' || p == '"') {
      ok = true;
    } else if (p == ':') {
      ok = j < 2 || !IsDigit(text[j - 2]);  // "said: 550", not a time such as "12:500"
    } else if (p == '<') {
      ok = j >= 3 && text.substr(j - 3, 3) == "<<<";
    } else if (p == '(') {
      ok = j == i;  // "(550 5.1.1 ...)"
    }
    if (ok) return i;
  }
  return std::string_view::npos;
}

}  // namespace

std::string ExtractReplyCode(std::string_view text) {
  size_t at = ReplyCodePos(text);
  return at == std::string_view::npos ? std::string() : std::string(text.substr(at, 3));
}

bool HasReplyCode(std::string_view text) { return ReplyCodePos(text) != std::string_view::npos; }

namespace {

// The part of `address` CanonicalAddress keeps: trimmed, without "rfc822;", the inside of
// <...> or without a stray trailing '>'. Its domain is not lower-cased yet.
std::string_view AddressPart(std::string_view address) {
  std::string_view a = TrimSpace(address);
  if (StartsWithNoCase(a, "rfc822;")) a = TrimSpace(a.substr(7));
  size_t lt = a.find('<');
  if (lt != std::string_view::npos) {
    size_t gt = a.find('>', lt + 1);
    a = a.substr(lt + 1, gt == std::string_view::npos ? std::string_view::npos : gt - lt - 1);
    a = TrimSpace(a);
  } else if (!a.empty() && a.back() == '>') {
    a.remove_suffix(1);
  }
  return a;
}

// The domain after the last '@' of an AddressPart without its trailing dots, or npos.
std::string_view DomainPart(std::string_view a, size_t* at) {
  *at = a.rfind('@');
  if (*at == std::string_view::npos) return {};
  std::string_view domain = a.substr(*at + 1);
  while (!domain.empty() && domain.back() == '.') domain.remove_suffix(1);
  return domain;
}

}  // namespace

std::string CanonicalAddress(std::string_view address) {
  std::string_view a = AddressPart(address);
  size_t at = 0;
  std::string_view domain = DomainPart(a, &at);
  if (at == std::string_view::npos) return std::string(a);
  // The local part, '@' and domain are one piece of `a`: copied at once, the domain then
  // lowered in place.
  std::string out(a.substr(0, at + 1 + domain.size()));
  LowerInPlace(out.data() + at + 1, domain.size());
  return out;
}

std::string DomainOf(std::string_view address) {
  // What CanonicalAddress(address) has after its last '@', without building the address.
  size_t at = 0;
  std::string_view domain = DomainPart(AddressPart(address), &at);
  std::string out(domain);
  LowerInPlace(out.data(), out.size());
  return out;
}

namespace {

// Every stage phrase, specific or generic, has one of these bytes at offsets 0, 2 and 3
// (lower case). A position can only start a phrase when its bytes match one of them; on bounce
// text about one position in a hundred does.
struct PhraseKey {
  char b0, b2, b3;
};
constexpr std::array<PhraseKey, 16> kPhraseKeys = {{
    {'i', ' ', 'r'},  // in reply to
    {'w', 'i', 'l'},  // while
    {'a', 't', 'e'},  // after
    {'r', 'f', 'u'},  // refused to talk to me
    {'s', 't', 'p'},  // smtp:rcpt
    {'e', 'd', ' '},  // end of data, end of message
    {'e', 'd', '-'},  // end-of-data
    {'r', 'p', 't'},  // rcpt to, rcpt command
    {'m', 'i', 'l'},  // mail from
    {'d', 't', 'a'},  // data command
    {'e', 'l', 'o'},  // ehlo command
    {'h', 'l', 'o'},  // helo command
    {'i', 'i', 't'},  // initial greeting
    {'s', 'r', 'v'},  // server greeting
    {'c', 'n', 'n'},  // connect to, connection refused
    {'u', 'a', 'b'},  // unable to connect
}};

constexpr bool KeysCoverPhrases() {
  auto covered = [](std::string_view p) {
    auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; };
    for (const PhraseKey& k : kPhraseKeys) {
      if (p.size() >= 4 && lower(p[0]) == k.b0 && lower(p[2]) == k.b2 && lower(p[3]) == k.b3)
        return true;
    }
    return false;
  };
  for (const StagePhrase& p : kStagePhrases) {
    if (!covered(p.phrase)) return false;
  }
  for (const StagePhrase& p : kGenericStagePhrases) {
    if (!covered(p.phrase)) return false;
  }
  return true;
}
static_assert(KeysCoverPhrases(), "every stage phrase needs its key in kPhraseKeys");

// Per byte value, the keys (one bit each) that have it at offset 0, 2 or 3 in either case.
struct KeyBits {
  std::array<uint16_t, 256> b0{}, b2{}, b3{};
};
constexpr KeyBits kKeyBits = [] {
  static_assert(kPhraseKeys.size() <= 16, "one bit per key in a uint16_t");
  KeyBits t;
  auto upper = [](char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c; };
  for (size_t k = 0; k < kPhraseKeys.size(); ++k) {
    auto bit = static_cast<uint16_t>(1u << k);
    for (char c : {kPhraseKeys[k].b0, upper(kPhraseKeys[k].b0)})
      t.b0[static_cast<uint8_t>(c)] |= bit;
    for (char c : {kPhraseKeys[k].b2, upper(kPhraseKeys[k].b2)})
      t.b2[static_cast<uint8_t>(c)] |= bit;
    for (char c : {kPhraseKeys[k].b3, upper(kPhraseKeys[k].b3)})
      t.b3[static_cast<uint8_t>(c)] |= bit;
  }
  return t;
}();

// The key of the phrases that could start at p[0..3], or -1. Keys differ, so at most one fits:
// three table loads instead of a comparison per key.
int KeyAt(const char* p) {
  unsigned bits = kKeyBits.b0[static_cast<uint8_t>(p[0])] &
                  kKeyBits.b2[static_cast<uint8_t>(p[2])] & kKeyBits.b3[static_cast<uint8_t>(p[3])];
  return bits == 0 ? -1 : __builtin_ctz(bits);
}

// Per key, the phrases that have it, each list in its table's order: two phrases that both
// occur at one position share their key, so checking only the key's phrases keeps "first in
// the table wins".
struct PhrasesByKey {
  std::array<std::vector<const StagePhrase*>, kPhraseKeys.size()> specific, generic;
};
const PhrasesByKey& PhrasesFor() {
  static const PhrasesByKey by_key = [] {
    PhrasesByKey b;
    for (const StagePhrase& p : kStagePhrases) b.specific[KeyAt(p.phrase.data())].push_back(&p);
    for (const StagePhrase& p : kGenericStagePhrases)
      b.generic[KeyAt(p.phrase.data())].push_back(&p);
    return b;
  }();
  return by_key;
}

// The first of `phrases` that occurs at `pos` of `text`, ignoring ASCII case, or nullptr.
const StagePhrase* PhraseAt(std::string_view text, size_t pos,
                            const std::vector<const StagePhrase*>& phrases) {
  std::string_view rest = text.substr(pos);
  for (const StagePhrase* p : phrases) {
    if (rest.size() >= p->phrase.size() &&
        EqualsNoCaseSameSize(rest.substr(0, p->phrase.size()), p->phrase))
      return p;
  }
  return nullptr;
}

#if defined(__SSE2__)
// Bit k set: a key may start at p + k (k < 16). Reads p[0..18]. Exact: sixteen keys of three
// byte comparisons each.
unsigned StageCandidatesSse2(const char* p) {
  // The keys' bytes, each repeated sixteen times, built once.
  struct alignas(16) KeyVectors {
    __m128i b0[kPhraseKeys.size()], b2[kPhraseKeys.size()], b3[kPhraseKeys.size()];
  };
  static const KeyVectors keys = [] {
    KeyVectors v;
    for (size_t k = 0; k < kPhraseKeys.size(); ++k) {
      v.b0[k] = _mm_set1_epi8(kPhraseKeys[k].b0);
      v.b2[k] = _mm_set1_epi8(kPhraseKeys[k].b2);
      v.b3[k] = _mm_set1_epi8(kPhraseKeys[k].b3);
    }
    return v;
  }();
  const __m128i fold = _mm_set1_epi8(0x20);
  __m128i a = _mm_or_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), fold);
  __m128i c = _mm_or_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2)), fold);
  __m128i d = _mm_or_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 3)), fold);
  __m128i hit = _mm_setzero_si128();
  for (size_t k = 0; k < kPhraseKeys.size(); ++k) {
    hit = _mm_or_si128(hit, _mm_and_si128(_mm_and_si128(_mm_cmpeq_epi8(a, keys.b0[k]),
                                                        _mm_cmpeq_epi8(c, keys.b2[k])),
                                          _mm_cmpeq_epi8(d, keys.b3[k])));
  }
  return static_cast<unsigned>(_mm_movemask_epi8(hit));
}

#if defined(__x86_64__) && defined(__GNUC__)
// The keys a byte may belong to at offsets 0, 2 and 3, by its low and by its high nibble, keys
// 0-7 and 8-15 in separate tables: a byte's entry in kKeyBits is within the AND of its two
// nibbles' entries. Looked up sixteen bytes at a time with PSHUFB (Hyperscan's "Teddy").
struct NibbleTables {
  alignas(16) uint8_t lo[3][2][16];
  alignas(16) uint8_t hi[3][2][16];
};
constexpr NibbleTables kNibbles = [] {
  NibbleTables t{};
  const std::array<uint16_t, 256>* bits[3] = {&kKeyBits.b0, &kKeyBits.b2, &kKeyBits.b3};
  for (int o = 0; o < 3; ++o) {
    for (int c = 0; c < 256; ++c) {
      uint16_t b = (*bits[o])[c];
      for (int half = 0; half < 2; ++half) {
        auto byte = static_cast<uint8_t>(b >> (8 * half));
        t.lo[o][half][c & 15] |= byte;
        t.hi[o][half][c >> 4] |= byte;
      }
    }
  }
  return t;
}();

// StageCandidatesSse2's superset (every key position, and a few more that KeyAt then turns
// down), in about a third of the instructions.
__attribute__((target("ssse3"))) unsigned StageCandidatesSsse3(const char* p) {
  const __m128i low4 = _mm_set1_epi8(0x0F);
  __m128i keys_low = _mm_set1_epi8(-1), keys_high = _mm_set1_epi8(-1);
  static constexpr int kOffsets[3] = {0, 2, 3};
  for (int o = 0; o < 3; ++o) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kOffsets[o]));
    __m128i lo = _mm_and_si128(v, low4);
    __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), low4);
    auto table = [](const uint8_t* t) {
      return _mm_load_si128(reinterpret_cast<const __m128i*>(t));
    };
    keys_low =
        _mm_and_si128(keys_low, _mm_and_si128(_mm_shuffle_epi8(table(kNibbles.lo[o][0]), lo),
                                              _mm_shuffle_epi8(table(kNibbles.hi[o][0]), hi)));
    keys_high =
        _mm_and_si128(keys_high, _mm_and_si128(_mm_shuffle_epi8(table(kNibbles.lo[o][1]), lo),
                                               _mm_shuffle_epi8(table(kNibbles.hi[o][1]), hi)));
  }
  __m128i none = _mm_cmpeq_epi8(_mm_or_si128(keys_low, keys_high), _mm_setzero_si128());
  return ~static_cast<unsigned>(_mm_movemask_epi8(none)) & 0xFFFFu;
}

// A 16-byte nibble table in both 128-bit lanes of a 256-bit vector (PSHUFB looks up within a
// lane).
__attribute__((target("avx2"))) inline __m256i NibbleTableAvx2(const uint8_t* t) {
  return _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
}

// StageCandidatesSsse3 for thirty-two positions (bit k: p + k, k < 32), reading p[0..34].
__attribute__((target("avx2"))) inline uint32_t StageCandidatesAvx2(const char* p) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256i keys_low = _mm256_set1_epi8(-1), keys_high = _mm256_set1_epi8(-1);
  static constexpr int kOffsets[3] = {0, 2, 3};
  for (int o = 0; o < 3; ++o) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kOffsets[o]));
    __m256i lo = _mm256_and_si256(v, low4);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
    keys_low = _mm256_and_si256(
        keys_low, _mm256_and_si256(_mm256_shuffle_epi8(NibbleTableAvx2(kNibbles.lo[o][0]), lo),
                                   _mm256_shuffle_epi8(NibbleTableAvx2(kNibbles.hi[o][0]), hi)));
    keys_high = _mm256_and_si256(
        keys_high, _mm256_and_si256(_mm256_shuffle_epi8(NibbleTableAvx2(kNibbles.lo[o][1]), lo),
                                    _mm256_shuffle_epi8(NibbleTableAvx2(kNibbles.hi[o][1]), hi)));
  }
  __m256i none = _mm256_cmpeq_epi8(_mm256_or_si256(keys_low, keys_high), _mm256_setzero_si256());
  return ~static_cast<uint32_t>(_mm256_movemask_epi8(none));
}

// StageFromText's scan thirty-two positions a step: from *i while a step's loads stay inside
// the n bytes at h. The first phrase `check` takes, or nullptr with *i where the scan stopped.
template <typename Check>
__attribute__((target("avx2"))) const StagePhrase* ScanStagesAvx2(const char* h, size_t n,
                                                                  size_t* i, Check&& check) {
  for (; *i + 3 + 32 <= n; *i += 32) {
    for (uint32_t mask = StageCandidatesAvx2(h + *i); mask != 0; mask &= mask - 1) {
      if (const StagePhrase* p = check(*i + static_cast<size_t>(__builtin_ctz(mask)))) return p;
    }
  }
  return nullptr;
}
#endif

using StageCandidatesFn = unsigned (*)(const char*);
StageCandidatesFn PickStageCandidates() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("ssse3")) return StageCandidatesSsse3;
#endif
  return StageCandidatesSse2;
}
#endif

}  // namespace

std::string_view StageFromText(std::string_view text) {
  // One pass over the text. The earliest specific phrase wins (a reply can quote other
  // commands after it); failing that, a Sendmail-style transcript; failing that, the earliest
  // generic phrase. Candidate positions come from a filter on three bytes of every phrase,
  // thirty-two (AVX2) or sixteen positions at a time; KeyAt then checks each candidate's three
  // bytes exactly.
  const char* h = text.data();
  size_t n = text.size();
  const StagePhrase* generic = nullptr;
  const PhrasesByKey& by_key = PhrasesFor();
  auto check = [&](size_t pos) -> const StagePhrase* {
    int key = KeyAt(h + pos);
    if (key < 0) return nullptr;  // a filter's false positive
    if (const StagePhrase* p = PhraseAt(text, pos, by_key.specific[key])) return p;
    if (generic == nullptr) generic = PhraseAt(text, pos, by_key.generic[key]);
    return nullptr;
  };
  size_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (HaveAvx2()) {
    if (const StagePhrase* p = ScanStagesAvx2(h, n, &i, check)) return p->stage;
  }
#endif
#if defined(__SSE2__)
  static const StageCandidatesFn candidates = PickStageCandidates();
  for (; i + 3 + 16 <= n; i += 16) {
    for (unsigned mask = candidates(h + i); mask != 0; mask &= mask - 1) {
      if (const StagePhrase* p = check(i + static_cast<size_t>(__builtin_ctz(mask))))
        return p->stage;
    }
  }
#endif
  for (; i + 4 <= n; ++i) {
    if (const StagePhrase* p = check(i)) return p->stage;
  }
  if (std::string_view st = StageFromTranscript(text); !st.empty()) return st;
  return generic != nullptr ? generic->stage : std::string_view();
}

std::string_view NormalizeStage(std::string_view stage) {
  stage = TrimSpace(stage);
  struct Alias {
    std::string_view name;
    std::string_view stage;
  };
  static constexpr std::array<Alias, 21> kAliases = {{
      {"connect", "connect"},
      {"connection", "connect"},
      {"greeting", "connect"},
      {"banner", "connect"},
      {"helo", "helo"},
      {"ehlo", "helo"},
      {"lhlo", "helo"},
      {"starttls", "helo"},
      {"mail", "mail"},
      {"mail from", "mail"},
      {"rcpt", "rcpt"},
      {"rcpt to", "rcpt"},
      {"data", "data"},
      {"eom", "eom"},
      {"end of data", "eom"},
      {"end-of-data", "eom"},
      {"end-of-message", "eom"},
      {"end of message", "eom"},
      {"dot", "eom"},
      {"bdat", "eom"},
      {"body", "data"},
  }};
  for (const auto& a : kAliases) {
    if (EqualsNoCase(stage, a.name)) return a.stage;
  }
  return {};
}

}  // namespace bounced
