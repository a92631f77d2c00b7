// dsn_fields.cc: see dsn_fields.h.
#include "classifier/dsn_fields.h"

#include <array>

#include "classifier/byte_scan.h"
#include "classifier/text.h"

namespace bounced::dsn {
namespace {

// Letters, digits and '-', by table: SplitField runs it on every byte of every field name.
constexpr std::array<bool, 256> kNameByte = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c)
    t[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  return t;
}();

bool IsNameByte(char c) { return kNameByte[static_cast<unsigned char>(c)]; }

// Whether a line holds nothing but whitespace (TrimSpace's set).
bool IsBlank(std::string_view line) {
  for (char c : line) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\v' && c != '\f') return false;
  }
  return true;
}

// A field line: a name of letters, digits and '-' followed by ':'. Blanks may stand between
// the name and the colon (RFC 822's syntax, which RFC 5322 still reads): Mimecast writes every
// field as "Final-Recipient : rfc822;...".
bool SplitField(std::string_view line, std::string_view* name, std::string_view* value) {
  size_t i = 0;
  while (i < line.size() && IsNameByte(line[i])) ++i;
  if (i == 0 || i > 64) return false;
  size_t colon = i;
  while (colon < line.size() && (line[colon] == ' ' || line[colon] == '\t')) ++colon;
  if (colon >= line.size() || line[colon] != ':') return false;
  *name = line.substr(0, i);
  *value = TrimSpace(line.substr(colon + 1));
  return true;
}

bool StartsRecipient(std::string_view name) {
  return name == "final-recipient" || name == "original-recipient" || name == "x-actual-recipient";
}

bool HasField(const std::vector<Field>& group, std::string_view lower) {
  for (const Field& f : group) {
    if (EqualsNoCase(f.name, lower)) return true;
  }
  return false;
}

}  // namespace

std::string_view StripTypePrefix(std::string_view value) {
  value = TrimSpace(value);
  size_t semi = value.find(';');
  if (semi != std::string_view::npos && semi > 0 && semi <= 16) {
    std::string_view type = value.substr(0, semi);
    // A word; '/' too, which an atom (RFC 3464's address-type) may hold: Mimecast writes
    // "rfc/822;".
    bool word = true;
    for (char c : type) {
      if (!IsNameByte(c) && c != '_' && c != '/') word = false;
    }
    if (word) return TrimSpace(value.substr(semi + 1));
  }
  return value;
}

std::string_view FindField(const std::vector<Field>& fields, std::string_view lower) {
  for (const Field& f : fields) {
    // Sizes, then first letters (OR-ing 0x20 folds a letter's case; names are letters, digits
    // and '-'), then the rest: most fields are told apart without a call.
    if (f.name.size() == lower.size() && !lower.empty() && (f.name[0] | 0x20) == lower[0] &&
        EqualsNoCaseSameSize(f.name, lower))
      return f.value;
  }
  return {};
}

DeliveryStatus ParseDeliveryStatus(std::string_view text) {
  DeliveryStatus out;
  out.per_message.reserve(8);
  std::vector<Field>* current = &out.per_message;
  bool in_recipient = false;
  bool blank_since_field = false;
  Field* last = nullptr;
  std::string* last_joined = nullptr;  // last's value, once joined from several lines
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = FindAnyOf<'\n'>(text.data(), pos, text.size());
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (IsBlank(line)) {
      blank_since_field = true;
      last = nullptr;
      last_joined = nullptr;
      continue;
    }
    std::string_view name;
    std::string_view value;
    bool indented = line[0] == ' ' || line[0] == '\t';
    if (indented || !SplitField(line, &name, &value)) {
      // A continuation; some MTAs forget the indentation of folded Diagnostic-Codes.
      if (last != nullptr) {
        if (last_joined == nullptr) {
          last_joined = out.joined.emplace_back(std::make_unique<std::string>(last->value)).get();
        }
        *last_joined += ' ';
        *last_joined += TrimSpace(line);
        last->value = *last_joined;
      }
      continue;
    }
    // Names are at most 64 bytes (SplitField): lower-cased on the stack for the checks below.
    char lower[64];
    for (size_t i = 0; i < name.size(); ++i) lower[i] = AsciiLower(name[i]);
    std::string_view lname(lower, name.size());
    bool new_group = false;
    if (StartsRecipient(lname)) {
      // A new group starts with a recipient field unless the current group is still gathering
      // its recipient fields (Original-Recipient then Final-Recipient, in either order).
      new_group = !in_recipient || blank_since_field || HasField(*current, lname);
    }
    if (new_group) {
      if (out.per_recipient.size() >= kMaxRecipientGroups) break;
      current = &out.per_recipient.emplace_back();
      current->reserve(8);
      in_recipient = true;
    } else if ((lname == "action" || lname == "status" || lname == "diagnostic-code") &&
               (!in_recipient || (blank_since_field && HasField(*current, lname)))) {
      // Recipient fields with no recipient line at all: still a group of its own. After a
      // blank line, a field the current group already has starts the next group: Mimecast
      // writes each group's recipient fields last.
      if (out.per_recipient.size() >= kMaxRecipientGroups) break;
      current = &out.per_recipient.emplace_back();
      current->reserve(8);
      in_recipient = true;
    }
    blank_since_field = false;
    last_joined = nullptr;
    if (current->size() >= 64) continue;
    current->push_back(Field{name, value});
    last = &current->back();
  }
  return out;
}

}  // namespace bounced::dsn
