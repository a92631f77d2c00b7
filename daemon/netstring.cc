// netstring.cc: netstring encoding and incremental decoding (see netstring.h).
#include "daemon/netstring.h"

namespace bounced {

std::string EncodeNetstring(std::string_view payload) {
  std::string out = std::to_string(payload.size());
  out.reserve(out.size() + payload.size() + 2);
  out += ':';
  out.append(payload);
  out += ',';
  return out;
}

NetstringReader::Result NetstringReader::Next(std::string* payload) {
  if (!error_.empty()) return Result::kError;
  size_t i = 0;
  size_t len = 0;
  // At most as many digits as the cap has, so a huge prefix never overflows.
  const size_t max_digits = std::to_string(max_payload_).size();
  while (i < buffer_.size() && buffer_[i] >= '0' && buffer_[i] <= '9') {
    if (i >= max_digits) break;
    len = len * 10 + static_cast<size_t>(buffer_[i] - '0');
    ++i;
  }
  if (i == buffer_.size()) {
    if (i > max_digits) {
      error_ = "netstring length prefix too long";
      return Result::kError;
    }
    return Result::kNeedMore;
  }
  if (buffer_[i] != ':') {
    error_ = i == 0 ? "netstring does not start with a length"
                    : "netstring length too long or not followed by ':'";
    return Result::kError;
  }
  if (i == 0) {
    error_ = "netstring has an empty length";
    return Result::kError;
  }
  if (i > 1 && buffer_[0] == '0') {
    error_ = "netstring length has a leading zero";
    return Result::kError;
  }
  if (len > max_payload_) {
    error_ = "netstring of " + std::to_string(len) + " bytes exceeds the limit of " +
             std::to_string(max_payload_);
    return Result::kError;
  }
  size_t start = i + 1;
  if (buffer_.size() < start + len + 1) return Result::kNeedMore;
  if (buffer_[start + len] != ',') {
    error_ = "netstring not terminated by ','";
    return Result::kError;
  }
  payload->assign(buffer_, start, len);
  buffer_.erase(0, start + len + 1);
  return Result::kComplete;
}

}  // namespace bounced
