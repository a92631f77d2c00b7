// dsn_parser.cc: see dsn_parser.h. Decides what kind of message it was given (RFC 3464 DSN,
// ARF report, SES notification, text bounce, RFC 3834 auto-reply), collects one Finding per
// recipient with the bounce's own words, and hands each to the RuleSet for its category.
#include "classifier/dsn_parser.h"

#include <algorithm>
#include <array>
#include <cctype>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "classifier/byte_scan.h"
#include "classifier/dsn_fields.h"
#include "classifier/dsn_mime.h"
#include "classifier/dsn_ses.h"
#include "classifier/dsn_text.h"
#include "classifier/gmime_loader.h"
#include "classifier/text.h"

namespace bounced {
namespace {

using dsn::Finding;
using dsn::MimeLeaf;
using dsn::MimeView;
// Part types are std::strings: compared with views, their sizes decide most comparisons without
// a call (a comparison with a C string measures it and calls memcmp).
using namespace std::string_view_literals;

std::string AngleStripped(std::string_view v) {
  v = TrimSpace(v);
  size_t lt = v.find('<');
  size_t gt = v.find('>', lt == std::string_view::npos ? 0 : lt);
  if (lt != std::string_view::npos && gt != std::string_view::npos)
    v = v.substr(lt + 1, gt - lt - 1);
  return Sanitize(v, 998);
}

// The first address in a header value ("Neko <a@b>" -> "a@b"), or "".
std::string FirstAddress(std::string_view value) {
  size_t at = value.find('@');
  if (at == std::string_view::npos) return {};
  size_t b = at;
  while (b > 0 && value[b - 1] != '<' && value[b - 1] != ' ' && value[b - 1] != ',' &&
         value[b - 1] != '"' && value[b - 1] != ':' && value[b - 1] != ';' && value[b - 1] != '(')
    --b;
  size_t e = at;
  while (e < value.size() && value[e] != '>' && value[e] != ' ' && value[e] != ',' &&
         value[e] != '"' && value[e] != ';' && value[e] != ')')
    ++e;
  if (b == at || e == at + 1) return {};
  return CanonicalAddress(value.substr(b, e - b));
}

// Bounce sender local parts and display names MTAs use.
bool FromMailerDaemon(const MimeView& view) {
  static constexpr std::string_view kWords[] = {
      "mailer-daemon",
      "mailer_daemon",
      "mail-daemon",
      "postmaster",
      "mail delivery",
      "maildelivery",
      "mdaemon",
      "mailerdaemon",
      "mail system",
      "mail administrator",
      "no-reply@sns.amazonaws.com",
      "mail.delivery",
      "mailer daemon",
      "delivery subsystem",
      "system administrator",
      "e-mail interconnect",
  };
  static constexpr PhraseSet kDaemon(kWords);
  if (kDaemon.ContainsAny(view.Get("from"))) return true;
  return view.Get("from").empty() && view.Get("return-path").find("<>") != std::string_view::npos;
}

bool BounceSubject(std::string_view subject) {
  static constexpr std::string_view kWords[] = {
      "undeliver",
      "undelivered",
      "delivery status",
      "delivery fail",
      "mail delivery",
      "not delivered",
      "could not be deliv",
      "non-delivery",
      "nondeliver",
      "delivery notification",
      "delivery problem",
      "message delivery",
      "delivery report",
      "unable to deliver",
      "delivery error",
      "not be delivered",
      "failed delivery",
      "delivery has failed",
      "email delivery",
      "message not deliv",
      "returned mail",
      "failure notice",
      "mail system error",
      "returned to sender",
      "unzustellbar",
      "delayed",
      "warning: message",
      "mail failure",
      "rejected",
      "bounce",
      "returned message",
      "aws notification",
      "no se puede entregar",
      "non remis",
      "non recapitabile",
      "onbestelbaar",
  };
  static constexpr PhraseSet kSubjects(kWords);
  return kSubjects.ContainsAny(subject);
}

bool BounceWording(std::string_view text) {
  static constexpr std::string_view kWords[] = {
      "could not be delivered",
      "couldn't be delivered",
      "permanent error",
      "delivery failed",
      "was not delivered",
      "undeliverable",
      "wasn't able to deliver",
      "did not reach",
      "failed permanently",
      "unable to deliver",
      "delivery to the following",
      "has not yet been delivered",
      "error delivering",
      "delivery has failed",
      "could not be sent",
      "following address",
      "following recipient",
      "not be delivered",
      "delivery status notification",
      "non-delivery",
      "returned to sender",
      "message could not",
      "rejected by",
      "delivery problem",
      "transcript of session",
      "mail delivery",
      "failed to deliver",
      "not a member",
      "user unknown",
      "unknown user",
      "no such user",
      "mailbox is full",
      "mailbox full",
      "is not a member",
      "could not deliver",
      "delivery attempts",
      "cannot be delivered",
  };
  std::string lower = AsciiLowerCopy(text.substr(0, 16384));
  for (std::string_view w : kWords) {
    if (lower.find(w) != std::string::npos) return true;
  }
  return false;
}

// A text bounce that only warns of a delay (Exim's "Warning: message ... delayed", OpenSMTPD's
// "Delivery status notification: delayed", "still being retried"): the MTA keeps trying.
bool DelayNotice(std::string_view subject, std::string_view explanation) {
  // Failure subjects carry the original subject ("Undeliverable: Delayed order"), so their
  // own words decide first.
  static constexpr std::string_view kFailure[] = {"undeliver", "fail",      "returned",
                                                  "rejected",  "not be de", "non remis"};
  static constexpr std::string_view kDelay[] = {"delay", "still being retried"};
  static constexpr PhraseSet kFailureSubject(kFailure), kDelaySubject(kDelay);
  if (!kFailureSubject.ContainsAny(subject) && kDelaySubject.ContainsAny(subject)) return true;
  // The phrases by a word each of them contains: a text without the word skips its group.
  static constexpr std::string_view kDelayed[] = {"message is delayed", "has been delayed",
                                                  "delivery is delayed"};
  static constexpr std::string_view kWill[] = {"will continue", "will be retried", "will retry",
                                               "will keep trying", "will try again"};
  static constexpr std::string_view kOther[] = {"still being retried", "not yet been delivered",
                                                "continue to attempt"};
  std::string_view head = explanation.substr(0, 4096);
  auto any = [&](std::string_view word, const auto& phrases) {
    if (!word.empty() && !ContainsNoCase(head, word)) return false;
    for (std::string_view w : phrases) {
      if (ContainsNoCase(head, w)) return true;
    }
    return false;
  };
  return any("delayed", kDelayed) || any("will ", kWill) || any("", kOther);
}

// RFC 3834 and the vendor headers that mark vacation replies and other auto-responders.
bool LooksLikeAutoReply(const MimeView& view) {
  std::string_view subject = view.Get("subject");
  static constexpr std::string_view kSubjects[] = {
      "auto:",
      "auto reply",
      "auto-reply",
      "autoreply",
      "automatic reply",
      "auto response",
      "auto-response",
      "autoresponse",
      "réponse automatique",
      "automatische antwort",
      "respuesta automática",
      "respuesta automatica",
      "automatisch antwoord",
      "risposta automatica",
      "resposta automática",
      "automatiskt svar",
      "automatisk svar",
      "automatyczna odpowied",
      "automatická odpověď",
      "automaattinen vastaus",
      "automatikus válasz",
      "otomatik yanıt",
      "автоматический ответ",
      "Автоматический ответ",
      "out of office",
      "out of the office",
      "vacation",
      "abwesenheit",
      "abwesend:",
      "absence",
      "absent du bureau",
      "fuera de la oficina",
      "fuori ufficio",
      "afwezig:",
      "自動応答",
      "自動返信",
      "自动回复",
      "自動回覆",
      "자동 회신",
      "不在",
  };
  static constexpr PhraseSet kAutoSubject(kSubjects);
  if (kAutoSubject.ContainsAny(subject)) return true;
  if (!view.Get("x-autoreply").empty() || !view.Get("x-autorespond").empty()) return true;
  if (EqualsNoCase(TrimSpace(view.Get("precedence")), "auto_reply")) return true;
  if (StartsWithNoCase(TrimSpace(view.Get("auto-submitted")), "auto-replied") &&
      !FromMailerDaemon(view))
    return true;
  return !view.Get("x-auto-response-suppress").empty() &&
         StartsWithNoCase(subject, "re:") == false && ContainsNoCase(subject, "reply");
}

// The weaker marks an auto-responder may carry instead of the ones above (Exchange, iCloud and
// many helpdesks write no vacation subject): read only when the message holds no bounce, since
// mailer daemons and other notifications carry them too (cron's mail from root among them).
bool MarkedAutoResponse(const MimeView& view) {
  // A reply that names no sender answers for nobody.
  std::string from = FirstAddress(view.Get("from"));
  if (from.empty() || StartsWithNoCase(from, "root@")) return false;
  // A delivery report's shape, or Sendmail's "auto-generated (failure)" (and its warnings):
  // a broken bounce, never a reply.
  if (!view.report_type.empty()) return false;
  if (EqualsNoCase(TrimSpace(view.Get("x-apple-action")), "vacation")) return true;  // iCloud
  std::string_view submitted = TrimSpace(view.Get("auto-submitted"));
  if (StartsWithNoCase(submitted, "auto-generated") || StartsWithNoCase(submitted, "auto-notified"))
    return !ContainsNoCase(submitted, "failure") && !ContainsNoCase(submitted, "warning");
  std::string_view suppress = view.Get("x-auto-response-suppress");
  return ContainsNoCase(suppress, "oof") || ContainsNoCase(suppress, "autoreply");
}

const MimeLeaf* FindPart(const MimeView& view, std::initializer_list<std::string_view> types,
                         bool attached) {
  for (const MimeLeaf& p : view.parts) {
    if (p.attached != attached) continue;
    for (std::string_view t : types) {
      if (p.type == t) return &p;
    }
  }
  return nullptr;
}

// What a local delivery program's exit status means ("X-Unix; 71"), by the sysexits.h names
// Sendmail and Postfix report them with; "" for anything else.
std::string_view SysexitsMeaning(std::string_view code) {
  static constexpr std::pair<std::string_view, std::string_view> kCodes[] = {
      {"64", "command line usage error"},  {"65", "data format error"},
      {"66", "cannot open input"},         {"67", "addressee unknown"},
      {"68", "host name unknown"},         {"69", "service unavailable"},
      {"70", "internal software error"},   {"71", "system error"},
      {"72", "critical OS file missing"},  {"73", "can't create output file"},
      {"74", "input/output error"},        {"75", "temporary failure"},
      {"76", "remote error in protocol"},  {"77", "permission denied"},
      {"78", "local configuration error"},
  };
  code = TrimSpace(code);
  for (auto [number, meaning] : kCodes) {
    if (code == number) return meaning;
  }
  return {};
}

// At least a few letters: a reason, not just an exit code.
bool HasWords(std::string_view s) {
  int letters = 0;
  for (char c : s) {
    letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
    if (letters >= 4) return true;
  }
  return false;
}

// Reply codes MTAs actually send; used to find one in text that ExtractReplyCode's strict
// positions miss ("550: 5.2.2 ...", "ERROR_CODE :550", "[550 5.1.1 ...", "error 550-'5.2.2").
bool IsKnownReplyCode(std::string_view c) {
  static constexpr std::string_view kCodes[] = {
      "421", "432", "441", "442", "447", "450", "451", "452", "454", "455", "471", "500", "501",
      "502", "503", "504", "510", "511", "512", "513", "521", "523", "530", "534", "535", "541",
      "550", "551", "552", "553", "554", "555", "556", "557", "571", "250", "251", "252"};
  // Indexed by the code's value: one load instead of a compare per known code (this runs on
  // every three-digit number of every reason text).
  static constexpr std::array<bool, 1000> kKnown = [] {
    std::array<bool, 1000> known{};
    for (std::string_view k : kCodes)
      known[(k[0] - '0') * 100 + (k[1] - '0') * 10 + (k[2] - '0')] = true;
    return known;
  }();
  auto digit = [](char d) { return d >= '0' && d <= '9'; };
  if (c.size() != 3 || !digit(c[0]) || !digit(c[1]) || !digit(c[2])) return false;
  return kKnown[(c[0] - '0') * 100 + (c[1] - '0') * 10 + (c[2] - '0')];
}

std::string LooseReplyCode(std::string_view text) {
  for (size_t i = 0; i + 3 <= text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) continue;
    bool left_ok = i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) ||
                               text[i - 1] == '.' || text[i - 1] == '-' || text[i - 1] == '_' ||
                               text[i - 1] == '/' || text[i - 1] == '#' || text[i - 1] == '=');
    std::string_view code = text.substr(i, 3);
    bool digits = std::isdigit(static_cast<unsigned char>(code[1])) &&
                  std::isdigit(static_cast<unsigned char>(code[2]));
    char next = i + 3 < text.size() ? text[i + 3] : ' ';
    bool right_ok = next == ' ' || next == '-' || next == ':' || next == ',' || next == ']' ||
                    next == '\n' || next == ')';
    if (left_ok && digits && right_ok && IsKnownReplyCode(code)) return std::string(code);
    while (i < text.size() && std::isalnum(static_cast<unsigned char>(text[i]))) ++i;
  }
  return {};
}

