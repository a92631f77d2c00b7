// dsn_text.cc: see dsn_text.h.
#include "classifier/dsn_text.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "classifier/byte_scan.h"
#include "classifier/text.h"

namespace bounced::dsn {
namespace {

// Part types are std::strings: compared with views, their sizes decide most comparisons without
// a call (a comparison with a C string measures it and calls memcmp).
using namespace std::string_view_literals;

constexpr size_t kMaxBlockLines = 24;

// Byte classes by table: the address scan runs over every line of every explanation.
constexpr uint8_t kLocal = 1;       // may be in a local part: letters, digits, RFC 5322 atext, '.'
constexpr uint8_t kDomain = 2;      // may be in a domain: letters, digits, '-', '.'
constexpr uint8_t kMarkerLead = 4;  // starts a marker word (see HasMarkerPhrase): m, o, c
constexpr std::array<uint8_t, 256> kByteClass = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (alnum) t[c] |= kLocal | kDomain;
  }
  for (char c : std::string_view("!#$%&'*+/=?^_`{|}~.-")) t[static_cast<uint8_t>(c)] |= kLocal;
  t['-'] |= kDomain;
  t['.'] |= kDomain;
  for (char c : std::string_view("mocMOC")) t[static_cast<uint8_t>(c)] |= kMarkerLead;
  return t;
}();

bool IsLocalChar(char c) { return kByteClass[static_cast<uint8_t>(c)] & kLocal; }
bool IsDomainChar(char c) { return kByteClass[static_cast<uint8_t>(c)] & kDomain; }

// Calls span(begin, end) for every address in a line ("local@domain.tld"; the domain needs a
// dot and a letter TLD), at most 16, in order. No allocation: HasReasonText runs it on every
// line it counts.
template <typename Span>
void ForEachAddressSpan(std::string_view line, Span&& span) {
  size_t at = line.find('@');
  int found = 0;
  while (at != std::string_view::npos && found < 16) {
    size_t b = at;
    while (b > 0 && IsLocalChar(line[b - 1])) --b;
    // Quotes and apostrophes around an address are punctuation, not local-part characters.
    while (b < at && (line[b] == '\'' || line[b] == '.' || line[b] == '`')) ++b;
    size_t e = at + 1;
    while (e < line.size() && IsDomainChar(line[e])) ++e;
    while (e > at + 1 && (line[e - 1] == '.' || line[e - 1] == '-')) --e;
    std::string_view domain = line.substr(at + 1, e - at - 1);
    size_t dot = domain.rfind('.');
    bool ok = b < at && dot != std::string_view::npos && dot + 2 < domain.size() + 1 &&
              dot + 1 < domain.size() && std::isalpha(static_cast<unsigned char>(domain[dot + 1]));
    if (ok) {
      span(b, e);
      ++found;
    }
    at = line.find('@', std::max(e, at + 1));
  }
}

// An address span holds no whitespace, angle brackets or trailing dot, so CanonicalAddress
// changes only the case of its domain: two spans (or a span and a normalised address) name the
// same recipient when they are equal without case, and a span's lower-case copy is its key.

// Where the first '\n' at or after `from` is, or text.size() (a memchr call per line cost more
// than the short lines it scanned).
size_t NextNewline(std::string_view text, size_t from) {
  return FindAnyOf<'\n'>(text.data(), from, text.size());
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  lines.reserve(text.size() / 32 + 8);
  for (size_t pos = 0; pos < text.size();) {
    size_t end = NextNewline(text, pos);
    lines.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return lines;
}

bool IsBlank(std::string_view line) { return TrimSpace(line).empty(); }

// "-----", "=====", "*****" rules and "----- Transcript of session follows -----" headings.
// Only the leading whitespace is skipped: a rule's three characters are not whitespace, so
// trimming the end could not change the answer.
bool IsSeparator(std::string_view line) {
  size_t b = 0;
  while (b < line.size() && (line[b] == ' ' || static_cast<unsigned char>(line[b] - '\t') <= 4))
    ++b;
  if (line.size() - b < 3) return false;
  char c = line[b];
  return (c == '-' || c == '=' || c == '*' || c == '_') && line[b + 1] == c && line[b + 2] == c;
}

// Whether the `word.size()` bytes at t[i] are `word` (lower-case ASCII letters) in any case:
// OR-ing 0x20 maps exactly the two cases of a letter onto its lower case.
inline bool LetterWordAt(std::string_view t, size_t i, std::string_view word) {
  if (word.size() > 8 || i + word.size() > t.size()) return false;
  uint64_t v = 0;
  uint64_t w = 0;
  std::memcpy(&v, t.data() + i, word.size());
  std::memcpy(&w, word.data(), word.size());
  uint64_t mask = word.size() == 8 ? ~0ull : (1ull << (8 * word.size())) - 1;
  return ((v | 0x2020202020202020ull) & mask) == w;
}

// The words every marker phrase has one of.
enum class MarkerWord { kNone, kMessag, kMail, kOriginal, kCopy };

// A marker phrase (lower-case), the marker word it is found by, and where that word starts in it.
struct MarkerPhrase {
  std::string_view phrase;
  MarkerWord word;
  size_t offset;
  constexpr MarkerPhrase(std::string_view p, MarkerWord w, std::string_view word_text)
      : phrase(p), word(w), offset(p.find(word_text)) {}
};

constexpr MarkerPhrase kMarkerPhrases[] = {
    {"original message", MarkerWord::kOriginal, "original"},
    {"returned message", MarkerWord::kMessag, "messag"},
    {"unsent message", MarkerWord::kMessag, "messag"},
    {"copy of the message", MarkerWord::kCopy, "copy"},
    {"copy of your message", MarkerWord::kCopy, "copy"},
    {"header of the original", MarkerWord::kOriginal, "original"},
    {"headers of the original", MarkerWord::kOriginal, "original"},
    {"message headers follow", MarkerWord::kMessag, "messag"},
    {"below this line is a copy", MarkerWord::kCopy, "copy"},
    {"below is a copy", MarkerWord::kCopy, "copy"},
    {"undelivered message", MarkerWord::kMessag, "messag"},
    {"returned mail follows", MarkerWord::kMail, "mail"},
    {"message text follows", MarkerWord::kMessag, "messag"},
    {"original mail", MarkerWord::kOriginal, "original"},
    {"rejected message follows", MarkerWord::kMessag, "messag"},
    {"message header follows", MarkerWord::kMessag, "messag"},
    {"content of the message", MarkerWord::kMessag, "messag"},
    {"original email", MarkerWord::kOriginal, "original"},
    // SmarterMail: "-- The header and top 20 lines of the message follows --".
    {"lines of the message follow", MarkerWord::kMessag, "messag"},
};

// Whether `t` contains one of kMarkerPhrases in any case. One pass over `t` (this runs on most
// lines of every explanation) stopping only at the marker words; a phrase is compared in full
// only around its own word.
// Bit k set: t[base + k] may start a marker word (m, o or c in either case); k < 16 and
// base + k < t.size().
unsigned MarkerLeadMask(std::string_view t, size_t base) {
#if defined(__SSE2__)
  if (base + 16 <= t.size()) {
    // OR-ing 0x20 maps exactly 'M', 'O' and 'C' onto 'm', 'o' and 'c'.
    __m128i v = _mm_or_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.data() + base)),
                             _mm_set1_epi8(0x20));
    __m128i hit = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('m')), _mm_cmpeq_epi8(v, _mm_set1_epi8('o'))),
        _mm_cmpeq_epi8(v, _mm_set1_epi8('c')));
    return static_cast<unsigned>(_mm_movemask_epi8(hit));
  }
