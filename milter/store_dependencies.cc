// store_dependencies.cc: MilterDependencies on a Store (see store_dependencies.h).
#include "milter/store_dependencies.h"

#include <atomic>
#include <ctime>
#include <future>

#include <unistd.h>

namespace bounced {
namespace {

int64_t Now() { return static_cast<int64_t>(time(nullptr)); }

Status SubmitAndWait(Store& store, Batch batch, std::chrono::milliseconds wait) {
  std::future<Status> done = store.Submit(std::move(batch));
  if (done.wait_for(wait) != std::future_status::ready) {
    return Status::Error("storage writer did not commit within " + std::to_string(wait.count()) +
                         " ms");
  }
  return done.get();
}

}  // namespace

Event EnforcementEvent(const Enforcement& e, int64_t now) {
  // Each enforcement is its own occurrence: a unique source_ref keeps storage from folding two
  // rejections of the same address together.
  static std::atomic<uint64_t> seq{0};
  Event ev;
  ev.source = EventSource::kMilter;
  ev.source_ref = "milter:" + std::string(ToString(e.kind)) + ":" + std::to_string(now) + ":" +
                  std::to_string(getpid()) + ":" + std::to_string(seq.fetch_add(1));
  ev.unix_time = now;
  ev.queue_id = e.queue_id;
  ev.sender = e.sender;
  ev.log_status = "blocked";
  ev.program = "milter";
  ev.result.recipient = e.recipient;
  ev.result.category = e.suppression.category;
  ev.result.stage =
      e.kind == EnforcementKind::kRemoved || e.kind == EnforcementKind::kMessageDiscarded ? "eom"
                                                                                          : "rcpt";
  ev.result.diagnostic = "bounced milter: recipient " + std::string(ToString(e.kind)) +
                         " (suppressed: " + e.suppression.reason + ")";
  ev.result.rule = "milter";
  return ev;
}

MilterDependencies MilterDependenciesForStore(Store& store,
                                              std::function<std::shared_ptr<const RuleSet>()> rules,
                                              std::chrono::milliseconds commit_wait) {
  MilterDependencies d;
  d.lookup = [&store](std::string_view address) -> Expected<std::optional<MilterSuppression>> {
    std::optional<SuppressionHit> hit = store.view().Lookup(address);
    if (!hit) return std::optional<MilterSuppression>();
    MilterSuppression m;
    m.category = hit->category;
    m.since_unix = hit->since;
    m.reason = hit->manual                             ? "manual"
               : hit->category == Category::kComplaint ? "complaint"
                                                       : "bounce";
    return std::optional<MilterSuppression>(std::move(m));
  };
  d.record_enforcement = [&store, commit_wait](const Enforcement& e) {
    Batch b;
    b.events.push_back(EnforcementEvent(e, Now()));
    return SubmitAndWait(store, std::move(b), commit_wait);
  };
  d.record_bounce = [&store, commit_wait](const CapturedBounce& cb) {
    if (cb.parsed == nullptr) return Status::Error("record_bounce: no parsed bounce");
    Batch b;
    b.events = EventsFromBounce(*cb.parsed, cb.raw_message, EventSource::kMilter, Now());
    for (Event& ev : b.events) {
      ev.source_ref = cb.dedup_key;
      ev.bounce_queue_id = cb.queue_id;
    }
    return SubmitAndWait(store, std::move(b), commit_wait);
  };
  d.rules = std::move(rules);
  return d;
}

}  // namespace bounced
