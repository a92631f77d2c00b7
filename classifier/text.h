// text.h: small pure text helpers shared by the DSN parser, the log parser and the rules
// engine. No I/O, no allocation beyond the returned strings, safe on any bytes (hostile input
// included): every function accepts arbitrary bytes and never reads out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace bounced {

// Longest diagnostic kept after Sanitize (bytes). Replies longer than this are cut at a UTF-8
// character boundary; what matters for classification is at the start of a reply.
inline constexpr size_t kMaxDiagnosticBytes = 4096;

// Length (2-4) of the well-formed UTF-8 sequence that starts with the non-ASCII byte p[0], of
// which `avail` bytes are readable; 0 when it is ill-formed (overlong, a surrogate, past
// U+10FFFF, cut short or a bad continuation byte). The one rule of the project's UTF-8 checks.
inline size_t Utf8SequenceLength(const unsigned char* p, size_t avail) {
  const unsigned char c = p[0];
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (len > avail || p[1] < lo || p[1] > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (p[k] < 0x80 || p[k] > 0xBF) return 0;
  }
  return len;
}

// ASCII-only helpers (SMTP keywords and codes are ASCII).
inline char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }
std::string AsciiLowerCopy(std::string_view s);
// Lower-cases, in place, the capital letters outside ASCII that a reply in a European language
// holds: Latin-1 (À-Þ), Latin Extended-A (Ā-ž), Greek and Cyrillic (Ѐ-Я, Ѡ-ӿ). Each is two
// bytes of UTF-8 and so is its small letter, so the text keeps its length and every offset. Not
// folded: ASCII (AsciiLower's), capitals whose small letter is ASCII or differs in length (İ, ſ,
// the Kelvin sign), other scripts, and ill-formed bytes. The rules engine folds replies and
// patterns with it, so a rule's "пользователь" matches "Пользователь".
void LowerNonAsciiLetters(std::string& s);
bool EqualsNoCaseSameSize(std::string_view a, std::string_view b);
// Inline so that the common case, different lengths, costs no call.
inline bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && EqualsNoCaseSameSize(a, b);
}
// Inline, with the first byte compared here: most callers test many prefixes against a line
// that starts with none of them.
inline bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  if (prefix.empty()) return true;
  return AsciiLower(s[0]) == AsciiLower(prefix[0]) &&
         EqualsNoCaseSameSize(s.substr(0, prefix.size()), prefix);
}
// Position of the first case-insensitive occurrence of `needle` at or after `from`, or npos.
size_t FindNoCase(std::string_view haystack, std::string_view needle, size_t from = 0);
// Position of the first occurrence of `needle` at or after `from`, or npos: string_view::find's
// answer, by FindNoCase's first-and-last-byte filter (find stops at every occurrence of the
// needle's first byte: every line of a message, for "\nFrom "). For searches through a whole
// message or body.
size_t FindString(std::string_view haystack, std::string_view needle, size_t from = 0);
inline bool ContainsNoCase(std::string_view haystack, std::string_view needle) {
  return FindNoCase(haystack, needle) != std::string_view::npos;
}

// A fixed list of phrases (lower case, two bytes or more, at most 64), any of which is looked
// for in short text (a subject, a sender) ignoring ASCII case: ContainsAny answers as a
// ContainsNoCase per phrase would, in one pass. Each position is tested against every phrase's
// first two bytes at once (two table loads); only a position some phrase starts with is
// compared in full. On long text one FindNoCase per phrase (sixteen bytes a step) is cheaper.
class PhraseSet {
 public:
  template <size_t N>
  consteval explicit PhraseSet(const std::string_view (&phrases)[N]) {
    static_assert(N <= 64, "one bit per phrase in a uint64_t");
    for (size_t k = 0; k < N; ++k) {
      std::string_view p = phrases[k];
      if (p.size() < 2) throw "a phrase needs two bytes";  // not a constant expression
      phrases_[k] = p;
      for (int at = 0; at < 2; ++at) {
        auto c = static_cast<unsigned char>(p[at]);
        if (c >= 'A' && c <= 'Z') throw "phrases are lower case";
        uint64_t bit = uint64_t{1} << k;
        (at == 0 ? first_ : second_)[c] |= bit;
        if (c >= 'a' && c <= 'z') (at == 0 ? first_ : second_)[c - 32] |= bit;
      }
    }
  }

  bool ContainsAny(std::string_view text) const {
    for (size_t i = 0; i + 1 < text.size(); ++i) {
      uint64_t m = first_[static_cast<unsigned char>(text[i])] &
                   second_[static_cast<unsigned char>(text[i + 1])];
      for (; m != 0; m &= m - 1) {
        std::string_view p = phrases_[__builtin_ctzll(m)];
        if (text.size() - i >= p.size() && EqualsNoCaseSameSize(text.substr(i, p.size()), p))
          return true;
      }
    }
    return false;
  }

