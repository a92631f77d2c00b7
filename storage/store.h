// store.h: the bounced database (SQLite, WAL) and the in-memory suppression view.
//
// Reads and writes one SQLite file (StoreOptions::path, config key [storage] path). Holds
// delivery events, per-recipient state, per-day counters, suppressions, the allowlist, the
// audit log of manual changes and the inputs' positions; the tables are documented in
// storage/schema.sql, storage/migrate_2.sql (version 2: `events` and `recipient_state` are
// views over narrower tables), storage/migrate_3.sql (version 3: a recipient's pending
// delivery), storage/migrate_4.sql (version 4: the log inputs' queue facts),
// storage/migrate_5.sql (version 5: several pending deliveries), storage/migrate_6.sql
// (version 6: queue facts rows by increasing id), storage/migrate_7.sql (version 7: events
// found by their original recipient), storage/migrate_8.sql (version 8: each change's note and
// an address's history) and storage/migrate_9.sql (version 9: entries found by their expiry).
// Read-only SQL on them
// is fine, e.g. for reports: open the file with SQLITE_OPEN_READONLY, WAL lets readers run
// beside the writer.
//
// Contract, LevelDB style:
// - Errors are values. A Status/Expected error says what failed and where ("open
//   /var/lib/bounced/bounced.db: database schema version 7 is newer than this bounced (knows 2)").
//   A corrupt, locked or unwritable file is an error, never a crash. Not-found is not an error:
//   it is an empty optional / `suppressed == false`.
// - Every write goes through one writer thread, in submission order. Submit() queues a Batch
//   and returns at once; the future completes when the batch is committed (ok) or dropped (the
//   error). A Batch is applied atomically: its events, the counters and suppressions they cause
//   and its input position commit in one transaction, so after a crash (kill -9, power loss with
//   the default synchronous=FULL) the stored position matches exactly the stored events.
//   Batches queued together share one transaction (group commit); a batch that fails is
//   rolled back alone (the group is retried one batch per transaction) and the others commit,
//   except those that say they follow its position (Batch::follows): they are refused.
// - Policy runs inside the writer: events change recipient state and may add a suppression.
//   SuppressionPolicy below says how; the allowlist and manual decisions always win.
// - The view (view()) is updated by the writer right after each commit, before the futures
//   complete: a lookup made after Submit's future, Suppress() or Flush() returned sees the change.
// - Thread safety: every Store method may be called from any thread. view() lookups are
//   lock-light and never touch SQLite (milter threads, socketmap). The Store owns its threads and
//   connections; destroying it commits what is queued, then closes.
// - Retention (RetentionPolicy, off by default): the writer deletes events and daily counters
//   older than a horizon in small steps of their own, and does not record an event that comes
//   in older than it; suppressions, their log, the allowlist, the audit and policy state stay.
// - Times are seconds since the Unix epoch, UTC. 0 means "unknown" or, for expiry, "never".
// - Addresses: keys are NormalizeAddress() forms (lower-case whole address, `+extension` dropped,
//   quotes only where the local part needs them); the spelling first seen is kept for display.
//   Keys an older bounced wrote with needless quotes are moved to that form at Open.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "classifier/dsn_parser.h"
#include "classifier/log_parser.h"
#include "classifier/result.h"
#include "common/status.h"

