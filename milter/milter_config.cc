// milter_config.cc: names of the [milter] enum values, validation of MilterConfig, the bounce
// dedup key, and the latency histogram's quantile. No I/O.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <set>

#include "milter/milter.h"
#include "milter/session.h"

namespace bounced {

std::string_view ToString(RcptAction a) {
  switch (a) {
    case RcptAction::kReject:
      return "reject";
    case RcptAction::kTempfail:
      return "tempfail";
    case RcptAction::kLog:
      return "log";
  }
  return "reject";
}

std::string_view ToString(BounceDisposition d) {
  switch (d) {
    case BounceDisposition::kKeep:
      return "keep";
    case BounceDisposition::kDiscard:
      return "discard";
    case BounceDisposition::kQuarantine:
      return "quarantine";
  }
  return "keep";
}

std::string_view ToString(StorageErrorPolicy p) {
  return p == StorageErrorPolicy::kTempfail ? "tempfail" : "accept";
}

std::string_view ToString(EnforcementKind k) {
  switch (k) {
    case EnforcementKind::kRejected:
      return "rejected";
    case EnforcementKind::kTempfailed:
      return "tempfailed";
    case EnforcementKind::kLogged:
      return "logged";
    case EnforcementKind::kRemoved:
      return "removed";
    case EnforcementKind::kMessageDiscarded:
      return "message_discarded";
  }
  return "logged";
}

std::optional<RcptAction> RcptActionFromName(std::string_view name) {
  if (name == "reject") return RcptAction::kReject;
  if (name == "tempfail") return RcptAction::kTempfail;
  if (name == "log") return RcptAction::kLog;
  return std::nullopt;
}

std::optional<BounceDisposition> BounceDispositionFromName(std::string_view name) {
  if (name == "keep") return BounceDisposition::kKeep;
  if (name == "discard") return BounceDisposition::kDiscard;
  if (name == "quarantine") return BounceDisposition::kQuarantine;
  return std::nullopt;
}

std::optional<StorageErrorPolicy> StorageErrorPolicyFromName(std::string_view name) {
  if (name == "accept") return StorageErrorPolicy::kAccept;
  if (name == "tempfail") return StorageErrorPolicy::kTempfail;
  return std::nullopt;
}

namespace {

// libmilter's connection spec: [unix:|local:]/path, inet:PORT[@HOST], inet6:PORT[@HOST].
Status CheckSocketSpec(std::string_view spec) {
  if (spec.empty()) return Status::Ok();
  auto colon = spec.find(':');
  std::string_view proto = colon == std::string_view::npos ? "" : spec.substr(0, colon);
  std::string_view rest = colon == std::string_view::npos ? spec : spec.substr(colon + 1);
  if (proto.empty() || proto == "unix" || proto == "local") {
    if (rest.empty() || rest.front() != '/') {
      return Status::Error("milter.socket: unix socket path must be absolute: '" +
                           std::string(spec) + "'");
    }
    if (rest.size() > 100) return Status::Error("milter.socket: unix socket path too long");
    return Status::Ok();
  }
  if (proto == "inet" || proto == "inet6") {
    std::string_view port = rest.substr(0, rest.find('@'));
    int n = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (ec != std::errc() || p != port.data() + port.size() || n < 1 || n > 65535) {
      return Status::Error("milter.socket: bad port in '" + std::string(spec) +
                           "' (expected inet:PORT@ADDRESS)");
    }
    return Status::Ok();
  }
  return Status::Error("milter.socket: unknown socket type '" + std::string(proto) +
                       "' (expected unix:/path or inet:PORT@ADDRESS)");
}

}  // namespace

Status ValidateMilterConfig(const MilterConfig& c) {
  if (Status s = CheckSocketSpec(c.socket); !s.ok()) return s;
  if (c.socket_mode > 0777) return Status::Error("milter.socket_mode: must be at most 0777");
  if (Status s = milter_internal::CheckReplyTemplate(c.reject_reply, '5'); !s.ok()) {
    return Status::Error("milter.reject_reply: " + s.message());
  }
  if (Status s = milter_internal::CheckReplyTemplate(c.tempfail_reply, '4'); !s.ok()) {
    return Status::Error("milter.tempfail_reply: " + s.message());
  }
  if (c.bounces == BounceDisposition::kQuarantine && c.quarantine_dir.empty()) {
    return Status::Error("milter.quarantine_dir: required when bounces = \"quarantine\"");
  }
  if (c.callback_timeout.count() <= 0) return Status::Error("milter.timeout: must be positive");
  if (c.max_bounce_bytes < 4096 || c.max_bounce_bytes > kMaxMessageBytes) {
    return Status::Error("milter.max_bounce_bytes: must be between 4096 and " +
                         std::to_string(kMaxMessageBytes));
  }
  if (c.removed_header.empty()) return Status::Error("milter.removed_header: must not be empty");
  for (char ch : c.removed_header) {
    if (ch <= 32 || ch >= 127 || ch == ':') {
      return Status::Error("milter.removed_header: not a valid header name");
    }
  }
  return Status::Ok();
}

bool MayRemoveBounce(BounceDisposition disposition, bool captured_whole, bool read_whole) {
  switch (disposition) {
    case BounceDisposition::kKeep:
      return false;
    case BounceDisposition::kQuarantine:
      return captured_whole;
    case BounceDisposition::kDiscard:
      return captured_whole && read_whole;
  }
  return false;
}

std::string BounceDedupKey(const ParsedBounce& p, std::string_view raw_message) {
  if (!p.postfix_queue_id.empty()) {
    // A Postfix DSN that is regenerated after a failed attempt (e.g. "bounce failed" while a
    // milter was down) gets a new Message-ID but keeps these.
    std::set<std::string_view> actions;
    for (const auto& r : p.recipients) actions.insert(r.dsn_action);
    std::string key = "postfix:" + p.reporting_mta + "/" + p.postfix_queue_id + "/" +
                      std::string(ToString(p.kind));
    for (auto a : actions) {
      key += "/";
      key += a;
    }
    return key;
  }
  if (!p.message_id.empty()) return "msgid:" + p.message_id;
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : raw_message) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[32];
  snprintf(buf, sizeof buf, "fnv:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

uint64_t MilterStats::RcptLatencyQuantileNs(double q) const {
  uint64_t total = 0;
  for (uint64_t n : rcpt_latency) total += n;
  if (total == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total));
  if (rank >= total) rank = total - 1;
  uint64_t seen = 0;
  for (size_t i = 0; i < rcpt_latency.size(); ++i) {
    seen += rcpt_latency[i];
    if (seen > rank) return (i + 1) * kRcptBucketNs;
  }
  return rcpt_latency.size() * kRcptBucketNs;
}

}  // namespace bounced
