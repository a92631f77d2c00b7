// expiry_completion.h: finishes, from the store, the `expired` events of a log input whose
// correlator started after the message's earlier lines (a restart, or the re-sync after a failed
// commit).
//
// The LogCorrelator keeps what a queue id's earlier lines said (the recipients still pending
// after a deferral, the message-id) in memory only. When Postfix gives up on a message ("status=
// expired, returned to sender"), it returns the recipients it deferred in that last queue run;
// if the correlator was not there for their deferrals, it reports the expiry without recipients,
// and without a message-id if it missed the cleanup line (days earlier: Postfix keeps mail for
// maximal_queue_lifetime, 5 days by default). The input stored those lines as events, with the
// position after them, so they are in the store: CompleteExpiry builds from them what the
// correlator would have reported.
//
// Reads: Store::QueueEvents (which must see every line before the expiry: the caller commits
// them first). Classification: ExpiredResultAfter (the rules, as the correlator uses them).
#pragma once

#include <vector>

#include "classifier/rules.h"
#include "common/status.h"
#include "storage/store.h"

namespace bounced {

// How far before an expiry its recipients' deferrals are looked for. qmgr starts a message's
// defer log anew in each queue run and expires the message at the end of a run, returning the
// recipients deferred in it: their deferrals come just before the expiry line. A day covers any
// queue run and bounds the scan (queue ids have no index).
inline constexpr int64_t kExpiryDeferralWindowSeconds = 86400;
// How far before an expiry its message-id is looked for: Postfix's longest maximal_queue_lifetime
// (100 days). The lookup goes through the recipient's index.
inline constexpr int64_t kMaxQueueLifetimeSeconds = 100 * 86400;

// Whether `e`, an event of the input's correlator, is an expiry it could not finish.
bool ExpiryNeedsStore(const Event& e);

// The events to store for `expired` (ExpiryNeedsStore true):
// - without recipients: one `expired` event per recipient of its queue id whose latest stored
//   event (log or journal) is a deferral within kExpiryDeferralWindowSeconds, as the correlator
//   builds it (the deferral's reply classified as given up on, its relay, message-id and DSN
//   queue id; the expiry's time, sender, program and position). None when the events of this
//   very line are stored already (same source and position). The expiry as it is when no
//   deferral is stored (they were before the log began).
// - with an empty message-id: the message-id of an earlier event of the recipient and queue id.
// An error only when the store cannot be read.
Expected<std::vector<Event>> CompleteExpiry(Store& store, const RuleSet& rules, Event expired);

}  // namespace bounced
