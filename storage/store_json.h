// store_json.h: the JSON forms of storage records, shared by the query socket, bouncectl and
// export. Field names are a public contract: never rename one, only add.
#pragma once

#include <nlohmann/json.hpp>

#include "storage/store.h"

namespace bounced {

// RFC 3339 UTC ("2026-11-29T17:09:53Z"); "" for 0.
std::string FormatTime(int64_t unix_time);

// {"address", "display", "reason", "category", "source", "first_event", "last_event",
//  "created", "expires", "detail", "delivered_after"}; times RFC 3339 or null.
nlohmann::json ToJson(const Suppression& s);
// {"id", "source", "source_ref", "time", "queue_id", "message_id", "sender", "log_status",
//  "relay", "program", "bounce_queue_id", "counted"} plus every field of ToJson(Result).
nlohmann::json ToJson(const StoredEvent& e);
// {"entry", "kind": "address"|"domain", "reason", "created", "uid"}
nlohmann::json ToJson(const AllowEntry& a);
// {"address", "key", "suppressed", "reason", "category", "since", "expires", "source",
//  "allowlisted", "allowed_by", "suppression", "state", "events": [...], "history": [change,
//  ...]}: the `status` reply.
nlohmann::json ToJson(const AddressStatus& s);
// {"id", "time", "address", "action", "source", "reason", "category", "uid", "note"}
nlohmann::json ToJson(const SuppressionChange& c);
// {"day"?, "key", "category", "provider_code", "log_status", "count"}
nlohmann::json ToJson(const StatsRow& r);
nlohmann::json ToJson(const Health& h);

}  // namespace bounced
