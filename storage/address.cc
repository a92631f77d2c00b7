// address.cc: address keys for suppression lookups (see NormalizeAddress in store.h).
//
// Postfix compares table keys case-insensitively (it lower-cases lookup keys), so the whole
// address is lower-cased; recipient_delimiter extensions map to the base address.
#include "storage/address.h"

#include "storage/store.h"

namespace bounced {

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
  if (domain.empty()) return false;
  for (char c : a) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  if (!delimiters.empty()) {
    // One delimiter (the usual "+"): one memchr instead of one per character of the local part.
    size_t cut =
        delimiters.size() == 1 ? local.find(delimiters.front()) : local.find_first_of(delimiters);
    if (cut != std::string_view::npos && cut > 0) local = local.substr(0, cut);
  }
  // ASCII only, as Postfix's lowercase(): no locale, and UTF-8 bytes pass unchanged.
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  out.resize(local.size() + 1 + domain.size());
  char* p = out.data();
  for (char c : local) *p++ = lower(c);
  *p++ = '@';
  for (char c : domain) *p++ = lower(c);
  return true;
}

std::string_view DomainOf(std::string_view a) {
  size_t at = a.rfind('@');
  return at == std::string_view::npos ? std::string_view() : a.substr(at + 1);
}

}  // namespace bounced
