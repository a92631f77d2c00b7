// base64.h: RFC 4648 base64, for carrying raw (possibly non-UTF-8) messages inside JSON
// (`ingest-dsn` over the query socket). Pure code.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace bounced {

std::string Base64Encode(std::string_view bytes);
// nullopt on a character outside the alphabet or bad padding; whitespace is ignored.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace bounced
