// mail_date.h: when a message says it was written: its Date header (RFC 5322 section 3.3, with
// the obsolete forms of section 4.3 that old MTAs still send). Pure code over bytes.
//
// Used where a bounce is recorded long after it was sent (`bouncectl ingest-dsn` over a saved
// mailbox): the event's time is the bounce's, not the time it was read.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace bounced {

// A date-time as RFC 5322 writes it: "[Sun,] 29 Nov 2026 17:09:53 +0100", seconds optional,
// comments ("(UTC)") anywhere, a two- or three-digit year (obsolete: 50-99 and three digits are
// 1900s, 00-49 the 2000s), a zone name (UT, GMT, UTC, Z, EST, EDT, CST, CDT, MST, MDT, PST, PDT;
// military letters and unknown names count as +0000, as RFC 5322 says to treat them), or no zone
// (read as UTC). Also the asctime form some MTAs write ("Sun Nov 29 17:09:53 2026"). Returns
// Unix seconds, or nothing when the value is not a valid date-time (an impossible day such as
// 31 Nov, an hour past 23, a year before 1970 or after 9999).
std::optional<int64_t> ParseMailDate(std::string_view value);

// The Date of a whole message: the first "Date:" field of its top header block (folded lines
// joined; an mbox "From " line before the headers skipped), read by ParseMailDate. Nothing when
// the message has none or it does not read.
std::optional<int64_t> MessageDate(std::string_view message);

}  // namespace bounced
