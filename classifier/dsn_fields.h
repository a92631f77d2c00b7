// dsn_fields.h: RFC 3464 delivery-status fields (internal to classifier/). Reads the text of a
// message/delivery-status part (or a DSN-like block inside a text part) and returns the
// per-message fields and one field group per recipient, in order. Tolerates what real MTAs
// send: folded continuation lines (indented or not), missing blank lines between groups, and
// fields in any case.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "classifier/dsn_mime.h"

namespace bounced::dsn {

// Most recipient groups read from one report. Postfix lists every bounced recipient of a queue
// file in one report, and a list message can have thousands: the limit is there for hostile
// input only (a 16 MiB message holds ~300,000 minimal groups). ParseBounce warns when a report
// reaches it.
inline constexpr size_t kMaxRecipientGroups = 100000;

// One field, as views: the name as written (compare it without case), the value trimmed and,
// when folded, unfolded. A value views the parsed text, or the DeliveryStatus's own copy when it
// had to be joined from several lines: both must outlive the field. (Views, not copies: a
// report has a dozen fields, and copying each cost an allocation.)
struct Field {
  std::string_view name;
  std::string_view value;
};

struct DeliveryStatus {
  std::vector<Field> per_message;                 // Reporting-MTA, X-Postfix-Queue-ID ...
  std::vector<std::vector<Field>> per_recipient;  // each has Final-Recipient or similar
  bool more_recipients = false;  // groups after the kMaxRecipientGroups-th were not read
  // Values joined from folded lines; each string is allocated on its own, so moving the
  // DeliveryStatus leaves the views into them valid.
  std::vector<std::unique_ptr<std::string>> joined;
};

// Parses the fields of `text`, which must outlive the result. Values are unfolded
// (continuation lines joined with one space) but otherwise as given.
DeliveryStatus ParseDeliveryStatus(std::string_view text);

// The value of the first field named `lower` (a lower-case name) in any case, or "".
std::string_view FindField(const std::vector<Field>& fields, std::string_view lower);

// "rfc822; user@example.org" -> "user@example.org"; "smtp; 550 5.1.1 ..." -> "550 5.1.1 ...".
// Values without a "type;" prefix are returned trimmed.
std::string_view StripTypePrefix(std::string_view value);

}  // namespace bounced::dsn