#endif
  unsigned mask = 0;
  for (size_t k = base; k < t.size() && k < base + 16; ++k) {
    if (kByteClass[static_cast<uint8_t>(t[k])] & kMarkerLead) mask |= 1u << (k - base);
  }
  return mask;
}

bool HasMarkerPhrase(std::string_view t) {
  for (size_t base = 0; base < t.size(); base += 16) {
    for (unsigned mask = MarkerLeadMask(t, base); mask != 0; mask &= mask - 1) {
      size_t i = base + static_cast<size_t>(__builtin_ctz(mask));
      char c = static_cast<char>(t[i] | 0x20);
      MarkerWord word = MarkerWord::kNone;
      if (c == 'm') {
        word = LetterWordAt(t, i, "messag") ? MarkerWord::kMessag
               : LetterWordAt(t, i, "mail") ? MarkerWord::kMail
                                            : MarkerWord::kNone;
      } else if (c == 'o') {
        if (LetterWordAt(t, i, "original")) word = MarkerWord::kOriginal;
      } else if (LetterWordAt(t, i, "copy")) {
        word = MarkerWord::kCopy;
      }
      if (word == MarkerWord::kNone) continue;
      for (const MarkerPhrase& p : kMarkerPhrases) {
        if (p.word != word || p.offset > i) continue;
        std::string_view at = t.substr(i - p.offset);
        if (at.size() >= p.phrase.size() &&
            EqualsNoCaseSameSize(at.substr(0, p.phrase.size()), p.phrase))
          return true;
      }
    }
  }
  return false;
}

// Where an explanation ends and the returned message (or its headers) begins.
bool IsReturnedMessageMarker(std::string_view line) {
  // "The original message was received at ..." (Sendmail) and prose sentences mentioning the
  // original message are explanation, not markers: a marker is a heading, led by a rule or
  // bracket character or by its own words. Its first character is tested first (before the
  // line is trimmed at its end): most lines fail it at once, on one table load for their first
  // byte.
  // A rule or bracket character, or the first letter of a heading word (either case); or
  // TrimSpace's whitespace (' ' and '\t' to '\r'), which may lead such a character.
  constexpr uint8_t kFirst = 1, kSpace = 2;
  static constexpr std::array<uint8_t, 256> kLead = [] {
    std::array<uint8_t, 256> t{};
    for (char c : std::string_view("-=*_[<|omburOMBUR")) t[static_cast<uint8_t>(c)] = kFirst;
    for (char c : std::string_view(" \t\n\v\f\r")) t[static_cast<uint8_t>(c)] = kSpace;
    return t;
  }();
  auto lead = [&](size_t i) { return kLead[static_cast<uint8_t>(line[i])]; };
  if (line.empty() || lead(0) == 0) return false;
  size_t lead_space = 0;
  while (lead_space < line.size() && lead(lead_space) == kSpace) ++lead_space;
  if (lead_space == line.size() || lead(lead_space) != kFirst) return false;
  char first = line[lead_space];
  std::string_view t = TrimSpace(line.substr(lead_space));  // the leading blanks are counted
  if (t.size() < 8 || t.size() > 100) return false;
  if (!(first == '-' || first == '=' || first == '*' || first == '_' || first == '[' ||
        first == '<' || first == '|')) {
    static constexpr std::string_view kLeads[] = {
        "original message", "message headers", "below ",           "returned mail",
        "unsent message",   "original mail",   "rejected message", "message text",
        "returned message", "original email",
    };
    bool heading = false;
    for (std::string_view l : kLeads) {
      if (StartsWithNoCase(t, l)) {
        heading = true;
        break;
      }
    }
    if (!heading) return false;
  }
  return HasMarkerPhrase(t);
}

// A quoted header block of the returned message, when no marker announced it. `line` is the
// candidate line, `rest` the text after its '\n' (its next lines are read from there: the
// explanation's lines are split only as far as it goes).
bool StartsHeaderBlock(std::string_view l, std::string_view rest) {
  if (l.empty()) return false;
  char c0 = static_cast<char>(l[0] | 0x20);
  if (c0 != 'r' && c0 != 'd') return false;
  if (!(StartsWithNoCase(l, "Received: ") || StartsWithNoCase(l, "Return-Path: ") ||
        StartsWithNoCase(l, "DKIM-Signature: ")))
    return false;
  int headerish = 0;
  size_t pos = 0;
  for (int j = 0; j < 5 && pos < rest.size(); ++j) {
    size_t end = rest.find('\n', pos);
    if (end == std::string_view::npos) end = rest.size();
    std::string_view n = rest.substr(pos, end - pos);
    if (n.empty()) break;
    if (n[0] == ' ' || n[0] == '\t' || n.find(": ") != std::string_view::npos) ++headerish;
    pos = end + 1;
  }
  return headerish >= 2;
}

