// event.cc: building storage Events from classifier output (log events, parsed bounces).
#include <array>
#include <cstdio>

#include "storage/store.h"

namespace bounced {
namespace {

constexpr std::array<std::string_view, 5> kSourceNames = {"log", "journal", "dsn", "milter",
                                                          "manual"};

// The DSN Action (or the kind of message) as the log words the rest of bounced counts by.
std::string LogStatusForBounce(MessageKind kind, const Result& r) {
  if (kind == MessageKind::kFeedbackReport || r.category == Category::kComplaint) {
    return "complaint";
  }
  if (kind == MessageKind::kAutoReply || r.category == Category::kAutoReply) return "auto_reply";
  if (r.dsn_action == "failed") return "bounced";
  if (r.dsn_action == "delayed") return "deferred";
  if (r.dsn_action == "delivered" || r.dsn_action == "relayed" || r.dsn_action == "expanded") {
    return "sent";
  }
  if (r.category == Category::kDelivered) return "sent";
  if (!r.status.empty() && r.status[0] == '4') return "deferred";
  return "bounced";  // a bounce message without an Action field reports a failure
}

std::string Fnv1a64Hex(std::string_view data) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

std::string_view ToString(EventSource s) { return kSourceNames[static_cast<size_t>(s)]; }

std::optional<EventSource> EventSourceFromName(std::string_view name) {
  for (size_t i = 0; i < kSourceNames.size(); ++i) {
    if (kSourceNames[i] == name) return static_cast<EventSource>(i);
  }
  return std::nullopt;
}

Event EventFromLog(const DeliveryEvent& e, EventSource source, std::string position) {
  Event ev;
  ev.source = source;
  ev.source_ref = std::move(position);
  ev.unix_time = e.unix_time;
  ev.time_text = e.time;
  ev.queue_id = e.queue_id;
  ev.message_id = e.message_id;
  ev.sender = e.sender;
  ev.log_status = e.log_status;
  ev.relay = e.relay;
  ev.program = e.program;
  ev.bounce_queue_id = e.bounce_queue_id;
  ev.result = e.result;
  if (ev.result.recipient.empty()) ev.result.recipient = e.recipient;
  if (ev.result.original_recipient.empty()) ev.result.original_recipient = e.orig_recipient;
  return ev;
}

std::vector<Event> EventsFromBounce(const ParsedBounce& b, std::string_view raw_message,
                                    EventSource source, int64_t now) {
  std::vector<Event> out;
  out.reserve(b.recipients.size());
  std::string ref = b.message_id.empty() ? Fnv1a64Hex(raw_message) : b.message_id;
  for (const Result& r : b.recipients) {
    Event ev;
    ev.source = source;
    ev.source_ref = ref;
    ev.unix_time = now;
    ev.queue_id = b.postfix_queue_id;
    ev.message_id = b.original_message_id;
    ev.log_status = LogStatusForBounce(b.kind, r);
    ev.program = b.mta;
    ev.result = r;
    out.push_back(std::move(ev));
  }
  return out;
}

}  // namespace bounced
