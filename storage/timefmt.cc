// timefmt.cc: UTC time text (see timefmt.h and FormatTime in store_json.h).
#include "storage/timefmt.h"

#include <charconv>
#include <cstdio>
#include <ctime>

#include "storage/store_json.h"

namespace bounced {
namespace {

bool Digits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

}  // namespace

std::string FormatTime(int64_t t) {
  if (t == 0) return {};
  time_t tt = static_cast<time_t>(t);
  struct tm tm;
  if (!gmtime_r(&tt, &tm)) return {};
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string DayOf(int64_t t) {
  time_t tt = static_cast<time_t>(t);
  struct tm tm;
  if (!gmtime_r(&tt, &tm)) return "1970-01-01";
  // Room for an 11-character year (-2147481748, from an absurd time in a hostile input).
  char buf[32];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return std::string(buf, n);
}

std::optional<int64_t> ParseTime(std::string_view s) {
  if (s.empty()) return std::nullopt;
  if (s.find_first_not_of("0123456789") == std::string_view::npos) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
  }
  int y, mo, d, h = 0, mi = 0, sec = 0;
  if (!Digits(s, 0, 4, y) || s.size() < 10 || s[4] != '-' || !Digits(s, 5, 2, mo) || s[7] != '-' ||
      !Digits(s, 8, 2, d)) {
    return std::nullopt;
  }
  int64_t offset = 0;
  if (s.size() > 10) {
    if ((s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !Digits(s, 11, 2, h) || s.size() < 19 ||
        s[13] != ':' || !Digits(s, 14, 2, mi) || s[16] != ':' || !Digits(s, 17, 2, sec)) {
      return std::nullopt;
    }
    size_t i = 19;
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    }
    std::string_view zone = s.substr(i);
    if (zone == "Z" || zone == "z" || zone.empty()) {
      offset = 0;
    } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
      int oh, om;
      if (!Digits(zone, 1, 2, oh) || !Digits(zone, 4, 2, om)) return std::nullopt;
      offset = (oh * 3600 + om * 60) * (zone[0] == '-' ? -1 : 1);
    } else {
      return std::nullopt;
    }
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  struct tm tm = {};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  return static_cast<int64_t>(timegm(&tm)) - offset;
}

}  // namespace bounced
