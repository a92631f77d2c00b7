// dsn_ses.h: Amazon SES notifications delivered by mail (internal to classifier/). SES (through
// SNS or directly) mails JSON documents: {"notificationType": "Bounce" | "Complaint" |
// "Delivery", "bounce": {"bouncedRecipients": [...], "bounceType", "bounceSubType"}, ...},
// optionally wrapped in an SNS envelope whose "Message" holds that JSON as a string.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "classifier/dsn_text.h"
#include "classifier/result.h"

namespace bounced::dsn {

struct SesNotification {
  enum class Type { kBounce, kComplaint, kDelivery } type = Type::kBounce;
  std::vector<Finding> recipients;
  // Set when SES itself decided the class (it suppressed the address on its own list).
  std::optional<Category> forced_category;
  // A complaint's complaintFeedbackType ("" when absent: SES leaves it out when the reporter
  // gave none).
  std::string feedback_type;
};

// Parses the JSON of an SES notification found in `text`; nullopt when it is not one.
std::optional<SesNotification> ParseSesNotification(std::string_view text);

}  // namespace bounced::dsn
