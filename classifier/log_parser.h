// log_parser.h: Postfix log lines in, delivery events out. Pure code, no I/O.
//
// ParseLogLine understands one line in any of the formats Postfix writes: classic syslog
// ("Nov 29 17:09:53 host postfix/smtp[123]: ..."), RFC 3339 timestamps
// ("2026-11-29T17:09:53.123456+00:00 host postfix/smtp[123]: ..."; journalctl's "+0000" form
// too), and postlog files (maillog_file, same shape as classic syslog). Any syslog_name
// ("postfix", "postfix-tb", "postfix/submission") is accepted: a Postfix program is any
// "NAME/daemon". Short (hex) and long (base-52) queue ids are both recognised.
//
// LogCorrelator keeps what earlier lines said about a queue id (qmgr from=, size, nrcpt;
// cleanup message-id; bounce "sender non-delivery notification: ID") and emits one
// DeliveryEvent per final or deferred delivery (status=sent|deferred|bounced, and for
// "status=expired, returned to sender" one `expired` event per recipient still pending, carrying
// its last deferral reason). State for a queue id is dropped on "removed", and the table is capped
// (oldest entry evicted, counted), so memory stays flat in the log's size. Garbage or truncated
// lines are skipped and counted, never fatal.
//
// Classification: each reply text goes through the RuleSet once per distinct (provider, dsn,
// reply text) triple; results are kept in a bounded cache in which per-message noise of a reply
// (addresses, host[ip] pairs, long ids and time stamps) is masked out of the key, so a log's
// millions of lines cost a few hundred rule evaluations.
//
// Thread safety: a LogCorrelator is used by one thread; ParseLogLine is reentrant.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "classifier/result.h"
#include "classifier/rules.h"

