// socketmap.h: Postfix's socketmap protocol (socketmap_table(5)) over the suppression view.
//
// Request: netstring "NAME KEY"; reply: netstring "OK DATA", "NOTFOUND ", "TEMP REASON" or
// "PERM REASON". Maps:
//   recipient_access  for check_recipient_access: a suppressed address gets an access(5) action
//                     ([socketmap] access_action, "550 5.1.1 <addr>: recipient suppressed after
//                     hard bounce on 2026-11-29 (user_unknown)"); anything else NOTFOUND.
//   transport         for transport_maps: a suppressed address gets a transport(5) result
//                     ([socketmap] transport_action, "error:5.1.1 ..."), so mail submitted with
//                     sendmail(1) is stopped too; anything else NOTFOUND.
// Postfix also asks for domains and "user@" partial keys; those are NOTFOUND (we suppress whole
// addresses). Keys arrive lower-cased. An unknown map name is PERM; no storage is TEMP. A
// malformed netstring (or one over kMaxSocketmapRequestBytes) closes the connection with a
// counted warning, as Postfix's own servers do.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "daemon/config.h"
#include "daemon/services.h"
#include "daemon/stream_server.h"

namespace bounced {

inline constexpr size_t kMaxSocketmapRequestBytes = 4096;

struct SocketmapStats {
  std::atomic<uint64_t> lookups{0};
  std::atomic<uint64_t> found{0};
  std::atomic<uint64_t> temp{0};
  std::atomic<uint64_t> perm{0};
  std::atomic<uint64_t> malformed{0};
};

// The reply payload (not yet a netstring) for one request payload.
std::string SocketmapAnswer(Services& services, const SocketmapConfig& config,
                            std::string_view request, SocketmapStats& stats);

std::unique_ptr<Session> MakeSocketmapSession(Services& services, SocketmapConfig config,
                                              std::shared_ptr<SocketmapStats> stats);

// Whether the reply templates make well-formed answers, before any lookup needs them (config
// read, --check-config, reload). access_action must start with an access(5) action Postfix acts
// on as a refusal or a no-op: not empty, not all digits, not OK/RELAY/permit* (Postfix reads an
// empty result and an all-numeric one as OK, and postfix-config lists the map first, so each of
// these would let a suppressed recipient through, relayed), a 4xx/5xx code with a text after
// it, FILTER with one fixed word "transport:destination" (transport a master.cf service name;
// destination may be empty) and REDIRECT with one fixed address "user@domain" (smtpd skips
// either when the argument is unusable, which lets the recipient through).
// transport_action must be a transport(5) result "transport:nexthop" (transport a
// master.cf service name; not both empty, which would route the mail as usual). Both: one line
// of printable ASCII, not starting with a blank, only the placeholders {address}, {date},
// {reason} and {category} (not first, where the action belongs). Errors are
// "socketmap.KEY: reason".
Status ValidateSocketmapConfig(const SocketmapConfig& config);

// "{address}" style placeholders filled from `values` (name, value) pairs.
std::string FillTemplate(
    std::string_view tmpl,
    std::initializer_list<std::pair<std::string_view, std::string_view>> values);

}  // namespace bounced
