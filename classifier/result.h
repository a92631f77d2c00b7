// result.h: the bounce taxonomy and the per-recipient result every part of bounced shares.
//
// Category names, fault names and action names are a public contract (JSON output, the
// database, reports, rules files): never rename one, only add. Each category has one fixed
// fault, default action and hard_bounce flag, given by Describe().
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace bounced {

enum class Category {
  // fault recipient, action suppress, hard bounce
  kUserUnknown,    // user_unknown: x.1.1, no such user
  kDomainUnknown,  // domain_unknown: x.1.2, null MX x.1.10, host not found
  kMailboxMoved,   // mailbox_moved: x.1.6
  kNotAccept,      // not_accept: 5xx only, the domain accepts no mail
  // fault recipient, action count
  kMailboxDisabled,  // mailbox_disabled: x.2.1, suspended or inactive
  kMailboxFull,      // mailbox_full: x.2.2
  // fault sender, action none
  kPolicyRejection,
  kSpamContent,
  kContentRejected,
  kFiltered,
  kVirusDetected,
  kReputationBlock,
  kAuthFailure,
  kRequirePtr,
  kTlsRequired,
  kSecurityError,
  kSenderRejected,
  kRelayDenied,
  kMessageTooLarge,
  // fault transient, action none
  kRateLimited,
  kGreylisted,
  kNetworkError,
  kSystemError,
  kProtocolError,
  kExpired,
  // other
  kComplaint,           // ARF feedback report: fault recipient, action suppress, not hard
  kAutoReply,           // RFC 3834 vacation and friends
  kDelivered,           // 2.x.x
  kSuppressedUpstream,  // an ESP says the address is on its own suppression list
  kUndetermined,
};
inline constexpr int kCategoryCount = static_cast<int>(Category::kUndetermined) + 1;

// Who must act. "recipient": the address or its domain; "sender": our reputation, content,
// authentication or setup; "transient": nobody, it should pass; "none": not a failure.
enum class Fault { kRecipient, kSender, kTransient, kNone };

// Default action: "suppress" now, "count" (suppress after a threshold of incidents), "none".
enum class Action { kSuppress, kCount, kNone };

struct CategoryInfo {
  Category category;
  std::string_view name;  // e.g. "user_unknown"
  Fault fault;
  Action action;
  bool hard_bounce;
  std::string_view cause;  // finer fault: address, domain, reputation, content, authentication,
                           // configuration, transient, feedback, none
};

const CategoryInfo& Describe(Category c);
std::string_view ToString(Category c);
std::string_view ToString(Fault f);
std::string_view ToString(Action a);
// Parses a category name as written in rules files and JSON; nullopt when unknown.
std::optional<Category> CategoryFromName(std::string_view name);

// One recipient's outcome, as the classifier returns it. Every string is already sanitised
// (printable UTF-8, whitespace folded) and safe to log or store.
// Result::sender_side as a condition on the events table's (or view's) columns.
inline constexpr const char* kSenderSideSql =
    "(fault = 'sender' OR (category = 'rate_limited' AND provider <> ''))";
// A hard bounce that suppresses at once (a hard_bounce category, bounced), likewise.
inline constexpr const char* kHardBounceFailureSql = "(hard_bounce = 1 AND log_status = 'bounced')";

struct Result {
  std::string recipient;           // final recipient, lower-cased domain
  std::string original_recipient;  // Original-Recipient when the DSN had one
  Category category = Category::kUndetermined;
  std::string status;         // enhanced status "5.7.1"; "5.0.0"/"4.0.0" from a basic code; ""
  std::string reply_code;     // "554", or "" when unknown
  std::string stage;          // connect, helo, mail, rcpt, data, eom, or ""
  std::string provider;       // icloud, gmail, yahoo, microsoft, aol, ... or ""
  std::string provider_code;  // CS01, HM08, TSS04, S3150, NoSuchUser ... or ""
  std::string diagnostic;     // the remote reply, whitespace-folded
  std::string remote_mta;     // host name or address of the remote MTA, or ""
  std::string dsn_action;     // the DSN Action field (failed, delayed, delivered, ...); for a
                              // prose bounce "failed" (or "delayed" for a warning); else ""
  std::string rule;           // id of the rule that decided the category, or "rfc3463"/"" fallback

  Fault fault() const { return Describe(category).fault; }
  // Whether reports and alerts list this with the sender-side problems: a sender fault, or a
  // named provider throttling us (rate_limited with a provider: Gmail 4.7.28, Yahoo TSS04,
  // Microsoft 4.7.650 ...), which is about our volume and reputation too, though transient.
  // kSenderSideSql is the same test on the events table's columns.
  bool sender_side() const {
    return fault() == Fault::kSender || (category == Category::kRateLimited && !provider.empty());
  }
  // The action this result calls for: its category's, except for a feedback report whose type
  // says nothing against the mail or the address ("not-spam", "auth-failure": a report about
  // our authentication, RFC 6591), which calls for none. The daemon's suppression policy reads
  // the same types from [policy] complaint_report_only_types.
  Action action() const;
  bool hard_bounce() const { return Describe(category).hard_bounce; }
};

}  // namespace bounced
