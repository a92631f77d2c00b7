// dsn_parser.h: bounce messages in, per-recipient results out. Pure code, no I/O.
//
// Reads one whole message (RFC 5322 bytes, any line ends) and recognises: RFC 3464
// multipart/report delivery-status DSNs, ARF feedback reports (report-type=feedback-report),
// RFC 3834 auto-replies, and the non-standard bounces real MTAs and providers send (Exim,
// Sendmail, qmail, Exchange/Office 365, Gmail, Yahoo, Amazon SES, Postfix ...). MIME is decoded
// with GMime 3 (charsets, base64, quoted-printable, broken structure). Each recipient is then
// classified with the given RuleSet. Recipients come out in the order the bounce lists them.
// A message that is no bounce itself but forwards one as its attachment (message/rfc822) reads
// as the attached bounce (several attached bounces, or a digest of them: all their recipients,
// in order); a bounce's own report or text always wins over its returned message.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "classifier/result.h"
#include "classifier/rules.h"

namespace bounced {

enum class MessageKind { kNotBounce, kDsn, kFeedbackReport, kAutoReply, kNonStandardBounce };
std::string_view ToString(MessageKind k);

struct ParsedBounce {
  MessageKind kind = MessageKind::kNotBounce;
  std::vector<Result> recipients;   // in the order the message lists them
  std::string message_id;           // Message-ID of the bounce itself
  std::string original_message_id;  // Message-ID of the message that bounced, if found
  std::string postfix_queue_id;     // X-Postfix-Queue-ID, if any
  std::string reporting_mta;        // Reporting-MTA, if any
  std::string mta;                  // which MTA / provider format was recognised ("postfix", ...)
  std::string error;                // why nothing was found, when recipients is empty
  // What was not read, when a limit below cut the message short: a message longer than
  // kMaxMessageBytes, more recipients than a report or text is read for, more attached messages
  // than are opened. Empty for every ordinary bounce.
  std::vector<std::string> warnings;
};

// Largest message parsed; longer input is cut there, with a warning (a bounce's useful part is
// at the start). Give ParseBounce more than this (kMaxMessageBytes + 1) to have the cut noted.
inline constexpr size_t kMaxMessageBytes = 16 * 1024 * 1024;

// Never throws and never fails: malformed input yields kNotBounce with `error` set.
// `cut_short`: the message is only the start of a longer one (the milter's capture stopped at
// max_bounce_bytes): its last line, and a part's last line after transfer decoding, are not
// read, and a report's last recipient group is dropped when the cut left it without its Status.
// (A message longer than kMaxMessageBytes is cut so too.)
ParsedBounce ParseBounce(std::string_view message, const RuleSet& rules, bool cut_short = false);

// The same for callers whose rules may still be loading while bounces are read (bouncectl
// parse on several threads): `rules` is called once per message, and only when the message has
// recipients to classify; the set it returns must outlive the call.
ParsedBounce ParseBounce(std::string_view message, const std::function<const RuleSet&()>& rules,
                         bool cut_short = false);

// ParseBounce loads its MIME library (GMime 3) when a message first needs it (a charset other
// than UTF-8, an encoded word, base64, or a structure the built-in reader leaves to GMime; most
// plain-text bounces need none of these), classifier/gmime_loader.h. This loads it now, once per
// process, and says why it cannot be loaded (empty: loaded): a daemon calls it at start, to load it
// there and report a broken install before any message.
std::string MimeLibraryProblem();

}  // namespace bounced
