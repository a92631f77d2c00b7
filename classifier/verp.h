// verp.h: VERP return paths (variable envelope return paths). Pure code, no I/O.
//
// A bulk sender that sends each recipient's copy with its own return path, the recipient
// encoded in it (Postfix: `sendmail -V` or SMTP `XVERP`; Mailman; most list and bulk mailers),
// gets each bounce back at an address that says whom it is about, whatever the bounce itself
// names: "bounces+alice=example.com@news.example.org" is about alice@example.com. Postfix's
// format is PREFIX, the first delimiter ('+'), the recipient with its '@' written as the second
// delimiter ('='), '@', the sender's domain (default_verp_delimiters = "+=").
//
// What it adds to a parsed bounce (ApplyVerp): a recipient the bounce does not name is the
// encoded one, and a named recipient that is not the encoded one (the address forwarded the
// mail elsewhere, or was rewritten on the way) gets the encoded one as its original_recipient:
// the address as the sender gave it, as RFC 3464's Original-Recipient and Postfix's orig_to=.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace bounced {

struct ParsedBounce;
class RuleSet;

struct VerpFormat {
  // Two characters: the one after the prefix and the one that stands for the recipient's '@'
  // (Postfix's default_verp_delimiters).
  std::string delimiters = "+=";
  // Return paths read as VERP: the local part before the first delimiter matches one of
  // `prefixes` and the domain one of `domains` (shell patterns, any case: "bounces",
  // "*-bounces", "*.example.org"); an empty list matches any.
  std::vector<std::string> prefixes = {};
  std::vector<std::string> domains = {};

  bool operator==(const VerpFormat&) const = default;
};

// Refuses a format that cannot be read: the delimiters must be two different characters, each
// printable ASCII and none of the characters an address is split by ('@', '<', '>', '"', '\\',
// ',', ';', ':', '(', ')', '[', ']', space); patterns must not be empty. The message starts with
// the field at fault: "delimiters: ...", "prefixes: ...", "domains: ...".
Status CheckVerpFormat(const VerpFormat& format);

// The recipient a VERP return path encodes ("<bounces+alice=example.com@news.example.org>" ->
// "alice@example.com", the domain lower-cased), or nullopt when `return_path` is not one in
// `format` (no prefix, no encoded domain, a prefix or domain the format does not list).
std::optional<std::string> DecodeVerp(std::string_view return_path, const VerpFormat& format);

// The recipient a bounce delivered to a VERP address is about, from the message's own header:
// X-Original-To (Postfix's local delivery: the envelope recipient), else the first Delivered-To,
// else To; the first of them that DecodeVerp reads. For a bounce taken from a mailbox or a pipe,
// where the envelope is gone.
std::optional<std::string> VerpRecipientOf(std::string_view message, const VerpFormat& format);

// Applies `recipient` (what the bounce's return path encodes) to `bounce`, as the header comment
// says. A failure or delay result that named no recipient is classified again with `rules`:
// the provider, and the rules that are the provider's own, go by the recipient's domain.
// Returns how many results it changed.
size_t ApplyVerp(ParsedBounce* bounce, std::string_view recipient, const RuleSet& rules);

}  // namespace bounced