// A reply code with the enhanced status right after it ("550 5.1.1", "550-'5.2.2",
// "[421 4.4.2"): the remote server's own words, in the order the text has them.
struct ReplyPair {
  std::string code;
  std::string status;
};

// The first position in [from, limit) holding an ASCII digit, or `limit` (at most
// text.size()); sixteen positions at a time: reason texts are mostly letters.
size_t NextDigit(std::string_view text, size_t from, size_t limit) {
  return FindInRange(text.data(), from, limit, '0', '9');
}

// Calls pair(code, status) for each such pair in `text`, in order, at most 16, until it
// returns false. The views point into `text`; nothing is allocated.
template <typename Pair>
void ForEachReplyPair(std::string_view text, Pair&& pair) {
  auto digit = [&](size_t i) { return i < text.size() && text[i] >= '0' && text[i] <= '9'; };
  int found = 0;
  size_t limit = text.size() >= 9 ? text.size() - 8 : 0;  // positions i with i + 8 < size
  for (size_t i = NextDigit(text, 0, limit); i < limit && found < 16;
       i = NextDigit(text, i + 1, limit)) {
    if (!digit(i + 1) || !digit(i + 2) || digit(i + 3)) continue;
    if (i > 0 && (std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '.'))
      continue;
    std::string_view code = text.substr(i, 3);
    if (!IsKnownReplyCode(code)) continue;
    size_t j = i + 3;
    for (int k = 0; k < 3 && j < text.size() &&
                    std::string_view(" -'\"#:").find(text[j]) != std::string_view::npos;
         ++k)
      ++j;
    if (j == i + 3 || j >= text.size() || text[j] != code[0] || j + 1 >= text.size() ||
        text[j + 1] != '.')
      continue;
    size_t k = j + 2;
    size_t subject = k;
    while (digit(k) && k - subject < 3) ++k;
    if (k == subject || k >= text.size() || text[k] != '.') continue;
    size_t detail = ++k;
    while (digit(k) && k - detail < 3) ++k;
    if (k == detail || digit(k) || (k < text.size() && text[k] == '.' && digit(k + 1))) continue;
    ++found;
    if (!pair(code, text.substr(j, k - j))) return;
    i = k;
  }
}