 private:
  uint64_t first_[256] = {};
  uint64_t second_[256] = {};
  std::string_view phrases_[64] = {};
};

// Whether `s` holds any byte of `set`. One pass over `s` (std::string_view::find_first_of
// calls memchr on `set` once per byte of `s`, which dominates on header-sized strings).
inline bool ContainsAnyOf(std::string_view s, std::string_view set) {
  for (char c : s) {
    for (char x : set) {
      if (c == x) return true;
    }
  }
  return false;
}
// `s` up to and including its last '\n' (empty without one): of a text cut short, the lines that
// are whole. A line cut short (an address, a status) must not be read as if it were whole.
inline std::string_view WholeLines(std::string_view s) { return s.substr(0, s.rfind('\n') + 1); }

// Removes leading and trailing ASCII whitespace (space, tab, CR, LF, VT, FF). Inline: the
// scanners call it on every line.
inline std::string_view TrimSpace(std::string_view s) {
  // '\t', '\n', '\v', '\f' and '\r' are 9 to 13: one range test instead of five compares.
  auto space = [](char c) { return c == ' ' || static_cast<unsigned char>(c - '\t') <= 4; };
  size_t b = 0, e = s.size();
  while (b < e && space(s[b])) ++b;
  while (e > b && space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// Collapses every run of whitespace (space, tab, CR, LF, VT, FF) into one space and trims both
// ends: "550-5.1.1 The email\r\n550-5.1.1  account" -> "550-5.1.1 The email 550-5.1.1 account".
std::string FoldWhitespace(std::string_view s);

// Makes text safe to log, print or store: valid UTF-8 (each invalid byte becomes U+FFFD),
// whitespace controls folded to single spaces, other control characters (C0, DEL, C1) dropped,
// trimmed, and cut to at most `max_bytes` bytes at a character boundary.
std::string Sanitize(std::string_view s, size_t max_bytes = kMaxDiagnosticBytes);

// `s` with each control character (C0 and DEL) shown as '?', nothing dropped or folded: how a
// client's text is echoed in an error or a log line, where dropping a character could leave
// something that reads as valid.
std::string MaskControls(std::string_view s);

// The first RFC 3463 enhanced status code in a reply ("5.7.1"), or "" if none. The class must
// be 2, 4 or 5, the subject 0-7 (as registered) and the detail 1-3 digits. Codes that are part
// of a longer dotted number are ignored, so IP addresses ("5.1.1.4"), versions ("v4.2.0.1" or
// "2.10.1-beta") and decimals do not count. A code right after a reply code ("550 5.1.1",
// "550-5.1.1", "550 #5.1.1") is preferred over one elsewhere in the text.
std::string ExtractEnhancedStatus(std::string_view text);

// The SMTP reply code of a reply ("550"), or "" if none: three digits, the first 2, 4 or 5,
// followed by a space, '-', end of text or an enhanced code. Accepted at the start of the text
// or of a line, after "said:", "smtp;", "<<<", "reply:", "replied:", "error:", "Remote Server
// returned '" and after an address ending in ">:" (Exim's "after RCPT TO:<a@b>: 550 ...").
std::string ExtractReplyCode(std::string_view text);

// Whether ExtractEnhancedStatus / ExtractReplyCode would find anything, without building it:
// HasEnhancedStatus stops at the first code, wherever it is.
bool HasEnhancedStatus(std::string_view text);
bool HasReplyCode(std::string_view text);

// Lower-cased domain of an address ("User@Example.COM" -> "example.com"); "" when there is no
// '@'. Tolerates angle brackets, an "rfc822;" prefix and a trailing dot.
std::string DomainOf(std::string_view address);

// A recipient address in canonical form: "rfc822;" prefix, whitespace and angle brackets
// removed, the domain lower-cased, the local part kept as given (local parts are case-sensitive
// by the RFCs). Returns the trimmed input when it has no '@'.
std::string CanonicalAddress(std::string_view address);

// The SMTP stage a reply was given at, from the way MTAs describe it: "connect", "helo",
// "mail", "rcpt", "data", "eom", or "" when the text does not say. Understands Postfix
// ("(in reply to RCPT TO command)", "end of DATA command", "initial greeting"), Exim
// ("after RCPT TO:<a@b>", "after end of data", "after initial connection"), Sendmail
// transcripts (">>> RCPT To:<a@b>" ... "<<< 550"), Exchange ("after RCPT TO", "during the SMTP
// ... conversation") and generic phrasing ("while connecting", "at RCPT", "MAIL FROM").
std::string_view StageFromText(std::string_view text);

// Checks and normalises a stage name given by a caller ("RCPT" -> "rcpt", "end-of-data" ->
// "eom"); "" for anything unknown.
std::string_view NormalizeStage(std::string_view stage);

}  // namespace bounced