namespace bounced {

// A line longer than this is skipped and counted as too long.
inline constexpr size_t kMaxLogLineBytes = 64 * 1024;
// How much of a line cut by a read boundary a splitter keeps: two bytes past the limit, so that
// the kept part is still too long after a trailing "\r" is taken off (one byte was not enough: a
// long line whose byte at the limit was "\r" then came out at the limit and was parsed, but
// only when a read boundary fell inside it). LogLineSplitter and parse-log's block reader.
inline constexpr size_t kLogLineCarryBytes = kMaxLogLineBytes + 2;
// Queue ids tracked at once by default; beyond it the least recently seen one is evicted.
inline constexpr size_t kDefaultMaxTrackedQueueIds = 200000;
// Recipients still pending (last status deferred) remembered per queue id.
inline constexpr size_t kMaxPendingPerQueueId = 1000;

// What one log line is, as far as bounced is concerned.
enum class LogLineKind : uint8_t {
  kBlank,         // empty or only whitespace
  kGarbage,       // not a syslog line (no timestamp, host and program)
  kTruncated,     // a Postfix delivery/queue line cut before the fields that matter
  kOther,         // a well-formed line bounced does not use (other programs, noise)
  kDelivery,      // QID: to=<r>, ..., dsn=X, status=S (reason)
  kQueued,        // qmgr QID: from=<s>, size=N, nrcpt=K (queue active)
  kExpired,       // qmgr QID: from=<s>, status=expired, returned to sender
  kMessageId,     // cleanup QID: message-id=<id>
  kNotification,  // bounce QID: sender non-delivery notification: NEWQID (and delay, success)
  kRemoved,       // qmgr QID: removed
};
std::string_view ToString(LogLineKind k);

// The parts of one line, as views into it (valid while the line is). Fields a kind does not
// have are empty.
struct ParsedLogLine {
  LogLineKind kind = LogLineKind::kGarbage;
  std::string_view timestamp;  // as written
  std::string_view host;
  std::string_view program;  // "postfix-tb/smtp", "postfix/submission/smtpd"
  std::string_view daemon;   // last part of program: "smtp", "qmgr", "error" ...
  std::string_view queue_id;
  std::string_view message;  // text after "program[pid]: "
  // kDelivery
  std::string_view recipient;       // inside to=<...>
  std::string_view orig_recipient;  // inside orig_to=<...>
  std::string_view relay;           // relay=...
  std::string_view dsn;             // dsn=...
  std::string_view status;          // sent, deferred, bounced, SOFTBOUNCE, undeliverable ...
  std::string_view reason;          // inside "(...)" after status, without the parentheses
  bool reason_cut = false;          // the line ended inside the reason (its ")" is missing)
  // kQueued, kExpired
  std::string_view sender;  // inside from=<...>; "" for the null sender
  int64_t size = -1;
  int nrcpt = -1;
  // kMessageId
  std::string_view message_id;
  // kNotification
  std::string_view notification;           // "sender non-delivery", "sender delay", ...
  std::string_view notification_queue_id;  // the queue id of the notice Postfix made
};

// Parses one line (without its newline). Never fails: unusable input gives kGarbage/kBlank.
LogLineKind ParseLogLine(std::string_view line, ParsedLogLine* out);

// Reads a log timestamp (classic "Nov 29 17:09:53", optionally with ".frac"; or RFC 3339 with
// "Z", "+HH:MM" or "+HHMM"). Classic timestamps have no year and no zone: `year` and
// `utc_offset_seconds` (the zone they were written in) supply them. Writes seconds since the
// epoch and the RFC 3339 form ("2026-11-29T17:09:53+00:00"; RFC 3339 input is kept as written).
// Returns false (outputs untouched) when `ts` is not a timestamp.
bool ParseLogTimestamp(std::string_view ts, int year, int utc_offset_seconds, int64_t* unix_time,
                       std::string* rfc3339);

struct DeliveryEvent {
  std::string queue_id;
  std::string time;             // as written in the log, normalised to RFC 3339 when possible
  int64_t unix_time = 0;        // seconds since the epoch (classic syslog: year inferred)
  std::string sender;           // from qmgr from=<>; "" for the null sender or when not seen
  bool sender_known = false;    // a qmgr from= line for this queue id was seen
  std::string message_id;       // from cleanup message-id=
  int64_t size = -1;            // from qmgr size= (-1 when not seen)
  int nrcpt = -1;               // from qmgr nrcpt= (-1 when not seen)
  std::string recipient;        // to=<...>, domain lower-cased (same as result.recipient)
  std::string orig_recipient;   // orig_to=<...>, if any
  std::string log_status;       // sent, deferred, bounced, expired
  std::string dsn;              // dsn=5.7.1 as logged (for expired: of the last deferral)
  std::string relay;            // relay=host[addr]:port
  std::string program;          // postfix/smtp, postfix/error, ...
  std::string bounce_queue_id;  // the DSN Postfix generated for this message, if known yet
  Result result;                // classification of the reply text
};

struct LogStats {
  uint64_t lines = 0;
  uint64_t postfix_lines = 0;  // well-formed lines from a Postfix program
  uint64_t events = 0;
  uint64_t skipped_garbage = 0;    // not a syslog line at all
  uint64_t skipped_truncated = 0;  // a Postfix delivery/queue line cut before its status
  uint64_t skipped_too_long = 0;   // longer than kMaxLogLineBytes
  uint64_t cut_reasons = 0;        // events whose reply text was cut (kept, text as far as read)
  uint64_t ignored_statuses = 0;   // address-verification probes (deliverable/undeliverable)
  uint64_t expired_without_recipients = 0;  // expiries of queue ids with no known pending rcpt
  uint64_t tracked_queue_ids = 0;           // currently held in memory
  uint64_t max_tracked_queue_ids = 0;       // high-water mark of tracked_queue_ids
  uint64_t evicted_queue_ids = 0;  // dropped because the table was full (no "removed" seen)
  uint64_t dropped_pending = 0;    // pending recipients beyond kMaxPendingPerQueueId
  uint64_t classify_calls = 0;     // reply texts run through the RuleSet (cache misses)
  uint64_t classify_cache_hits = 0;
};

// Events counted by (log status, provider, category): what a summary needs (see
// LogCorrelator::counts). The views point into the correlator (valid while it lives).
struct EventCount {
  std::string_view log_status;  // sent, deferred, bounced, expired
  std::string_view provider;    // the result's provider ("" for none)
  Category category = Category::kUndetermined;
  uint64_t count = 0;
};

// What the correlator remembers about a queue id from the lines before its deliveries: the
// qmgr from= line (sender, size, nrcpt), cleanup's message-id= and the queue id of the
// non-delivery notice. Lines of a message are spread over minutes or days, so a reader that
// restarts in between keeps these (LogCorrelator::TakeQueueFacts) with its input position and
// gives them back (RestoreQueueFacts), or the message's later events lose their sender and
// message-id.
struct QueueFacts {
  std::string queue_id;
  std::string sender;
  bool sender_known = false;
  std::string message_id;
  std::string bounce_queue_id;
  int64_t size = -1;
  int nrcpt = -1;
  int64_t updated = 0;  // when a store last wrote them (seconds since the epoch; set by it)
};

class LogCorrelator {
 public:
  using Sink = std::function<void(const DeliveryEvent&)>;
  LogCorrelator(std::shared_ptr<const RuleSet> rules, Sink sink);
  ~LogCorrelator();
  LogCorrelator(const LogCorrelator&) = delete;
  LogCorrelator& operator=(const LogCorrelator&) = delete;