// Where the first '<' or '&' at or after `from` is, or html.size(): the text between tags is
// copied in runs up to there (HTML-only bounces are large; a byte at a time dominated them).
size_t NextTagOrEntity(std::string_view html, size_t from) {
  return FindAnyOf<'<', '&'>(html.data(), from, html.size());
}

}  // namespace

std::string StripHtml(std::string_view html) {
  std::string out;
  out.reserve(html.size());
  size_t i = 0;
  while (i < html.size()) {
    size_t stop = NextTagOrEntity(html, i);
    out.append(html.substr(i, stop - i));
    if (stop == html.size()) break;
    i = stop;
    if (html[i] == '<') {
      // Block elements end a line so reason blocks keep their shape.
      std::string_view rest = html.substr(i + 1, 4);
      bool ends_line = StartsWithNoCase(rest, "br") || StartsWithNoCase(rest, "p") ||
                       StartsWithNoCase(rest, "/p") || StartsWithNoCase(rest, "div") ||
                       StartsWithNoCase(rest, "/div") || StartsWithNoCase(rest, "tr") ||
                       StartsWithNoCase(rest, "li");
      if (ends_line) out.push_back('\n');
      // The tag, up to and with its '>', is dropped; an unclosed tag runs to the end.
      size_t gt = html.find('>', i + 1);
      if (gt == std::string_view::npos) break;
      i = gt + 1;
      // The source's own line end after such a tag ("line<br>\n") is whitespace to HTML, not
      // a second line end: kept, it would make every line a paragraph of its own.
      if (ends_line && i < html.size() && html[i] == '\n') ++i;
      continue;
    }
    static constexpr std::pair<std::string_view, char> kEntities[] = {
        {"&lt;", '<'},   {"&gt;", '>'},   {"&amp;", '&'},
        {"&quot;", '"'}, {"&nbsp;", ' '}, {"&#39;", '\''}};
    char ch = '&';
    size_t len = 1;
    for (auto [name, replacement] : kEntities) {
      if (html.substr(i, name.size()) == name) {
        ch = replacement;
        len = name.size();
        break;
      }
    }
    out.push_back(ch);
    i += len;
  }
  return out;
}

namespace {

// The line is about this address as a failed recipient: the address leads the line (after
// list markers, quotes or angle brackets), or follows wording that introduces recipients.
bool IsRecipientLine(std::string_view line, size_t begin, size_t end) {
  std::string_view before = line.substr(0, begin);
  // An address type in front ("Recipient: [SMTP:a@b]", as MailEnable and Exchange write an
  // Internet address) is part of the address, not of the label.
  if (before.size() >= 5) {
    std::string_view type = before.substr(before.size() - 5);
    if (AsciiLower(type[0]) == 's' && AsciiLower(type[1]) == 'm' && AsciiLower(type[2]) == 't' &&
        AsciiLower(type[3]) == 'p' && type[4] == ':')
      before.remove_suffix(5);
  }
  // The text before the address without list markers, quotes and punctuation, lower-case: only
  // its first bytes are kept (no label is longer), its length and whether it is all digits.
  constexpr size_t kMaxLead = 24;
  char lead_bytes[kMaxLead];
  size_t lead_size = 0;
  bool lead_digits = true;
  for (char c : before) {
    if (c == ' ' || c == '\t' || c == '<' || c == '"' || c == '\'' || c == '>' || c == '-' ||
        c == '*' || c == '(' || c == '[' || c == ':' || c == '.')
      continue;
    if (lead_size < kMaxLead) lead_bytes[lead_size] = AsciiLower(c);
    ++lead_size;
    lead_digits = lead_digits && c >= '0' && c <= '9';
  }
  if (lead_size == 0) return true;
  // Sendmail's transcript summary: "554 <a@b>... 550 Host unknown", "550 5.1.1 <a@b>...".
  if (lead_digits && lead_size <= 8) return true;
  std::string_view lead(lead_bytes, std::min(lead_size, kMaxLead));
  // "User mailbox exceeds allowed size: a@b" (iMail and others put the reason first).
  std::string_view after = TrimSpace(line.substr(end));
  std::string_view tb = TrimSpace(before);
  if ((after.empty() || after == ">" || after == ">." || after == ".") && tb.ends_with(":") &&
      tb.size() < 64)
    return true;
  // A short label in front ("Unknown user:", "To:", "Recipient:", "rcpt to").
  static constexpr std::string_view kLabels[] = {
      "to",     "rcptto", "recipient",         "recipients",     "unknownuser", "addressee",
      "failed", "user",   "originalrecipient", "finalrecipient", "mailbox",     "address",
  };
  // Every label is shorter than kMaxLead, so a lead of its size is held whole.
  static_assert([] {
    for (std::string_view l : kLabels) {
      if (l.size() >= kMaxLead) return false;
    }
    return true;
  }());
  for (std::string_view l : kLabels) {
    if (lead_size == l.size() && lead == l) return true;
  }
  // Wording that introduces recipients.
  static constexpr std::string_view kIntroductions[] = {
      "delivering your mail to",
      "deliver your message to",
      "delivered to",
      "deliver to",
      "delivery to",
      "could not be delivered to",
      "undeliverable to",
      "failed to deliver to",
      "unable to deliver",
      "unknown user",
      "no such user",
      "user unknown",
      "following recipient",
      "recipient address",
      "for the recipient",
      "message to",
      "sent to",
      "following address",
  };
  static constexpr PhraseSet kIntroduction(kIntroductions);
  return kIntroduction.ContainsAny(before);
}

// The address is someone the bounce is not about (envelope sender, contact addresses).
bool IsSenderContext(std::string_view line, size_t begin) {
  std::string_view before = line.substr(0, begin);
  size_t from = before.size() > 40 ? before.size() - 40 : 0;
  std::string_view near = before.substr(from);
  static constexpr std::string_view kSenderWords[] = {
      "sender",        "contact",        "return-path", "mail from", "from:",
      "envelope-from", "generated from", "from <",      "reply-to",  "mailto:",
      "written to",    "send mail to",   "address to",
  };
  static constexpr PhraseSet kSender(kSenderWords);
  return kSender.ContainsAny(near);
}

bool StartsWithReplyCode(std::string_view t) {
  return t.size() >= 4 && (t[0] == '2' || t[0] == '4' || t[0] == '5') &&
         std::isdigit(static_cast<unsigned char>(t[1])) &&
         std::isdigit(static_cast<unsigned char>(t[2])) && (t[3] == ' ' || t[3] == '-');
}

// Defined below: a cheap necessary condition for HasCode.
bool MayHoldCode(std::string_view t);

bool HasCode(std::string_view text) {
  return MayHoldCode(text) && (HasReplyCode(text) || HasEnhancedStatus(text));
}

// False when `t` can hold neither a reply code ("550") nor an enhanced status ("5.1.1"): both
// start with 2, 4 or 5, followed by a digit 0-5 and a digit, or by a dot. Most lines fail this
// at once, before the exact (and dearer) ExtractReplyCode / ExtractEnhancedStatus.
bool MayHoldCode(std::string_view t) {
  auto code_at = [&](size_t i) {
    char n = t[i + 1];
    return n == '.' || (n >= '0' && n <= '5' && t[i + 2] >= '0' && t[i + 2] <= '9');
  };
  size_t i = 0;
#if defined(__SSE2__)
  // Sixteen positions at a time find the 2, 4 and 5 (few in prose); each is then checked.
  const __m128i d2 = _mm_set1_epi8('2'), d4 = _mm_set1_epi8('4'), d5 = _mm_set1_epi8('5');
  auto block_at = [&](size_t at) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.data() + at));
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, d2), _mm_cmpeq_epi8(v, d4)),
                               _mm_cmpeq_epi8(v, d5));
    for (unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(hit)); mask != 0;
         mask &= mask - 1) {
      if (code_at(at + static_cast<size_t>(__builtin_ctz(mask)))) return true;
    }
    return false;
  };
  for (; i + 18 <= t.size(); i += 16) {
    if (block_at(i)) return true;
  }
  // The rest as one more block ending where the scan ends (positions up to size - 3): it
  // overlaps positions already checked, which cannot change the answer.
  if (t.size() >= 18) return i + 2 < t.size() && block_at(t.size() - 18);
