// dsn_words.cc: see dsn_words.h. A file of its own: in dsn_mime.cc this code made the compiler
// stop inlining small helpers that the MIME walk calls on every part (+1.4% instructions).
#include "classifier/dsn_words.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "classifier/text.h"

namespace bounced::dsn {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// An encoded word "=?charset?B?payload?=" (a "*language" in the charset too) at `at` of `v`: its
// charset and payload, and where it ends; false when there is none there.
bool Base64Word(std::string_view v, size_t at, std::string_view* charset, std::string_view* payload,
                size_t* end) {
  if (v.substr(at, 2) != "=?") return false;
  size_t q1 = v.find('?', at + 2);
  if (q1 == std::string_view::npos || q1 == at + 2 || q1 + 3 > v.size() || v[q1 + 2] != '?' ||
      (v[q1 + 1] != 'B' && v[q1 + 1] != 'b'))
    return false;
  size_t close = v.find("?=", q1 + 3);
  if (close == std::string_view::npos) return false;
  *charset = v.substr(at + 2, q1 - at - 2);
  *payload = v.substr(q1 + 3, close - q1 - 3);
  if (ContainsAnyOf(*charset, " \t") || ContainsAnyOf(*payload, " \t?")) return false;
  *end = close + 2;
  return true;
}

// One word's payload decoded onto *out: padding ends it, bytes outside the alphabet are skipped.
void AppendBase64Decoded(std::string_view payload, std::string* out) {
  uint32_t bits = 0;
  int count = 0;
  for (char c : payload) {
    if (c == '=') break;
    const char* at = std::char_traits<char>::find(kAlphabet, 64, c);
    if (at == nullptr) continue;
    bits = (bits << 6) | static_cast<uint32_t>(at - kAlphabet);
    if ((count += 6) >= 8) {
      count -= 8;
      out->push_back(static_cast<char>((bits >> count) & 0xFF));
    }
  }
}

// Base64 without line breaks, padded.
void AppendBase64(std::string_view in, std::string* out) {
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint32_t>(static_cast<uint8_t>(in[i + 1])) << 8;
    if (i + 2 < in.size()) n |= static_cast<uint8_t>(in[i + 2]);
    *out += kAlphabet[(n >> 18) & 63];
    *out += kAlphabet[(n >> 12) & 63];
    *out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    *out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
  }
}

}  // namespace

void JoinPaddedBase64Words(std::string* value) {
  std::string_view v = *value;
  // Most values with a padded word ("...=?=", a From's display name) have no word after it.
  bool followed = false;
  for (size_t pad = v.find("=?="); pad != std::string_view::npos && !followed;
       pad = v.find("=?=", pad + 3)) {
    size_t next = v.find_first_not_of(" \t", pad + 3);
    followed = next != std::string_view::npos && v.substr(next, 2) == "=?";
  }
  if (!followed) return;
  std::string out;
  size_t copied = 0;
  for (size_t at = v.find("=?"); at != std::string_view::npos; at = v.find("=?", at + 1)) {
    std::string_view charset;
    std::string_view payload;
    size_t end = 0;
    if (!Base64Word(v, at, &charset, &payload, &end)) continue;
    std::string bytes;
    bool padded_inside = false;
    size_t words = 0;
    for (;;) {
      ++words;
      AppendBase64Decoded(payload, &bytes);
      size_t next = v.find_first_not_of(" \t", end);
      std::string_view next_charset;
      std::string_view next_payload;
      size_t next_end = 0;
      // Words written without a blank between them are one run to GMime too.
      if (next == std::string_view::npos ||
          !Base64Word(v, next, &next_charset, &next_payload, &next_end) ||
          !EqualsNoCase(next_charset, charset))
        break;
      padded_inside |= payload.ends_with('=');
      payload = next_payload;
      end = next_end;
    }
    if (words > 1 && padded_inside) {
      out.append(v.substr(copied, at - copied));
      out += "=?";
      out += charset;
      out += "?B?";
      AppendBase64(bytes, &out);
      out += "?=";
      copied = end;
    }
    at = end - 1;
  }
  if (copied == 0) return;
  out.append(v.substr(copied));
  *value = std::move(out);
}

}  // namespace bounced::dsn