  // Feeds one line (without its newline). Calls the sink zero or more times; the event passed
  // is only valid during the call. The same as ParseLogLine followed by FeedParsed.
  void Feed(std::string_view line);
  // Feeds one line parsed elsewhere (e.g. on another thread): `parsed` must be what
  // ParseLogLine(line, &parsed) gave, its views still valid. A line longer than kMaxLogLineBytes
  // is counted as too long and `parsed` is not read (it need not have been parsed at all).
  void FeedParsed(std::string_view line, const ParsedLogLine& parsed);
  // What FeedParsed would make of a line, for a pipelined reader that parses on another thread:
  // kSkip and kSkipPostfixLine lines change nothing but counts (with set_counts_only, lines
  // that are not deliveries, expiries or removals), so the reader may leave them out and hand
  // over how many it left with AddLeftOutLines. Reads only the counts_only setting: safe from
  // another thread while that does not change.
  enum class LineUse : uint8_t { kFeed, kSkip, kSkipPostfixLine };
  LineUse UseOf(std::string_view line, const ParsedLogLine& parsed) const;
  // What FeedParsed counts for `lines` lines that UseOf said to skip, `postfix_lines` of them
  // kSkipPostfixLine.
  void AddLeftOutLines(uint64_t lines, uint64_t postfix_lines);
  const LogStats& stats() const;
  // The year assumed for classic syslog timestamps (default: the current year). A month going
  // back by more than six (Dec -> Jan) advances it.
  void set_year(int year);
  // The time the log is read at (seconds since the epoch): the year of the next classic
  // timestamp, which has none, becomes the one that puts it at most a day after this time in
  // the zone of set_utc_offset (a log holds no lines from the future: December's lines read in
  // January are last year's). Later lines go on from there as with set_year. 0: off.
  void set_reference_time(int64_t unix_time);
  // The zone classic timestamps were written in, as seconds east of UTC (default 0: UTC).
  void set_utc_offset(int seconds);
  // Caps the queue id table (default kDefaultMaxTrackedQueueIds; at least 1).
  void set_max_tracked_queue_ids(size_t n);
  // For summaries: events are counted (see counts()) and carry only log_status and the result's
  // category and provider (other fields are left stale); no per-event strings are copied, and
  // sender, message-id and DSN-link bookkeeping is skipped. Classification is unchanged. With
  // no sink (a null Sink), events are only counted.
  void set_counts_only(bool on);
  // With set_counts_only: every event so far, counted by (log status, provider, category);
  // combinations never seen are left out.
  std::vector<EventCount> counts() const;
  // Swaps in new rules (reload); clears the classification cache.
  void set_rules(std::shared_ptr<const RuleSet> rules);

  // Queue facts (see QueueFacts). With tracking on, TakeQueueFacts hands out, once per call,
  // the facts of every queue id whose facts changed since the last call (`changed`) and the ids of
  // those that were handed out or restored before and are now forgotten (`forgotten`: Postfix
  // removed the message, or the table evicted it): a keeper that deletes `forgotten` and then
  // stores `changed` holds what the correlator knows. A queue id that came and went between two
  // calls appears in neither. Off by default (parse-log needs none of it).
  void set_track_queue_facts(bool on);
  void TakeQueueFacts(std::vector<QueueFacts>* changed, std::vector<std::string>* forgotten);
  // Gives back facts kept from an earlier run, before its first line (later lines about the
  // queue id update them as usual). Counted as handed out: forgetting them is reported.
  void RestoreQueueFacts(const QueueFacts& facts);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The result LogCorrelator gives the `expired` event of a recipient whose last deferral had
// `deferral` as its result (the correlator's, as stored): the deferral's reply classified as
// given up on. For a reader that lost the correlator holding the deferral (a restart): the
// correlator then reports the expiry without recipients, and the reader, which stored the
// deferral, builds the recipient's event with this. Pure, like the correlator.
Result ExpiredResultAfter(const RuleSet& rules, const Result& deferral);

// Splits a byte stream into lines for LogCorrelator::Feed (or anything else), without copying
// complete lines: only a line that spans two chunks is carried over, and at most
// kLogLineCarryBytes of it (enough for Feed to see it is too long, "\r" removed or not).
// "\r\n" ends are accepted; the "\r" is removed. What Feed counts does not depend on where the
// chunks break.
class LogLineSplitter {
 public:
  // Calls on_line(std::string_view) for every complete line in `chunk`.
  template <typename OnLine>
  void Push(std::string_view chunk, OnLine&& on_line);
  // Hands out a last line that had no newline.
  template <typename OnLine>
  void Finish(OnLine&& on_line);
  // `line` without the "\r" of a "\r\n" end (the daemon's log follower strips it the same way).
  static std::string_view Chomp(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  }

 private:
  void Carry(std::string_view part);
  std::string carry_;
  bool carrying_ = false;
};

template <typename OnLine>
void LogLineSplitter::Push(std::string_view chunk, OnLine&& on_line) {
  const char* p = chunk.data();
  const char* end = p + chunk.size();
  while (p < end) {
    const void* nl = __builtin_memchr(p, '\n', static_cast<size_t>(end - p));
    if (nl == nullptr) {
      Carry(std::string_view(p, static_cast<size_t>(end - p)));
      return;
    }
    const char* e = static_cast<const char*>(nl);
    std::string_view piece(p, static_cast<size_t>(e - p));
    if (carrying_) {
      Carry(piece);
      on_line(Chomp(carry_));
      carry_.clear();
      carrying_ = false;
    } else {
      on_line(Chomp(piece));
    }
    p = e + 1;
  }
}

template <typename OnLine>
void LogLineSplitter::Finish(OnLine&& on_line) {
  if (carrying_) {
    on_line(Chomp(carry_));
    carry_.clear();
    carrying_ = false;
  }
}

}  // namespace bounced
