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
//   list        [category] [domain] [source] [since] [until] [limit] [after] [include_expired]
//                                                          read   -> [suppression, ...]
//   export      [format=csv|jsonl|text] + list filters     read   -> {"format","count","data"}
//               [stream=true]                                      (streamed: see below)
//   events      [since=24h] [until] [category] [provider] [provider_code] [log_status]
//               [source] [domain] [sender] [sender_domain]  read   -> [event, ...] (as status's
//               [limit=50]                                 "events"), the most recently
//                                                          recorded first; provider "-" = none
//                                                          known, sender "<>" = the null sender;
//                                                          limit at most 10000; [after_id]:
//                                                          those recorded after event
//                                                          after_id, the oldest first
//   changes     [after_id] [since=24h] [domain]           read   -> [change, ...] (store_json.h)
//               [limit=1000]                                       the suppression list's
//                                                                  changes (add, update,
//                                                                  remove), the oldest first;
//                                                                  since defaults to 0 with
//                                                                  after_id (a client's cursor:
//                                                                  the last "id" it got)
//   stats       [by=domain|provider|sender_domain]         read   -> {"by","days","rows"}
//               [only] [days] [per_day]
//   allowlist                                              read   -> [entry, ...]
//   health                                                 read   -> storage, inputs, sockets
//   metrics                                                read   -> {"format": "prometheus",
//                                                                  "text": ...} (daemon/metrics.h;
//                                                                  counters, no SQLite)
//   suppress    address reason [category] [expires]        write
//   unsuppress  address reason                             write
//   unsuppress  [category] [domain] [source] [since] [until] write  -> {"count", "dry_run",
//               | all=true; reason (not for dry_run=true)          "sample": [first 20 keys]}:
//                                                                  every live entry selected,
//                                                                  in one transaction; with
//                                                                  dry_run=true, read (lifts
//                                                                  nothing)
//   allow       entry reason                               write  (address or domain)
//   disallow    entry reason                               write
//   import      data [format=csv|jsonl|text] [reason]      write  (all or nothing; errors list
//               [part] [more] [ignore_unknown_columns]             "line N: why"; in parts:
//               [category] [dry_run]                               see below; category: of the
//                                                                  entries the file's reasons
//                                                                  give none; dry_run: check
//                                                                  and count, write nothing)
//                                                                  -> {"added", "updated",
//                                                                  "categorized", "categories"
//                                                                  {name: count, "": none},
//                                                                  "dry_run",
//                                                                  ["ignored_columns"]}
//   ingest-dsn  message | message_base64                   write  (parsed like `bouncectl
//               [envelope_recipient]                               parse`, recorded once per
//                                                                  Message-ID + recipient; with
//                                                                  [verp] on, about the recipient
//                                                                  its return path encodes:
//                                                                  verp_recipient in the reply)
//   reload                                                 write  (config and rules)
// The address of status, suppress and unsuppress may be spelt any way (case, <>, a +extension):
// it names the stored key (NormalizeAddress, storage/store.h). One that is no address (no '@',
// an empty local part or domain, control characters, too long: IsAddress) is refused first,
// before the other fields, alike by the three: {"ok": false, "error": "invalid address 'x'"}.
// `since` is unix seconds, an RFC 3339 date/time, or a relative "7d" / "12h"; `expires` is unix
// seconds, a date, a relative "30d" or "never" (also 0): it must lie in the future and at most
// 100 years ahead (spans too: "since" 200y is refused), else the request is refused.
//
// Streamed export ({"cmd":"export","stream":true,...}): the reply is several lines,
//   {"ok": true, "more": true, "data": "lines..."}      each about 64 KiB of whole lines, as
//                                                       SQLite reads them (one snapshot)
//   {"ok": true, "result": {"format", "count"}}         the end; or {"ok": false, "error"} when
//                                                       the store failed midway (data incomplete)
// The daemon makes the next piece only while the client reads the previous one (memory stays
// bounded whatever the list's size). Requests sent meanwhile are answered after the last line.
//
// `list` and `export` without "stream" are one reply line each, however large, written the
// same way as SQLite reads the rows: {"result": ..., "ok": true} with "ok" after the result, so
// that a store failing midway still ends the line as JSON: {"result": <incomplete>, "ok":
// false, "error": "... failed midway ..."} (a failure before any of it was sent is the usual
// {"ok": false, "error"}).
//
// Writes, status, stats, events, health, metrics, ingest-dsn and reload are answered on a thread of
// their own (a write waits for SQLite's lock while another process holds it, up to the busy
// timeout), so the socket's io threads keep answering other clients; lookup and allowlist are
// answered at once. Pipelined requests are answered in order. Once a connection's unwritten replies
// reach kMaxPendingReplyBytes, the daemon writes them before it answers the next request, and reads
// nothing more from a client while its replies wait to be written: a client that sends without
// reading is left with full socket buffers, not the daemon with its replies.
//
// Import in parts: {"cmd":"import","part":N,"more":true,"data":"..."} for N = 0, 1, 2, ... and
// "more": false (or absent) on the last part; "format", "reason" and, when known, "size" (all
// the parts' data in bytes: too large is refused at once) on part 0. Each part gets
// a reply ({"part","received","max_request_bytes","max_import_bytes"} before the last; the
// import's reply after the last). The parts' data are joined in order and imported all or
// nothing when the last part arrives, so line numbers in errors count from the start of the
// whole data. A refused part (permission, order, size) ends the import; a part 0 starts a new
// one; a connection closed before the last part imports nothing. The single-request import
// is the same thing in one part. bouncectl sends an empty part 0 first to learn the limits.
//
// Limits (named, from [query]): a request line longer than max_request_bytes gets an error
// reply and the connection is closed; an import whose parts add up to more than
// max_import_bytes is refused; invalid JSON or an unknown command gets an error reply and the
// connection stays open.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/services.h"
#include "daemon/stream_server.h"

namespace bounced {

// 2: streamed export and import in parts (both added; version 1 requests are unchanged).
inline constexpr int kQueryProtocolVersion = 2;

// Replies a connection holds before they are written (see above); one reply may pass it.
inline constexpr size_t kMaxPendingReplyBytes = 1024 * 1024;

// Handles one request from `peer`; never throws. A `list` or `export` reply is built whole here
// (for callers in the process); the query session writes those in pieces instead.
nlohmann::json HandleQuery(Services& services, const PeerCred& peer, bool peer_may_write,
                           const nlohmann::json& request);

// Whether `peer` may send write commands: root, the daemon's effective uid, or `group` as
// primary or supplementary group.
bool PeerMayWrite(const PeerCred& peer, const std::string& group);

// One query connection: splits lines, enforces the size cap, answers each request, keeps an
// import sent in parts until its last part, streams exports.
std::unique_ptr<Session> MakeQuerySession(Services& services, const PeerCred& peer,
                                          size_t max_request_bytes, const std::string& group);

// JSON text of a reply line (invalid UTF-8 replaced, never throws), with the trailing newline.
std::string ReplyLine(const nlohmann::json& reply);

}  // namespace bounced
