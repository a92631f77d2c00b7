// result_json.h: the one JSON form of a Result, used by bouncectl, the query socket and the
// database's event rows. Field names are a public contract (see result.h).
#pragma once

#include <nlohmann/json.hpp>

#include "classifier/result.h"

namespace bounced {

// {"recipient", "original_recipient", "category", "fault", "cause", "hard_bounce", "action",
//  "status", "reply_code", "stage", "provider", "provider_code", "diagnostic", "remote_mta",
//  "dsn_action", "rule"}
nlohmann::json ToJson(const Result& r);

}  // namespace bounced
