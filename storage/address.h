// address.h: address normalisation into a caller's buffer (internal to storage/), so hot
// lookups reuse one buffer per thread instead of allocating a key each time.
#pragma once

#include <string>
#include <string_view>

namespace bounced {

// NormalizeAddress (store.h) into `out`; false (and `out` empty) when not an address.
bool NormalizeAddressInto(std::string_view address, std::string_view delimiters, std::string& out);

}  // namespace bounced
