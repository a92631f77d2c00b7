// milter.h: the bounced milter (libmilter), hosted inside the bounced process.
//
// What it does, per Postfix path:
//   smtpd_milters (mail from SMTP clients): at RCPT TO, a suppressed recipient gets a
//     per-recipient reply (smfi_setreply; reject 5xx, tempfail 4xx, or log = dry run) and the
//     other recipients of the transaction go through.
//   non_smtpd_milters (sendmail(1)/pickup, and Postfix's own bounces when
//     internal_mail_filter_classes = bounce): Postfix forbids rejecting recipients there, so
//     suppressed recipients are removed at end of message (smfi_delrcpt) and a header
//     `X-Bounced-Suppressed:` names them. If every recipient is suppressed the message is
//     discarded. The two paths are told apart by the connect information Postfix's cleanup(8)
//     emulates for non-SMTP mail (client "localhost", address 127.0.0.1, port 0), which a real
//     SMTP connection can never have (see milter/session.h, README "Wiring into Postfix: milter").
//   Both paths: a message that is a DSN, an ARF report or an auto-reply is captured (up to
//     max_bounce_bytes), parsed with ParseBounce at end of message and every recipient result is
//     handed to the event recorder with a dedup key, so the same bounce is recorded once even
//     when Postfix or a remote MTA retries it. Then it is kept (default), discarded or
//     quarantined (saved to quarantine_dir, then discarded). A bounce is never rejected.
//
// Reads: the suppression view (in memory, through Dependencies::lookup) and the rules.
// Writes: events through Dependencies::record_*; quarantined messages to quarantine_dir; the
// milter socket (created by libmilter; unix sockets get socket_mode).
//
// Fail-safe: the lookup is an in-memory read; recording is an enqueue. End-of-message bounce
// work runs on a worker of its own (enforcement records, which wait for their commit, have
// another), bounded by callback_timeout; on timeout the message is kept and, not being known as a
// bounce, still has its suppressed recipients removed (sendmail(1) path). A storage
// error answers per on_storage_error (accept by default) and is logged once per incident (the
// first failure after a success), not per message. Pair with Postfix
// `milter_default_action = accept` so mail also flows while bounced itself is down.
//
// libmilter keeps process-global state: StartMilter may be called once per process; after
// StopMilter the milter cannot be started again in the same process (restart the daemon to
// change [milter] socket). Every other key can change while it runs (ReconfigureMilter, which
// the daemon's reload calls). Thread safety: all functions may be called from any thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "classifier/dsn_parser.h"
#include "classifier/result.h"
#include "classifier/rules.h"
#include "classifier/verp.h"
#include "common/status.h"

