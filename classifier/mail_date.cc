// mail_date.cc: ParseMailDate, MessageDate (see mail_date.h).
#include "classifier/mail_date.h"

#include <cstddef>

#include "classifier/civil_time.h"
#include "classifier/text.h"

namespace bounced {
namespace {

using sv = std::string_view;

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool IsDigitByte(char c) { return c >= '0' && c <= '9'; }
bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool AllLetters(sv s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsLetter(c)) return false;
  }
  return true;
}

// The value's words: runs of bytes other than blanks, commas and parentheses, comments (nested)
// skipped. At most kMaxWords; a date has six.
constexpr size_t kMaxWords = 8;
struct Words {
  sv at[kMaxWords];
  size_t size = 0;
  sv operator[](size_t i) const { return i < size ? at[i] : sv(); }
};

Words SplitWords(sv v) {
  Words out;
  int depth = 0;
  size_t i = 0;
  while (i < v.size() && out.size < kMaxWords) {
    const char c = v[i];
    if (c == '(') {
      ++depth;
      ++i;
    } else if (c == ')') {
      if (depth > 0) --depth;
      ++i;
    } else if (depth > 0 || IsBlank(c) || c == ',') {
      ++i;
    } else {
      const size_t start = i;
      while (i < v.size() && !IsBlank(v[i]) && v[i] != ',' && v[i] != '(' && v[i] != ')') ++i;
      out.at[out.size++] = v.substr(start, i - start);
    }
  }
  return out;
}

// A number of min_digits to max_digits digits and nothing else, or -1.
int Number(sv s, size_t min_digits, size_t max_digits) {
  if (s.size() < min_digits || s.size() > max_digits) return -1;
  int n = 0;
  for (char c : s) {
    if (!IsDigitByte(c)) return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

// 1-12 for a month's name (its first three letters, any case; "Nov" or "November"), else 0.
int Month(sv s) {
  if (s.size() < 3 || !AllLetters(s)) return 0;
  constexpr sv kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun",
                            "jul", "aug", "sep", "oct", "nov", "dec"};
  for (int i = 0; i < 12; ++i) {
    if (EqualsNoCase(s.substr(0, 3), kMonths[i])) return i + 1;
  }
  return 0;
}

bool DayName(sv s) {
  if (s.size() < 3 || !AllLetters(s)) return false;
  for (sv d : {"mon", "tue", "wed", "thu", "fri", "sat", "sun"}) {
    if (EqualsNoCase(s.substr(0, 3), d)) return true;
  }
  return false;
}

// "17:09:53" or "17:09" (and one-digit hours): seconds of the day, or -1.
int64_t TimeOfDay(sv s) {
  const size_t c1 = s.find(':');
  if (c1 == sv::npos) return -1;
  const int h = Number(s.substr(0, c1), 1, 2);
  sv rest = s.substr(c1 + 1);
  const size_t c2 = rest.find(':');
  const int m = Number(rest.substr(0, c2), 2, 2);
  const int sec = c2 == sv::npos ? 0 : Number(rest.substr(c2 + 1), 2, 2);
  if (h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 60) return -1;
  return h * 3600 + m * 60 + sec;
}

// A zone's offset east of UTC in seconds: "+0100", "-0800", "+01:00", or a name. RFC 5322 4.3:
// military letters and unknown names mean nothing certain, taken as +0000 (so is no zone).
int64_t ZoneOffset(sv s) {
  if (s.empty()) return 0;
  if (s[0] == '+' || s[0] == '-') {
    std::string_view digits = s.substr(1);
    int hh = -1;
    int mm = -1;
    if (digits.size() == 4) {
      hh = Number(digits.substr(0, 2), 2, 2);
      mm = Number(digits.substr(2), 2, 2);
    } else if (digits.size() == 5 && digits[2] == ':') {
      hh = Number(digits.substr(0, 2), 2, 2);
      mm = Number(digits.substr(3), 2, 2);
    }
    if (hh < 0 || hh > 23 || mm < 0 || mm > 59) return 0;
    const int64_t off = hh * 3600 + mm * 60;
    return s[0] == '-' ? -off : off;
  }
  struct Named {
    sv name;
    int hours;
  };
  constexpr Named kZones[] = {{"est", -5}, {"edt", -4}, {"cst", -6}, {"cdt", -5},
                              {"mst", -7}, {"mdt", -6}, {"pst", -8}, {"pdt", -7}};
  for (const Named& z : kZones) {
    if (EqualsNoCase(s, z.name)) return z.hours * 3600;
  }
  return 0;  // UT, GMT, UTC, Z, military letters, unknown names
}

// A four-digit year as it is; the obsolete two-digit (00-49: 2000s, 50-99: 1900s) and
// three-digit (+1900) forms mapped; -1 otherwise.
int Year(sv s) {
  const int y = Number(s, 2, 4);
  if (y < 0) return -1;
  if (s.size() == 2) return y < 50 ? 2000 + y : 1900 + y;
  if (s.size() == 3) return 1900 + y;
  return y;
}

}  // namespace

std::optional<int64_t> ParseMailDate(std::string_view value) {
  const Words w = SplitWords(value);
  size_t i = 0;
  if (DayName(w[0])) ++i;  // "Sun,"
  int day, month, year;
  int64_t seconds;
  sv zone;
  if (Month(w[i]) != 0) {  // asctime: Nov 29 17:09:53 2026 [zone]
    month = Month(w[i]);
    day = Number(w[i + 1], 1, 2);
    seconds = TimeOfDay(w[i + 2]);
    year = Year(w[i + 3]);
    zone = w[i + 4];
  } else {  // RFC 5322: 29 Nov 2026 17:09:53 +0100
    day = Number(w[i], 1, 2);
    month = Month(w[i + 1]);
    year = Year(w[i + 2]);
    seconds = TimeOfDay(w[i + 3]);
    zone = w[i + 4];
  }
  if (month == 0 || year < 1970 || year > 9999 || seconds < 0 || day < 1 ||
      static_cast<unsigned>(day) > DaysInMonth(year, static_cast<unsigned>(month)))
    return std::nullopt;
  return DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 +
         seconds - ZoneOffset(zone);
}

std::optional<int64_t> MessageDate(std::string_view message) {
  size_t pos = 0;
  auto line_end = [&message](size_t from) {
    const size_t nl = message.find('\n', from);
    return nl == sv::npos ? message.size() : nl;
  };
  if (message.substr(0, 5) == "From ") pos = line_end(0) + 1;  // an mbox separator line
  while (pos < message.size()) {
    size_t end = line_end(pos);
    sv line = message.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) return std::nullopt;  // the end of the header block
    if (StartsWithNoCase(line, "date")) {
      size_t colon = 4;
      while (colon < line.size() && (line[colon] == ' ' || line[colon] == '\t')) ++colon;
      if (colon < line.size() && line[colon] == ':') {
        // The value with its folded lines (SplitWords reads their line ends as blanks).
        const size_t from = pos + colon + 1;
        while (end + 1 < message.size() && (message[end + 1] == ' ' || message[end + 1] == '\t'))
          end = line_end(end + 1);
        return ParseMailDate(message.substr(from, end - from));
      }
    }
    pos = end + 1;
  }
  return std::nullopt;
}

}  // namespace bounced