#endif
  for (; i + 2 < t.size(); ++i) {
    char c = t[i];
    if ((c == '2' || c == '4' || c == '5') && code_at(i)) return true;
  }
  return false;
}

// Reason lines anywhere in the explanation, by index: SMTP replies, transcript lines, and every
// line of a Sendmail "Transcript of session follows" section (its local mailer says
// "mail.local: unknown user: x" with no code before the summary reply); about 4 KB of them.
std::vector<size_t> CodeLines(const std::vector<std::string_view>& lines) {
  std::vector<size_t> out;
  size_t bytes = 0;
  bool in_transcript = false;
  for (size_t k = 0; k < lines.size(); ++k) {
    std::string_view t = TrimSpace(lines[k]);
    if (IsSeparator(t)) {
      in_transcript = ContainsNoCase(t, "transcript of session");
      continue;
    }
    bool code_digit = MayHoldCode(t);
    if ((in_transcript && !t.empty()) || t.starts_with("<<<") ||
        (code_digit && ((t.size() > 4 && HasReplyCode(t)) || HasEnhancedStatus(t)))) {
      out.push_back(k);
      bytes += t.size() + 1;
      if (bytes > 4096) break;
    }
  }
  return out;
}

bool IsAsciiAlpha(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

// ASCII letters in s[from, to), and with `high` bytes >= 0x80 too; sixteen bytes at a time.
size_t CountLetters(std::string_view s, size_t from, size_t to, bool high) {
  size_t letters = 0;
  size_t i = from;
#if defined(__SSE2__)
  // OR-ing 0x20 maps exactly the upper-case letters onto the lower-case ones; signed compares
  // leave bytes >= 0x80 (negative) out of the letter range.
  const __m128i fold = _mm_set1_epi8(0x20), below_a = _mm_set1_epi8('a' - 1),
                above_z = _mm_set1_epi8('z' + 1), zero = _mm_setzero_si128();
  const __m128i high_mask = high ? _mm_set1_epi8(-1) : zero;
  // The counted bytes become 1 (others 0) and are summed by PSADBW into the two 64-bit halves
  // of `sums` (each far below 2^31: the low 32 bits are read): no popcount per block (a libgcc
  // call on the baseline x86-64 target).
  const __m128i one = _mm_set1_epi8(1);
  __m128i sums = zero;
  auto count_block = [&](size_t at, __m128i keep) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + at));
    __m128i x = _mm_or_si128(v, fold);
    __m128i alpha = _mm_and_si128(_mm_cmpgt_epi8(x, below_a), _mm_cmplt_epi8(x, above_z));
    __m128i counted = _mm_or_si128(alpha, _mm_and_si128(_mm_cmplt_epi8(v, zero), high_mask));
    sums =
        _mm_add_epi64(sums, _mm_sad_epu8(_mm_and_si128(_mm_and_si128(counted, keep), one), zero));
  };
  for (; i + 16 <= to; i += 16) count_block(i, _mm_set1_epi8(-1));
  if (i < to && to - from >= 16) {
    // The rest as the block ending at `to`, its lanes before i (counted already) masked off.
    const __m128i lane = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    count_block(to - 16, _mm_cmpgt_epi8(lane, _mm_set1_epi8(static_cast<char>(i - (to - 16) - 1))));
    i = to;
  }
  letters += static_cast<size_t>(_mm_cvtsi128_si32(sums)) +
             static_cast<size_t>(_mm_cvtsi128_si32(_mm_unpackhi_epi64(sums, sums)));
#endif
  for (; i < to; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    letters += (IsAsciiAlpha(c) || (high && c >= 0x80)) ? 1 : 0;
  }
  return letters;
}

// Letters in one line outside its addresses (bytes >= 0x80 count after the last address).
size_t ReasonLetters(std::string_view line) {
  size_t letters = 0;
  size_t pos = 0;
  ForEachAddressSpan(line, [&](size_t b, size_t e) {
    if (pos < b) letters += CountLetters(line, pos, b, false);
    pos = e;
  });
  if (pos < line.size()) letters += CountLetters(line, pos, line.size(), true);
  return letters;
}

