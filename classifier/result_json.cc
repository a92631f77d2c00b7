// result_json.cc: see result_json.h.
#include "classifier/result_json.h"

#include <emmintrin.h>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <utility>

#include "classifier/text.h"

namespace bounced {

nlohmann::json ToJson(const Result& r) {
  const CategoryInfo& info = Describe(r.category);
  return nlohmann::json{
      {"recipient", r.recipient},
      {"original_recipient", r.original_recipient},
      {"category", info.name},
      {"fault", ToString(info.fault)},
      {"cause", info.cause},
      {"hard_bounce", info.hard_bounce},
      {"action", ToString(r.action())},
      {"status", r.status},
      {"reply_code", r.reply_code},
      {"stage", r.stage},
      {"provider", r.provider},
      {"provider_code", r.provider_code},
      {"diagnostic", r.diagnostic},
      {"remote_mta", r.remote_mta},
      {"dsn_action", r.dsn_action},
      {"rule", r.rule},
  };
}

namespace {

// Well-formed UTF-8 (Unicode 3-7: no overlong forms, no surrogates, nothing past U+10FFFF),
// the same set nlohmann's decoder accepts.
bool WellFormedUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = Utf8SequenceLength(p + i, n - i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

}  // namespace

namespace {

// Whether any of the eight bytes of `w` is one PlainAsciiPrefix stops at: below 0x20 ("any byte
// below n" and "any zero byte" are the classic exact word tests; a byte of 0x80 or more is caught
// by its high bit), '"' or '\\'.
inline bool AnyNotPlain(uint64_t w) {
  constexpr uint64_t k01 = 0x0101010101010101ull, k80 = 0x8080808080808080ull;
  auto zero_byte = [](uint64_t x) { return (x - k01) & ~x & k80; };
  return ((w & k80) | ((w - 0x20 * k01) & ~w & k80) | zero_byte(w ^ ('"' * k01)) |
          zero_byte(w ^ ('\\' * k01))) != 0;
}

// Length of the leading run of bytes that JSON takes as they are and that are ASCII (no
// control character, quote, backslash or byte >= 0x80), sixteen bytes at a time: most fields
// are entirely such bytes and are then appended in one piece. The bytes after the last whole
// block are checked in words that may overlap bytes checked already (most fields are short:
// a status, a stage); only a tail that holds such a byte is read byte by byte.
size_t PlainAsciiPrefix(std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  size_t i = 0;
  const __m128i space = _mm_set1_epi8(0x20);
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  auto bad_mask = [&](size_t at) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
    // Signed compare: bytes >= 0x80 are negative, so "v < 0x20" catches them with the controls.
    __m128i bad =
        _mm_or_si128(_mm_cmplt_epi8(v, space),
                     _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
    return static_cast<unsigned>(_mm_movemask_epi8(bad));
  };
  for (; i + 16 <= n; i += 16) {
    unsigned mask = bad_mask(i);
    if (mask != 0) return i + static_cast<size_t>(__builtin_ctz(mask));
  }
  if (i == n) return n;
  auto word = [p](size_t at, size_t size) {
    uint64_t w = 0;
    std::memcpy(&w, p + at, size);
    return w;
  };
  bool tail_plain;
  if (n >= 16) {
    tail_plain = bad_mask(n - 16) == 0;
  } else if (n >= 8) {
    tail_plain = !AnyNotPlain(word(0, 8)) && !AnyNotPlain(word(n - 8, 8));
  } else if (n >= 4) {
    // Two words of four, their upper halves filled with a plain byte ('a').
    constexpr uint64_t kPad = 0x6161616100000000ull;
    tail_plain = !AnyNotPlain(word(0, 4) | kPad) && !AnyNotPlain(word(n - 4, 4) | kPad);
  } else {
    tail_plain = false;  // up to three bytes: read below
  }
  if (tail_plain) return n;
  for (; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(p[i]);
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') return i;
  }
  return n;
}

}  // namespace

namespace {

// Where the next byte JSON must escape (control character, quote, backslash) is, from `from`,
// sixteen bytes at a time; bytes >= 0x80 pass (the caller checked the UTF-8 already).
size_t NextToEscape(std::string_view s, size_t from) {
  const char* p = s.data();
  size_t n = s.size(), i = from;
  const __m128i space = _mm_set1_epi8(0x20), minus_one = _mm_set1_epi8(-1);
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    // 0x00..0x1F: below 0x20 and not negative (bytes >= 0x80 are negative when signed).
    __m128i control = _mm_and_si128(_mm_cmplt_epi8(v, space), _mm_cmpgt_epi8(v, minus_one));
    __m128i bad =
        _mm_or_si128(control, _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
    int mask = _mm_movemask_epi8(bad);
    if (mask != 0) return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
  }
  for (; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(p[i]);
    if (c < 0x20 || c == '"' || c == '\\') return i;
  }
  return n;
}

}  // namespace

void AppendJsonString(std::string_view s, std::string* out) {
  size_t plain = PlainAsciiPrefix(s);
  if (plain == s.size()) {
    out->push_back('"');
    out->append(s);
    out->push_back('"');
    return;
  }
  // The ASCII prefix cannot hold part of a UTF-8 sequence: checking the rest decides.
  if (!WellFormedUtf8(s.substr(plain))) {
    // Rare (fields are sanitised): nlohmann's own replacement of bad bytes is the reference.
    out->append(nlohmann::json(std::string(s))
                    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t i = 0;
  for (;;) {
    size_t next = NextToEscape(s, i);
    out->append(s.data() + i, next - i);
    if (next == s.size()) break;
    unsigned char c = static_cast<unsigned char>(s[next]);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default: {
        char u[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out->append(u, sizeof u);
      }
    }
    i = next + 1;
  }
  out->push_back('"');
}

namespace {

// Copies n bytes (sizeof(T) <= n <= 2 * sizeof(T)) as two moves of a T, the second ending at
// the last byte; they overlap when n < 2 * sizeof(T). Fixed-size memcpy calls compile to plain
// loads and stores.
template <typename T>
inline void CopyTwoOverlapping(char* p, const char* s, size_t n) {
  T a, b;
  std::memcpy(&a, s, sizeof(T));
  std::memcpy(&b, s + n - sizeof(T), sizeof(T));
  std::memcpy(p, &a, sizeof(T));
  std::memcpy(p + n - sizeof(T), &b, sizeof(T));
}

// memcpy(p, s, n), returning p + n, without a call for the sizes of most keys and fields (a
// status, a stage, a key with its quotes: up to 32 bytes), whose calls cost more than the
// copying. Reads only [s, s + n) and writes only [p, p + n).
inline char* PutBytes(char* p, const char* s, size_t n) {
  if (n >= 16 && n <= 32) {
    CopyTwoOverlapping<__m128i>(p, s, n);
  } else if (n >= 8 && n < 16) {
    CopyTwoOverlapping<uint64_t>(p, s, n);
  } else if (n >= 4 && n < 8) {
    CopyTwoOverlapping<uint32_t>(p, s, n);
  } else if (n < 4) {
    for (size_t i = 0; i < n; ++i) p[i] = s[i];
  } else {
    std::memcpy(p, s, n);
  }
  return p + n;
}

}  // namespace

void AppendJson(const Result& r, std::string* out) {
  const CategoryInfo& info = Describe(r.category);
  // nlohmann's object is a std::map: keys come out in byte order. Each key comes with the
  // separator before it and the opening quote of its string value.
  struct Field {
    std::string_view key;
    std::string_view value;
    // The category's own words (result.cc's table: lower-case letters and '_'), plain JSON
    // as they are: only the result's strings need checking.
    bool described = false;
  };
  const Field fields[] = {
      {"{\"action\":\"", ToString(r.action()), true},
      {",\"category\":\"", info.name, true},
      {",\"cause\":\"", info.cause, true},
      {",\"diagnostic\":\"", r.diagnostic},
      {",\"dsn_action\":\"", r.dsn_action},
      {",\"fault\":\"", ToString(info.fault), true},
      {",\"original_recipient\":\"", r.original_recipient},
      {",\"provider\":\"", r.provider},
      {",\"provider_code\":\"", r.provider_code},
      {",\"recipient\":\"", r.recipient},
      {",\"remote_mta\":\"", r.remote_mta},
      {",\"reply_code\":\"", r.reply_code},
      {",\"rule\":\"", r.rule},
      {",\"stage\":\"", r.stage},
      {",\"status\":\"", r.status},
  };
  constexpr size_t kHardBounceAfter = 6;  // "hard_bounce" sorts after "fault"
  const std::string_view hard_bounce =
      info.hard_bounce ? ",\"hard_bounce\":true" : ",\"hard_bounce\":false";
  // Nearly every result is plain ASCII with nothing to escape: then its size is known, and
  // the object is written into place with one resize.
  size_t need = hard_bounce.size() + 1;
  bool plain = true;
  for (const Field& f : fields) {
    need += f.key.size() + f.value.size() + 1;
    plain = plain && (f.described || PlainAsciiPrefix(f.value) == f.value.size());
  }
  if (plain) {
    size_t at = out->size();
    out->resize(at + need);
    char* p = out->data() + at;
    auto put = [&p](std::string_view s) { p = PutBytes(p, s.data(), s.size()); };
    for (size_t i = 0; i < std::size(fields); ++i) {
      if (i == kHardBounceAfter) put(hard_bounce);
      put(fields[i].key);
      put(fields[i].value);
      *p++ = '"';
    }
    *p++ = '}';
    return;
  }
  for (size_t i = 0; i < std::size(fields); ++i) {
    if (i == kHardBounceAfter) out->append(hard_bounce);
    // The key without the value's opening quote, which AppendJsonString writes.
    out->append(fields[i].key.substr(0, fields[i].key.size() - 1));
    AppendJsonString(fields[i].value, out);
  }
  out->push_back('}');
}

}  // namespace bounced
