// store_dependencies.h: MilterDependencies backed by a Store (storage/store.h).
//
// lookup reads the Store's in-memory view (never SQLite), so a suppression committed by any
// input or by `bouncectl suppress` is enforced on the very next RCPT. Records become events with
// source "milter": enforcement as log_status "blocked" (never feeds the policy, unique per
// occurrence), bounces as one event per recipient keyed by BounceDedupKey (storage keeps one per
// (key, recipient), so a retried bounce is recorded once). Records wait for the commit at most
// `commit_wait`; a longer wait is reported as a storage error (the event stays queued).
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "classifier/rules.h"
#include "milter/milter.h"
#include "storage/store.h"

namespace bounced {

// `store` must outlive StopMilter(). `rules` returns the current rule set.
MilterDependencies MilterDependenciesForStore(Store& store,
                                              std::function<std::shared_ptr<const RuleSet>()> rules,
                                              std::chrono::milliseconds commit_wait);

// The event recorded for one enforcement (exposed for tests and reports).
Event EnforcementEvent(const Enforcement& e, int64_t now);

}  // namespace bounced
