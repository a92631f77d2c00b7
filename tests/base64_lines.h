// base64_lines.h: base64 as a mail body carries it, for tests that build encoded messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bounced::testing {

// `in` in base64, 76 characters a line, each line ended by "\n" (and one more "\n" after a last
// line that is full: an empty line, as some encoders write).
inline std::string Base64Lines(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t line = 0;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t n = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint8_t>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<uint8_t>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
    if ((line += 4) >= 76) {
      out += '\n';
      line = 0;
    }
  }
  return out + "\n";
}

}  // namespace bounced::testing
