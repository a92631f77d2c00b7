// dsn_fields.h: RFC 3464 delivery-status fields (internal to classifier/). Reads the text of a
// message/delivery-status part (or a DSN-like block inside a text part) and returns the
// per-message fields and one field group per recipient, in order. Tolerates what real MTAs
// send: folded continuation lines (indented or not), missing blank lines between groups, and
// fields in any case.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "classifier/dsn_mime.h"

namespace bounced::dsn {

inline constexpr size_t kMaxRecipientGroups = 1000;

struct DeliveryStatus {
  std::vector<Header> per_message;                 // Reporting-MTA, X-Postfix-Queue-ID ...
  std::vector<std::vector<Header>> per_recipient;  // each has Final-Recipient or similar
};

// Parses the fields. Field names are lower-cased; values are unfolded (continuation lines
// joined with one space) but otherwise as given.
DeliveryStatus ParseDeliveryStatus(std::string_view text);

// "rfc822; user@example.org" -> "user@example.org"; "smtp; 550 5.1.1 ..." -> "550 5.1.1 ...".
// Values without a "type;" prefix are returned trimmed.
std::string_view StripTypePrefix(std::string_view value);

}  // namespace bounced::dsn