// Whether `letters` reason letters in `block` make reason text: "User Unknown" after an
// address and a reply code is a reason; a lone word is not.
bool EnoughReason(size_t letters, std::string_view block) {
  return letters >= 12 || (letters >= 6 && HasCode(block));
}

// Letters other than the address itself: is there any reason text in a block?
bool HasReasonText(std::string_view block) {
  size_t letters = 0;
  size_t pos = 0;
  while (pos < block.size() && letters < 12) {
    size_t end = block.find('\n', pos);
    if (end == std::string_view::npos) end = block.size();
    letters += ReasonLetters(block.substr(pos, end - pos));
    pos = end + 1;
  }
  return EnoughReason(letters, block);
}

// qmail-remote names the step that failed in fixed words ("192.0.2.1 does not like recipient.",
// "Connected to 192.0.2.1 but sender was rejected.", "... failed after I sent the message.");
// so do CommuniGate Pro ("message text rejected by host: 552 ...") and JavaMail, whose
// exception names say which command was refused (Apache James and other Java MTAs quote them).
std::string_view QmailStage(std::string_view text) {
  static constexpr std::pair<std::string_view, std::string_view> kSteps[] = {
      {"does not like recipient", "rcpt"},   {"but sender was rejected", "mail"},
      {"but my name was rejected", "helo"},  {"but greeting failed", "connect"},
      {"failed on DATA command", "data"},    {"failed after I sent the message", "eom"},
      {"message text rejected by", "eom"},   {"SMTPAddressFailedException", "rcpt"},
      {"SMTPSenderFailedException", "mail"},
  };
  for (auto [words, stage] : kSteps) {
    if (ContainsNoCase(text, words)) return stage;
  }
  return {};
}

// A session transcript written with arrows (MDaemon, SecurityGateway: "--> RCPT To:<a@b>" sent,
// "<-- 550 5.1.1 ..." received): the failure's stage is the command its first 4xx or 5xx reply
// answered. The commands the server accepted before it ("--> MAIL From:" answered "250") are
// no stage of the failure, though StageFromText would take the earliest command named.
std::string_view ArrowTranscriptStage(std::string_view text) {
  size_t reply = text.find("<-- ");
  if (reply == std::string_view::npos) return {};
  std::string_view command;  // what the last "--> " line before the reply sent
  size_t sent = text.find("--> ");
  for (; reply != std::string_view::npos; reply = text.find("<-- ", reply + 4)) {
    for (; sent != std::string_view::npos && sent < reply; sent = text.find("--> ", sent + 4)) {
      command = text.substr(sent + 4);
    }
    std::string_view r = text.substr(reply + 4);
    if (r.size() < 4 || (r[0] != '4' && r[0] != '5') || r[1] < '0' || r[1] > '9' || r[2] < '0' ||
        r[2] > '9' || (r[3] != ' ' && r[3] != '-'))
      continue;
    if (command.empty()) return "connect";
    if (StartsWithNoCase(command, "RCPT")) return "rcpt";
    if (StartsWithNoCase(command, "MAIL")) return "mail";
    if (StartsWithNoCase(command, "DATA")) return "data";
    if (StartsWithNoCase(command, "BDAT") || command[0] == '.') return "eom";
    if (StartsWithNoCase(command, "EHLO") || StartsWithNoCase(command, "HELO") ||
        StartsWithNoCase(command, "STARTTLS"))
      return "helo";
    return {};
  }
  return {};
}

// Gmail relaying to another server ends the remote reply with its SMTP state: "(state 13)"
// after EHLO, "(state 14)" after RCPT TO, "(state 15)", "(state 17)", "(state 18)" after DATA.
std::string_view GmailRelayStage(std::string_view text) {
  size_t at = FindNoCase(text, "(state 1");
  if (at == std::string_view::npos || at + 10 > text.size() || text[at + 9] != ')') return {};
  switch (text[at + 8]) {
    case '3':
      return "helo";
    case '4':
      return "rcpt";
    case '5':
    case '7':
    case '8':
      return "data";
    default:
      return {};
  }
}

// Where the SMTP session behind a Sendmail summary line at `line` starts: the line of its
// "While talking to host:" heading, when only transcript lines naming no recipient lie
// between; else `line`.
template <typename NamesRecipient>
size_t SessionStart(const std::vector<std::string_view>& lines, size_t line,
                    NamesRecipient&& names_recipient) {
  if (!StartsWithReplyCode(TrimSpace(lines[line]))) return line;
  for (size_t k = line; k > 0 && line - k < kMaxBlockLines;) {
    --k;
    std::string_view t = TrimSpace(lines[k]);
    if (t.empty() || IsSeparator(t) || names_recipient(k)) return line;
    if (ContainsNoCase(t, "while talking to")) return k;
    if (!t.starts_with(">>>") && !t.starts_with("<<<") && !StartsWithReplyCode(t)) return line;
  }
  return line;
}

// The heading over the recipient list that starts at `line`: a paragraph of one or two
// lines naming no address, just above it (blank lines between), appended to `out` when found.
void AppendHeadingAbove(const std::vector<std::string_view>& lines, size_t line, std::string* out) {
  constexpr size_t kMaxHeadingLines = 2;
  size_t end = line;
  while (end > 0 && IsBlank(lines[end - 1]) && line - end < 3) --end;
  size_t begin = end;
  while (begin > 0 && end - begin <= kMaxHeadingLines && !IsBlank(lines[begin - 1]) &&
         !IsSeparator(lines[begin - 1]))
    --begin;
  if (begin == end || end - begin > kMaxHeadingLines) return;
  for (size_t k = begin; k < end; ++k) {
    std::string_view t = TrimSpace(lines[k]);
    if (t.find('@') != std::string_view::npos || t.starts_with(">>>") || t.starts_with("<<<"))
      return;
  }
  for (size_t k = begin; k < end; ++k) {
    *out += TrimSpace(lines[k]);
    *out += '\n';
  }
}

}  // namespace