namespace bounced {

// The schema version this build writes (PRAGMA user_version). Older files are migrated at Open;
// newer files are refused.
inline constexpr int kSchemaVersion = 9;

// ---------------------------------------------------------------------------------------------
// Addresses

// The lookup key of an address: surrounding <> and whitespace removed, lower-cased whole (as
// Postfix table lookups are case-insensitive), and the local part cut at the first character of
// `delimiters` ("+" by default; "" disables, as Postfix's recipient_delimiter). A local part that
// would become empty ("+foo@x") is kept whole. A quoted local part is read as Postfix reads it
// (quotes and backslash escapes removed) before the cut, and quoted again only when it is no
// dot-atom (Postfix's quote_822_local): `"John.Doe+x"@x` -> john.doe@x, `"Jane Roe"@x` ->
// "jane roe"@x. A U+FEFF (a byte order mark a file or spreadsheet left) at the start of the
// local part is dropped: no mailbox is named with it, and a key must not begin with one (a text
// export would read back without it). Returns "" for something that is not an address (no '@',
// empty local part or domain, control characters, input or key longer than kMaxAddressBytes).
inline constexpr size_t kMaxAddressBytes = 320;
std::string NormalizeAddress(std::string_view address, std::string_view delimiters = "+");
// Whether NormalizeAddress takes `address` for an address, in any spelling (case, <>, quotes,
// an extension): the test the ADDRESS of status, suppress and unsuppress must pass, in bouncectl
// and on bounced's query socket alike. Every stored key passes it. Delimiters do not change the
// answer, except within a few bytes of kMaxAddressBytes (quoting a cut local part can lengthen
// it), where the store's own check with its delimiters has the last word.
bool IsAddress(std::string_view address);
// The domain part of a key NormalizeAddress made: what follows its last '@' ("" when none), as
// is (keys are lower-case already). classifier/text.h's DomainOf reads any address spelling.
std::string_view DomainOfKey(std::string_view key);
// A domain as keys hold it: lower-case, without trailing dots; "" when it has a character other
// than letters, digits, '-', '.' and '_' (a leading '@' is the caller's to remove).
std::string NormalizeDomain(std::string_view domain);
// The sending domain of an envelope sender, as `stats --sender-domain`, `events
// --sender-domain`, the report and alert incidents group it: what follows its last '@',
// lower-cased (the whole sender when it has none); "<>" for the null sender (stored as "", as a
// sender not known is).
std::string SenderDomainOf(std::string_view sender);
// The same as an SQL expression over `column`, which holds the sender ("" or NULL: the null
// sender).
std::string SenderDomainSql(std::string_view column);

// ---------------------------------------------------------------------------------------------
// Events

enum class EventSource { kLog, kJournal, kDsn, kMilter, kManual };
std::string_view ToString(EventSource s);  // "log", "journal", "dsn", "milter", "manual"
std::optional<EventSource> EventSourceFromName(std::string_view name);

// One recipient result to record. Build it with EventFromLog / EventsFromBounce or by hand.
struct Event {
  EventSource source = EventSource::kLog;
  // Where it came from: for log/journal the caller's position text (e.g. "ino=12 off=4096" or the
  // journald cursor); for dsn/milter the bounce's Message-ID (or "fnv:<hex>" of the raw message
  // when it has none). For dsn/milter, (source_ref, recipient) is unique: a second event with the
  // same pair (Postfix retrying the milter, the same DSN fed twice) is silently not recorded.
  std::string source_ref;
  int64_t unix_time = 0;   // when it happened (0: the writer uses the commit time)
  std::string time_text;   // as the source wrote it (RFC 3339 when known), may be ""
  std::string queue_id;    // Postfix queue id of the message that was delivered / bounced
  std::string message_id;  // Message-ID of that message, if known
  std::string sender;      // envelope sender, "" for the null sender
  // sent, deferred, bounced, expired (Postfix log words); for DSNs the Action maps to these
  // (failed->bounced, delayed->deferred, delivered/relayed/expanded->sent); "complaint",
  // "auto_reply" for ARF / RFC 3834 messages; "blocked" when bounced itself refused or removed
  // the recipient (milter, recorded for reports; never feeds the policy).
  std::string log_status;
  std::string relay;            // relay=host[addr]:port from the log, or ""
  std::string program;          // postfix/smtp, postfix/error, milter, ... or ""
  std::string bounce_queue_id;  // queue id of the DSN Postfix generated, if known
  Result result;                // what the classifier said (recipient, category, codes, ...)
};

// A log/journal event. `position` becomes source_ref.
Event EventFromLog(const DeliveryEvent& e, EventSource source, std::string position);
// One event per recipient of a parsed bounce, dedup'ed by its Message-ID (or a digest of
// `raw_message` when it has none). `now` stamps the events (a bounce has no reliable time).
std::vector<Event> EventsFromBounce(const ParsedBounce& bounce, std::string_view raw_message,
                                    EventSource source, int64_t now);

// An input's resume point. `input` names it ("log:/var/log/mail.log", "journal", ...).
struct InputPosition {
  std::string input;
  uint64_t inode = 0;   // file inputs
  uint64_t offset = 0;  // bytes consumed (after the last complete line)
  std::string cursor;   // journald cursor; a file input's fingerprint (daemon/log_follower.h)
  int64_t updated = 0;  // when it was committed (unix seconds); LoadPosition fills it
};

// What is committed together. Either part may be empty.
struct Batch {
  std::vector<Event> events;
  std::optional<InputPosition> position;
  // The stored position this batch follows (its input's, compared by inode, offset and cursor;
  // an input with no stored position is at 0, 0, ""). When set, the writer refuses the batch
  // whole (nothing of it is stored, the future gets the error) unless the stored position is
  // this one. An input pipelines its batches, so a batch may be queued behind one that fails:
  // committing it would move the position past the lines of the failed batch, which the input
  // would then never read again.
  std::optional<InputPosition> follows = std::nullopt;
  // The log correlator's queue facts as of `position` (LogCorrelator::TakeQueueFacts), kept per
  // input (the position's) in the same transaction: forgotten ones are deleted first, then the
  // changed ones stored. Needs `position`.
  std::vector<QueueFacts> queue_facts = {};
  std::vector<std::string> queue_facts_forgotten = {};
  // When set, the writer fills it with one entry per event once the batch commits: 1 for an
  // event stored as counted, 0 for one that repeats an event recorded before (a DSN fed twice)
  // or copies one of the other family (the DSN of a logged bounce): what the counters, the
  // policy and the reports take from the batch. Alerts watch only the counted ones.
  std::shared_ptr<std::vector<uint8_t>> counted = nullptr;
};

// ---------------------------------------------------------------------------------------------
// Suppression policy

struct SuppressionPolicy {
  // hard_bounce categories (user_unknown, domain_unknown, mailbox_moved, not_accept) suppress on
  // the first permanent failure. 0 = never expires.
  int64_t hard_bounce_expiry_seconds = 0;
  // mailbox_disabled, mailbox_full and suppressed_upstream (action "count") suppress after
  // `count_threshold` incidents whose first and last are at least `count_min_span_seconds` apart.
  // Failures less than `incident_merge_seconds` after the start of the current incident belong
  // to it (a burst of retries is one incident). A delivery of another message after the last
  // incident resets the count, when the next counted failure arrives: a relay may accept a
  // message (status=sent) and bounce it later (a DSN), so the delivery of the very message that
  // then fails resets nothing (messages told apart by Message-ID). Deliveries of two different
  // messages, or of one whose Message-ID is unknown, reset at once; a failure whose Message-ID
  // is unknown resets after any noted delivery. A delivery older than the latest incident (a
  // log read late) resets nothing.
  int count_threshold = 3;
  int64_t count_min_span_seconds = 7 * 86400;
  int64_t incident_merge_seconds = 3600;
  int64_t count_expiry_seconds = 0;
  // Whether deferred (4xx) mailbox_full/disabled results count as incidents; by default only
  // permanent failures (bounced/expired, DSN action failed) do.
  bool count_deferrals = false;
  // complaint (ARF) suppresses at once with reason "complaint".
  bool complaints_suppress = true;
  int64_t complaint_expiry_seconds = 0;
  // Feedback types (a complaint's provider_code: the report's Feedback-Type, lower-case) whose
  // reports are recorded and reported but never suppress: a not-spam report is the opposite of
  // a complaint, and an auth-failure report (RFC 6591) is about a message that failed SPF, DKIM
  // or DMARC (often one forged in the sender's name), not about what its recipient wants.
  std::vector<std::string> complaint_report_only_types = {"not-spam", "auth-failure"};
  // Characters that start an address extension (at most 8); "" disables extension folding.
  // Keys are computed when written: a change applies to entries written from then on.
  std::string recipient_delimiters = "+";
  // A result with an original recipient that is another address (a VERP return path's, a DSN's
  // Original-Recipient, Postfix's orig_to=: the address as the sender gave it, which forwarded
  // or was rewritten to the one that failed) counts for that address too, so that it is
  // suppressed when the failed one is. Off by default: one target of an alias with several
  // failing would suppress the alias.
  bool suppress_original_recipient = false;
  // Sender-fault, transient and other categories never suppress: they only feed counters.
};

// How long the history is kept ([storage] event_retention_days, counter_retention_days). 0 keeps
// it for ever. The suppression list, its change log, the allowlist, the audit trail and each
// recipient's policy state (incidents, manual lifts) are never pruned.
struct RetentionPolicy {
  // Events (event_rows and their event_days ranges) whose time is before the horizon below go,
  // and an event that arrives already older than it is not recorded (counted as too old): so
  // a mailbox fed twice still records each bounce once.
  int event_days = 0;
  // daily_counters rows of days before the horizon go (reports of those days show nothing).
  int counter_days = 0;
  bool operator==(const RetentionPolicy&) const = default;
};

// The first second kept by `days` of retention at `now`: the start (UTC) of the day `days` days
// before now's, so whole days go and at least `days` full days stay. 0 when days is 0.
int64_t RetentionHorizon(int days, int64_t now);

// What one Store::Prune() removed.
struct PruneResult {
  int64_t events = 0;
  int64_t counter_rows = 0;
};

// Since a Store was opened: rows pruned, and events not recorded for being older than the
// retention horizon when they came.
struct PruneTotals {
  int64_t events_pruned = 0;
  int64_t counter_rows_pruned = 0;
  int64_t events_too_old = 0;
};

// Automatic reasons written by the policy. Manual and imported entries carry the operator's text.
inline constexpr std::string_view kReasonHardBounce = "hard_bounce";
inline constexpr std::string_view kReasonRepeatedFailure = "repeated_failure";
inline constexpr std::string_view kReasonComplaint = "complaint";

// ---------------------------------------------------------------------------------------------
// Records returned by queries

struct Suppression {
  std::string address;      // normalised key
  std::string display;      // as first seen
  std::string reason;       // kReason* for automatic entries, the operator's text otherwise
  std::string category;     // category name that caused it, or "" (manual without category)
  std::string source;       // "bounce", "complaint", "manual", "import"
  int64_t first_event = 0;  // first event that counted towards it (0: none)
  int64_t last_event = 0;   // latest failure event for the address
  int64_t created = 0;
  int64_t expires = 0;          // 0 = never
  std::string detail;           // the deciding diagnostic, or the manual/import note
  int64_t delivered_after = 0;  // a delivery seen after `created` (recorded, does not lift)
};

// A count of suppressions added (Store::SuppressionsAdded).
struct AddedSuppressions {
  std::string source;    // "bounce", "complaint", "manual", "import"
  std::string category;  // the category name that caused them, or "" (manual without one)
  int64_t count = 0;
};

struct AllowEntry {
  std::string entry;  // normalised address, or a domain
  bool domain = false;
  std::string reason;
  int64_t created = 0;
  int64_t actor_uid = -1;
};

struct StoredEvent {
  int64_t id = 0;
  Event event;
  bool counted = true;  // false when it repeated an event already counted (log + DSN of one bounce)
  // Found for an address that is its original recipient, not its recipient (EventsFor, status:
  // a forward's or a VERP return path's failure).
  bool as_original_recipient = false;
};

// Per-recipient state kept by the policy.
struct RecipientState {
  std::string address;
  int64_t first_seen = 0;
  int64_t last_event = 0;
  std::string last_category;
  std::string last_log_status;
  int64_t last_delivered = 0;
  int64_t last_failure = 0;
  int incidents = 0;                // counted incidents not reset by a delivery (see policy)
  int64_t incidents_since = 0;      // start of the first of them
  int64_t last_incident = 0;        // start of the latest
  int64_t manual_unsuppressed = 0;  // events before this time cannot re-suppress automatically
  int64_t events = 0;
  // A delivery after the last incident that has not reset the count yet (0: none) and its
  // message's Message-ID (without <>): the next counted failure of any other message resets
  // the count first, a failure of this message does not (accepted, then bounced).
  int64_t pending_delivery = 0;
  std::string pending_message_id;
  // Deliveries of other messages waiting with it, older than pending_delivery: one
  // "TIME MESSAGE-ID" line each (storage/policy.h, PendingDeliveries reads them).
  std::string pending_earlier;
};

// One change of the suppression list, as its change log keeps it (never pruned): a feed for a
// sending application that keeps its own copy of the list.
struct SuppressionChange {
  int64_t id = 0;          // increases with every change, in commit order: the feed's cursor
  int64_t time = 0;        // when it was committed (unix seconds)
  std::string address;     // the key
  std::string action;      // "add", "update" (source, reason or expiry changed), "remove"
  std::string source;      // the entry's: bounce, complaint, manual, import
  std::string reason;      // the entry's
  std::string category;    // the entry's, or ""
  int64_t actor_uid = -1;  // who: -1 = bounced itself (a bounce; a remove: the entry expired)
  // Why this change: the operator's reason given to suppress, unsuppress or import (for a remove
  // it says why, where `reason` is the entry's); "expired" for an entry bounced removed once it
  // expired; "" for a bounce's own (its reason says it all), and for changes logged before
  // schema 8 that the audit trail does not tell.
  std::string note = {};
};

struct AddressStatus {
  std::string address;                     // as asked
  std::string key;                         // NormalizeAddress(address)
  bool suppressed = false;                 // effective: allowlist and expiry applied
  std::optional<Suppression> suppression;  // the stored entry, even when allowlisted or expired
  std::optional<AllowEntry> allowed_by;    // the allowlist entry that wins, if any
  std::optional<RecipientState> state;
  std::vector<StoredEvent> events;  // newest first
  // The entry's changes (added, updated, lifted, expired), newest first, at most kMaxHistory.
  std::vector<SuppressionChange> history;
  static constexpr size_t kMaxHistory = 10;
};

// ---------------------------------------------------------------------------------------------
// Manual changes (audited: who = peer uid from SO_PEERCRED, when = now, why = reason)

struct Actor {
  int64_t uid = -1;    // -1: unknown (internal)
  std::string reason;  // why; required for manual changes
};

struct ManualSuppression {
  std::string address;
  std::string category;  // optional category name
  int64_t expires = 0;   // 0 = never
};

// ---------------------------------------------------------------------------------------------
// Queries

struct ListFilter {
  std::string category;  // "" = any
  std::string domain;    // "" = any; exact domain of the key
  std::string source;    // "" = any
  int64_t since = 0;     // created at or after
  int64_t until = 0;     // created before (0 = no bound)
  std::string after;     // paging: keys strictly greater than this (list is ordered by key)
  size_t limit = 0;      // 0 = no limit
  bool include_expired = false;
};

enum class ExportFormat { kCsv, kJsonl, kText };
// "csv", "jsonl" (or "json"), "text" (or "txt").
std::optional<ExportFormat> ExportFormatFromName(std::string_view name);
const char* ExportFormatName(ExportFormat format);  // "csv", "jsonl", "text"

// CSV columns (header line first, RFC 4180 quoting, times RFC 3339 UTC or empty):
//   address,reason,category,source,first_event,last_event,created,expires,detail
// JSONL: one object per line with the same keys. Text: one address per line. Import reads the
// same forms (CSV: header required, columns by name, only `address` mandatory; JSONL: only
// "address" mandatory; text: blank lines and "# comment" lines skipped). A CSV header may
// also name its columns as other tools' exports do (`email`, `Email Address`, `CreatedAt`:
// storage/suppression_io.h), so an ESP's or another MTA's list imports as it was exported.

// How an import reads its input.
// An ESP's failure for one imported entry, as its export gives it (any part may be ""): what
// ImportOptions::classify reads.
struct ImportedReply {
  std::string_view text;     // the reason column: a reply ("550 5.1.1 ... does not exist")
  std::string_view status;   // an enhanced status column ("5.1.1", SendGrid's status)
  std::string_view code;     // a reply code column ("550", Mailgun's code)
  std::string_view address;  // the entry's address (for the provider)
};
struct ImportOptions {
  // A CSV column the header names but import does not know is skipped (and named in the
  // result) instead of refusing the file: for an ESP's export with columns of its own.
  bool ignore_unknown_columns = false;
  // The category of an entry whose file has no category column: complaint when its reason (or
  // an ESP's own source column) says so (SpamComplaint, COMPLAINT, spam report, abuse), else
  // what `classify` makes of its reply (a category name; "" for none), else `category`.
  std::function<std::string(const ImportedReply&)> classify = {};
  std::string category = {};  // a category name, or ""
  // Check and count, write nothing: ImportResult says what the import would add and update.
  bool dry_run = false;
};
// What Store::UnsuppressMatching lifted (or, in a dry run, would lift).
struct BulkUnsuppressResult {
  size_t count = 0;
  std::vector<std::string> sample;  // the first keys, in key order (at most kBulkSample)
  static constexpr size_t kBulkSample = 20;
};

struct ImportResult {
  size_t added = 0;
  size_t updated = 0;
  std::vector<std::string> errors;  // "line 12: invalid address 'foo'"; non-empty = nothing done
  std::vector<std::string> ignored_columns;  // ImportOptions::ignore_unknown_columns skipped these
  size_t categorized = 0;  // entries given a category from their reason (ImportOptions)
  // The accepted entries per category ("" = none), also when the file has errors.
  std::map<std::string, size_t> categories;
};

// What an input stored about one Postfix queue id (Store::QueueEvents).
struct QueueEventsQuery {
  std::string queue_id;
  int64_t since = 0;      // events that happened at or after this time
  std::string recipient;  // "" = every recipient; else only this one's (through its index)
};

// Which recorded events Store::FindEvents returns (`bouncectl events`). Every filter that is
// set must hold; "" = any. Texts are compared exactly, as stored (category, log status and
// source by their names; domain lower-case; provider codes as the rules write them).
struct EventsQuery {
  int64_t since = 0;  // happened at or after this time (unix seconds)
  int64_t until = 0;  // and before this time; 0 = no bound
  std::string category = {};
  std::string provider = {};  // "" = any; "-" = none known
  std::string provider_code = {};
  std::string log_status = {};  // sent, deferred, bounced, expired, complaint, auto_reply, blocked
  std::string source = {};      // log, journal, dsn, milter, manual
  std::string domain = {};      // the recipient's domain
  // the recipient, as any spelling NormalizeAddress folds (through its index: a long `since`
  // is cheap); "" = any
  std::string recipient = {};
  std::string sender = {};  // the envelope sender ("<>" = the null sender)
  // the envelope sender's domain, as `stats --sender-domain` groups it (lower-cased; "<>" = the
  // null sender; a sender without '@' is itself)
  std::string sender_domain = {};
  size_t limit = 50;  // at most this many, the most recently recorded
  // >= 0: only events recorded after the one with this id (StoredEvent::id; ids start at 1),
  // the oldest of them first: how `bouncectl events --follow` asks for what is new without
  // missing any. -1: no such bound.
  int64_t after_id = -1;
};

struct ChangesQuery {
  int64_t after_id = 0;  // only changes after this one (0: from the first)
  int64_t since = 0;     // and committed at or after this time
  std::string domain;    // "" = any; else only addresses at this domain
  size_t limit = 1000;   // at most this many, the oldest first (capped at kMaxChanges)
};

struct StatsQuery {
  // kSenderDomain: the envelope sender's domain, lower-cased ("<>" for the null sender or one
  // not known; a sender without '@' is its own key). Counted from the events themselves (the
  // daily counters have no sender), so a long window on a large database takes a scan of it.
  enum class By { kDomain, kProvider, kSenderDomain } by = By::kDomain;
  std::string only;  // "" = all domains / providers / sender domains, else just this one
  int days = 7;      // today (UTC) and the days before it
  bool per_day = false;
  int64_t now = 0;  // 0 = current time
};

struct StatsRow {
  std::string key;  // the domain, provider ("" for an unknown provider) or sender domain
  std::string day;  // "YYYY-MM-DD" when per_day, else ""
  std::string category;
  std::string provider_code;
  std::string log_status;
  int64_t count = 0;
};

struct Health {
  int schema_version = 0;
  std::string path;
  bool integrity_ok = false;
  std::string integrity_detail;  // "ok" or what PRAGMA quick_check said
  int64_t events = 0;
  int64_t suppressions = 0;  // rows, expired included
  int64_t allowlist = 0;
  int64_t recipients = 0;
  int64_t queued_batches = 0;    // waiting for the writer
  std::string last_write_error;  // "" when the last commit succeeded
  RetentionPolicy retention;     // in force
  std::string oldest_event_day;  // "YYYY-MM-DD" of the oldest event kept; "" when none
  PruneTotals pruned;
};

// ---------------------------------------------------------------------------------------------
// The in-memory suppression view

struct SuppressionHit {
  int64_t since = 0;                            // created
  int64_t expires = 0;                          // 0 = never
  Category category = Category::kUndetermined;  // kUndetermined when none was given
  bool manual = false;                          // source manual or import
};

class SuppressionView {
 public:
  virtual ~SuppressionView() = default;
  // Is `address` suppressed now? Normalises the address (policy delimiters), applies the
  // allowlist (address, then its domain) and expiry against `now` (0: the current time).
  // nullopt = deliver. Never blocks on SQLite; safe from any thread.
  virtual std::optional<SuppressionHit> Lookup(std::string_view address, int64_t now = 0) const = 0;
  // Same, for an already normalised key (skips normalisation).
  virtual std::optional<SuppressionHit> LookupKey(std::string_view key, int64_t now = 0) const = 0;
  virtual size_t size() const = 0;  // suppressed keys held (expired ones included until purged)
  // Approximate heap bytes held by the view (for the per-address memory figure).
  virtual size_t memory_bytes() const = 0;
};

// ---------------------------------------------------------------------------------------------

struct StoreOptions {
  std::string path;  // the database file; its directory must exist
  SuppressionPolicy policy;
  RetentionPolicy retention;
  int busy_timeout_ms = 5000;  // SQLite busy timeout for every connection
  // FULL: a committed batch survives power loss; NORMAL: survives a process crash only.
  bool synchronous_full = true;
  size_t max_batch_events = 20000;    // events per group-commit transaction (at most)
  size_t max_queued_events = 200000;  // Submit blocks while more than this wait (back-pressure)
  // WAL checkpoints run on a thread and connection of their own, never inside a commit: one
  // starts each time about checkpoint_bytes were appended to the WAL. While the writer commits
  // without a pause the WAL cannot start over, so past wal_cap_bytes the writer waits for a
  // checkpoint of everything committed before its next transaction (the WAL file then stays
  // below about wal_cap_bytes plus one transaction).
  int64_t checkpoint_bytes = int64_t{64} << 20;
  int64_t wal_cap_bytes = int64_t{256} << 20;
};

class Store {
 public:
  // Opens (creating if missing) and migrates the database, loads the view, starts the writer.
  // Errors: unreadable/corrupt file, newer schema, failed migration, locked beyond the busy
  // timeout.
  static Expected<std::unique_ptr<Store>> Open(const StoreOptions& options);
  virtual ~Store() = default;

