// dsn_fields.cc: see dsn_fields.h.
#include "classifier/dsn_fields.h"

#include <array>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// The length of the run of name bytes (IsNameByte) that `line` starts with; sixteen bytes a
// step: names run 6 to 20 bytes ("Final-Recipient", "Diagnostic-Code").
size_t NameLength(std::string_view line) {
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i a = _mm_set1_epi8('a' - 1), z = _mm_set1_epi8('z' + 1);
  const __m128i d0 = _mm_set1_epi8('0' - 1), d9 = _mm_set1_epi8('9' + 1);
  const __m128i dash = _mm_set1_epi8('-'), fold = _mm_set1_epi8(0x20);
  for (; i + 16 <= line.size(); i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(line.data() + i));
    // Signed compares: bytes of 0x80 or more are negative, in neither range.
    const __m128i folded = _mm_or_si128(v, fold);
    const __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(folded, a), _mm_cmplt_epi8(folded, z));
    const __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, d0), _mm_cmplt_epi8(v, d9));
    const __m128i name = _mm_or_si128(_mm_or_si128(letter, digit), _mm_cmpeq_epi8(v, dash));
    const unsigned other = ~static_cast<unsigned>(_mm_movemask_epi8(name)) & 0xffff;
    if (other != 0) return i + static_cast<size_t>(__builtin_ctz(other));
  }
#endif
  while (i < line.size() && IsNameByte(line[i])) ++i;
  return i;
}

// A field line: a name of letters, digits and '-' followed by ':'. Blanks may stand between
// the name and the colon (RFC 822's syntax, which RFC 5322 still reads): Mimecast writes every
// field as "Final-Recipient : rfc822;...".
bool SplitField(std::string_view line, std::string_view* name, std::string_view* value) {
  size_t i = NameLength(line);
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

// Whether a field's name is `lower` (lower-case, the same size) in any case. Names are letters,
// digits and '-' (SplitField), whose case OR-ing 0x20 folds and which it leaves apart: eight
// bytes a step, the last word overlapping the one before.
bool NameIs(std::string_view name, std::string_view lower) {
  const size_t n = lower.size();
  if (n >= 8) {
    constexpr uint64_t kFold = 0x2020202020202020ull;
    for (size_t i = 0; i + 8 < n; i += 8) {
      if ((LoadWord(name.data() + i) | kFold) != LoadWord(lower.data() + i)) return false;
    }
    return (LoadWord(name.data() + n - 8) | kFold) == LoadWord(lower.data() + n - 8);
  }
  for (size_t i = 0; i < n; ++i) {
    if ((name[i] | 0x20) != lower[i]) return false;
  }
  return true;
}

bool HasField(const std::vector<Field>& group, std::string_view lower) {
  for (const Field& f : group) {
    if (f.name.size() == lower.size() && NameIs(f.name, lower)) return true;
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
    // Sizes, then first letters, then the rest.
    if (f.name.size() == lower.size() && !lower.empty() && (f.name[0] | 0x20) == lower[0] &&
        NameIs(f.name, lower))
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
    // Names are at most 64 bytes of letters, digits and '-' (SplitField): lower-cased on the
    // stack for the checks below, by OR-ing 0x20 (which leaves digits and '-' as they are).
    char lower[64];
    for (size_t i = 0; i < name.size(); ++i) lower[i] = static_cast<char>(name[i] | 0x20);
    std::string_view lname(lower, name.size());
    bool new_group = false;
    if (StartsRecipient(lname)) {
      // A new group starts with a recipient field unless the current group is still gathering
      // its recipient fields (Original-Recipient then Final-Recipient, in either order).
      new_group = !in_recipient || blank_since_field || HasField(*current, lname);
    }
    if (new_group) {
      if (out.per_recipient.size() >= kMaxRecipientGroups) {
        out.more_recipients = true;
        break;
      }
      current = &out.per_recipient.emplace_back();
      current->reserve(8);
      in_recipient = true;
    } else if ((lname == "action" || lname == "status" || lname == "diagnostic-code") &&
               (!in_recipient || (blank_since_field && HasField(*current, lname)))) {
      // Recipient fields with no recipient line at all: still a group of its own. After a
      // blank line, a field the current group already has starts the next group: Mimecast
      // writes each group's recipient fields last.
      if (out.per_recipient.size() >= kMaxRecipientGroups) {
        out.more_recipients = true;
        break;
      }
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