Explanation::Explanation(const MimeView& view) {
  // The parts the explanation is made of; one plain part (most bounces) is viewed in place.
  const MimeLeaf* single = nullptr;
  size_t taken = 0;
  bool have_plain = false;
  for (const MimeLeaf& p : view.parts) {
    if (!p.attached && p.type == "text/plain"sv) {
      have_plain = true;
      single = &p;
      ++taken;
    }
  }
  if (have_plain && taken == 1) {
    text_ = single->text();
  } else {
    for (const MimeLeaf& p : view.parts) {
      if (p.attached) continue;
      bool take = p.type == "text/plain"sv || (!have_plain && p.type == "text/html"sv);
      if (!take) continue;
      if (!owned_.empty()) owned_ += "\n\n";
      if (p.type == "text/html"sv) {
        owned_ += StripHtml(p.text());
      } else {
        owned_ += p.text();
      }
      if (owned_.size() > kMaxExplanationBytes) break;
    }
    text_ = owned_;
  }
  if (text_.size() > kMaxExplanationBytes) {
    // Cut after the last whole line: a line cut short (an address) is not read.
    cut_ = true;
    text_ = text_.substr(0, kMaxExplanationBytes);
    if (std::string_view whole = WholeLines(text_); !whole.empty()) text_ = whole;
  }
  // Lines are split as the loop reaches them: the text often goes on with the returned
  // message, which no scan reads. Room for a line per 40 bytes (bounce text runs 30 to 80 a
  // line): grown once or not at all, not from 16 up.
  lines_.reserve(std::min<size_t>(text_.size() / 40 + 8, 512));
  size_t offset = 0;
  // Reason letters in the lines before the current one, counted as far as a marker needed
  // them (HasReasonText of the text above the marker, without reading it again each time).
  size_t letters = 0;
  size_t counted = 0;
  while (offset < text_.size()) {
    size_t end = NextNewline(text_, offset);
    std::string_view line = text_.substr(offset, end - offset);
    size_t i = lines_.size();
    // A marker in the first lines is a heading over the explanation (Notes, ezweb): skip it.
    if (offset > 0 && (IsReturnedMessageMarker(line) ||
                       StartsHeaderBlock(line, text_.substr(std::min(end + 1, text_.size()))))) {
      for (; counted < i && letters < 12; ++counted) letters += ReasonLetters(lines_[counted]);
      if (EnoughReason(letters, text_.substr(0, offset))) {
        // The explanation ends with line i - 1 and its '\n'.
        text_ = text_.substr(0, offset);
        cut_ = false;  // it ended before the limit
        break;
      }
    }
    lines_.push_back(line);
    offset = end + 1;
  }
}

Explanation::Explanation(std::string_view text) : text_(text), lines_(SplitLines(text)) {}

std::vector<std::string> ExcludedAddresses(const MimeView& view) {
  std::vector<std::string> out;
  out.reserve(8);  // the usual count (a sender, a recipient, the returned message's sender ...)
  auto add = [&](std::string_view value) {
    ForEachAddressSpan(
        value, [&](size_t b, size_t e) { out.push_back(AsciiLowerCopy(value.substr(b, e - b))); });
  };
  for (std::string_view name : {"from", "return-path", "reply-to", "sender", "to"}) {
    for (const Header& h : view.headers) {
      if (h.name == name) add(h.value);
    }
  }
  // The returned message's sender wrote to the recipients; it is not one of them.
  for (std::string_view name : {"from", "return-path", "sender", "reply-to"}) {
    add(MimeView::Find(view.original_headers, name));
  }
  return out;
}