  // --- writes (all go through the writer thread) ---
  // Queues a batch. The future: ok once committed and visible in view(); else the error, and
  // nothing of the batch was stored (the stored position is still the previous one, so an
  // input can re-read from LoadPosition()). A batch whose `follows` is not the stored position
  // is refused (see Batch).
  virtual std::future<Status> Submit(Batch batch) = 0;
  // Submit + wait.
  virtual Status Write(Batch batch) = 0;
  // Waits until everything submitted before the call is committed or failed (each batch's own
  // outcome goes to its future). Returns an error when the writer cannot commit at all.
  virtual Status Flush() = 0;
  // Replaces the policy for events committed from now on (SIGHUP reload).
  virtual void SetPolicy(const SuppressionPolicy& policy) = 0;
  // Replaces the retention (SIGHUP reload). The writer prunes at the first commit after open,
  // then hourly, at most 500 rows per transaction of its own between the groups of batches
  // it commits (a backlog continues at once, also while no batch comes): a batch waits for one
  // such step at most.
  virtual void SetRetention(const RetentionPolicy& retention) = 0;
  // Prunes now, to the end, through the writer (tests; an operator's one-off).
  virtual Expected<PruneResult> Prune() = 0;

  // Manual changes; each is audited and committed before returning. Suppress and Unsuppress
  // need a reason (who.reason). Suppress replaces an automatic entry (source becomes "manual",
  // `since` is kept); it fails when the allowlist covers the address. Unsuppress fails with
  // "not suppressed" when there is no entry; it removes the entry and records the time, so
  // events that happened before it (log catch-up, bounces of mail already queued) never
  // re-suppress automatically, while a new hard bounce after it does (use Allow for "never").
  // A later delivery never lifts an entry, manual or automatic: it sets delivered_after, which
  // status shows, and the operator decides.
  virtual Expected<Suppression> Suppress(const ManualSuppression& s, const Actor& who) = 0;
  // Returns the key whose entry it removed (NormalizeAddress's, or the spelling an entry kept
  // from before plus_extension was turned on).
  virtual Expected<std::string> Unsuppress(std::string_view address, const Actor& who) = 0;
  // Lifts every live suppression the filter selects (its `after` and `limit` are ignored, and
  // so are expired entries) as Unsuppress lifts one: each is logged, audited and remembered
  // against older events, all in one transaction (all or nothing). For undoing a misfire: a
  // recipient domain's outage that read as unknown users, a rule that was wrong. An empty
  // filter selects every entry. A dry run changes nothing and says what would be lifted.
  virtual Expected<BulkUnsuppressResult> UnsuppressMatching(const ListFilter& filter,
                                                            const Actor& who, bool dry_run) = 0;
  // `entry` is an address or a domain ("example.com" or "@example.com"); a domain entry covers
  // its subdomains. Allow on an existing entry updates its reason; Disallow fails when absent.
  virtual Expected<AllowEntry> Allow(std::string_view entry, const Actor& who) = 0;
  virtual Status Disallow(std::string_view entry, const Actor& who) = 0;
  // All-or-nothing: on any bad line, errors lists every bad line (up to 100) and nothing changes.
  virtual Expected<ImportResult> Import(ExportFormat format, std::string_view data,
                                        const Actor& who, const ImportOptions& options) = 0;
  Expected<ImportResult> Import(ExportFormat format, std::string_view data, const Actor& who) {
    return Import(format, data, who, ImportOptions{});
  }

