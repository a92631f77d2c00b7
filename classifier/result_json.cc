// result_json.cc: see result_json.h.
#include "classifier/result_json.h"

#include <emmintrin.h>

#include <cstdint>
#include <utility>

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
      {"action", ToString(info.action)},
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
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + len > n || p[i + 1] < lo || p[i + 1] > hi) return false;
    for (size_t k = 2; k < len; ++k) {
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return false;
    }
    i += len;
  }
  return true;
}

}  // namespace

namespace {

// Length of the leading run of bytes that JSON takes as they are and that are ASCII (no
// control character, quote, backslash or byte >= 0x80), sixteen bytes at a time: most fields
// are entirely such bytes and are then appended in one piece.
size_t PlainAsciiPrefix(std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  size_t i = 0;
  const __m128i space = _mm_set1_epi8(0x20);
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    // Signed compare: bytes >= 0x80 are negative, so "v < 0x20" catches them with the controls.
    __m128i bad =
        _mm_or_si128(_mm_cmplt_epi8(v, space),
                     _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
    int mask = _mm_movemask_epi8(bad);
    if (mask != 0) return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
  }
  for (; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(p[i]);
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') return i;
  }
  return n;
}

}  // namespace

void AppendJsonString(std::string_view s, std::string* out) {
  if (PlainAsciiPrefix(s) == s.size()) {
    out->push_back('"');
    out->append(s);
    out->push_back('"');
    return;
  }
  if (!WellFormedUtf8(s)) {
    // Rare (fields are sanitised): nlohmann's own replacement of bad bytes is the reference.
    out->append(nlohmann::json(std::string(s))
                    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t plain = 0;  // start of the run of bytes copied as they are
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(s.data() + plain, i - plain);
    plain = i + 1;
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
  }
  out->append(s.data() + plain, s.size() - plain);
  out->push_back('"');
}

void AppendJson(const Result& r, std::string* out) {
  const CategoryInfo& info = Describe(r.category);
  // nlohmann's object is a std::map: keys come out in byte order.
  const std::pair<std::string_view, std::string_view> before[] = {
      {"action", ToString(info.action)},
      {"category", info.name},
      {"cause", info.cause},
      {"diagnostic", r.diagnostic},
      {"dsn_action", r.dsn_action},
      {"fault", ToString(info.fault)},
  };
  const std::pair<std::string_view, std::string_view> after[] = {
      {"original_recipient", r.original_recipient},
      {"provider", r.provider},
      {"provider_code", r.provider_code},
      {"recipient", r.recipient},
      {"remote_mta", r.remote_mta},
      {"reply_code", r.reply_code},
      {"rule", r.rule},
      {"stage", r.stage},
      {"status", r.status},
  };
  char sep = '{';
  auto field = [&](std::string_view key) {
    out->push_back(sep);
    sep = ',';
    out->push_back('"');
    out->append(key);
    out->append("\":");
  };
  for (const auto& [key, value] : before) {
    field(key);
    AppendJsonString(value, out);
  }
  field("hard_bounce");
  out->append(info.hard_bounce ? "true" : "false");
  for (const auto& [key, value] : after) {
    field(key);
    AppendJsonString(value, out);
  }
  out->push_back('}');
}

}  // namespace bounced
