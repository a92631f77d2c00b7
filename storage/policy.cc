// policy.cc: automatic suppression decisions (see policy.h and SuppressionPolicy in store.h).
#include "storage/policy.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>
#include <system_error>
#include <vector>

namespace bounced {
namespace {

void ResetCount(PolicyFields& s) {
  s.incidents = 0;
  s.incidents_since = 0;
  s.last_incident = 0;
  s.pending_delivery = 0;
  s.pending_message_id.clear();
  s.pending_earlier.clear();
}

// Stores `list` into `s`'s pending_* fields, the latest as pending_delivery.
void SetPendingDeliveries(PolicyFields& s, std::vector<PendingDelivery> list) {
  std::stable_sort(
      list.begin(), list.end(),
      [](const PendingDelivery& a, const PendingDelivery& b) { return a.time < b.time; });
  s.pending_earlier.clear();
  s.pending_delivery = 0;
  s.pending_message_id.clear();
  if (list.empty()) return;
  for (size_t i = 0; i + 1 < list.size(); ++i) {
    s.pending_earlier += std::to_string(list[i].time);
    s.pending_earlier += ' ';
    s.pending_earlier += list[i].message_id;
    s.pending_earlier += '\n';
  }
  s.pending_delivery = list.back().time;
  s.pending_message_id = std::move(list.back().message_id);
}

// Whether a Message-ID (MessageIdKey form) can tell messages apart here: not empty, and one
// line (a pending_earlier line holds it).
bool KnownMessage(std::string_view id) { return !id.empty() && id.find('\n') == id.npos; }

}  // namespace

bool IsDelivery(const Event& e) {
  return e.log_status == "sent" || e.result.category == Category::kDelivered;
}

bool IsPermanentFailure(const Event& e) {
  return e.log_status == "bounced" || e.log_status == "expired";
}

bool IsHardBounce(const Result& r, std::string_view log_status) {
  return r.hard_bounce() && log_status == "bounced";
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
  PolicyFields f{s.incidents,
                 s.incidents_since,
                 s.last_incident,
                 s.manual_unsuppressed,
                 s.pending_delivery,
                 std::move(s.pending_message_id),
                 std::move(s.pending_earlier)};
  PolicyDecision d = ApplyPolicy(p, f, e, t);
  s.incidents = static_cast<int>(f.incidents);
  s.incidents_since = f.incidents_since;
  s.last_incident = f.last_incident;
  s.manual_unsuppressed = f.manual_unsuppressed;
  s.pending_delivery = f.pending_delivery;
  s.pending_message_id = std::move(f.pending_message_id);
  s.pending_earlier = std::move(f.pending_earlier);
  return d;
}

std::string_view MessageIdKey(std::string_view id) {
  while (!id.empty() && (id.front() == ' ' || id.front() == '\t')) id.remove_prefix(1);
  while (!id.empty() && (id.back() == ' ' || id.back() == '\t')) id.remove_suffix(1);
  if (id.size() >= 2 && id.front() == '<' && id.back() == '>') id = id.substr(1, id.size() - 2);
  return id;
}

std::vector<PendingDelivery> PendingDeliveries(int64_t latest, std::string_view latest_id,
                                               std::string_view earlier) {
  std::vector<PendingDelivery> out;
  while (!earlier.empty()) {
    const size_t nl = earlier.find('\n');
    const std::string_view line = earlier.substr(0, nl);
    earlier = nl == std::string_view::npos ? std::string_view() : earlier.substr(nl + 1);
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp + 1 == line.size()) continue;
    int64_t t = 0;
    auto [end, ec] = std::from_chars(line.data(), line.data() + sp, t);
    if (ec != std::errc() || end != line.data() + sp) continue;
    out.push_back(PendingDelivery{t, std::string(line.substr(sp + 1))});
  }
  if (latest != 0) out.push_back(PendingDelivery{latest, std::string(latest_id)});
  return out;
}

std::vector<PendingDelivery> PendingDeliveries(const PolicyFields& s) {
  return PendingDeliveries(s.pending_delivery, s.pending_message_id, s.pending_earlier);
}

bool PolicyConcerns(const SuppressionPolicy& p, const Event& e) {
  // The same tests, in the same order, as ApplyPolicy's early returns.
  if (e.log_status == "blocked") return false;
  if (IsDelivery(e)) return true;
  const Category c = e.result.category;
  if (c == Category::kComplaint || e.log_status == "complaint") return true;
  const CategoryInfo& info = Describe(c);
  if (info.hard_bounce) return IsHardBounce(e.result, e.log_status);
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
    // the counted failures that follow decide (below). A delivery whose Message-ID is unknown
    // (which may be any message) clears the count at once, and so do deliveries of more than
    // kMaxPendingDeliveries messages waiting together.
    const std::string_view id = MessageIdKey(e.message_id);
    if (!KnownMessage(id)) {
      ResetCount(s);
      return d;
    }
    std::vector<PendingDelivery> pending = PendingDeliveries(s);
    auto same = std::find_if(pending.begin(), pending.end(),
                             [&](const PendingDelivery& p) { return p.message_id == id; });
    if (same != pending.end()) {
      same->time = std::max(same->time, t);
    } else {
      pending.push_back(PendingDelivery{t, std::string(id)});
    }
    if (pending.size() > kMaxPendingDeliveries) {
      ResetCount(s);
    } else {
      SetPendingDeliveries(s, std::move(pending));
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
    if (!IsHardBounce(e.result, e.log_status) || operator_lifted_later) return d;
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
      // Deliveries are waiting. This failure's own message's delivery proves nothing: it was
      // accepted, then bounced; it is dropped. A delivery of another message before this one
      // was accepted (or, when its acceptance was not seen, before this failure) means that
      // message got through after the incidents: they are cleared and this failure starts a
      // new count. Deliveries after it may bounce yet (a relay has several of the recipient's
      // messages in hand) and wait on. A failure whose message is unknown may be of any
      // message: it clears the count too.
      const std::string_view id = MessageIdKey(e.message_id);
      if (!KnownMessage(id)) {
        ResetCount(s);
      } else {
        std::vector<PendingDelivery> pending = PendingDeliveries(s);
        int64_t accepted = t;
        auto own = std::find_if(pending.begin(), pending.end(),
                                [&](const PendingDelivery& p) { return p.message_id == id; });
        if (own != pending.end()) {
          accepted = own->time;
          pending.erase(own);
        }
        const bool other_got_through =
            std::any_of(pending.begin(), pending.end(),
                        [&](const PendingDelivery& p) { return p.time < accepted; });
        if (other_got_through) {
          ResetCount(s);
        } else {
          SetPendingDeliveries(s, std::move(pending));
        }
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
