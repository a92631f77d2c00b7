// policy.cc: automatic suppression decisions (see policy.h and SuppressionPolicy in store.h).
#include "storage/policy.h"

#include <algorithm>
#include <cstdlib>

namespace bounced {
namespace {

void ResetCount(PolicyFields& s) {
  s.incidents = 0;
  s.incidents_since = 0;
  s.last_incident = 0;
  s.pending_delivery = 0;
  s.pending_message_id.clear();
}

}  // namespace

bool IsDelivery(const Event& e) {
  return e.log_status == "sent" || e.result.category == Category::kDelivered;
}

bool IsPermanentFailure(const Event& e) {
  return e.log_status == "bounced" || e.log_status == "expired";
}

bool IsFailure(const Event& e) { return IsPermanentFailure(e) || e.log_status == "deferred"; }

PolicyDecision ApplyEvent(const SuppressionPolicy& p, RecipientState& s, const Event& e,
                          int64_t t) {
  s.events++;
  if (s.first_seen == 0 || t < s.first_seen) s.first_seen = t;
  if (t >= s.last_event) {
    s.last_event = t;
    s.last_category = std::string(ToString(e.result.category));
    s.last_log_status = e.log_status;
  }
  if (e.log_status != "blocked") {
    if (IsDelivery(e)) {
      s.last_delivered = std::max(s.last_delivered, t);
    } else if (IsFailure(e)) {
      s.last_failure = std::max(s.last_failure, t);
    }
  }
  PolicyFields f{s.incidents,           s.incidents_since,  s.last_incident,
                 s.manual_unsuppressed, s.pending_delivery, std::move(s.pending_message_id)};
  PolicyDecision d = ApplyPolicy(p, f, e, t);
  s.incidents = static_cast<int>(f.incidents);
  s.incidents_since = f.incidents_since;
  s.last_incident = f.last_incident;
  s.manual_unsuppressed = f.manual_unsuppressed;
  s.pending_delivery = f.pending_delivery;
  s.pending_message_id = std::move(f.pending_message_id);
  return d;
}

std::string_view MessageIdKey(std::string_view id) {
  while (!id.empty() && (id.front() == ' ' || id.front() == '\t')) id.remove_prefix(1);
  while (!id.empty() && (id.back() == ' ' || id.back() == '\t')) id.remove_suffix(1);
  if (id.size() >= 2 && id.front() == '<' && id.back() == '>') id = id.substr(1, id.size() - 2);
  return id;
}

bool PolicyConcerns(const SuppressionPolicy& p, const Event& e) {
  // The same tests, in the same order, as ApplyPolicy's early returns.
  if (e.log_status == "blocked") return false;
  if (IsDelivery(e)) return true;
  const Category c = e.result.category;
  if (c == Category::kComplaint || e.log_status == "complaint") return true;
  const CategoryInfo& info = Describe(c);
  if (info.hard_bounce) return e.log_status == "bounced";
  if (info.action == Action::kCount && info.fault == Fault::kRecipient) {
    return IsPermanentFailure(e) || (p.count_deferrals && e.log_status == "deferred");
  }
  return false;
}

PolicyDecision ApplyPolicy(const SuppressionPolicy& p, PolicyFields& s, const Event& e, int64_t t) {
  PolicyDecision d;
  // bounced itself refused the recipient: says nothing about the mailbox.
  if (e.log_status == "blocked") return d;

  if (IsDelivery(e)) {
    // A delivery older than the latest incident (log catch-up out of order) resets nothing.
    if (s.incidents == 0 || t < s.last_incident) return d;
    // A relay that answers 250 and bounces later makes Postfix log status=sent before the DSN
    // of the same message arrives: such a delivery proves nothing yet, so it is only noted, and
    // the next counted failure decides (below). Deliveries of two different messages, or of one
    // whose Message-ID is unknown (which may be any message), clear the count at once: whichever
    // message fails next, another one was delivered after the incidents.
    const std::string_view id = MessageIdKey(e.message_id);
    if (id.empty() || (s.pending_delivery != 0 && id != s.pending_message_id)) {
      ResetCount(s);
    } else {
      if (s.pending_delivery == 0) s.pending_message_id.assign(id);
      s.pending_delivery = std::max(s.pending_delivery, t);
    }
    return d;
  }

  const bool operator_lifted_later = s.manual_unsuppressed != 0 && t <= s.manual_unsuppressed;
  const Category c = e.result.category;
  const CategoryInfo& info = Describe(c);

  if (c == Category::kComplaint || e.log_status == "complaint") {
    if (!p.complaints_suppress || operator_lifted_later) return d;
    const std::vector<std::string>& only = p.complaint_report_only_types;
    if (c == Category::kComplaint &&
        std::find(only.begin(), only.end(), e.result.provider_code) != only.end())
      return d;
    d.suppress = true;
    d.reason = kReasonComplaint;
    d.source = "complaint";
    d.expires = p.complaint_expiry_seconds ? t + p.complaint_expiry_seconds : 0;
    d.first_event = t;
    return d;
  }
  if (info.hard_bounce) {
    // A 4xx "user unknown" (lookup trouble on the remote side) is not a hard bounce yet.
    if (e.log_status != "bounced" || operator_lifted_later) return d;
    d.suppress = true;
    d.reason = kReasonHardBounce;
    d.source = "bounce";
    d.expires = p.hard_bounce_expiry_seconds ? t + p.hard_bounce_expiry_seconds : 0;
    d.first_event = t;
    return d;
  }
  if (info.action == Action::kCount && info.fault == Fault::kRecipient) {
    bool counts = IsPermanentFailure(e) || (p.count_deferrals && e.log_status == "deferred");
    // A failure from before the operator's unsuppress (a log read late) neither counts nor
    // suppresses: the unsuppress cleared the count, and the same events must give the same
    // count whether they were read before it or after.
    if (!counts || operator_lifted_later) return d;
    if (s.pending_delivery != 0) {
      // The deliveries noted since the last incident were of one message. This failure's own
      // (its Message-ID the same) proves nothing: it was accepted, then bounced. Any other
      // message's, or a failure whose message is unknown, means another message got through
      // after the incidents: they are cleared and this failure starts a new count.
      const std::string_view id = MessageIdKey(e.message_id);
      if (id.empty() || id != s.pending_message_id) {
        ResetCount(s);
      } else {
        s.pending_delivery = 0;
        s.pending_message_id.clear();
      }
    }
    // Failures close to an incident already counted (a burst of retries, several messages at
    // once, or a retry replayed out of order) belong to it.
    bool same_incident =
        s.incidents > 0 && (std::llabs(t - s.last_incident) < p.incident_merge_seconds ||
                            std::llabs(t - s.incidents_since) < p.incident_merge_seconds);
    if (!same_incident) {
      s.incidents++;
      s.last_incident = std::max(s.last_incident, t);
      s.incidents_since = s.incidents_since == 0 ? t : std::min(s.incidents_since, t);
    }
    if (s.incidents >= p.count_threshold &&
        s.last_incident - s.incidents_since >= p.count_min_span_seconds) {
      d.suppress = true;
      d.reason = kReasonRepeatedFailure;
      d.source = "bounce";
      d.expires = p.count_expiry_seconds ? t + p.count_expiry_seconds : 0;
      d.first_event = s.incidents_since;
    }
    return d;
  }
  // Sender-fault, transient and other categories only feed the counters.
  return d;
}

}  // namespace bounced