// The status and reply code a reason text states. An expiry notice ("554 4.4.7 Message
// expired ... <421 4.4.2 Connection timed out>") carries the last real error inside it. A
// session transcript (MDaemon's, hMailServer's) holds the server's successes before its
// failure ("250 2.1.0 Ok" to MAIL FROM, then "550 5.1.1" to RCPT TO): a success is not the
// reason when a failure follows it.
ReplyPair StatedReply(std::string_view text) {
  std::string_view first_code, first_status, last_code, last_status;
  int pairs = 0;
  ForEachReplyPair(text, [&](std::string_view code, std::string_view status) {
    if (pairs++ == 0 || (first_code[0] == '2' && code[0] != '2')) {
      first_code = code;
      first_status = status;
    }
    last_code = code;
    last_status = status;
    return true;
  });
  if (pairs == 0) return ReplyPair{"", ExtractEnhancedStatus(text)};
  if (first_status.ends_with(".4.7") && pairs > 1)
    return ReplyPair{std::string(last_code), std::string(last_status)};
  return ReplyPair{std::string(first_code), std::string(first_status)};
}

// Where the first line holding field `line_name` ("\nAction", a line end and the name) starts
// in `text` at or after `from` (at its '\n'), or npos. Blanks may stand before the colon, as
// ParseDeliveryStatus reads them ("Action : failed").
size_t FindFieldLine(std::string_view text, std::string_view line_name, size_t from = 0) {
  for (size_t pos = FindNoCase(text, line_name, from); pos != std::string_view::npos;
       pos = FindNoCase(text, line_name, pos + 1)) {
    size_t colon = text.find_first_not_of(" \t", pos + line_name.size());
    if (colon != std::string_view::npos && text[colon] == ':') return pos;
  }
  return std::string_view::npos;
}

// DSN fields written into a text part (some gateways paste them there instead of a
// message/delivery-status part): from the first recipient field on.
std::string EmbeddedDeliveryStatus(std::string_view text) {
  size_t pos = FindFieldLine(text, "\nFinal-Recipient");
  if (pos == std::string_view::npos) return {};
  std::string_view rest = text.substr(pos + 1);
  if (FindFieldLine(rest, "\nAction") == std::string_view::npos &&
      FindFieldLine(rest, "\nStatus") == std::string_view::npos)
    return {};
  // Fields before Final-Recipient in the same paragraph belong to the group too.
  size_t para = text.rfind("\n\n", pos);
  size_t start = para == std::string_view::npos ? 0 : para + 2;
  return std::string(text.substr(start));
}

// Whether a text's first line is a delivery-status field (RFC 3464's per-message and
// per-recipient fields, Postfix's own): a report part under another media type.
bool StartsAsReport(std::string_view text) {
  std::string_view rest = text;
  while (!rest.empty() && (rest.front() == '\n' || rest.front() == ' ' || rest.front() == '\t'))
    rest.remove_prefix(1);
  for (std::string_view field : {"reporting-mta", "final-recipient", "original-recipient",
                                 "arrival-date", "received-from-mta", "original-envelope-id",
                                 "dsn-gateway", "x-postfix-queue-id", "x-postfix-sender"}) {
    if (!StartsWithNoCase(rest, field)) continue;
    std::string_view after = TrimSpace(rest.substr(field.size(), 4));
    if (after.starts_with(':')) return true;
  }
  return false;
}

// A recipient field's address: "rfc822; user@example.org" -> "user@example.org". Some MTAs
// add an RFC 822 comment ("user@example.org (Some Person)") or quote the whole address
// ("\"user@example.org\"", which no address is: a quoted local part ends before the '@'); both go.
std::string_view RecipientAddress(std::string_view value) {
  std::string_view a = dsn::StripTypePrefix(value);
  if (a.ends_with(')')) {
    // One word with an '@' before the comment: other text is left as it is.
    size_t open = a.find('(');
    std::string_view address = TrimSpace(a.substr(0, open));
    if (open != std::string_view::npos && open > address.size() &&
        address.find('@') != std::string_view::npos &&
        address.find_first_of(" \t") == std::string_view::npos)
      a = address;
  }
  if (a.size() > 2 && a.front() == '"' && a.back() == '"') {
    std::string_view inner = a.substr(1, a.size() - 2);
    if (inner.find('"') == std::string_view::npos && inner.find('@') != std::string_view::npos)
      return TrimSpace(inner);
  }
  return a;
}

