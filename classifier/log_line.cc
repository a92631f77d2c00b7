// log_line.cc: one Postfix log line into its parts (ParseLogLine) and log timestamps into epoch
// seconds (ParseLogTimestamp); see log_parser.h. Hand-written scanners over string_views: this
// runs for every line of multi-million-line logs, so it allocates nothing and reads each byte
// of the prefix once. Lines from other programs are rejected after the program name.
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "classifier/civil_time.h"
#include "classifier/log_bytes.h"
#include "classifier/log_parser.h"

namespace bounced {
namespace {

using sv = std::string_view;
using log_internal::Is;
using log_internal::StartsWith;
using log_internal::Sub;

// Character classes, one table lookup per byte in the hot loops.
constexpr uint8_t kClsDigit = 1, kClsAlnum = 2, kClsUpperHex = 4, kClsBase52 = 8, kClsStop = 16;
constexpr std::array<uint8_t, 256> MakeClasses() {
  std::array<uint8_t, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = kClsDigit | kClsAlnum | kClsUpperHex | kClsBase52;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = kClsAlnum | kClsBase52;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = kClsAlnum | kClsBase52;
  for (int c = 'A'; c <= 'F'; ++c) t[c] |= kClsUpperHex;
  // Postfix's long queue ids use digits and consonants only (base 52, no vowels).
  for (char c : {'A', 'E', 'I', 'O', 'U', 'a', 'e', 'i', 'o', 'u'}) {
    t[static_cast<uint8_t>(c)] &= static_cast<uint8_t>(~kClsBase52);
  }
  t['['] = kClsStop;  // the end of a program name
  t[':'] = kClsStop;
  t[' '] = kClsStop;
  return t;
}
constexpr std::array<uint8_t, 256> kCls = MakeClasses();
uint8_t Cls(char c) { return kCls[static_cast<uint8_t>(c)]; }

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Value of 1..N digits at s[i...]; -1 when there is none or it overflows int64.
int64_t ReadNumber(sv s, size_t* i) {
  size_t j = *i;
  int64_t v = 0;
  while (j < s.size() && IsDigit(s[j])) {
    if (v > (INT64_MAX - 9) / 10) return -1;
    v = v * 10 + (s[j] - '0');
    ++j;
  }
  if (j == *i) return -1;
  *i = j;
  return v;
}

int Two(const char* p) {
  if (!IsDigit(p[0]) || !IsDigit(p[1])) return -1;
  return (p[0] - '0') * 10 + (p[1] - '0');
}

// 1..12 for "Jan".."Dec", 0 otherwise. The three bytes as one number, multiplied by 0x67E4,
// give the twelve months twelve different top nibbles (found by search): one multiply, one table
// load and one compare instead of a switch and a memcmp call.
struct MonthSlot {
  uint32_t key = 0;
  int month = 0;
};
constexpr uint32_t MonthKey(uint8_t a, uint8_t b, uint8_t c) {
  return static_cast<uint32_t>(a) | (static_cast<uint32_t>(b) << 8) |
         (static_cast<uint32_t>(c) << 16);
}
constexpr uint32_t MonthSlotOf(uint32_t key) { return (key * 0x67E4u) >> 28; }
constexpr std::array<MonthSlot, 16> MakeMonthSlots() {
  constexpr char kMonths[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  std::array<MonthSlot, 16> t{};
  for (int i = 0; i < 12; ++i) {
    uint32_t key =
        MonthKey(static_cast<uint8_t>(kMonths[3 * i]), static_cast<uint8_t>(kMonths[3 * i + 1]),
                 static_cast<uint8_t>(kMonths[3 * i + 2]));
    t[MonthSlotOf(key)] = MonthSlot{key, i + 1};
  }
  return t;
}
constexpr std::array<MonthSlot, 16> kMonthSlots = MakeMonthSlots();
static_assert([] {
  int n = 0;
  for (const MonthSlot& m : kMonthSlots) n += m.month != 0;
  return n == 12;
}());

int MonthIndex(sv m) {
  if (m.size() < 3) return 0;
  uint32_t key =
      MonthKey(static_cast<uint8_t>(m[0]), static_cast<uint8_t>(m[1]), static_cast<uint8_t>(m[2]));
  const MonthSlot& slot = kMonthSlots[MonthSlotOf(key)];
  return slot.key == key ? slot.month : 0;
}

// Length of a classic timestamp at the start of `s` ("Nov 29 17:09:53", "Nov  9 17:09:53",
// optionally ".123456"), or 0.
size_t ClassicTimestampLength(sv s) {
  if (s.size() < 15 || MonthIndex(s) == 0 || s[3] != ' ') return 0;
  size_t i = 4;
#if defined(__SSE2__)
  // The usual "Mmm dd hh:mm:ss" / "Mmm  d hh:mm:ss": its digits checked in one compare.
  if (s.size() >= 16 && s[6] == ' ' && s[9] == ':' && s[12] == ':') {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data()));
    unsigned digit = static_cast<unsigned>(_mm_movemask_epi8(_mm_and_si128(
        _mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)))));
    constexpr unsigned kDigits =
        (1u << 5) | (1u << 7) | (1u << 8) | (1u << 10) | (1u << 11) | (1u << 13) | (1u << 14);
    if ((digit & kDigits) == kDigits && (s[4] == ' ' || (digit & (1u << 4)))) {
      i = 15;
      if (s[i] == '.') {
        size_t j = i + 1;
        while (j < s.size() && IsDigit(s[j])) ++j;
        if (j > i + 1) i = j;
      }
      return i;
    }
  }
