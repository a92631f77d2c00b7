// result_json.cc: see result_json.h.
#include "classifier/result_json.h"

namespace bounced {

nlohmann::json ToJson(const Result& r) {
  const CategoryInfo& info = Describe(r.category);
  return nlohmann::json{
      {"recipient", r.recipient},
      {"original_recipient", r.original_recipient},
      {"category", info.name},
      {"fault", ToString(info.fault)},
      {"cause", info.cause},
      {"hard_bounce", info.hard_bounce},
      {"action", ToString(info.action)},
      {"status", r.status},
      {"reply_code", r.reply_code},
      {"stage", r.stage},
      {"provider", r.provider},
      {"provider_code", r.provider_code},
      {"diagnostic", r.diagnostic},
      {"remote_mta", r.remote_mta},
      {"dsn_action", r.dsn_action},
      {"rule", r.rule},
  };
}

}  // namespace bounced