// One Finding per recipient group of a delivery-status text.
std::vector<Finding> FindingsFromDeliveryStatus(const dsn::DeliveryStatus& ds,
                                                const dsn::Explanation& explanation) {
  std::vector<Finding> out;
  std::string_view message_remote =
      dsn::StripTypePrefix(dsn::FindField(ds.per_message, "remote-mta"));
  // Each recipient's wording in the text part, found in one pass over it.
  std::vector<std::string> addresses;
  addresses.reserve(ds.per_recipient.size());
  for (const std::vector<dsn::Field>& g : ds.per_recipient) {
    std::string_view r = RecipientAddress(dsn::FindField(g, "final-recipient"));
    if (r.empty()) r = RecipientAddress(dsn::FindField(g, "x-actual-recipient"));
    if (r.empty()) r = RecipientAddress(dsn::FindField(g, "original-recipient"));
    addresses.push_back(CanonicalAddress(r));
  }
  std::vector<std::string> blocks = dsn::BlocksFor(explanation, addresses);
  // Each finding is filled in its place (a Finding is eight strings: moving one in cost about
  // as much as filling it), and dropped again when it says nothing.
  out.reserve(std::min(ds.per_recipient.size(), dsn::kMaxRecipientGroups));
  size_t group = 0;
  for (const std::vector<dsn::Field>& g : ds.per_recipient) {
    Finding& f = out.emplace_back();
    // Final-Recipient, else X-Actual-Recipient, else Original-Recipient: as `addresses` has it.
    f.recipient = std::move(addresses[group]);
    std::string block = std::move(blocks[group++]);
    std::string_view original = RecipientAddress(dsn::FindField(g, "original-recipient"));
    if (!original.empty()) f.original_recipient = CanonicalAddress(original);
    std::string_view action = TrimSpace(dsn::FindField(g, "action"));
    if (size_t sp = action.find_first_of(" ("); sp != std::string_view::npos)
      action = action.substr(0, sp);
    f.action = AsciiLowerCopy(action);
    std::string_view status_field = dsn::FindField(g, "status");
    f.status = ExtractEnhancedStatus(status_field);
    if (f.status.empty()) {
      // "Status: 5.1.1 (...)" is found above; a bare "5.1.1" with odd spacing here.
      std::string_view t = TrimSpace(status_field);
      if (t.size() >= 5 && (t[0] == '2' || t[0] == '4' || t[0] == '5') && t[1] == '.') {
        f.status = ExtractEnhancedStatus(std::string("250 ") + std::string(t));
      }
    }
    std::string_view diagnostic_field = dsn::FindField(g, "diagnostic-code");
    f.diagnostic = dsn::StripTypePrefix(diagnostic_field);
    std::string_view exit_meaning;
    if (StartsWithNoCase(TrimSpace(diagnostic_field), "x-unix"))
      exit_meaning = SysexitsMeaning(f.diagnostic);
    f.remote_mta = dsn::StripTypePrefix(dsn::FindField(g, "remote-mta"));
    if (f.remote_mta.empty()) f.remote_mta = message_remote;
    // Local delivery agents report an exit code ("X-Unix; 77"); the text says why.
    if (!HasWords(f.diagnostic) && !block.empty()) {
      if (f.diagnostic.empty()) {
        f.diagnostic = block;
      } else {
        f.diagnostic.insert(0, 1, '\n');
        f.diagnostic.insert(0, block);
      }
    }
    if (!exit_meaning.empty()) {
      f.diagnostic += " (local delivery program: ";
      f.diagnostic += exit_meaning;
      f.diagnostic += ")";
    }
    // The remote reply's own enhanced code is more precise than a Status field that only
    // gives the class ("5.0.0") or a relay's summary ("4.4.7" for an expired retry); a reply
    // that is itself only a class or an expiry summary does not override a precise field.
    ReplyPair stated = StatedReply(f.diagnostic);
    bool field_precise = !f.status.empty() && !f.status.ends_with(".0.0");
    if (!stated.status.empty() && !(stated.status.ends_with(".0.0") && !f.status.empty()) &&
        !(stated.status.ends_with(".4.7") && field_precise)) {
      f.status = stated.status;
    }
    f.reply_code = stated.code;
    // "Message expired" (x.4.7) only says the retries ran out; the text part often lists the
    // replies of the attempts (Exchange: "returned '441 4.4.1 ...'"): the cause is there.
    if (f.status.ends_with(".4.7") && !block.empty()) {
      ForEachReplyPair(block, [&](std::string_view, std::string_view status) {
        if (status.ends_with(".4.7") || status[0] != f.status[0]) return true;
        f.status = status;
        return false;
      });
    }
    // An empty block has no stage; the diagnostic is the block itself when the field said
    // nothing, and then has none either.
    if (!block.empty()) {
      f.stage = StageFromText(std::string_view(block).substr(0, dsn::kMaxStageScanBytes));
    }
    if (f.stage.empty() && !(f.diagnostic == block)) {
      f.stage = StageFromText(std::string_view(f.diagnostic).substr(0, dsn::kMaxStageScanBytes));
    }
    // CommuniGate Pro names the step in its own words: "message text rejected by host: 552 ...".
    if (f.stage.empty() &&
        ContainsNoCase(std::string_view(block).substr(0, dsn::kMaxStageScanBytes),
                       "message text rejected by")) {
      f.stage = "eom";
    }
    if (f.recipient.empty() && f.diagnostic.empty() && f.status.empty()) {
      out.pop_back();
      continue;
    }
    if (out.size() >= dsn::kMaxRecipientGroups) break;
  }
  return out;
}

// Exim's X-Failed-Recipients: the failed addresses, in order.
std::vector<std::string> FailedRecipients(const MimeView& view) {
  std::vector<std::string> out;
  std::string_view failed = view.Get("x-failed-recipients");
  size_t pos = 0;
  while (pos < failed.size() && out.size() < dsn::kMaxTextRecipients) {
    size_t comma = failed.find(',', pos);
    if (comma == std::string_view::npos) comma = failed.size();
    std::string a = CanonicalAddress(TrimSpace(failed.substr(pos, comma - pos)));
    if (a.find('@') != std::string::npos) out.push_back(a);
    pos = comma + 1;
  }
  return out;
}