#endif
  if (s[i] == ' ') ++i;  // day padded with a space
  if (!IsDigit(s[i])) return 0;
  ++i;
  if (IsDigit(s[i])) ++i;
  if (i + 9 > s.size() || s[i] != ' ') return 0;
  const char* t = s.data() + i + 1;
  if (Two(t) < 0 || t[2] != ':' || Two(t + 3) < 0 || t[5] != ':' || Two(t + 6) < 0) return 0;
  i += 9;
  if (i < s.size() && s[i] == '.') {
    size_t j = i + 1;
    while (j < s.size() && IsDigit(s[j])) ++j;
    if (j > i + 1) i = j;
  }
  return i;
}

// Length of an RFC 3339 timestamp at the start of `s` ("2026-11-29T17:09:53.123+00:00"), or 0.
size_t Rfc3339TimestampLength(sv s) {
  if (s.size() < 19) return 0;
  const char* p = s.data();
  for (int k : {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18}) {
    if (!IsDigit(p[k])) return 0;
  }
  if (p[4] != '-' || p[7] != '-' || (p[10] != 'T' && p[10] != 't') || p[13] != ':' ||
      p[16] != ':') {
    return 0;
  }
  size_t i = 19;
  if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
    size_t j = i + 1;
    while (j < s.size() && IsDigit(s[j])) ++j;
    if (j == i + 1) return 0;
    i = j;
  }
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) return i + 1;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    if (i + 3 > s.size() || Two(p + i + 1) < 0) return 0;
    size_t j = i + 3;
    if (j < s.size() && s[j] == ':') ++j;
    if (j + 2 > s.size() || Two(p + j) < 0) return 0;
    return j + 2;
  }
  return i;  // no zone: the caller's offset applies
}

// Length of the queue id at the start of `m` when it is one, else 0: short (upper-case hex) or
// long (base 52, 'z' after 10 characters), 6 to 23 characters.
size_t QueueIdLengthScalar(sv m) {
  size_t q = 0;
  uint8_t all = 0xff;
  while (q < m.size() && q < 24) {
    uint8_t c = Cls(m[q]);
    if (!(c & kClsAlnum)) break;
    all &= c;
    ++q;
  }
  if (q < 6 || q > 23) return 0;
  if (all & kClsUpperHex) return q;
  if ((all & kClsBase52) && q >= 12 && m[10] == 'z') return q;
  return 0;
}

#if defined(__SSE2__)
// Bit i set when byte i of the 16 at p is a digit; *hex also for A-F, *alnum also for letters.
// (Signed compares: bytes >= 0x80 are negative and match nothing.)
void ClassifyBlock(const char* p, unsigned* alnum, unsigned* hex) {
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
  __m128i upper_af = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('A' - 1)),
                                   _mm_cmplt_epi8(v, _mm_set1_epi8('F' + 1)));
  __m128i folded = _mm_or_si128(v, _mm_set1_epi8(0x20));  // 'A'..'Z' -> 'a'..'z'
  __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(folded, _mm_set1_epi8('a' - 1)),
                                 _mm_cmplt_epi8(folded, _mm_set1_epi8('z' + 1)));
  *alnum = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(digit, letter)));
  *hex = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(digit, upper_af)));
}
#endif