  // --- reads (own read connections; see a snapshot as of the last commit) ---
  virtual const SuppressionView& view() const = 0;
  // Suppressions added since this Store was opened, as committed: the suppression log's "add"
  // entries (an address suppressed anew, after an expiry too; not the update of an entry), by
  // source and category, ordered so. For `bouncectl metrics`: memory only, no SQLite.
  virtual std::vector<AddedSuppressions> SuppressionsAdded() const = 0;
  // What retention pruned and skipped, as committed (memory only).
  virtual PruneTotals Pruned() const = 0;
  virtual Expected<std::optional<InputPosition>> LoadPosition(std::string_view input) = 0;
  // The queue facts the input's batches left (Batch::queue_facts), oldest `updated` first.
  virtual Expected<std::vector<QueueFacts>> LoadQueueFacts(std::string_view input) = 0;
  virtual Expected<AddressStatus> GetStatus(std::string_view address, size_t max_events = 10) = 0;
  // Streams suppressions ordered by key; the sink returns false to stop early.
  virtual Status List(const ListFilter& filter,
                      const std::function<bool(const Suppression&)>& sink) = 0;
  // Streams one line per suppression (CSV: header first), each ending in '\n'.
  virtual Status Export(ExportFormat format, const ListFilter& filter,
                        const std::function<bool(std::string_view line)>& sink) = 0;
  virtual Expected<std::vector<StatsRow>> Stats(const StatsQuery& q) = 0;
  virtual Expected<std::vector<AllowEntry>> AllowList() = 0;
  virtual Expected<Health> GetHealth() = 0;
  virtual Expected<std::vector<StoredEvent>> EventsFor(std::string_view address,
                                                       size_t max_events) = 0;
  // The log and journal events of a Postfix queue id, oldest first: what an input read of a
  // message before its correlator started (a restart), which that correlator does not know.
  // Without a recipient the events of the days from `since` on are scanned (queue ids have no
  // index): keep `since` recent.
  virtual Expected<std::vector<StoredEvent>> QueueEvents(const QueueEventsQuery& q) = 0;
  // Recorded events matching `q`, the most recently recorded first (with q.after_id, the
  // oldest first; at most q.limit, capped at kMaxFoundEvents). Reads the rows of the days from
  // q.since on, in one read transaction beside the writer: keep `since` recent on a large database.
  static constexpr size_t kMaxFoundEvents = 10000;
  virtual Expected<std::vector<StoredEvent>> FindEvents(const EventsQuery& q) = 0;
  // The suppression list's changes that `q` selects, the oldest first. A client that asks again
  // with after_id = the last id it got misses none and sees none twice: ids are given in commit
  // order by the one writer, and a change is visible once its transaction commits.
  static constexpr size_t kMaxChanges = 10000;
  virtual Expected<std::vector<SuppressionChange>> Changes(const ChangesQuery& q) = 0;

  virtual const std::string& path() const = 0;
};

}  // namespace bounced
