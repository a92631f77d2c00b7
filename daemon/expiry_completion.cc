// expiry_completion.cc: `expired` events finished from the store (see expiry_completion.h).
#include "daemon/expiry_completion.h"

#include <string>
#include <unordered_map>

#include "classifier/log_parser.h"

namespace bounced {

bool ExpiryNeedsStore(const Event& e) {
  return e.log_status == "expired" && !e.queue_id.empty() &&
         (e.result.recipient.empty() || e.message_id.empty());
}

Expected<std::vector<Event>> CompleteExpiry(Store& store, const RuleSet& rules, Event expired) {
  std::vector<Event> out;
  const int64_t t = expired.unix_time;
  if (!expired.result.recipient.empty()) {
    out.push_back(std::move(expired));
  } else {
    // A time of 0 (a timestamp the correlator could not read) looks through everything.
    auto stored = store.QueueEvents(
        {expired.queue_id, t > kExpiryDeferralWindowSeconds ? t - kExpiryDeferralWindowSeconds : 0,
         ""});
    if (!stored) return stored.status();
    // The latest event of each recipient, in the order the recipients first appear; recipients
    // are told apart as the correlator tells its pending ones apart (with orig_to=).
    std::unordered_map<std::string, size_t> index;
    std::vector<const StoredEvent*> latest;
    std::string message_id;
    for (const StoredEvent& se : *stored) {
      const Event& e = se.event;
      if (e.log_status == "expired" && e.source == expired.source &&
          e.source_ref == expired.source_ref) {
        return out;  // this line was read before and its events are stored
      }
      if (message_id.empty()) message_id = e.message_id;
      if (e.result.recipient.empty()) continue;  // an expiry stored without recipients
      std::string key = e.result.recipient + '\n' + e.result.original_recipient;
      auto [it, added] = index.try_emplace(std::move(key), latest.size());
      if (added) {
        latest.push_back(&se);
      } else {
        latest[it->second] = &se;
      }
    }
    for (const StoredEvent* se : latest) {
      const Event& d = se->event;
      if (d.log_status != "deferred") continue;  // delivered, bounced or expired already
      Event e = expired;
      e.result = ExpiredResultAfter(rules, d.result);
      e.relay = d.relay;
      if (e.message_id.empty()) e.message_id = d.message_id.empty() ? message_id : d.message_id;
      if (e.bounce_queue_id.empty()) e.bounce_queue_id = d.bounce_queue_id;
      out.push_back(std::move(e));
    }
    // No deferral stored: they were before the log began. The expiry itself, as the correlator
    // reports it.
    if (out.empty()) out.push_back(std::move(expired));
  }
  // One message, one message-id: found through one recipient, it is every recipient's.
  std::string found;
  for (Event& e : out) {
    if (!e.message_id.empty() || e.result.recipient.empty()) continue;
    if (found.empty()) {
      auto stored = store.QueueEvents(
          {e.queue_id, t > kMaxQueueLifetimeSeconds ? t - kMaxQueueLifetimeSeconds : 0,
           e.result.recipient});
      if (!stored) return stored.status();
      for (const StoredEvent& se : *stored) {
        if (!se.event.message_id.empty()) {
          found = se.event.message_id;
          break;
        }
      }
    }
    e.message_id = found;
  }
  return out;
}

}  // namespace bounced
