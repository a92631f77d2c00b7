// log_reply.cc: see log_reply.h.
#include "classifier/log_reply.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <array>
#include <cstring>

#include "classifier/log_bytes.h"
#include "classifier/text.h"

namespace bounced::log_internal {
namespace {

using sv = std::string_view;

// "H[ip]..." -> "H"; a bare "H" stays.
sv HostOfToken(sv token) {
  size_t b = token.find('[');
  return b == sv::npos ? token : token.substr(0, b);
}

// The token after `prefix` up to the next ' ' (or ':' directly after "]").
sv HostAfter(sv text, size_t from) {
  sv rest = text.substr(from);
  size_t end = rest.find(' ');
  sv token = rest.substr(0, end);
  size_t rb = token.find(']');
  if (rb != sv::npos) token = token.substr(0, rb + 1);
  return HostOfToken(token);
}

}  // namespace

ReasonParts AnalyzeReason(std::string_view reason) {
  ReasonParts out;
  sv r = reason;
  static constexpr sv kSuspended = "delivery temporarily suspended: ";
  if (StartsWith(r, "delivery temporarily suspended: ")) {
    r.remove_prefix(kSuspended.size());
    out.suspended = true;
  }
  out.reply = r;
  if (StartsWith(r, "host ")) {
    size_t sp = r.find(' ', 5);
    if (sp == sv::npos) return out;
    out.remote_host = HostOfToken(r.substr(5, sp - 5));
    sv after = r.substr(sp + 1);
    static constexpr sv kSaid = "said: ";
    static constexpr sv kRefused = "refused to talk to me: ";
    if (StartsWith(after, "said: ")) {
      sv reply = after.substr(kSaid.size());
      size_t in = reply.rfind(" (in reply to ");
      if (in != sv::npos) {
        sv cmd = reply.substr(in + 14);
        size_t c = cmd.find(" command)");
        if (c != sv::npos) out.stage = NormalizeStage(cmd.substr(0, c));
        reply = reply.substr(0, in);
      }
      out.reply = reply;
    } else if (StartsWith(after, "refused to talk to me: ")) {
      out.reply = after.substr(kRefused.size());
      out.stage = "connect";
    }
    return out;
  }
  if (StartsWith(r, "connect to ")) {
    out.remote_host = HostAfter(r, 11);
    out.stage = "connect";
    return out;
  }
  if (StartsWith(r, "lost connection with ") || StartsWith(r, "conversation with ")) {
    out.remote_host = HostAfter(r, r[0] == 'l' ? 21 : 18);
    if (r.find("initial server greeting") != sv::npos) {
      out.stage = "connect";
    } else {
      out.stage = StageFromText(r);
    }
    return out;
  }
  return out;
}

std::string_view RelayHost(std::string_view relay) {
  size_t b = relay.find('[');
  if (b == sv::npos || b == 0) return {};
  return relay.substr(0, b);
}

namespace {

// Character classes for the key scanner, one table lookup per byte.
constexpr uint8_t kDigit = 1, kAlpha = 2, kAt = 4, kOpen = 8, kSpace = 16;
constexpr std::array<uint8_t, 256> MakeClasses() {
  std::array<uint8_t, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = kDigit;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = kAlpha;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = kAlpha;
  t['@'] = kAt;
  t['['] = kOpen;
  t[' '] = kSpace;
  return t;
}
constexpr std::array<uint8_t, 256> kClass = MakeClasses();

}  // namespace

namespace {

// Position of the first digit, '@' or '[' in s[from...], or s.size(): the bytes without which a
// token is never masked.
size_t FindMaskable(std::string_view s, size_t from) {
#if defined(__SSE2__)
  while (from + 16 <= s.size()) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + from));
    // Signed compares: bytes >= 0x80 are negative, so never digits.
    __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                  _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
    __m128i other =
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('@')), _mm_cmpeq_epi8(v, _mm_set1_epi8('[')));
    unsigned hits = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(digit, other)));
    if (hits != 0) return from + static_cast<size_t>(__builtin_ctz(hits));
    from += 16;
  }
#endif
  while (from < s.size() && (kClass[static_cast<uint8_t>(s[from])] & (kDigit | kAt | kOpen)) == 0) {
    ++from;
  }
  return from;
}

// Whether the token (no spaces) is per-message noise (see BuildReplyKey in log_reply.h).
bool IsNoiseToken(std::string_view token) {
  int digits = 0, letters = 0, run = 0, max_run = 0;
  for (size_t i = 0; i < token.size(); ++i) {
    uint8_t c = kClass[static_cast<uint8_t>(token[i])];
    if (c & kDigit) {
      ++digits;
      if (++run > max_run) max_run = run;
    } else {
      run = 0;
      letters += (c & kAlpha) != 0;
      if (c & kAt) return true;
      if ((c & kOpen) && i + 1 < token.size() &&
          (kClass[static_cast<uint8_t>(token[i + 1])] & kDigit)) {
        return true;  // host[ip]
      }
    }
  }
  return (token.size() >= 16 && digits >= 4) || (letters == 0 && max_run >= 6);
}

