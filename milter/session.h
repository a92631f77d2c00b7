// session.h: the milter's decisions, without libmilter. Pure code: takes what Postfix sent
// (connect info, envelope, headers, body bytes) and the suppression lookup's answer, returns
// what to reply. milter.cc feeds it from the libmilter callbacks; tests feed it directly.
//
// Path detection: for mail that does not arrive over SMTP (sendmail(1) via pickup, Postfix's own
// bounces), Postfix's cleanup(8) emulates a connect event from "localhost", 127.0.0.1, port 0.
// A TCP client always has a non-zero source port, so (AF_INET 127.0.0.1, port 0, "localhost")
// identifies the non_smtpd_milters path. smtpd over a non-inet transport sends no address; that
// is treated as SMTP, so the safe per-recipient reply is used.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "milter/milter.h"

namespace bounced::milter_internal {

enum class MailPath { kSmtpd, kNonSmtpd };

// family: AF_INET/AF_INET6/0 (unknown); address in text; port in host order.
MailPath ClassifyPath(std::string_view hostname, int family, std::string_view address, int port);

// "<a@b>" / " a@b " -> "a@b". Postfix gives brackets on the SMTP path and none on the bounce path.
std::string_view StripAngles(std::string_view address);

// An smfi_setreply triple.
struct Reply {
  std::string code;   // "550"
  std::string xcode;  // "5.1.1"
  std::string text;   // already %-escaped for libmilter
};

// Renders "CODE X.Y.Z text" with {addr} {since} {category} {reason}. The address is made
// printable and '%' is doubled (libmilter passes text through a format).
Reply RenderReply(std::string_view tmpl, std::string_view address, const MilterSuppression& s);
// Checks a template: code 3 digits of the given class ('4' or '5'), enhanced code of the same
// class, only known placeholders. Error text names the problem.
Status CheckReplyTemplate(std::string_view tmpl, char code_class);

// What to do at RCPT TO.
struct RcptDecision {
  enum class Kind {
    kContinue,  // not suppressed (or dry run logged, or removal deferred to end of message)
    kReject,    // 5xx reply
    kTempfail,  // 4xx reply
  };
  Kind kind = Kind::kContinue;
  Reply reply;                            // for kReject / kTempfail
  std::optional<MilterSuppression> hit;   // the suppression, when there was one
  std::optional<EnforcementKind> record;  // what to record now (kRejected, kTempfailed, kLogged)
  bool remove_at_eom = false;             // sendmail(1) path: delete this recipient at EOM
  bool storage_error = false;             // the lookup failed
};

// lookup: the dependency's answer for this recipient.
RcptDecision DecideRcpt(const MilterConfig& config, MailPath path, bool null_sender,
                        std::string_view address,
                        const Expected<std::optional<MilterSuppression>>& lookup);

// Reply used when the lookup fails and on_storage_error = tempfail.
Reply StorageTempfailReply();

// Whether a message may be a bounce worth capturing: null sender, Content-Type multipart/report,
// Auto-Submitted other than "no", or the usual auto-reply markers. Fed one header at a time.
class BounceSniffer {
 public:
  explicit BounceSniffer(bool null_sender) : candidate_(null_sender) {}
  void Header(std::string_view name, std::string_view value);
  bool candidate() const { return candidate_; }

 private:
  bool candidate_;
};

// Accumulates a message (headers as Postfix gives them, then body chunks) up to a byte cap.
class MessageBuffer {
 public:
  explicit MessageBuffer(size_t cap) : cap_(cap) {}
  void Header(std::string_view name, std::string_view value);
  void EndOfHeaders();
  void Body(std::string_view chunk);
  const std::string& bytes() const { return bytes_; }
  bool truncated() const { return truncated_; }

 private:
  void Append(std::string_view s);
  size_t cap_;
  std::string bytes_;
  bool truncated_ = false;
};

// A recipient the sendmail(1) path will remove at end of message.
struct PendingRemoval {
  std::string raw;      // exactly as Postfix sent it (what smfi_delrcpt must be given)
  std::string address;  // brackets stripped
  MilterSuppression suppression;
};

// "a@x (user_unknown), b@y (mailbox_full)": the value of the removal header, printable,
// cut to a sane length.
std::string RemovalHeaderValue(const std::vector<PendingRemoval>& removed);

// Writes the message to dir/<unix time>-<key hash>.eml (0600, via a temp file and rename).
// Returns the path written.
Expected<std::string> WriteQuarantine(const std::string& dir, std::string_view dedup_key,
                                      std::string_view message);

}  // namespace bounced::milter_internal