namespace bounced {

// What the milter does to a suppressed recipient ([milter.actions] per category).
enum class RcptAction { kReject, kTempfail, kLog };
// What happens to a bounce after it is recorded ([milter] bounces).
enum class BounceDisposition { kKeep, kDiscard, kQuarantine };
// Answer when the suppression view or the recorder fails ([milter] on_storage_error).
enum class StorageErrorPolicy { kAccept, kTempfail };

std::string_view ToString(RcptAction a);          // "reject", "tempfail", "log"
std::string_view ToString(BounceDisposition d);   // "keep", "discard", "quarantine"
std::string_view ToString(StorageErrorPolicy p);  // "accept", "tempfail"
std::optional<RcptAction> RcptActionFromName(std::string_view name);
std::optional<BounceDisposition> BounceDispositionFromName(std::string_view name);
std::optional<StorageErrorPolicy> StorageErrorPolicyFromName(std::string_view name);

// The [milter] section. Every field has a working default; the daemon parses TOML into this.
//   [milter]
//   socket = "unix:/run/bounced/milter.sock"   # or "inet:PORT@127.0.0.1"; "" disables
//   socket_mode = "0660"                       # unix socket permission bits
//   socket_group = ""                          # group of the unix socket ("" keeps the default)
//   action = "reject"                          # default for every category
//   reject_reply = "550 5.1.1 <{addr}>: recipient suppressed since {since} ({category}); not sent"
//   tempfail_reply = "450 4.2.1 <{addr}>: recipient suppressed since {since} ({category}); try
//   later" bounces = "keep"                           # keep | discard | quarantine quarantine_dir
//   = "/var/lib/bounced/quarantine" on_storage_error = "accept"                # accept | tempfail
//   timeout = "2s"                             # per-callback bound (callback_timeout)
//   max_bounce_bytes = 1048576                 # bounce capture cap
//   [milter.actions]                           # optional per-category override
//   mailbox_full = "log"
struct MilterConfig {
  std::string socket;  // libmilter connection spec; "" disables the milter
  uint32_t socket_mode = 0660;
  std::string socket_group;
  RcptAction default_action = RcptAction::kReject;
  // Per-category override of default_action, indexed by static_cast<int>(Category).
  std::array<std::optional<RcptAction>, kCategoryCount> category_actions{};
  // Reply templates: "CODE X.Y.Z text". Placeholders: {addr} (the recipient as given),
  // {since} (YYYY-MM-DD, UTC), {category} (e.g. user_unknown), {reason} (bounce, complaint,
  // manual, import). The code must be 5xx for reject_reply and 4xx for tempfail_reply.
  std::string reject_reply =
      "550 5.1.1 <{addr}>: recipient suppressed since {since} ({category}); not sent";
  std::string tempfail_reply =
      "450 4.2.1 <{addr}>: recipient suppressed since {since} ({category}); try later";
  BounceDisposition bounces = BounceDisposition::kKeep;
  std::string quarantine_dir = "/var/lib/bounced/quarantine";
  StorageErrorPolicy on_storage_error = StorageErrorPolicy::kAccept;
  std::chrono::milliseconds callback_timeout{2000};
  size_t max_bounce_bytes = 1024 * 1024;
  // Header added to sendmail(1) mail whose suppressed recipients were removed.
  std::string removed_header = "X-Bounced-Suppressed";
  // Set from [verp] when enabled (not a [milter] key): a bounce whose one envelope recipient is a
  // VERP return path is about the recipient it encodes (classifier/verp.h, ApplyVerp).
  std::optional<VerpFormat> verp;

