// query_fuzz.cc: libFuzzer target for the query socket's requests (daemon/query_handler.h).
//
// Reads: arbitrary bytes as what a client writes to the query socket, one request per line. The
// first byte says whether the peer may write. Each line that is JSON goes to HandleQuery over a
// real Store (SQLite in a temporary directory, opened once and kept across inputs, so requests
// see what earlier ones wrote); the rest get the error reply the session sends. Checks: no
// crash, no sanitizer report, no exception escaping; every reply has a boolean "ok", an error
// reply says why, and its text is one line. [verp] is on (ingest-dsn's envelope_recipient and
// the message's own X-Original-To, Delivered-To or To), and so is a 30-day event retention.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "classifier/rules.h"
#include "daemon/config.h"
#include "daemon/query_handler.h"
#include "daemon/services.h"
#include "fuzz/fuzz_services.h"
#include "storage/store.h"

namespace {

using bounced::fuzz::Check;

// With [verp] on (any prefix and domain), so that ingest-dsn reads return paths too, and a
// 30-day event retention, so that an old bounce is refused and the writer prunes.
bounced::Services& FuzzServices() {
  static bounced::Services& services = []() -> bounced::Services& {
    const bounced::RetentionPolicy retention{.event_days = 30, .counter_days = 30};
    bounced::Services& s = bounced::fuzz::ServicesOverRealStore(
        "query_fuzz", [&](bounced::Store& store) { store.SetRetention(retention); });
    bounced::Config config;
    config.verp.enabled = true;
    config.storage.retention = retention;
    s.SetConfig(std::move(config));
    return s;
  }();
  return services;
}

void CheckReply(const nlohmann::json& reply) {
  Check(reply.is_object());
  Check(reply.contains("ok") && reply["ok"].is_boolean());
  if (!reply["ok"].get<bool>()) {
    Check(reply.contains("error") && reply["error"].is_string());
    Check(!reply["error"].get<std::string>().empty());
  }
  std::string line = bounced::ReplyLine(reply);
  Check(!line.empty() && line.back() == '\n');
  Check(line.find('\n') == line.size() - 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  bounced::Services& services = FuzzServices();
  if (size == 0) return 0;
  const bool may_write = (data[0] & 1) != 0;
  bounced::PeerCred peer;
  peer.pid = 1;
  peer.uid = may_write ? 0 : 65534;
  peer.gid = may_write ? 0 : 65534;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t pos = 0;
  while (pos < input.size()) {
    size_t end = input.find('\n', pos);
    if (end == std::string_view::npos) end = input.size();
    std::string_view line = input.substr(pos, end - pos);
    pos = end + 1;
    nlohmann::json request = nlohmann::json::parse(line, nullptr, false);
    if (request.is_discarded()) {
      CheckReply(nlohmann::json{{"ok", false}, {"error", "invalid JSON"}});
      continue;
    }
    CheckReply(bounced::HandleQuery(services, peer, may_write, request));
  }
  return 0;
}
