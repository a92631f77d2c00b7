// dsn_words.h: RFC 2047 encoded words that GMime's header decoder misreads, rewritten before it
// reads them (internal to classifier/). Rewrites a header value in place; no I/O.
#pragma once

#include <string>

namespace bounced::dsn {

// GMime decodes a run of base64 encoded words in one charset (with blanks between them, or
// none) as one stream, so that a character split between two words comes out whole; but its
// decoder stops at the first word's padding: "=?UTF-8?B?QXV0byByZXA=?= =?UTF-8?B?bHk6IE55YWFu?="
// (a long subject split in two, each word padded as RFC 2047 has it) came out "Auto rep". Joins
// each such run of *value into one word (its words' bytes, decoded one by one, encoded again).
void JoinPaddedBase64Words(std::string* value);

}  // namespace bounced::dsn
