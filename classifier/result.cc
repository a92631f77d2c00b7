// result.cc: the fixed properties of each category (see result.h).
#include "classifier/result.h"

#include <array>

namespace bounced {
namespace {

using C = Category;
using F = Fault;
using A = Action;

constexpr std::array<CategoryInfo, kCategoryCount> kCategories = {{
    {C::kUserUnknown, "user_unknown", F::kRecipient, A::kSuppress, true, "address"},
    {C::kDomainUnknown, "domain_unknown", F::kRecipient, A::kSuppress, true, "domain"},
    {C::kMailboxMoved, "mailbox_moved", F::kRecipient, A::kSuppress, true, "address"},
    {C::kNotAccept, "not_accept", F::kRecipient, A::kSuppress, true, "domain"},
    {C::kMailboxDisabled, "mailbox_disabled", F::kRecipient, A::kCount, false, "address"},
    {C::kMailboxFull, "mailbox_full", F::kRecipient, A::kCount, false, "address"},
    {C::kPolicyRejection, "policy_rejection", F::kSender, A::kNone, false, "reputation"},
    {C::kSpamContent, "spam_content", F::kSender, A::kNone, false, "content"},
    {C::kContentRejected, "content_rejected", F::kSender, A::kNone, false, "content"},
    {C::kFiltered, "filtered", F::kSender, A::kNone, false, "content"},
    {C::kVirusDetected, "virus_detected", F::kSender, A::kNone, false, "content"},
    {C::kReputationBlock, "reputation_block", F::kSender, A::kNone, false, "reputation"},
    {C::kAuthFailure, "auth_failure", F::kSender, A::kNone, false, "authentication"},
    {C::kRequirePtr, "require_ptr", F::kSender, A::kNone, false, "configuration"},
    {C::kTlsRequired, "tls_required", F::kSender, A::kNone, false, "configuration"},
    {C::kSecurityError, "security_error", F::kSender, A::kNone, false, "configuration"},
    {C::kSenderRejected, "sender_rejected", F::kSender, A::kNone, false, "configuration"},
    {C::kRelayDenied, "relay_denied", F::kSender, A::kNone, false, "configuration"},
    {C::kMessageTooLarge, "message_too_large", F::kSender, A::kNone, false, "content"},
    {C::kRateLimited, "rate_limited", F::kTransient, A::kNone, false, "transient"},
    {C::kGreylisted, "greylisted", F::kTransient, A::kNone, false, "transient"},
    {C::kNetworkError, "network_error", F::kTransient, A::kNone, false, "transient"},
    {C::kSystemError, "system_error", F::kTransient, A::kNone, false, "transient"},
    {C::kProtocolError, "protocol_error", F::kTransient, A::kNone, false, "transient"},
    {C::kExpired, "expired", F::kTransient, A::kNone, false, "transient"},
    {C::kComplaint, "complaint", F::kRecipient, A::kSuppress, false, "feedback"},
    {C::kAutoReply, "auto_reply", F::kNone, A::kNone, false, "none"},
    {C::kDelivered, "delivered", F::kNone, A::kNone, false, "none"},
    {C::kSuppressedUpstream, "suppressed_upstream", F::kRecipient, A::kCount, false, "address"},
    {C::kUndetermined, "undetermined", F::kNone, A::kNone, false, "none"},
}};

constexpr bool TableInOrder() {
  for (int i = 0; i < kCategoryCount; ++i) {
    if (static_cast<int>(kCategories[i].category) != i) return false;
  }
  return true;
}
static_assert(TableInOrder(), "kCategories must list categories in enum order");

}  // namespace

const CategoryInfo& Describe(Category c) { return kCategories[static_cast<int>(c)]; }

Action Result::action() const {
  if (category == Category::kComplaint &&
      (provider_code == "not-spam" || provider_code == "auth-failure")) {
    return Action::kNone;
  }
  return Describe(category).action;
}

std::string_view ToString(Category c) { return Describe(c).name; }

std::string_view ToString(Fault f) {
  switch (f) {
    case Fault::kRecipient:
      return "recipient";
    case Fault::kSender:
      return "sender";
    case Fault::kTransient:
      return "transient";
    case Fault::kNone:
      return "none";
  }
  return "none";
}

std::string_view ToString(Action a) {
  switch (a) {
    case Action::kSuppress:
      return "suppress";
    case Action::kCount:
      return "count";
    case Action::kNone:
      return "none";
  }
  return "none";
}

std::optional<Category> CategoryFromName(std::string_view name) {
  for (const auto& info : kCategories) {
    if (info.name == name) return info.category;
  }
  return std::nullopt;
}

}  // namespace bounced
