// policy.h: the suppression policy as a pure function (internal to storage/, tested directly).
//
// ApplyEvent folds one event into a recipient's state and says whether the event, by itself
// and the history in the state, calls for an automatic suppression. It knows nothing of the
// allowlist or of existing entries: the writer (store_writer.cc) applies those, because they win.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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
// A hard bounce that suppresses at once: a hard_bounce category, bounced (a 4xx "user unknown",
// lookup trouble on the remote side, is not one yet). kHardBounceFailureSql says it in SQL.
bool IsHardBounce(const Result& r, std::string_view log_status);

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
  // Deliveries after the last incident that have not decided anything yet, one per message
  // (at most kMaxPendingDeliveries): a relay may accept a message and bounce it later, so a
  // delivery waits for the counted failures that follow. The latest is pending_delivery (its
  // time; 0: none pending) and pending_message_id (MessageIdKey form, never empty while
  // pending_delivery is set); the others are in pending_earlier, one "TIME MESSAGE-ID\n" line
  // each (unix seconds), oldest first. A counted failure of message M drops M's own delivery
  // (accepted, then bounced) and clears the incidents when another message was delivered before
  // M was: that one got through, since bounces come back in the order the relay accepted the
  // messages. Deliveries after M's wait on. Set only while incidents > 0.
  int64_t pending_delivery = 0;
  std::string pending_message_id;
  std::string pending_earlier;
  bool operator==(const PolicyFields&) const = default;
};

// Deliveries of more messages than this waiting at once mean the mailbox takes mail: the count
// is cleared then.
inline constexpr size_t kMaxPendingDeliveries = 8;

// A Message-ID as the policy compares it: without surrounding blanks and angle brackets (the
// log has "<id@host>", a DSN's parser gives "id@host"); a view into `message_id`, "" when none.
std::string_view MessageIdKey(std::string_view message_id);

// One delivery waiting (PolicyFields::pending_*): when, and of which message (MessageIdKey form).
struct PendingDelivery {
  int64_t time = 0;
  std::string message_id;
};

// The deliveries pending_delivery, pending_message_id and pending_earlier hold, oldest first
// (a pending_earlier line that does not read as "TIME ID", in an edited database, is skipped).
std::vector<PendingDelivery> PendingDeliveries(int64_t pending_delivery,
                                               std::string_view pending_message_id,
                                               std::string_view pending_earlier);
std::vector<PendingDelivery> PendingDeliveries(const PolicyFields& fields);

// The policy half of ApplyEvent: folds `e` into `fields` and decides; ApplyEvent is this plus
// the derived fields. The writer calls it directly (it keeps only these fields).
PolicyDecision ApplyPolicy(const SuppressionPolicy& policy, PolicyFields& fields, const Event& e,
                           int64_t t);

// False when ApplyPolicy neither reads nor changes `fields` for `e` and never suppresses
// (blocked events, sender-fault and transient categories, ...): the writer then skips the
// recipient's policy row altogether. True whenever that is not certain.
bool PolicyConcerns(const SuppressionPolicy& policy, const Event& e);

}  // namespace bounced
