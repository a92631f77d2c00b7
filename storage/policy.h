// policy.h: the suppression policy as a pure function (internal to storage/, tested directly).
//
// ApplyEvent folds one event into a recipient's state and says whether the event, by itself
// and the history in the state, calls for an automatic suppression. It knows nothing of the
// allowlist or of existing entries: the writer (store.cc) applies those, because they win.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/store.h"

namespace bounced {

struct PolicyDecision {
  bool suppress = false;
  std::string_view reason;  // kReason*
  std::string_view source;  // "bounce" or "complaint"
  int64_t expires = 0;      // 0 = never
  int64_t first_event = 0;  // first event that counted towards it
};

// Event kinds the policy cares about.
bool IsDelivery(const Event& e);
bool IsFailure(const Event& e);           // bounced, expired or deferred
bool IsPermanentFailure(const Event& e);  // bounced or expired

// `t` is the event's time (already defaulted). Updates `state` (a fresh state has address set
// and everything else zero) and returns the decision. Events older than
// state.manual_unsuppressed never suppress: the operator's decision came after them.
PolicyDecision ApplyEvent(const SuppressionPolicy& policy, RecipientState& state, const Event& e,
                          int64_t t);

// What the policy itself remembers about a recipient (the recipient_policy row); the rest of
// RecipientState is derived from the recipient's events.
struct PolicyFields {
  int64_t incidents = 0;
  int64_t incidents_since = 0;
  int64_t last_incident = 0;
  int64_t manual_unsuppressed = 0;
  // Deliveries of one message (pending_message_id, in MessageIdKey form, never empty while
  // pending_delivery is set) after the last incident; pending_delivery is the latest of them.
  // They clear the incidents at the next counted failure of any other message; a failure of
  // that very message (accepted, then bounced: a relay's DSN) drops them and counts. Set only
  // while incidents > 0.
  int64_t pending_delivery = 0;
  std::string pending_message_id;
  bool operator==(const PolicyFields&) const = default;
};

// A Message-ID as the policy compares it: without surrounding blanks and angle brackets (the
// log has "<id@host>", a DSN's parser gives "id@host"); a view into `message_id`, "" when none.
std::string_view MessageIdKey(std::string_view message_id);

// The policy half of ApplyEvent: folds `e` into `fields` and decides; ApplyEvent is this plus
// the derived fields. The writer calls it directly (it keeps only these fields).
PolicyDecision ApplyPolicy(const SuppressionPolicy& policy, PolicyFields& fields, const Event& e,
                           int64_t t);

// False when ApplyPolicy neither reads nor changes `fields` for `e` and never suppresses
// (blocked events, sender-fault and transient categories, ...): the writer then skips the
// recipient's policy row altogether. True whenever that is not certain.
bool PolicyConcerns(const SuppressionPolicy& policy, const Event& e);

}  // namespace bounced