namespace {

// Up to this many recipients (or hints) Scan compares an address with each in turn; beyond,
// it looks them up by their lower-case form (a report or text can list a thousand).
constexpr size_t kLinearLookup = 16;

// A recipient Scan reports: how it is compared (without case) and how it is written.
struct Recipient {
  std::string_view key;  // an address span in the text, or a normalised hint
  std::string address;   // CanonicalAddress form
};

// Scan's result: the recipients in order and each one's reason block.
struct ScanResult {
  std::vector<Recipient> recipients;
  std::vector<std::string> blocks;
  // For each hint, the index of its recipient, or -1 (more than kMaxTextRecipients).
  std::vector<int> hint_recipient;
};

// ScanExplanation's work. `blocks_only`: the caller has the recipients already (an RFC 3464
// report) and wants each one's own block: no whole-text fallback, and an empty block for an
// address the text never names, and no recipient addresses (the caller has them). `hint_norm`
// holds the hints in CanonicalAddress form; `hint` the hints as given (for the addresses).
ScanResult Scan(const Explanation& explanation, const std::vector<std::string>& excluded,
                const std::vector<std::string>& hint, const std::vector<std::string>& hint_norm,
                bool blocks_only) {
  const std::vector<std::string_view>& lines = explanation.lines();
  struct Occurrence {
    size_t line;
    size_t end;                // offset just after the address in its line
    std::string_view address;  // the span in the line
    bool strong;
    int recipient;  // index in recipients, or -1
  };
  std::vector<Occurrence> occ;
  occ.reserve(16);  // a few addresses in most texts: no regrowing
  auto is_excluded = [&](std::string_view address) {
    for (const std::string& x : excluded) {
      if (EqualsNoCase(x, address)) return true;
    }
    return false;
  };
  // Many hints (a report's recipients) are looked up by their lower-case form.
  std::unordered_set<std::string> hint_set;
  // Only lines with an '@' can name an address: the text is searched for them once, and the
  // lines between are passed over (lines are consecutive views into the text).
  std::string_view text = explanation.text();
  size_t at = text.find('@');
  for (size_t i = 0; i < lines.size() && at != std::string_view::npos; ++i) {
    std::string_view line = lines[i];
    size_t line_end = static_cast<size_t>(line.data() - text.data()) + line.size();
    if (line_end < at) continue;
    at = line_end < text.size() ? text.find('@', line_end) : std::string_view::npos;
    ForEachAddressSpan(line, [&](size_t b, size_t e) {
      std::string_view address = line.substr(b, e - b);
      if (!hint_norm.empty()) {
        if (hint_norm.size() > kLinearLookup) {
          if (hint_set.empty()) {
            for (const std::string& h : hint_norm) hint_set.insert(AsciiLowerCopy(h));
          }
          if (hint_set.contains(AsciiLowerCopy(address)))
            occ.push_back(Occurrence{i, e, address, true, -1});
          return;
        }
        for (const std::string& h : hint_norm) {
          if (EqualsNoCase(h, address)) {
            occ.push_back(Occurrence{i, e, address, true, -1});
            break;
          }
        }
        return;
      }
      if (IsSenderContext(line, b)) return;
      occ.push_back(Occurrence{i, e, address, IsRecipientLine(line, b, e), -1});
    });
  }
  // Recipients: the strong (listed) addresses in order; with none, the first address the
  // explanation names that is not the sender's.
  ScanResult result;
  std::vector<Recipient>& recipients = result.recipients;
  // Many recipients are found by their lower-case key in `index`, built once there are more
  // than kLinearLookup (the first of equal keys wins, as in the list).
  std::unordered_map<std::string, int> index;
  auto find_recipient = [&](std::string_view address) -> int {
    if (recipients.size() > kLinearLookup) {
      auto it = index.find(AsciiLowerCopy(address));
      return it == index.end() ? -1 : it->second;
    }
    for (size_t r = 0; r < recipients.size(); ++r) {
      if (EqualsNoCase(recipients[r].key, address)) return static_cast<int>(r);
    }
    return -1;
  };
  auto add_recipient = [&](std::string_view key, std::string_view address) -> int {
    if (int r = find_recipient(key); r >= 0) return r;
    if (recipients.size() >= kMaxTextRecipients) return -1;
    recipients.push_back(Recipient{key, blocks_only ? std::string() : CanonicalAddress(address)});
    if (recipients.size() > kLinearLookup) {
      if (index.empty()) {
        for (size_t r = 0; r < recipients.size(); ++r)
          index.emplace(AsciiLowerCopy(recipients[r].key), static_cast<int>(r));
      } else {
        index.emplace(AsciiLowerCopy(key), static_cast<int>(recipients.size() - 1));
      }
    }
    return static_cast<int>(recipients.size() - 1);
  };
  if (!hint_norm.empty()) {
    for (size_t i = 0; i < hint_norm.size(); ++i)
      result.hint_recipient.push_back(add_recipient(hint_norm[i], hint[i]));
  } else {
    for (const Occurrence& o : occ) {
      if (o.strong && !is_excluded(o.address)) add_recipient(o.address, o.address);
    }
    // Anonymised samples and self-addressed mail list the sender as the failed recipient.
    for (const Occurrence& o : occ) {
      if (recipients.empty() && o.strong) add_recipient(o.address, o.address);
    }
    if (recipients.empty()) {
      for (const Occurrence& o : occ) {
        if (!is_excluded(o.address)) {
          add_recipient(o.address, o.address);
          break;
        }
      }
    }
  }
  // Which recipient each occurrence names, for finding where each block ends.
  for (Occurrence& o : occ) o.recipient = find_recipient(o.address);
  // Occurrences are in line order: those on one line are found by binary search.
  auto on_line = [&](size_t line) {
    auto first = std::lower_bound(occ.begin(), occ.end(), line,
                                  [](const Occurrence& o, size_t l) { return o.line < l; });
    auto last = first;
    while (last != occ.end() && last->line == line) ++last;
    return std::pair(first, last);
  };
  auto names_recipient = [&](size_t line) {
    auto [first, last] = on_line(line);
    for (auto it = first; it != last; ++it) {
      if (it->recipient >= 0) return true;
    }
    return false;
  };
  auto line_has_other = [&](size_t line, int r) {
    auto [first, last] = on_line(line);
    for (auto it = first; it != last; ++it) {
      if (it->recipient >= 0 && it->recipient != r) return true;
    }
    return false;
  };
  result.blocks.resize(recipients.size());
  // With several recipients, the lines each one's blocks hold: [begin, end) and whose.
  struct Span {
    size_t begin, end;
    int recipient;
  };
  std::vector<Span> spans;
  for (size_t ri = 0; ri < recipients.size(); ++ri) {
    const int r = static_cast<int>(ri);
    std::string& diag = result.blocks[ri];
    size_t last_end = 0;
    for (const Occurrence& o : occ) {
      if (o.recipient != r || o.line < last_end) continue;
      diag.reserve(512);  // a block is a few lines: grown once, not line by line
      // Its block: to the next line naming another recipient, a separator, a blank line once
      // there is reason text, or the line limit.
      size_t j = o.line;
      // A Sendmail transcript names the command before the reply that names the address;
      // old Sendmail's summary line ("554 <a@b>... Remote protocol error") follows the whole
      // session that failed, from its "While talking to host:" line on.
      if (size_t from = SessionStart(lines, o.line, names_recipient); from < o.line) {
        for (size_t k = from; k < o.line; ++k) {
          diag += TrimSpace(lines[k]);
          diag += '\n';
        }
      } else if (o.line > 0 && TrimSpace(lines[o.line - 1]).starts_with(">>>")) {
        diag += TrimSpace(lines[o.line - 1]);
        diag += '\n';
      } else if (blocks_only) {
        // A report's text part may head a group of recipients with their reason (au:
        // "The user(s) account is disabled." over the addresses).
        AppendHeadingAbove(lines, o.line, &diag);
      }
      // Reason text on the address's own line counts ("a@b: 550 5.1.1 ..."); a sentence
      // leading up to the address does not.
      bool content = HasReasonText(lines[o.line].substr(std::min(o.end, lines[o.line].size())));
      std::string_view last_line;
      // Sendmail's summary lists one reply per line ("554 <a@b>... 550 Host unknown"); the
      // next reply line is someone else's.
      bool summary = StartsWithReplyCode(TrimSpace(lines[o.line]));
      for (; j < lines.size() && j < o.line + kMaxBlockLines; ++j) {
        // Trimmed once for every test below (IsSeparator reads past leading blanks itself).
        const std::string_view t = TrimSpace(lines[j]);
        if (j > o.line) {
          if (IsSeparator(t)) break;
          if (summary && StartsWithReplyCode(t)) break;
          if (t.empty()) {
            // "For the following reason:" / "The error that the other server returned was:"
            // announce the reason after a blank line.
            if (content && !last_line.ends_with(":")) break;
            continue;
          }
          if (line_has_other(j, r)) break;
          // Once the block has reason text, further lines cannot change that.
          if (!content && HasReasonText(lines[j])) content = true;
        }
        last_line = t;
        diag += last_line;
        diag += '\n';
      }
      if (recipients.size() > 1) spans.push_back(Span{o.line, j, r});
      last_end = j;
      if (diag.size() > 8192) break;
    }
  }
  // A block without a code takes the explanation's reply lines; but a recipient whose block
  // words its reason ("c@d (host not found)", "Reason: The mailbox is full") does not take the
  // lines of another recipient's block ("a@b (550 5.1.1 ...)" above it: GroupWise, hMailServer,
  // SmarterMail list each recipient with its own reason).
  std::vector<size_t> code_lines;
  bool code_lines_done = false;
  std::vector<int> owner;  // per line: the recipient whose block holds it, -1 none, -2 several
  for (size_t ri = 0; ri < recipients.size(); ++ri) {
    const int r = static_cast<int>(ri);
    std::string& diag = result.blocks[ri];
    // A report's recipient the text never names gets an empty block (a named one's block holds
    // at least the line naming it).
    if (blocks_only && diag.empty()) continue;
    if (HasCode(diag)) continue;
    if (!code_lines_done) {
      code_lines = CodeLines(lines);
      code_lines_done = true;
    }
    bool own_words = recipients.size() > 1 && HasReasonText(diag);
    if (own_words && owner.empty()) {
      owner.assign(lines.size(), -1);
      for (const Span& sp : spans) {
        for (size_t k = sp.begin; k < sp.end && k < owner.size(); ++k)
          owner[k] = owner[k] == -1 || owner[k] == sp.recipient ? sp.recipient : -2;
      }
    }
    for (size_t k : code_lines) {
      if (own_words && owner[k] != -1 && owner[k] != r) continue;
      diag += TrimSpace(lines[k]);
      diag += '\n';
    }
  }
  return result;
}

std::string LiteralBlock(std::string_view text, std::string_view needle) {
  needle = TrimSpace(needle);
  if (needle.size() < 3) return {};
  size_t at = text.find(needle);
  if (at == std::string_view::npos) return {};
  size_t start = text.rfind('\n', at);
  start = start == std::string_view::npos ? 0 : start + 1;
  std::string block;
  std::vector<std::string_view> lines = SplitLines(text.substr(start));
  for (size_t i = 0; i < lines.size() && i < kMaxBlockLines; ++i) {
    if (i > 0 && (IsBlank(lines[i]) || IsSeparator(lines[i]))) break;
    block += TrimSpace(lines[i]);
    block += '\n';
  }
  return block;
}

}  // namespace