// IsNoiseToken for the token starting at r[start] and its end (the next space or the end of
// r), from 32 bytes at once: returns false (outputs untouched) when fewer than 32 bytes are
// left or the token is longer than 31 bytes, for the byte-by-byte path. Most tokens are short
// (codes, host names, numbers), and a gmail reply has a dozen with digits.
bool TokenIsNoiseFast(std::string_view r, size_t start, size_t* end, bool* noise) {
#if defined(__SSE2__)
  if (start + 32 > r.size()) return false;
  auto masks = [](const char* p, uint32_t* space, uint32_t* digit, uint32_t* alpha, uint32_t* at,
                  uint32_t* open) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    __m128i folded = _mm_or_si128(v, _mm_set1_epi8(0x20));  // 'A'..'Z' -> 'a'..'z'
    *space = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(' '))));
    *digit = static_cast<uint32_t>(_mm_movemask_epi8(_mm_and_si128(
        _mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)))));
    *alpha = static_cast<uint32_t>(
        _mm_movemask_epi8(_mm_and_si128(_mm_cmpgt_epi8(folded, _mm_set1_epi8('a' - 1)),
                                        _mm_cmplt_epi8(folded, _mm_set1_epi8('z' + 1)))));
    *at = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('@'))));
    *open = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('['))));
  };
  uint32_t sp0, d0, a0, at0, o0, sp1, d1, a1, at1, o1;
  masks(r.data() + start, &sp0, &d0, &a0, &at0, &o0);
  masks(r.data() + start + 16, &sp1, &d1, &a1, &at1, &o1);
  const uint32_t space = sp0 | (sp1 << 16);
  if (space == 0) return false;  // 32 bytes or more: the slow path
  const unsigned len = static_cast<unsigned>(__builtin_ctz(space));
  const uint32_t in = (1u << len) - 1;  // len <= 31
  const uint32_t digit = (d0 | (d1 << 16)) & in;
  const uint32_t alpha = (a0 | (a1 << 16)) & in;
  const uint32_t at = (at0 | (at1 << 16)) & in;
  const uint32_t open = (o0 | (o1 << 16)) & in;
  const uint32_t run6 =
      digit & (digit >> 1) & (digit >> 2) & (digit >> 3) & (digit >> 4) & (digit >> 5);
  *end = start + len;
  *noise = at != 0 || (open & (digit >> 1)) != 0 || (len >= 16 && __builtin_popcount(digit) >= 4) ||
           (alpha == 0 && run6 != 0);
  return true;
#else
  (void)r;
  (void)start;
  (void)end;
  (void)noise;
  return false;
#endif
}

}  // namespace

void BuildReplyKey(std::string_view provider, std::string_view dsn, std::string_view action,
                   std::string_view reason, std::string* key) {
  const size_t head = provider.size() + dsn.size() + action.size() + 3;
  key->resize(head + reason.size());
  char* const out = key->data();
  char* w = out;
  // memcpy is never given an empty view's data(): it may be null, which memcpy does not allow
  // even for zero bytes (UBSan, log_fuzz).
  for (std::string_view part : {provider, dsn, action}) {
    if (!part.empty()) memcpy(w, part.data(), part.size());
    w += part.size();
    *w++ = '\x1f';
  }
  // Only a token holding a digit, '@' or '[' can be noise: jump from one such byte to the next
  // (16 bytes at a time), copy the text in between as it is and judge just that token.
  const std::string_view r = reason;
  size_t pos = 0;  // everything before it is in the key
  for (;;) {
    size_t at = FindMaskable(r, pos);
    if (at == r.size()) break;
    size_t start = at;
    while (start > pos && r[start - 1] != ' ') --start;
    size_t end;
    bool noise;
    if (!TokenIsNoiseFast(r, start, &end, &noise)) {
      end = at + 1;
      while (end < r.size() && r[end] != ' ') ++end;
      noise = IsNoiseToken(r.substr(start, end - start));
    }
    memcpy(w, r.data() + pos, start - pos);
    w += start - pos;
    std::string_view token = r.substr(start, end - start);
    if (noise) {
      *w++ = '\x01';
    } else {
      memcpy(w, token.data(), token.size());
      w += token.size();
    }
    pos = end;
  }
  if (pos < r.size()) memcpy(w, r.data() + pos, r.size() - pos);
  w += r.size() - pos;
  key->resize(static_cast<size_t>(w - out));
}

}  // namespace bounced::log_internal
