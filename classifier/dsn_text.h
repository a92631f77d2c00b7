// dsn_text.h: reading bounces from their human-readable text (internal to classifier/). Used for
// the non-standard bounces (Exim, Sendmail, qmail, Exchange, Gmail, Yahoo, DragonFly, Japanese
// carriers ...) and to add the stage and wording to RFC 3464 DSNs whose text part says more
// than the machine-readable fields. Works by the shapes MTAs share, not by file: an address
// on a line of its own (or led by "to:", ">>>", "--"), followed by its reason block; a
// Sendmail-style transcript; a returned-message marker ending the explanation.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "classifier/dsn_mime.h"

namespace bounced::dsn {

// Largest explanation text scanned (bytes); bounce explanations are short, but a prose bounce
// lists each failed recipient with its reason (~150 bytes each in Exim's), kMaxTextRecipients
// of them fit.
inline constexpr size_t kMaxExplanationBytes = 256 * 1024;
// When a recipient's own block says nothing, the start of the explanation stands in for it.
inline constexpr size_t kMaxFallbackReasonBytes = 4096;
// Stage and remote host are looked for in the first bytes of a reason only.
inline constexpr size_t kMaxStageScanBytes = 2048;
// Most recipients taken from one text bounce (and from X-Failed-Recipients, a feedback report
// or an SES notification); ParseBounce warns when a bounce reaches it. A text explanation is
// read for its first kMaxExplanationBytes, which name a few thousand addresses at most.
inline constexpr size_t kMaxTextRecipients = 2000;

// One recipient as the bounce describes it, before classification.
struct Finding {
  std::string recipient;
  std::string original_recipient;
  std::string action;      // DSN Action, lower-case, or ""
  std::string status;      // enhanced status when the bounce states one
  std::string reply_code;  // SMTP reply code when known apart from the text, else ""
  std::string diagnostic;  // the reason, as the bounce words it (not yet folded)
  std::string remote_mta;
  std::string stage;  // from the text when it says ("in reply to RCPT TO command")
};

// The human-readable explanation of a bounce: its unattached text parts (HTML stripped when
// there is no plain text), cut where the returned message begins, and split into lines once
// for every scan that reads it. A bounce with one plain text part is viewed in place (the
// MimeView must outlive this); only several parts or HTML are copied. Neither copyable nor
// movable: `text` and `lines` may point into `owned_`.
class Explanation {
 public:
  explicit Explanation(const MimeView& view);
  // An explanation that is the given text as is (not cut), e.g. for tests.
  explicit Explanation(std::string_view text);
  Explanation(const Explanation&) = delete;
  Explanation& operator=(const Explanation&) = delete;

  std::string_view text() const { return text_; }
  // `text` split at '\n' (no line for a final '\n'), views into it.
  const std::vector<std::string_view>& lines() const { return lines_; }
  // Whether the text went on past kMaxExplanationBytes: then it stops at the last whole line
  // before that.
  bool cut() const { return cut_; }

 private:
  bool cut_ = false;
  std::string owned_;
  std::string_view text_;
  std::vector<std::string_view> lines_;
};

// The text of an HTML part: tags dropped (block elements and <br> end a line), the common
// entities decoded.
std::string StripHtml(std::string_view html);

// Addresses the bounce cannot be about: its own From/To/Return-Path and the like (lower-case).
std::vector<std::string> ExcludedAddresses(const MimeView& view);

// Recipients and their reasons found in an explanation, in the order it lists them.
// `hint` holds recipients already known (X-Failed-Recipients); when given, only those are
// looked for.
std::vector<Finding> ScanExplanation(const Explanation& explanation,
                                     const std::vector<std::string>& excluded,
                                     const std::vector<std::string>& hint);

// For each address, the part of the explanation that talks about it (its reason block), or ""
// when the address does not occur. Used to enrich RFC 3464 recipients with their text-part
// wording. Only the first kMaxTextRecipients addresses are looked for (a report can list far
// more than its text part, cut at kMaxExplanationBytes, names); the rest get "".
std::vector<std::string> BlocksFor(const Explanation& explanation,
                                   const std::vector<std::string>& addresses);

// A mail address, as opposed to the file paths and pipe commands local deliveries report.
bool LooksLikeAddress(std::string_view s);

// The host named in "host mx.example.org[192.0.2.1] said:" / "host mx.example.org [192.0.2.1]:"
// style text, or "".
std::string RemoteHostFromText(std::string_view text);

}  // namespace bounced::dsn
