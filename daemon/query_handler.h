// query_handler.h: the query socket's protocol: one JSON object per line in, one per line out.
//
// Request:  {"cmd": "status", "address": "user@example.com"}            (one line)
// Reply:    {"ok": true, "result": ...}  or  {"ok": false, "error": "what went wrong"}
//
// Commands (read: anyone who can open the socket; write: root, the daemon's own user, or a
// member of [query] group, by SO_PEERCRED; every write is logged and manual changes audited):
//   status      address                                    read   -> storage's status JSON
//   lookup      address                                    read   -> {"address", "suppressed",
//                                                          "since", "expires", "category",
//                                                          "manual"} from memory (no SQLite)
//   list        [category] [domain] [source] [since] [limit] [after] [include_expired]
//                                                          read   -> [suppression, ...]
//   export      [format=csv|jsonl] + list filters          read   -> {"format","count","data"}
//   stats       [by=domain|provider] [only] [days] [per_day]  read -> {"by","days","rows"}
//   allowlist                                              read   -> [entry, ...]
//   health                                                 read   -> storage, inputs, sockets
//   suppress    address reason [category] [expires]        write
//   unsuppress  address reason                             write
//   allow       entry reason                               write  (address or domain)
//   disallow    entry reason                               write
//   import      data [format=csv|jsonl] [reason]           write  (all or nothing; errors list
//                                                                  "line N: why")
//   ingest-dsn  message | message_base64                   write  (parsed like `bouncectl
//                                                                  parse`, recorded once per
//                                                                  Message-ID + recipient)
//   reload                                                 write  (config and rules)
// `since` is unix seconds, an RFC 3339 date/time, or a relative "7d" / "12h"; `expires` is unix
// seconds or a relative "30d".
//
// Limits (named, from [query]): a request line longer than max_request_bytes gets an error
// reply and the connection is closed; invalid JSON or an unknown command gets an error reply
// and the connection stays open.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/services.h"
#include "daemon/stream_server.h"

namespace bounced {

inline constexpr int kQueryProtocolVersion = 1;

// Handles one request from `peer`; never throws.
nlohmann::json HandleQuery(Services& services, const PeerCred& peer, bool peer_may_write,
                           const nlohmann::json& request);

// Whether `peer` may send write commands: root, the daemon's effective uid, or `group` as
// primary or supplementary group.
bool PeerMayWrite(const PeerCred& peer, const std::string& group);

// One query connection: splits lines, enforces the size cap, answers each request.
std::unique_ptr<Session> MakeQuerySession(Services& services, const PeerCred& peer,
                                          size_t max_request_bytes, const std::string& group);

// JSON text of a reply line (invalid UTF-8 replaced, never throws), with the trailing newline.
std::string ReplyLine(const nlohmann::json& reply);

}  // namespace bounced