// QueueIdLengthScalar, 16 or 32 bytes at a time when the message is that long (nearly every
// line of a Postfix program goes through it).
size_t QueueIdLength(sv m) {
#if defined(__SSE2__)
  if (m.size() >= 16) {
    unsigned alnum, hex;
    ClassifyBlock(m.data(), &alnum, &hex);
    if (alnum == 0xffff) {  // the id (or whatever this is) goes on past 16 bytes
      if (m.size() < 32) return QueueIdLengthScalar(m);
      unsigned a1, h1;
      ClassifyBlock(m.data() + 16, &a1, &h1);
      alnum |= a1 << 16;
      hex |= h1 << 16;
      if (~alnum == 0) return 0;
    }
    size_t q = static_cast<size_t>(__builtin_ctz(~alnum));
    if (q < 6 || q > 23) return 0;
    uint32_t first = (1u << q) - 1;
    if ((hex & first) == first) return q;
    // Not a short id; a long one has 12 or more characters and a 'z' at [10]. Words like
    // "connect", "warning" or "NOQUEUE" end here without the byte-by-byte check.
    if (q < 12 || m[10] != 'z') return 0;
    return QueueIdLengthScalar(Sub(m, 0, q + 1));  // long ids: checked byte by byte
  }
#endif
  return QueueIdLengthScalar(m);
}

bool IsQueueId(sv q) { return !q.empty() && QueueIdLength(q) == q.size(); }

// Position of the first `c` in s[from...], or s.size(). The fields scanned with it are a few
// bytes to a few dozen long: inline 16-byte compares (then bytes) beat a memchr library call.
size_t Find(sv s, size_t from, char c) {
#if defined(__SSE2__)
  const __m128i needle = _mm_set1_epi8(c);
  while (from + 16 <= s.size()) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + from));
    unsigned hits = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, needle)));
    if (hits != 0) return from + static_cast<size_t>(__builtin_ctz(hits));
    from += 16;
  }
#endif
  while (from < s.size() && s[from] != c) ++from;
  return from;
}

// The end of a program name starting at s[j] (the first '[', ':' or ' ', or s.size()), and in
// *last_slash the position of its last '/' (unchanged when it has none).
size_t ProgramEnd(sv s, size_t j, size_t* last_slash) {
#if defined(__SSE2__)
  while (j + 16 <= s.size()) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + j));
    unsigned stop = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('[')), _mm_cmpeq_epi8(v, _mm_set1_epi8(':'))),
        _mm_cmpeq_epi8(v, _mm_set1_epi8(' ')))));
    unsigned slash =
        static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('/'))));
    if (stop != 0) {
      unsigned at = static_cast<unsigned>(__builtin_ctz(stop));
      slash &= (1u << at) - 1;
      if (slash != 0) *last_slash = j + 31 - static_cast<size_t>(__builtin_clz(slash));
      return j + at;
    }
    if (slash != 0) *last_slash = j + 31 - static_cast<size_t>(__builtin_clz(slash));
    j += 16;
  }
#endif
  while (j < s.size()) {
    char c = s[j];
    if (Cls(c) & kClsStop) break;
    if (c == '/') *last_slash = j;
    ++j;
  }
  return j;
}

// Position of the first ", " in s[from...], or sv::npos (as s.find(", ", from)).
size_t FindCommaSpace(sv s, size_t from) {
  for (;;) {
    from = Find(s, from, ',');
    if (from + 1 >= s.size()) return sv::npos;
    if (s[from + 1] == ' ') return from;
    ++from;
  }
}

// "<addr>" starting at s[i] (s[i] == '<'): the address ends at the first '>' followed by ',',
// ' ' or the end of the text (a '>' may appear inside a quoted local part). Sets *i past '>'.
bool ReadAngle(sv s, size_t* i, sv* out) {
  size_t start = *i + 1;
  size_t j = start;
  for (;;) {
    j = Find(s, j, '>');
    if (j == s.size()) return false;
    if (j + 1 == s.size() || s[j + 1] == ',' || s[j + 1] == ' ') break;
    ++j;
  }
  *out = Sub(s, start, j - start);
  *i = j + 1;
  return true;
}