// Who an ARF report or a Hotmail-style complaint is about; *feedback_type gets the report's
// Feedback-Type ("" when it states none).
std::vector<Finding> FindingsFromFeedback(const MimeView& view, std::string_view report,
                                          std::string* feedback_type) {
  std::vector<Finding> out;
  dsn::DeliveryStatus fields = dsn::ParseDeliveryStatus(report);
  std::vector<const std::vector<dsn::Field>*> groups{&fields.per_message};
  for (const auto& g : fields.per_recipient) groups.push_back(&g);
  std::string type;
  for (const auto* g : groups) {
    for (const dsn::Field& h : *g) {
      if (EqualsNoCase(h.name, "feedback-type") && type.empty()) type = h.value;
      if ((EqualsNoCase(h.name, "original-rcpt-to") || EqualsNoCase(h.name, "removal-recipient")) &&
          out.size() < dsn::kMaxTextRecipients) {
        Finding f;
        f.recipient = CanonicalAddress(RecipientAddress(h.value));
        out.push_back(std::move(f));
      }
    }
  }
  if (out.empty()) {
    for (std::string_view name : {"x-hmxmroriginalrecipient", "to", "delivered-to"}) {
      std::string a = FirstAddress(MimeView::Find(view.original_headers, name));
      if (!a.empty()) {
        Finding f;
        f.recipient = a;
        out.push_back(std::move(f));
        break;
      }
    }
  }
  if (out.empty()) out.emplace_back();
  for (Finding& f : out)
    f.diagnostic = "feedback report: " + (type.empty() ? std::string("abuse") : type);
  *feedback_type = type;
  return out;
}

// A complaint's provider code: the feedback type its report states (ARF's Feedback-Type,
// SES's complaintFeedbackType), lower-case: "abuse", "fraud", "virus", "other", "not-spam",
// "auth-failure" (RFC 5965, RFC 6591) and the like; "abuse" when it states none, as a report
// without one is a complaint. The policy reads it: a not-spam or auth-failure report says
// nothing of the recipient's wishes (storage/store.h, complaint_report_only_types).
std::string FeedbackCode(std::string_view type) {
  std::string code = AsciiLowerCopy(Sanitize(type, 32));
  bool token = !code.empty();
  for (char c : code) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      token = false;
      break;
    }
  }
  return token ? code : "abuse";
}

// The recipient of the returned message, for text bounces that name none. The bounce's own
// X-Original-To and Delivered-To are not read: they name the mailbox the bounce was filed in
// (the sender's), as Postfix's local(8) and LMTP servers write them on every message.
std::string OriginalRecipient(const MimeView& view, std::string_view explanation) {
  std::string failed = FirstAddress(view.Get("x-failed-recipients"));
  if (!failed.empty()) return failed;
  for (std::string_view name : {"to", "x-original-to", "delivered-to", "envelope-to"}) {
    std::string a = FirstAddress(MimeView::Find(view.original_headers, name));
    if (!a.empty()) return a;
  }
  // Inline copies of the returned message ("To: a@b" in the quoted headers), read with the
  // value's folded lines ("To: Neko\n <a@b>").
  std::string_view all = explanation;
  for (size_t pos = FindFieldLine(all, "\nTo"); pos != std::string_view::npos;
       pos = FindFieldLine(all, "\nTo", pos + 1)) {
    size_t start = all.find(':', pos) + 1;
    size_t end = all.find('\n', start);
    while (end != std::string_view::npos && end + 1 < all.size() &&
           (all[end + 1] == ' ' || all[end + 1] == '\t') && end - start < 998)
      end = all.find('\n', end + 1);
    std::string value(all.substr(start, end == std::string_view::npos ? end : end - start));
    for (char& c : value) {
      if (c == '\n' || c == '\t') c = ' ';
    }
    std::string a = FirstAddress(value);
    if (!a.empty()) return a;
  }
  return {};
}

std::string AllText(const MimeView& view) {
  std::string all;
  for (const MimeLeaf& p : view.parts) {
    if (p.type == "text/html"sv) {
      all += dsn::StripHtml(p.text());  // an HTML bounce quotes "To: &lt;a@b&gt;<br>"
    } else if (p.type.starts_with("text/") || p.type == "message/rfc822"sv) {
      all += p.text();
    } else {
      continue;
    }
    all += '\n';
    if (all.size() > dsn::kMaxExplanationBytes) break;
  }
  return all;
}

// Longest reason text looked at; Sanitize keeps kMaxDiagnosticBytes of it after folding.
constexpr size_t kMaxReasonBytes = 4 * kMaxDiagnosticBytes;

// Reasons longer than this are not remembered (rare, and costly to key).
constexpr size_t kMaxRememberedReason = 2048;

// RuleSet::RecipientDomain(recipient) (the domain of the sanitised, normalised address). A
// recipient that is already plain (printable ASCII without spaces or angle brackets, not led
// by "rfc822;", not ending in '.', short) is one CanonicalAddress and Sanitize leave as it is
// but for the domain's case: its domain is lowered straight from it.
std::string RecipientDomainOf(std::string_view recipient) {
  bool plain = recipient.size() <= 320 && !recipient.empty() && recipient.back() != '.' &&
               !StartsWithNoCase(recipient, "rfc822;");
  size_t i = 0;
#if defined(__SSE2__)
  // Sixteen bytes at a time: each in 0x21..0x7E (signed compares put bytes >= 0x80 below),
  // none '<' or '>'.
  const __m128i lo = _mm_set1_epi8(' '), hi = _mm_set1_epi8(0x7F), lt = _mm_set1_epi8('<'),
                gt = _mm_set1_epi8('>');
  for (; plain && i + 16 <= recipient.size(); i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(recipient.data() + i));
    __m128i ok = _mm_and_si128(_mm_cmpgt_epi8(v, lo), _mm_cmplt_epi8(v, hi));
    __m128i angle = _mm_or_si128(_mm_cmpeq_epi8(v, lt), _mm_cmpeq_epi8(v, gt));
    plain = _mm_movemask_epi8(_mm_andnot_si128(angle, ok)) == 0xFFFF;
  }
#endif
  for (; plain && i < recipient.size(); ++i) {
    char c = recipient[i];
    plain = c > ' ' && c < 0x7F && c != '<' && c != '>';
  }
  if (!plain) return RuleSet::RecipientDomain(recipient);
  size_t at = recipient.rfind('@');
  if (at == std::string_view::npos) return {};
  return AsciiLowerCopy(recipient.substr(at + 1));
}

// Classify below, whole, for a finding: what it returns depends on the finding's texts and on
// the recipient's domain, not on the local part, which only fills recipient and
// original_recipient. Bounces repeat (one reply for many recipients of a domain, the same
// bounce delivered twice), so the result is remembered in the rule set's memo under those.
bool RecallFinding(const Finding& f, const RuleSet& rules, std::string& key, Result* r) {
  key.assign("dsn");
  key.push_back('\0');
  std::string domain = RecipientDomainOf(f.recipient);
  for (std::string_view part :
       {std::string_view(f.diagnostic), std::string_view(f.status), std::string_view(f.reply_code),
        std::string_view(f.stage), std::string_view(domain), std::string_view(f.remote_mta),
        std::string_view(f.action)}) {
    key.append(part);
    key.push_back('\0');
  }
  if (!rules.Recall(key, r)) return false;
  r->recipient = Sanitize(f.recipient, 320);
  r->original_recipient = Sanitize(f.original_recipient, 320);
  return true;
}

