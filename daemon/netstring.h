// netstring.h: D. J. Bernstein's netstrings ("12:hello world!,"), the framing of Postfix's
// socketmap protocol (socketmap_table(5)). Pure code over bytes.
//
// NetstringReader takes bytes as they arrive and hands out complete payloads. A length prefix
// longer than the reader's cap, a non-digit prefix, a leading zero on a non-empty length or a
// missing trailing comma is an error; after an error the stream cannot be resynchronised, so
// the caller closes the connection (as Postfix does).
#pragma once

#include <string>
#include <string_view>

namespace bounced {

std::string EncodeNetstring(std::string_view payload);

class NetstringReader {
 public:
  explicit NetstringReader(size_t max_payload) : max_payload_(max_payload) {}

  enum class Result { kNeedMore, kComplete, kError };

  void Append(std::string_view bytes) { buffer_.append(bytes); }
  // kComplete: *payload holds the next message. kNeedMore: wait for more bytes. kError: the
  // stream is malformed; error() says why.
  Result Next(std::string* payload);
  const std::string& error() const { return error_; }
  // Bytes received but not yet consumed (for tests).
  size_t buffered() const { return buffer_.size(); }

 private:
  size_t max_payload_;
  std::string buffer_;
  std::string error_;
};

}  // namespace bounced