// The delivery fields after "to=<r>": ", orig_to=<o>, relay=R, [conn_use=N, ]delay=D,
// delays=a/b/c/d, dsn=X, status=S (reason)". Unknown keys are skipped, so fields Postfix adds
// later do not break parsing.
LogLineKind ParseDelivery(sv m, ParsedLogLine* out) {
  size_t i = 3;  // at '<' of "to=<"
  if (!ReadAngle(m, &i, &out->recipient)) return LogLineKind::kTruncated;
  for (;;) {
    if (i + 2 > m.size() || m[i] != ',' || m[i + 1] != ' ') return LogLineKind::kTruncated;
    i += 2;
    size_t e = Find(m, i, '=');
    if (e == m.size()) return LogLineKind::kTruncated;
    sv key = Sub(m, i, e - i);
    i = e + 1;
    if (Is(key, "status")) break;
    if (Is(key, "orig_to") && i < m.size() && m[i] == '<') {
      if (!ReadAngle(m, &i, &out->orig_recipient)) return LogLineKind::kTruncated;
      continue;
    }
    size_t end = FindCommaSpace(m, i);
    if (end == sv::npos) return LogLineKind::kTruncated;
    sv value = Sub(m, i, end - i);
    if (Is(key, "relay")) {
      out->relay = value;
    } else if (Is(key, "dsn")) {
      out->dsn = value;
    }
    i = end;
  }
  size_t sp = Find(m, i, ' ');
  if (sp == m.size()) sp = sv::npos;
  out->status = Sub(m, i, sp == sv::npos ? sv::npos : sp - i);
  if (out->status.empty()) return LogLineKind::kTruncated;
  if (sp != sv::npos && sp + 1 < m.size() && m[sp + 1] == '(') {
    sv rest = Sub(m, sp + 2);
    if (!rest.empty() && rest.back() == ')') {
      rest.remove_suffix(1);
    } else {
      out->reason_cut = true;
    }
    out->reason = rest;
  } else if (sp == sv::npos && out->dsn.empty()) {
    // "status=sen" at the very end: the line was cut inside the status itself.
    return LogLineKind::kTruncated;
  }
  return LogLineKind::kDelivery;
}

// qmgr "from=<s>, size=N, nrcpt=K (queue active)" or "from=<s>, status=expired, returned to
// sender" (also "force-expired", from postsuper -e).
LogLineKind ParseQmgrFrom(sv m, ParsedLogLine* out) {
  size_t i = 5;  // at '<' of "from=<"
  if (!ReadAngle(m, &i, &out->sender)) return LogLineKind::kTruncated;
  sv rest = Sub(m, i);
  if (StartsWith(rest, ", size=")) {
    size_t j = 7;
    out->size = ReadNumber(rest, &j);
    if (StartsWith(Sub(rest, j), ", nrcpt=")) {
      j += 8;
      int64_t n = ReadNumber(rest, &j);
      out->nrcpt = (n >= 0 && n <= 1000000000) ? static_cast<int>(n) : -1;
    }
    if (out->size < 0) return LogLineKind::kTruncated;
    return LogLineKind::kQueued;
  }
  if (StartsWith(rest, ", status=expired") || StartsWith(rest, ", status=force-expired")) {
    return LogLineKind::kExpired;
  }
  if (rest.empty() || sv(", status=expired").substr(0, rest.size()) == rest ||
      sv(", size=").substr(0, rest.size()) == rest) {
    return LogLineKind::kTruncated;
  }
  return LogLineKind::kOther;
}

LogLineKind ParseQueueMessage(sv m, ParsedLogLine* out) {
  switch (m.empty() ? '\0' : m[0]) {
    case 't':
      if (StartsWith(m, "to=<")) return ParseDelivery(m, out);
      break;
    case 'f':
      if (StartsWith(m, "from=<")) return ParseQmgrFrom(m, out);
      break;
    case 'm':
      if (StartsWith(m, "message-id=")) {
        sv id = Sub(m, 11);
        while (!id.empty() && id.back() == ' ') id.remove_suffix(1);
        out->message_id = id;
        return LogLineKind::kMessageId;
      }
      break;
    case 'r':
      if (m == "removed" || (StartsWith(m, "removed") && m.find_first_not_of(' ', 7) == sv::npos)) {
        return LogLineKind::kRemoved;
      }
      break;
    case 's':
    case 'p': {
      // bounce(8): "sender non-delivery notification: NEWQID", "sender delay notification: ...",
      // "sender delivery status notification: ...", "postmaster non-delivery notification: ...".
      size_t at = m.find(" notification: ");
      if (at == sv::npos || at > 40) break;
      sv id = Sub(m, at + 15);
      while (!id.empty() && id.back() == ' ') id.remove_suffix(1);
      if (!IsQueueId(id)) return LogLineKind::kTruncated;
      out->notification = Sub(m, 0, at);
      out->notification_queue_id = id;
      return LogLineKind::kNotification;
    }
    default:
      break;
  }
  return LogLineKind::kOther;
}