Result ClassifyUncached(const Finding& f, const RuleSet& rules);

// Fills *r, a default Result in its place in the output (a Result is a dozen strings: moving
// one in costs about as much as recalling it).
void Classify(const Finding& f, const RuleSet& rules, Result* r) {
  if (f.diagnostic.size() > kMaxRememberedReason) {
    *r = ClassifyUncached(f, rules);
    return;
  }
  thread_local std::string key;
  if (RecallFinding(f, rules, key, r)) return;
  *r = ClassifyUncached(f, rules);
  rules.Remember(key, *r);
}

Result ClassifyUncached(const Finding& f, const RuleSet& rules) {
  // Sanitize folds whitespace runs and trims the ends as FoldWhitespace would.
  std::string diagnostic = Sanitize(std::string_view(f.diagnostic).substr(0, kMaxReasonBytes));
  std::string reply_code = f.reply_code;
  if (reply_code.empty()) reply_code = ExtractReplyCode(diagnostic);
  if (reply_code.empty()) reply_code = LooseReplyCode(diagnostic);
  std::string status = f.status;
  if (status.empty()) {
    ReplyPair stated = StatedReply(diagnostic);
    status = stated.status;
    if (reply_code.empty() || (f.reply_code.empty() && reply_code[0] == '2' &&
                               !stated.code.empty() && stated.code[0] != '2'))
      reply_code = stated.code;
  }
  std::string remote = Sanitize(f.remote_mta, 255);
  ReplyInput in;
  in.diagnostic = diagnostic;
  in.status = status;
  in.reply_code = reply_code;
  in.stage = f.stage;
  in.recipient = f.recipient;
  in.remote_mta = remote;
  in.dsn_action = f.action;
  Result r = rules.Classify(in);
  r.recipient = Sanitize(f.recipient, 320);
  r.original_recipient = Sanitize(f.original_recipient, 320);
  r.diagnostic = std::move(diagnostic);
  r.remote_mta = std::move(remote);
  r.dsn_action = Sanitize(f.action, 32);
  if (r.status.empty()) r.status = std::move(status);
  if (r.reply_code.empty()) r.reply_code = std::move(reply_code);
  if (r.stage.empty()) r.stage = f.stage;
  return r;
}

}  // namespace

std::string_view ToString(MessageKind k) {
  switch (k) {
    case MessageKind::kNotBounce:
      return "not_bounce";
    case MessageKind::kDsn:
      return "dsn";
    case MessageKind::kFeedbackReport:
      return "feedback_report";
    case MessageKind::kAutoReply:
      return "auto_reply";
    case MessageKind::kNonStandardBounce:
      return "non_standard_bounce";
  }
  return "not_bounce";
}

std::string MimeLibraryProblem() { return dsn::GMime() == nullptr ? dsn::GMimeLoadError() : ""; }

ParsedBounce ParseBounce(std::string_view message, const RuleSet& rules, bool cut_short) {
  return ParseBounce(
      message, [&rules]() -> const RuleSet& { return rules; }, cut_short);
}

