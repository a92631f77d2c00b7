// result_json.h: the one JSON form of a Result, used by bouncectl, the query socket and the
// database's event rows. Field names are a public contract (see result.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "classifier/result.h"

namespace bounced {

// {"recipient", "original_recipient", "category", "fault", "cause", "hard_bounce", "action",
//  "status", "reply_code", "stage", "provider", "provider_code", "diagnostic", "remote_mta",
//  "dsn_action", "rule"}
nlohmann::json ToJson(const Result& r);

// Appends ToJson(r).dump(-1, ' ', false, error_handler_t::replace) byte for byte (keys in
// nlohmann's sorted order), without building the json object: bulk output (bouncectl parse)
// spent more time building and dumping json objects than parsing the bounces.
void AppendJson(const Result& r, std::string* out);

// Appends `s` as a JSON string, exactly as the dump above writes a string value.
void AppendJsonString(std::string_view s, std::string* out);

}  // namespace bounced