  RcptAction ActionFor(Category c) const {
    const auto& o = category_actions[static_cast<int>(c)];
    return o ? *o : default_action;
  }
};

// Checks templates (codes, placeholders), socket spec syntax and the quarantine setting.
// Returns an error naming the key ("milter.reject_reply: code must be 5xx").
Status ValidateMilterConfig(const MilterConfig& config);

// One active suppression as the milter needs it.
struct MilterSuppression {
  Category category = Category::kUserUnknown;
  std::string reason;      // bounce, complaint, manual, import
  int64_t since_unix = 0;  // when the suppression started (seconds, UTC)
};

// What the milter did (or, for kLog, would have done) to a recipient.
enum class EnforcementKind {
  kRejected,         // smtpd path, 5xx at RCPT
  kTempfailed,       // smtpd path, 4xx at RCPT
  kLogged,           // dry run: action "log", nothing refused
  kRemoved,          // sendmail(1) path: recipient removed at end of message
  kMessageDiscarded  // sendmail(1) path: every recipient was suppressed
};
std::string_view ToString(EnforcementKind k);

struct Enforcement {
  EnforcementKind kind;
  std::string recipient;  // as Postfix gave it, angle brackets stripped
  std::string sender;     // envelope sender ("" for the null sender)
  std::string queue_id;   // Postfix queue id (macro i) when known, else ""
  MilterSuppression suppression;
};

// One bounce seen by the milter, for the recorder. Storage dedups events by
// (dedup_key, recipient): dedup_key is stable across retries of the same bounce.
struct CapturedBounce {
  const ParsedBounce* parsed = nullptr;  // valid for the duration of the call only
  std::string_view raw_message;          // the captured bytes (headers + body, capped)
  std::string dedup_key;                 // see BounceDedupKey
  std::string queue_id;    // queue id of the bounce itself in this Postfix, "" if unknown
  bool truncated = false;  // the message was larger than max_bounce_bytes
};

// Whether a bounce may leave the mail stream (bounces = discard or quarantine) instead of going
// on to its recipient: only when nothing of it is lost. A quarantined copy must be complete
// (`captured_whole`: not cut at max_bounce_bytes); a discarded bounce must also have been read
// whole by the parser (`read_whole`: no ParsedBounce::warnings), since the recipient's copy is
// then all there is of the rest. Never for kKeep.
bool MayRemoveBounce(BounceDisposition disposition, bool captured_whole, bool read_whole);

// The stable identity of a bounce: for Postfix-made DSNs, the original's queue id, the reporting
// MTA and the DSN kind (a retried bounce gets a new Message-ID but keeps those); otherwise the
// bounce's Message-ID; otherwise a hash of the captured bytes.
std::string BounceDedupKey(const ParsedBounce& parsed, std::string_view raw_message);

// What the milter needs from the daemon. All three must be thread-safe and fast: they run on
// libmilter session threads while Postfix waits.
struct MilterDependencies {
  // In-memory suppression lookup. nullopt: not suppressed (includes allowlisted). An error
  // Status: storage unavailable (answered per on_storage_error).
  std::function<Expected<std::optional<MilterSuppression>>(std::string_view address)> lookup;
  // Records what was done to a recipient (an enqueue; must not block on disk).
  std::function<Status(const Enforcement&)> record_enforcement;
  // Records every recipient result of a bounce (an enqueue), deduplicated by storage.
  std::function<Status(const CapturedBounce&)> record_bounce;
  // The current rules (the daemon swaps them on reload).
  std::function<std::shared_ptr<const RuleSet>()> rules;
};

// Counters and the RCPT check latency histogram since StartMilter.
struct MilterStats {
  uint64_t connections = 0;
  uint64_t smtpd_messages = 0;
  uint64_t non_smtpd_messages = 0;
  uint64_t rcpt_checked = 0;
  uint64_t rcpt_rejected = 0;
  uint64_t rcpt_tempfailed = 0;
  uint64_t rcpt_logged = 0;
  uint64_t rcpt_removed = 0;
  uint64_t bounces_seen = 0;       // messages recognised as bounces
  uint64_t bounce_recipients = 0;  // recipient results recorded
  uint64_t bounces_discarded = 0;
  uint64_t bounces_quarantined = 0;
  uint64_t bounces_truncated = 0;   // longer than max_bounce_bytes: read in part
  uint64_t bounces_incomplete = 0;  // a parser limit cut them short (ParsedBounce::warnings)
  uint64_t bounces_verp = 0;        // bounces whose VERP return path changed a result ([verp])
  uint64_t storage_errors = 0;
  uint64_t storage_incidents = 0;  // runs of failures (each logged once)
  uint64_t callback_timeouts = 0;
  uint64_t dropped_records = 0;  // records not queued (worker queue full)
  // RCPT check latency (lookup + decision + reply), nanoseconds: bucket i counts checks in
  // [i * kRcptBucketNs, (i + 1) * kRcptBucketNs); the last bucket holds everything above.
  static constexpr uint64_t kRcptBucketNs = 250;
  static constexpr size_t kRcptBuckets = 801;  // 0 .. 200 us in 0.25 us steps, then overflow
  std::vector<uint64_t> rcpt_latency;
  // Latency at quantile q (0..1) from the histogram, in nanoseconds (upper bucket edge).
  uint64_t RcptLatencyQuantileNs(double q) const;
};

// Opens the socket and starts serving on a background thread. Fails (and starts nothing) on a
// bad config, a socket that cannot be opened, a second call, or missing dependencies.
Status StartMilter(const MilterConfig& config, MilterDependencies deps);
// Stops accepting, waits for the listener to return (at most a few seconds) and detaches the
// dependencies: after it returns no callback touches them. Idempotent; safe if never started.
void StopMilter();
// Gives the running milter a new configuration: every key but `socket` (the socket stays the one
// it listens on; libmilter cannot open another). A message takes the configuration in force at
// its MAIL FROM and keeps it to its end, so no message sees half of each; socket_mode and
// socket_group are given to a unix socket's file at once. Refused, with the running one kept,
// when the new one is invalid (as StartMilter checks it) or the milter is not running.
Status ReconfigureMilter(const MilterConfig& config);
bool MilterRunning();
// The configuration in force (the started one when not running).
MilterConfig CurrentMilterConfig();
MilterStats GetMilterStats();

}  // namespace bounced