// Appends n digits of v, zero-padded.
void PutDigits(std::string* out, int64_t v, int n) {
  char d[20];
  for (int i = n - 1; i >= 0; --i) {
    d[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  out->append(d, static_cast<size_t>(n));
}

void PutOffset(std::string* out, int offset_seconds) {
  int a = offset_seconds < 0 ? -offset_seconds : offset_seconds;
  out->push_back(offset_seconds < 0 ? '-' : '+');
  PutDigits(out, (a / 3600) % 100, 2);
  out->push_back(':');
  PutDigits(out, (a / 60) % 60, 2);
}

// *out = ParsedLogLine{}. GCC compiles that assignment of the ~300-byte struct to `rep stosq`,
// whose start-up cost was a quarter of parsing a typical line; plain 16-byte copies from an
// empty instance are several times cheaper.
void ResetParsedLine(ParsedLogLine* out) {
  static_assert(std::is_trivially_copyable_v<ParsedLogLine>);
#if defined(__SSE2__)
  static const ParsedLogLine kEmpty{};
  constexpr size_t kBlocks = sizeof(ParsedLogLine) / 16;
  const char* src = reinterpret_cast<const char*>(&kEmpty);
  char* dst = reinterpret_cast<char*>(out);
#pragma GCC unroll 32
  for (size_t i = 0; i < kBlocks; ++i) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16 * i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16 * i)));
  }
  memcpy(dst + 16 * kBlocks, src + 16 * kBlocks, sizeof(ParsedLogLine) % 16);
#else
  *out = ParsedLogLine{};
#endif
}

}  // namespace

std::string_view ToString(LogLineKind k) {
  switch (k) {
    case LogLineKind::kBlank:
      return "blank";
    case LogLineKind::kGarbage:
      return "garbage";
    case LogLineKind::kTruncated:
      return "truncated";
    case LogLineKind::kOther:
      return "other";
    case LogLineKind::kDelivery:
      return "delivery";
    case LogLineKind::kQueued:
      return "queued";
    case LogLineKind::kExpired:
      return "expired";
    case LogLineKind::kMessageId:
      return "message_id";
    case LogLineKind::kNotification:
      return "notification";
    case LogLineKind::kRemoved:
      return "removed";
  }
  return "other";
}

LogLineKind ParseLogLine(std::string_view line, ParsedLogLine* out) {
  ResetParsedLine(out);
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i == line.size()) return out->kind = LogLineKind::kBlank;
  sv s = Sub(line, i);
  // A syslog priority ("<22>") left in front by some collectors.
  if (s[0] == '<') {
    size_t j = 1;
    while (j < s.size() && j < 5 && IsDigit(s[j])) ++j;
    if (j > 1 && j < s.size() && s[j] == '>') s.remove_prefix(j + 1);
  }
  size_t ts_len =
      IsDigit(s.empty() ? '\0' : s[0]) ? Rfc3339TimestampLength(s) : ClassicTimestampLength(s);
  if (ts_len == 0 || ts_len >= s.size() || s[ts_len] != ' ') {
    return out->kind = LogLineKind::kGarbage;
  }
  out->timestamp = Sub(s, 0, ts_len);
  // Host: one token.
  size_t h = ts_len + 1;
  size_t h_end = Find(s, h, ' ');
  if (h_end == s.size()) return out->kind = LogLineKind::kGarbage;
  if (h_end == h) return out->kind = LogLineKind::kGarbage;
  out->host = Sub(s, h, h_end - h);
  // Program, then "[pid]" and ": ".
  size_t p = h_end + 1;
  size_t last_slash = sv::npos;
  size_t j = ProgramEnd(s, p, &last_slash);
  if (j == p || j >= s.size() || s[j] == ' ') return out->kind = LogLineKind::kGarbage;
  out->program = Sub(s, p, j - p);
  if (s[j] == '[') {
    size_t k = j + 1;
#if defined(__SSE2__)
    if (k + 16 <= s.size()) {  // the pid's digits in one compare
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + k));
      unsigned digit = static_cast<unsigned>(_mm_movemask_epi8(_mm_and_si128(
          _mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)))));
      k += static_cast<size_t>(__builtin_ctz(~digit));  // ~digit has bit 16 set at least
    }
