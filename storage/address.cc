// address.cc: address keys for suppression lookups (see NormalizeAddress in store.h).
//
// Postfix compares table keys case-insensitively (it lower-cases lookup keys), so the whole
// address is lower-cased; recipient_delimiter extensions map to the base address.
//
// Quoting: Postfix holds an address internally with its local part unquoted ("john.doe"@x is
// john.doe@x) and quotes it again only where RFC 5322 needs it (quote_822_local): what it logs,
// and what its table lookups (socketmap) ask for, is that form. A milter sees the recipient as
// the client wrote it. So the key is built the same way: a quoted local part is unquoted, and
// quoted again only when it is no dot-atom, so `"john.doe"@x`, `john.doe@x` and
// `"John.Doe+x"@x` are one key, and `"jane roe"@x` keeps its quotes.
#include "storage/address.h"

#include <array>

#include "storage/store.h"

namespace bounced {
namespace {

// Bytes an atom cannot hold ('.' only separates atoms): space, controls and the RFC 822
// specials. A table: this runs on every lookup (RCPT, socketmap).
constexpr std::array<bool, 256> kNotAtom = [] {
  std::array<bool, 256> t{};
  for (size_t c = 0; c <= 0x20; ++c) t[c] = true;
  t[0x7f] = true;
  for (char c : std::string_view("()<>@,;:\\\"[]")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

// Whether `local` may stand unquoted, as Postfix's quote_822_local decides (8-bit clean): not
// empty, no leading, trailing or doubled dot, no space, control or special character.
bool IsDotAtom(std::string_view local) {
  if (local.empty() || local.front() == '.' || local.back() == '.') return false;
  char previous = 0;
  for (char c : local) {
    if (kNotAtom[static_cast<unsigned char>(c)] || (c == '.' && previous == '.')) return false;
    previous = c;
  }
  return true;
}

// `local` with each quoted string replaced by its text: the quotes go, and so does the backslash
// of a quoted pair inside them. A quote left open runs to the end of the local part.
void AppendUnquoted(std::string_view local, std::string& out) {
  bool quoted = false;
  for (size_t i = 0; i < local.size(); ++i) {
    char c = local[i];
    if (c == '"') {
      quoted = !quoted;
      continue;
    }
    if (quoted && c == '\\' && i + 1 < local.size()) c = local[++i];
    out.push_back(c);
  }
}

// ASCII only, as Postfix's lowercase(): no locale, and UTF-8 bytes pass unchanged.
char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

}  // namespace

std::string NormalizeAddress(std::string_view a, std::string_view delimiters) {
  std::string out;
  NormalizeAddressInto(a, delimiters, out);
  return out;
}

bool NormalizeAddressInto(std::string_view a, std::string_view delimiters, std::string& out) {
  out.clear();
  while (!a.empty() && (a.front() == ' ' || a.front() == '\t')) a.remove_prefix(1);
  while (!a.empty() && (a.back() == ' ' || a.back() == '\t')) a.remove_suffix(1);
  if (a.size() >= 2 && a.front() == '<' && a.back() == '>') a = a.substr(1, a.size() - 2);
  if (a.empty() || a.size() > kMaxAddressBytes) return false;
  size_t at = a.rfind('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == a.size()) return false;
  std::string_view local = a.substr(0, at);
  std::string_view domain = a.substr(at + 1);
  while (!domain.empty() && domain.back() == '.') domain.remove_suffix(1);
  // A domain has no blanks ("x@ex .." would leave "ex ", whose key normalises to another one).
  if (domain.empty() || domain.find_first_of(" \t") != std::string_view::npos) return false;
  for (char c : a) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  // Quoted addresses are rare: only they pay for a copy.
  thread_local std::string unquoted;
  if (local.find('"') != std::string_view::npos) {
    unquoted.clear();
    AppendUnquoted(local, unquoted);
    local = unquoted;
  }
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (local.substr(0, kByteOrderMark.size()) == kByteOrderMark) {
    while (local.substr(0, kByteOrderMark.size()) == kByteOrderMark) {
      local.remove_prefix(kByteOrderMark.size());
    }
    if (local.empty()) return false;
  }
  if (!delimiters.empty()) {
    // One delimiter (the usual "+"): one memchr instead of one per character of the local part.
    size_t cut =
        delimiters.size() == 1 ? local.find(delimiters.front()) : local.find_first_of(delimiters);
    if (cut != std::string_view::npos && cut > 0) local = local.substr(0, cut);
  }
  if (IsDotAtom(local)) {
    out.resize(local.size() + 1 + domain.size());
    char* p = out.data();
    for (char c : local) *p++ = Lower(c);
    *p++ = '@';
    for (char c : domain) *p++ = Lower(c);
    return true;
  }
  out.reserve(local.size() + 4 + domain.size());
  out.push_back('"');
  for (char c : local) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(Lower(c));
  }
  out.push_back('"');
  out.push_back('@');
  for (char c : domain) out.push_back(Lower(c));
  // Quoting can lengthen a key past the limit; such a key could not be normalised again.
  if (out.size() > kMaxAddressBytes) {
    out.clear();
    return false;
  }
  return true;
}

bool IsAddress(std::string_view address) {
  std::string key;
  return NormalizeAddressInto(address, "", key);
}

std::string_view DomainOfKey(std::string_view key) {
  size_t at = key.rfind('@');
  return at == std::string_view::npos ? std::string_view() : key.substr(at + 1);
}

std::string SenderDomainOf(std::string_view sender) {
  if (sender.empty()) return "<>";
  std::string domain(sender.substr(sender.rfind('@') + 1));  // npos + 1: the whole sender
  for (char& c : domain) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return domain;
}

std::string SenderDomainSql(std::string_view column) {
  const std::string c(column);
  // rtrim(c, <c without its '@'s>) keeps c up to its last '@' ("" when it has none): what
  // follows is the domain, as SenderDomainOf takes it. lower() folds ASCII only, as it does.
  return "CASE WHEN coalesce(" + c + ", '') = '' THEN '<>' ELSE lower(substr(" + c +
         ", length(rtrim(" + c + ", replace(" + c + ", '@', ''))) + 1)) END";
}

}  // namespace bounced