std::vector<Finding> ScanExplanation(const Explanation& explanation,
                                     const std::vector<std::string>& excluded,
                                     const std::vector<std::string>& hint) {
  std::vector<std::string> hint_norm;
  hint_norm.reserve(hint.size());
  for (const std::string& h : hint) hint_norm.push_back(CanonicalAddress(h));
  ScanResult found = Scan(explanation, excluded, hint, hint_norm, false);
  std::string_view text = explanation.text();
  std::vector<Finding> out;
  out.reserve(found.recipients.size());
  for (size_t r = 0; r < found.recipients.size(); ++r) {
    Finding& f = out.emplace_back();  // filled in place: moving a Finding in costs as much
    f.recipient = std::move(found.recipients[r].address);
    if (HasReasonText(found.blocks[r])) {
      f.diagnostic = std::move(found.blocks[r]);
    } else {
      f.diagnostic = std::string(text.substr(0, kMaxFallbackReasonBytes));
    }
    std::string_view head = std::string_view(f.diagnostic).substr(0, kMaxStageScanBytes);
    f.stage = std::string(ArrowTranscriptStage(head));
    if (f.stage.empty()) f.stage = std::string(StageFromText(head));
    if (f.stage.empty()) f.stage = std::string(QmailStage(head));
    if (f.stage.empty()) f.stage = std::string(GmailRelayStage(head));
    f.remote_mta = RemoteHostFromText(head);
  }
  return out;
}

std::vector<std::string> BlocksFor(const Explanation& explanation,
                                   const std::vector<std::string>& addresses) {
  std::vector<std::string> out(addresses.size());
  std::vector<std::string> wanted;  // CanonicalAddress form
  std::vector<size_t> index;
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (!LooksLikeAddress(addresses[i])) {
      // A file or pipe recipient ("/var/mail/x", "|/usr/bin/procmail"): its literal line and
      // the indented reason lines under it.
      out[i] = LiteralBlock(explanation.text(), addresses[i]);
      continue;
    }
    if (wanted.size() == kMaxTextRecipients) continue;  // Scan keeps no more (see the header)
    wanted.push_back(CanonicalAddress(addresses[i]));
    index.push_back(i);
  }
  if (wanted.empty() || explanation.text().empty()) return out;
  ScanResult found = Scan(explanation, {}, wanted, wanted, true);
  // As many recipients as addresses: each has its own block, which moves (the usual case);
  // else some share one, and each gets a copy.
  bool distinct = found.recipients.size() == wanted.size();
  for (size_t i = 0; i < wanted.size(); ++i) {
    int r = found.hint_recipient[i];
    if (r < 0) continue;
    if (distinct) {
      out[index[i]] = std::move(found.blocks[r]);
    } else {
      out[index[i]] = found.blocks[r];
    }
  }
  return out;
}

bool LooksLikeAddress(std::string_view s) {
  s = TrimSpace(s);
  return s.find('@') != std::string_view::npos &&
         FindAnyOf<' ', '\t', '|'>(s.data(), 0, s.size()) == s.size() && !s.starts_with("/");
}

std::string RemoteHostFromText(std::string_view text) {
  size_t pos = 0;
  while ((pos = FindNoCase(text, "host ", pos)) != std::string_view::npos) {
    size_t b = pos + 5;
    while (b < text.size() && text[b] == ' ') ++b;
    size_t e = b;
    while (e < text.size() && IsDomainChar(text[e])) ++e;
    std::string_view host = text.substr(b, e - b);
    size_t after = e;
    while (after < text.size() && text[after] == ' ') ++after;
    if (host.find('.') != std::string_view::npos && after < text.size() &&
        (text[after] == '[' || text.substr(after).starts_with("said"))) {
      return std::string(host);
    }
    pos = e > pos ? e : pos + 1;
  }
  return {};
}

}  // namespace bounced::dsn