#endif
    while (k < s.size() && IsDigit(s[k])) ++k;
    if (k == j + 1 || k >= s.size() || s[k] != ']') return out->kind = LogLineKind::kGarbage;
    j = k + 1;
  }
  if (j >= s.size() || s[j] != ':') return out->kind = LogLineKind::kGarbage;
  ++j;
  if (j < s.size() && s[j] == ' ') ++j;
  out->message = Sub(s, j);
  // Postfix always logs as "syslog_name/daemon"; other programs are not ours.
  if (last_slash == sv::npos || last_slash + 1 >= p + out->program.size()) {
    return out->kind = LogLineKind::kOther;
  }
  out->daemon = Sub(s, last_slash + 1, p + out->program.size() - last_slash - 1);
  // "QUEUEID: ..."
  sv m = out->message;
  size_t q = QueueIdLength(m);
  if (q == 0 || q + 1 >= m.size() || m[q] != ':' || m[q + 1] != ' ') {
    return out->kind = LogLineKind::kOther;
  }
  out->queue_id = Sub(m, 0, q);
  return out->kind = ParseQueueMessage(Sub(m, q + 2), out);
}

bool ParseLogTimestamp(std::string_view ts, int year, int utc_offset_seconds, int64_t* unix_time,
                       std::string* rfc3339) {
  if (!ts.empty() && IsDigit(ts[0])) {
    size_t n = Rfc3339TimestampLength(ts);
    if (n == 0 || n != ts.size()) return false;
    const char* p = ts.data();
    int y = Two(p) * 100 + Two(p + 2), mo = Two(p + 5), d = Two(p + 8);
    int hh = Two(p + 11), mi = Two(p + 14), ss = Two(p + 17);
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || hh > 23 || mi > 59 || ss > 60) return false;
    size_t i = 19;
    while (i < n && (ts[i] == '.' || ts[i] == ',' || IsDigit(ts[i]))) ++i;
    int offset = utc_offset_seconds;
    bool has_zone = i < n;
    if (has_zone && ts[i] != 'Z' && ts[i] != 'z') {
      int oh = Two(p + i + 1);
      size_t k = i + 3;
      if (k < n && ts[k] == ':') ++k;
      int om = Two(p + k);
      if (oh > 23 || om > 59) return false;
      offset = (oh * 3600 + om * 60) * (ts[i] == '-' ? -1 : 1);
    } else if (has_zone) {
      offset = 0;
    }
    *unix_time = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
                 hh * 3600 + mi * 60 + ss - offset;
    rfc3339->assign(ts);
    if (!has_zone) PutOffset(rfc3339, offset);
    return true;
  }
  size_t n = ClassicTimestampLength(ts);
  if (n == 0 || n != ts.size()) return false;
  int mo = MonthIndex(ts);
  size_t i = 4;
  if (ts[i] == ' ') ++i;
  int d = ts[i] - '0';
  ++i;
  if (IsDigit(ts[i])) d = d * 10 + (ts[i++] - '0');
  const char* t = ts.data() + i + 1;
  int hh = Two(t), mi = Two(t + 3), ss = Two(t + 6);
  if (d < 1 || d > 31 || hh > 23 || mi > 59 || ss > 60 || year < 1 || year > 9999) return false;
  sv frac = ts.substr(i + 9);  // "" or ".123456"
  *unix_time = DaysFromCivil(year, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
               hh * 3600 + mi * 60 + ss - utc_offset_seconds;
  rfc3339->clear();
  PutDigits(rfc3339, year, 4);
  rfc3339->push_back('-');
  PutDigits(rfc3339, mo, 2);
  rfc3339->push_back('-');
  PutDigits(rfc3339, d, 2);
  rfc3339->push_back('T');
  rfc3339->append(t, 8);  // HH:MM:SS, checked above
  rfc3339->append(frac.substr(0, 10));
  PutOffset(rfc3339, utc_offset_seconds);
  return true;
}

}  // namespace bounced
