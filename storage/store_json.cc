// store_json.cc: JSON forms of storage records (see store_json.h).
#include "storage/store_json.h"

#include "classifier/result_json.h"
#include "storage/policy.h"

namespace bounced {
namespace {

nlohmann::json TimeOrNull(int64_t t) {
  if (t == 0) return nullptr;
  return FormatTime(t);
}

}  // namespace

nlohmann::json ToJson(const Suppression& s) {
  return {{"address", s.address},
          {"display", s.display},
          {"reason", s.reason},
          {"category", s.category},
          {"source", s.source},
          {"first_event", TimeOrNull(s.first_event)},
          {"last_event", TimeOrNull(s.last_event)},
          {"created", TimeOrNull(s.created)},
          {"expires", TimeOrNull(s.expires)},
          {"detail", s.detail},
          {"delivered_after", TimeOrNull(s.delivered_after)}};
}

nlohmann::json ToJson(const StoredEvent& se) {
  const Event& e = se.event;
  nlohmann::json j = ToJson(e.result);
  j["id"] = se.id;
  j["source"] = std::string(ToString(e.source));
  j["source_ref"] = e.source_ref;
  j["time"] = e.time_text.empty() ? FormatTime(e.unix_time) : e.time_text;
  j["unix_time"] = e.unix_time;
  j["queue_id"] = e.queue_id;
  j["message_id"] = e.message_id;
  j["sender"] = e.sender;
  j["log_status"] = e.log_status;
  j["relay"] = e.relay;
  j["program"] = e.program;
  j["bounce_queue_id"] = e.bounce_queue_id;
  j["counted"] = se.counted;
  if (se.as_original_recipient) j["as_original_recipient"] = true;
  return j;
}

nlohmann::json ToJson(const AllowEntry& a) {
  return {{"entry", a.entry},
          {"kind", a.domain ? "domain" : "address"},
          {"reason", a.reason},
          {"created", TimeOrNull(a.created)},
          {"uid", a.actor_uid}};
}

nlohmann::json ToJson(const SuppressionChange& c) {
  return {{"id", c.id},
          {"time", TimeOrNull(c.time)},
          {"address", c.address},
          {"action", c.action},
          {"source", c.source},
          {"reason", c.reason},
          {"category", c.category},
          {"uid", c.actor_uid},
          {"note", c.note}};
}

nlohmann::json ToJson(const AddressStatus& s) {
  nlohmann::json j;
  j["address"] = s.address;
  j["key"] = s.key;
  j["suppressed"] = s.suppressed;
  const Suppression* sup = s.suppression ? &*s.suppression : nullptr;
  j["reason"] = sup ? nlohmann::json(sup->reason) : nlohmann::json(nullptr);
  j["category"] = sup ? nlohmann::json(sup->category) : nlohmann::json(nullptr);
  j["source"] = sup ? nlohmann::json(sup->source) : nlohmann::json(nullptr);
  j["since"] = sup ? TimeOrNull(sup->created) : nlohmann::json(nullptr);
  j["expires"] = sup ? TimeOrNull(sup->expires) : nlohmann::json(nullptr);
  j["allowlisted"] = s.allowed_by.has_value();
  j["allowed_by"] = s.allowed_by ? ToJson(*s.allowed_by) : nlohmann::json(nullptr);
  j["suppression"] = sup ? ToJson(*sup) : nlohmann::json(nullptr);
  if (s.state) {
    const RecipientState& r = *s.state;
    j["state"] = {{"first_seen", TimeOrNull(r.first_seen)},
                  {"last_event", TimeOrNull(r.last_event)},
                  {"last_category", r.last_category},
                  {"last_log_status", r.last_log_status},
                  {"last_delivered", TimeOrNull(r.last_delivered)},
                  {"last_failure", TimeOrNull(r.last_failure)},
                  {"incidents", r.incidents},
                  {"incidents_since", TimeOrNull(r.incidents_since)},
                  {"manual_unsuppressed", TimeOrNull(r.manual_unsuppressed)},
                  {"events", r.events},
                  {"pending_delivery", TimeOrNull(r.pending_delivery)},
                  {"pending_message_id", r.pending_message_id.empty()
                                             ? nlohmann::json(nullptr)
                                             : nlohmann::json(r.pending_message_id)}};
    // Every delivery waiting, oldest first (the latest is pending_delivery's, above).
    nlohmann::json pending = nlohmann::json::array();
    for (const PendingDelivery& p :
         PendingDeliveries(r.pending_delivery, r.pending_message_id, r.pending_earlier)) {
      pending.push_back({{"message_id", p.message_id}, {"delivered", TimeOrNull(p.time)}});
    }
    j["state"]["pending_deliveries"] = std::move(pending);
  } else {
    j["state"] = nullptr;
  }
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : s.events) events.push_back(ToJson(e));
  j["events"] = std::move(events);
  nlohmann::json history = nlohmann::json::array();
  for (const SuppressionChange& c : s.history) history.push_back(ToJson(c));
  j["history"] = std::move(history);
  return j;
}

nlohmann::json ToJson(const StatsRow& r) {
  nlohmann::json j = {{"key", r.key},
                      {"category", r.category},
                      {"provider_code", r.provider_code},
                      {"log_status", r.log_status},
                      {"count", r.count}};
  if (!r.day.empty()) j["day"] = r.day;
  return j;
}

nlohmann::json ToJson(const Health& h) {
  return {{"schema_version", h.schema_version},
          {"path", h.path},
          {"integrity_ok", h.integrity_ok},
          {"integrity", h.integrity_detail},
          {"events", h.events},
          {"suppressions", h.suppressions},
          {"allowlist", h.allowlist},
          {"recipients", h.recipients},
          {"queued_batches", h.queued_batches},
          {"last_write_error", h.last_write_error},
          {"event_retention_days", h.retention.event_days},
          {"counter_retention_days", h.retention.counter_days},
          {"oldest_event_day", h.oldest_event_day},
          {"events_pruned", h.pruned.events_pruned},
          {"counter_rows_pruned", h.pruned.counter_rows_pruned},
          {"events_too_old", h.pruned.events_too_old}};
}

}  // namespace bounced