namespace {

// A bounce forwarded as an attachment is read from the attached message, and one forwarded
// again from the one inside that; no deeper (each level decodes the attachment again).
constexpr int kMaxForwardDepth = 2;

// Adds a warning (ParsedBounce::warnings) unless it is there already.
void Warn(ParsedBounce* out, std::string warning) {
  if (std::find(out->warnings.begin(), out->warnings.end(), warning) == out->warnings.end())
    out->warnings.push_back(std::move(warning));
}

std::string PartsCut() {
  return "the message has more than " + std::to_string(dsn::kMaxMimeParts) +
         " text parts; the rest were not read";
}

std::string RecipientsCut(size_t limit) {
  return "the bounce lists " + std::to_string(limit) + " recipients or more; only the first " +
         std::to_string(limit) + " were read";
}

// Whether a mailer daemon's bounce names its recipients in its own text, as step 4 of
// ParseMessage reads them: then a report inside its returned message is another bounce's (the
// message it returns was itself a bounce), not its own.
bool DaemonTextNamesRecipients(const MimeView& view, const dsn::Explanation& explained) {
  if (!FromMailerDaemon(view) || TrimSpace(explained.text()).empty()) return false;
  return !dsn::ScanExplanation(explained, dsn::ExcludedAddresses(view), FailedRecipients(view))
              .empty();
}

// ParseBounce for a message that is `depth` attachments deep in the message given.
ParsedBounce ParseMessage(std::string_view message,
                          const std::function<const RuleSet&()>& get_rules, int depth,
                          bool cut_short) {
  ParsedBounce out;
  if (cut_short) message = WholeLines(message);  // its last line is a line's start
  if (message.size() > kMaxMessageBytes) {
    cut_short = true;
    // Cut after the last whole line: a line cut short (an address, a status) is not read.
    message = message.substr(0, kMaxMessageBytes);
    if (std::string_view whole = WholeLines(message); !whole.empty()) message = whole;
    const std::string limit = std::to_string(kMaxMessageBytes >> 20) + " MiB";
    out.warnings.push_back("the message is longer than " + limit + "; only its first " + limit +
                           " were read");
  }
  if (TrimSpace(message).empty()) {
    out.error = "empty message";
    return out;
  }
  MimeView view = dsn::DecodeMime(message, dsn::MimeDecoder::kAuto, cut_short);
  out.message_id = AngleStripped(view.Get("message-id"));
  out.original_message_id = AngleStripped(MimeView::Find(view.original_headers, "message-id"));
  // The text part(s), split into lines once for every scan below.
  dsn::Explanation explained(view);
  std::string_view explanation = explained.text();

  std::vector<Finding> findings;
  // How many recipients the way the findings were read keeps at most (a report's groups, or a
  // text's addresses), and whether a report had more than that.
  size_t recipient_limit = dsn::kMaxTextRecipients;
  bool recipients_cut = false;
  std::optional<Category> forced;
  std::string_view forced_rule;
  std::string feedback_type;  // a complaint's, as its report states it
  // The findings are only what the message holds inside its attached message, or a guess from
  // its headers: an attached bounce read as a message of its own says more.
  bool weak = false;

  // 1. ARF feedback reports, and Hotmail's older complaint mails (no report part).
  const MimeLeaf* feedback = FindPart(view, {"message/feedback-report"}, false);
  bool hotmail_complaint = ContainsNoCase(view.Get("subject"), "complaint about message") &&
                           !view.original_headers.empty();
  if (feedback != nullptr || view.report_type == "feedback-report"sv || hotmail_complaint) {
    out.kind = MessageKind::kFeedbackReport;
    out.mta = "arf";
    std::string_view report = feedback != nullptr ? feedback->text() : std::string_view();
    // A report part labelled text/plain inside a feedback report: the part that holds the
    // report's Feedback-Type field.
    for (size_t i = 0; feedback == nullptr && report.empty() && i < view.parts.size(); ++i) {
      const MimeLeaf& p = view.parts[i];
      if (p.attached || p.type != "text/plain"sv) continue;
      std::string_view text = p.text();
      size_t at = FindNoCase(text, "feedback-type:");
      if (at != std::string_view::npos && (at == 0 || text[at - 1] == '\n')) report = text;
    }
    findings = FindingsFromFeedback(view, report, &feedback_type);
    forced = Category::kComplaint;
    forced_rule = "arf";
    // Hotmail's complaints are told by their subject alone, which a forward of one keeps
    // behind its "Fwd:".
    weak = feedback == nullptr && view.report_type != "feedback-report"sv &&
           !StartsWithNoCase(TrimSpace(view.Get("subject")), "complaint about message");
  }

  // 2. RFC 3464 delivery-status: the report part, else one pasted into the text.
  if (findings.empty()) {
    // Every report part outside the returned message (a few mailboxes glue two reports into
    // one file); only when there is none, one inside it (a forwarded bounce).
    std::vector<std::string_view> reports;
    const char* cut_report = nullptr;  // the report the message's cut ran through, if any
    bool reports_attached = false;
    for (bool attached : {false, true}) {
      for (const MimeLeaf& p : view.parts) {
        if (p.attached == attached &&
            (p.type == "message/delivery-status"sv ||
             p.type == "message/global-delivery-status"sv || p.type == "text/delivery-status"sv)) {
          reports.push_back(p.text());
          if (p.cut_at_end()) cut_report = reports.back().data();
        }
      }
      reports_attached = attached && !reports.empty();
      if (!reports.empty()) break;
    }
    if (reports_attached && DaemonTextNamesRecipients(view, explained)) {
      reports.clear();
      reports_attached = false;
    }
    std::string embedded;
    if (reports.empty()) {
      embedded = EmbeddedDeliveryStatus(explanation);
      if (!embedded.empty()) reports.push_back(embedded);
      // A report part labelled text/plain, after a first text part that ends with an "original
      // message follows" line: the explanation stops at that line, before the report. A later
      // text part that starts with a report's field is read as the report part it is.
      bool first_text = true;
      for (const MimeLeaf& p : view.parts) {
        if (!reports.empty()) break;
        if (p.attached || p.type != "text/plain"sv) continue;
        if (!first_text && StartsAsReport(p.text())) reports.push_back(p.text());
        first_text = false;
      }
    }
    for (std::string_view ds_text : reports) {
      dsn::DeliveryStatus fields = dsn::ParseDeliveryStatus(ds_text);
      // The cut ran through this report: a last group it left without its Status is not read
      // (its recipient may be whole, but nothing says what happened to it).
      if (ds_text.data() == cut_report && !fields.per_recipient.empty() &&
          dsn::FindField(fields.per_recipient.back(), "status").empty()) {
        fields.per_recipient.pop_back();
      }
      if (out.reporting_mta.empty()) {
        out.reporting_mta = Sanitize(
            dsn::StripTypePrefix(dsn::FindField(fields.per_message, "reporting-mta")), 255);
      }
      if (out.postfix_queue_id.empty()) {
        out.postfix_queue_id =
            Sanitize(dsn::FindField(fields.per_message, "x-postfix-queue-id"), 64);
      }
      // FindingsFromDeliveryStatus gives at most kMaxRecipientGroups: the first report's (most
      // bounces have one) are taken whole, not moved one by one.
      std::vector<Finding> found = FindingsFromDeliveryStatus(fields, explained);
      recipients_cut = recipients_cut || fields.more_recipients;
      if (findings.empty()) {
        findings = std::move(found);
      } else {
        for (Finding& f : found) {
          if (findings.size() >= dsn::kMaxRecipientGroups) {
            recipients_cut = true;
            break;
          }
          findings.push_back(std::move(f));
        }
      }
    }
    // File and pipe deliveries report the path as Final-Recipient; the address it was for is
    // the Original-Recipient or Exim's X-Failed-Recipients.
    std::vector<std::string> failed = FailedRecipients(view);
    for (size_t i = 0; i < findings.size(); ++i) {
      Finding& f = findings[i];
      if (dsn::LooksLikeAddress(f.recipient)) continue;
      if (dsn::LooksLikeAddress(f.original_recipient)) {
        f.recipient = f.original_recipient;
      } else if (failed.size() == findings.size()) {
        f.recipient = failed[i];
      } else if (failed.size() == 1) {
        f.recipient = failed[0];
      }
    }
    {
      if (!findings.empty()) {
        // A mailer daemon's bounce that returns another's report relays it; anyone else's
        // may forward it.
        weak = reports_attached && !FromMailerDaemon(view);
        recipient_limit = dsn::kMaxRecipientGroups;
        out.kind = MessageKind::kDsn;
        out.mta = FindString(explanation, "This is the mail system at host") != std::string::npos ||
                          !out.postfix_queue_id.empty()
                      ? "postfix"
                      : "rfc3464";
      }
    }
  }

  // 3. Amazon SES notifications (JSON).
  // FindString, not find: find calls memchr at every 'n' of the text, and most bounces are
  // asked this.
  if (findings.empty() && FindString(explanation, "notificationType") != std::string::npos) {
    if (auto ses = dsn::ParseSesNotification(explanation)) {
      findings = std::move(ses->recipients);
      out.mta = "amazonses";
      if (ses->type == dsn::SesNotification::Type::kComplaint) {
        out.kind = MessageKind::kFeedbackReport;
        forced = Category::kComplaint;
        forced_rule = "arf";
        feedback_type = ses->feedback_type;
      } else {
        out.kind = MessageKind::kNonStandardBounce;
        if (ses->forced_category) {
          forced = ses->forced_category;
          forced_rule = "amazonses-suppressed";
        }
      }
    }
  }

  // 4. Bounces in prose: Exim, Sendmail, qmail, Exchange, Gmail, Yahoo, carriers ...
  bool auto_reply = false;
  bool daemon = false;
  if (findings.empty()) {
    daemon = FromMailerDaemon(view);
    bool subject = BounceSubject(view.Get("subject"));
    // A bounce subject ("Undeliverable: Automatic reply: ...") returns someone's auto-reply.
    auto_reply = !daemon && !subject && LooksLikeAutoReply(view);
    // A bounce announces itself (daemon sender, subject, X-Failed-Recipients); a few carriers
    // send from a no-reply address with a bland subject, and only the wording tells (read
    // only then: it is the dearest of these checks).
    bool announced = daemon || subject || !view.Get("x-failed-recipients").empty();
    if (!auto_reply && (announced || BounceWording(explanation)) &&
        !TrimSpace(explanation).empty()) {
      std::vector<std::string> hint = FailedRecipients(view);
      findings = dsn::ScanExplanation(explained, dsn::ExcludedAddresses(view), hint);
      if (findings.empty() && announced) {
        // A mailer daemon's own bounce stays one; anyone else's may be a forward of one.
        weak = !daemon;
        Finding f;
        f.recipient = OriginalRecipient(view, AllText(view));
        f.diagnostic = explanation.substr(0, dsn::kMaxFallbackReasonBytes);
        std::string_view head = std::string_view(explanation).substr(0, dsn::kMaxStageScanBytes);
        f.stage = std::string(StageFromText(head));
        f.remote_mta = dsn::RemoteHostFromText(head);
        findings.push_back(std::move(f));
      }
      if (!findings.empty()) {
        out.kind = MessageKind::kNonStandardBounce;
        out.mta = "text";
        if (explained.cut()) {
          Warn(&out, "the bounce's text is longer than " +
                         std::to_string(dsn::kMaxExplanationBytes >> 10) +
                         " KiB; recipients after its first " +
                         std::to_string(dsn::kMaxExplanationBytes >> 10) + " KiB were not read");
        }
        // Without a report part the bounce itself is the action: a non-delivery notice says the
        // MTA gave up (so a temporary cause there means the retries ran out), a warning says
        // it is still trying.
        std::string_view action =
            DelayNotice(view.Get("subject"), explanation) ? "delayed" : "failed";
        for (Finding& f : findings) {
          if (f.action.empty()) f.action = action;
        }
        // au (KDDI) marks the bounces of its recipients' spam and domain filters with this
        // header: the refusal was the recipient's filter, whatever the text says.
        if (EqualsNoCase(TrimSpace(view.Get("x-spasign")), "NG")) {
          forced = Category::kFiltered;
          forced_rule = "kddi-spasign";
        }
      }
    }
  }

  // 5. RFC 3834 auto-replies: told by their subject or headers, or (no bounce found above) by
  // the weaker marks of an auto-generated message that is no mailer daemon's.
  if (findings.empty() && (auto_reply || (!daemon && MarkedAutoResponse(view)))) {
    Finding f;
    f.recipient = FirstAddress(view.Get("from"));
    f.diagnostic = Sanitize(view.Get("subject"), 998);
    findings.push_back(std::move(f));
    out.kind = MessageKind::kAutoReply;
    out.mta = "rfc3834";
    forced = Category::kAutoReply;
    forced_rule = "rfc3834";
    // An auto-reply that says the inbox is given up ("This email inbox ... is no longer in
    // use.") answers for a disabled mailbox, not for someone away.
    size_t inbox = FindNoCase(explanation, "this email inbox");
    if (inbox != std::string_view::npos &&
        FindNoCase(explanation, " is no longer in use", inbox) != std::string_view::npos) {
      forced = Category::kMailboxDisabled;
      forced_rule = "rfc3834-inbox-unused";
    }
    // Told by its subject or headers, which a forward of one keeps ("Fwd: Auto: ...").
    weak = true;
  }

  // A bounce forwarded as an attachment (a person's or a helpdesk's "Fwd:" whose
  // message/rfc822 part is the bounce): when the message says nothing of its own, or only what
  // its headers suggest or its attachments hold, each attached message is read as a message of
  // its own, headers and all, and those with recipients win: a forward of several bounces, or
  // a digest of them, gives every bounce's recipients in order (the first one's kind, MTA and
  // ids), and a forward of a bounce beside other mail the bounce's. A bounce's own report or
  // text always wins, so its returned message is never read (nor decoded again) here.
  if ((findings.empty() || weak) && depth < kMaxForwardDepth) {
    bool found = false;
    for (const MimeView::Attached& attached : view.attached_messages) {
      if (attached.bytes.empty()) continue;
      ParsedBounce forwarded = ParseMessage(attached.bytes, get_rules, depth + 1, false);
      if (forwarded.recipients.empty()) continue;
      if (!found) {
        found = true;
        // `out` stays the one object returned (moved into place), with its own warnings first.
        forwarded.warnings.insert(forwarded.warnings.begin(),
                                  std::make_move_iterator(out.warnings.begin()),
                                  std::make_move_iterator(out.warnings.end()));
        out = std::move(forwarded);
        continue;
      }
      for (Result& r : forwarded.recipients) {
        if (out.recipients.size() >= dsn::kMaxRecipientGroups) {
          Warn(&out, RecipientsCut(dsn::kMaxRecipientGroups));
          break;
        }
        out.recipients.push_back(std::move(r));
      }
      for (std::string& w : forwarded.warnings) Warn(&out, std::move(w));
    }
    if (view.attached_skipped > 0) {
      Warn(&out, "the message attaches " + std::to_string(view.attached_skipped) +
                     " more messages than the " + std::to_string(dsn::kMaxAttachedMessages) +
                     " read; those were not read");
    }
    if (found) {
      if (view.parts_cut) Warn(&out, PartsCut());
      return out;
    }
  }

  if (view.parts_cut) Warn(&out, PartsCut());
  if (recipients_cut || (!findings.empty() && findings.size() >= recipient_limit))
    Warn(&out, RecipientsCut(recipient_limit));

  if (findings.empty()) {
    out.kind = MessageKind::kNotBounce;
    out.error = "not a bounce: no delivery report, feedback report or bounce text found";
    return out;
  }
  const RuleSet& rules = get_rules();
  out.recipients.reserve(findings.size());
  for (const Finding& f : findings) {
    Result& r = out.recipients.emplace_back();
    Classify(f, rules, &r);
    if (forced) {
      r.category = *forced;
      r.rule = std::string(forced_rule);
      if (*forced == Category::kComplaint) r.provider_code = FeedbackCode(feedback_type);
    }
  }
  return out;
}

}  // namespace

ParsedBounce ParseBounce(std::string_view message, const std::function<const RuleSet&()>& get_rules,
                         bool cut_short) {
  // GMime loads when a message first needs it (gmime_loader.h); without it, only such messages
  // fail, each with the reason.
  try {
    return ParseMessage(message, get_rules, 0, cut_short);
  } catch (const dsn::GMimeUnavailable& e) {
    ParsedBounce out;
    out.error = e.what();
    return out;
  }
}

}  // namespace bounced
