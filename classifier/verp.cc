// verp.cc: DecodeVerp, VerpRecipientOf, ApplyVerp (see verp.h).
#include "classifier/verp.h"

#include <fnmatch.h>

#include "classifier/dsn_mime.h"
#include "classifier/dsn_parser.h"
#include "classifier/dsn_text.h"
#include "classifier/rules.h"
#include "classifier/text.h"

namespace bounced {
namespace {

using sv = std::string_view;

constexpr sv kAddressSyntax = "@<>\"\\,;:()[] ";

bool Printable(char c) { return c > ' ' && c < 0x7f; }

bool MatchesAny(const std::vector<std::string>& patterns, sv s) {
  if (patterns.empty()) return true;
  const std::string text(s);
  for (const std::string& p : patterns) {
    if (::fnmatch(p.c_str(), text.c_str(), FNM_CASEFOLD) == 0) return true;
  }
  return false;
}

// A domain as a recipient's: labels of letters, digits and '-' joined by single dots.
bool IsDomain(sv d) {
  if (d.empty() || d.size() > 253 || d.front() == '.' || d.back() == '.') return false;
  char prev = '.';
  for (char c : d) {
    const bool label = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_';
    if (!label && !(c == '.' && prev != '.')) return false;
    prev = c;
  }
  return true;
}

}  // namespace

Status CheckVerpFormat(const VerpFormat& format) {
  const std::string& d = format.delimiters;
  if (d.size() != 2 || d[0] == d[1]) {
    return Status::Error(
        "delimiters: must be two different characters (Postfix's default is \"+=\")");
  }
  for (char c : d) {
    if (!Printable(c) || kAddressSyntax.find(c) != sv::npos) {
      return Status::Error(std::string("delimiters: '") + MaskControls(sv(&c, 1)) +
                           "' cannot stand in an address's local part");
    }
  }
  for (const auto& [key, list] :
       {std::pair{"prefixes", &format.prefixes}, std::pair{"domains", &format.domains}}) {
    for (const std::string& p : *list) {
      if (p.empty()) {
        return Status::Error(std::string(key) + ": an empty pattern matches nothing; leave it out");
      }
    }
  }
  return Status::Ok();
}

std::optional<std::string> DecodeVerp(sv return_path, const VerpFormat& format) {
  if (format.delimiters.size() != 2) return std::nullopt;
  // The address alone: inside <...>, without "rfc822;" and blanks (text.h).
  const std::string address = CanonicalAddress(return_path);
  const sv path = address;
  const size_t at = path.rfind('@');
  if (at == sv::npos) return std::nullopt;
  sv local = path.substr(0, at);
  const sv domain = path.substr(at + 1);
  if (local.size() >= 2 && local.front() == '"' && local.back() == '"') {
    local = local.substr(1, local.size() - 2);
  }
  const size_t first = local.find(format.delimiters[0]);
  if (first == 0 || first == sv::npos) return std::nullopt;
  const sv encoded = local.substr(first + 1);
  const size_t last = encoded.rfind(format.delimiters[1]);
  if (last == 0 || last == sv::npos) return std::nullopt;
  const sv user = encoded.substr(0, last);
  const sv user_domain = encoded.substr(last + 1);
  if (!IsDomain(user_domain) || !IsDomain(domain)) return std::nullopt;
  for (char c : user) {
    if (!Printable(c) || c == '@' || c == '<' || c == '>') return std::nullopt;
  }
  if (!MatchesAny(format.prefixes, local.substr(0, first)) || !MatchesAny(format.domains, domain)) {
    return std::nullopt;
  }
  std::string out(user);
  out += '@';
  out += AsciiLowerCopy(user_domain);
  return out;
}

std::optional<std::string> VerpRecipientOf(sv message, const VerpFormat& format) {
  if (message.substr(0, 5) == "From ") {  // an mbox separator line
    const size_t nl = message.find('\n');
    message = nl == sv::npos ? sv() : message.substr(nl + 1);
  }
  const dsn::HeaderBlock block = dsn::ParseHeaderBlock(message);
  for (sv name : {sv("x-original-to"), sv("delivered-to"), sv("to")}) {
    for (const dsn::Header& h : block.headers) {
      if (h.name != name) continue;
      if (std::optional<std::string> r = DecodeVerp(h.value, format)) return r;
      break;  // the first of each: a later Delivered-To is an earlier hop
    }
  }
  return std::nullopt;
}

size_t ApplyVerp(ParsedBounce* bounce, sv recipient, const RuleSet& rules) {
  size_t changed = 0;
  if (recipient.empty()) return changed;
  const bool reply =
      bounce->kind == MessageKind::kDsn || bounce->kind == MessageKind::kNonStandardBounce;
  for (Result& r : bounce->recipients) {
    if (!dsn::LooksLikeAddress(r.recipient)) {
      // The bounce names no address (or a file or pipe): the return path says whom it is about.
      r.recipient = std::string(recipient);
      if (reply) {
        ClassifyAgain(rules, ReplyInputOf(r), &r);
      } else if (r.provider.empty()) {
        r.provider = std::string(rules.ProviderFor(r.recipient, r.remote_mta));
      }
      ++changed;
    } else if (!EqualsNoCase(r.recipient, recipient) &&
               !EqualsNoCase(r.original_recipient, recipient)) {
      r.original_recipient = std::string(recipient);
      ++changed;
    }
  }
  return changed;
}

}  // namespace bounced
