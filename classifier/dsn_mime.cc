// dsn_mime.cc: see dsn_mime.h. All GMime calls of the classifier live here.
#include "classifier/dsn_mime.h"

#include <iconv.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "classifier/byte_scan.h"
#include "classifier/dsn_words.h"
#include "classifier/gmime_loader.h"
#include "classifier/text.h"

namespace bounced::dsn {
namespace {

// Inlined: it runs on every header value and Content-* value, mostly trimming one space.
[[gnu::always_inline]] inline std::string_view TrimSpaceView(std::string_view s) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n'; };
  size_t b = 0;
  size_t e = s.size();
  while (b < e && blank(s[b])) ++b;
  while (e > b && blank(s[e - 1])) --e;
  return std::string_view(s.data() + b, e - b);
}

// Whether `s` holds byte `c`, by memchr (whose pointer must not be null, as an empty view's
// may be).
bool HasByte(std::string_view s, char c) {
  return !s.empty() && std::memchr(s.data(), c, s.size()) != nullptr;
}

// GMime, loaded when a message first needs it (gmime_loader.h): most plain-text bounces never
// do. When it cannot be loaded this throws GMimeUnavailable, which ParseBounce, the one way in
// outside the tests, turns into that message's error (nothing here holds a resource that is not
// released on the way out).
const GMimeApi& Gm() {
  static const GMimeApi* const api = [] {
    const GMimeApi* loaded = GMime();
    if (loaded == nullptr) throw GMimeUnavailable(GMimeLoadError());
    return loaded;
  }();
  return *api;
}

// CRLF and lone CR become LF: GMime and every scanner after it then see one line-end style.
// CRs before an LF are one line end with it: an MTA that copies a remote reply's CRLF lines
// into its own CRLF text (DragonFly's dma does) writes "\r\r\n", which as two line ends would
// put a blank line between the reply's lines and cut the diagnostic after the first one.
// One pass, sixteen bytes a step with SSE2: a block is stored whole and the write position
// advanced past its bytes before the first '\r' (CRLF text has one per line, so a memchr and an
// append per line cost more than the copying). The write position never passes the read
// position, so a store stays inside `out`, which has room for in.size() bytes. Returns the count
// of bytes written.
size_t NormalizeLineEndsInto(std::string_view in, char* out) {
  const char* p = in.data();
  const size_t n = in.size();
  char* w = out;
  size_t i = 0;
  while (i < n) {
#if defined(__SSE2__)
    const __m128i cr = _mm_set1_epi8('\r');
    for (; i + 16 <= n; i += 16, w += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(w), v);
      unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, cr)));
      if (mask != 0) {
        size_t k = static_cast<size_t>(__builtin_ctz(mask));
        i += k;
        w += k;
        break;
      }
    }
#endif
    for (; i < n && p[i] != '\r'; ++i) *w++ = p[i];
    if (i == n) break;
    *w++ = '\n';  // p[i] is '\r'
    size_t j = i + 1;
    while (j < n && p[j] == '\r') ++j;
    // CR...CRLF is one line end; a CR with no LF after its run is one of its own.
    i = j < n && p[j] == '\n' ? j + 1 : i + 1;
  }
  return static_cast<size_t>(w - out);
}

std::string NormalizeLineEnds(std::string_view in) {
  std::string out(in.size(), '\0');
  out.resize(NormalizeLineEndsInto(in, out.data()));
  return out;
}

// Whether header name `name` is `lower` (lower-case letters and '-' only, the same size) in any
// case: a letter matches by setting bit 0x20 ('A'..'Z' are the only other bytes that then equal
// it), a '-' only itself. Inline, cheaper than a call to EqualsNoCaseSameSize per candidate.
inline bool NameIsSameSize(std::string_view name, std::string_view lower) {
  for (size_t i = 0; i < lower.size(); ++i) {
    char c = name[i];
    if (lower[i] == '-' ? c != '-' : static_cast<char>(c | 0x20) != lower[i]) return false;
  }
  return true;
}

// A lower-case header name of 8 bytes or more as words for NameIs: the bytes at offsets 0, 8,
// 16 ... and size - 8 (the last word may overlap the one before), with the bits a name's byte
// may differ in (0x20 for a letter, none for '-'), as NameIsSameSize compares them.
struct NameKey {
  std::string_view lower;
  int words = 0;
  uint64_t value[4] = {};
  uint64_t fold[4] = {};

  constexpr explicit NameKey(std::string_view name) : lower(name) {
    words = static_cast<int>((name.size() + 7) / 8);
    for (int k = 0; k < words; ++k) {
      size_t at = std::min(8 * static_cast<size_t>(k), name.size() - 8);
      for (int i = 7; i >= 0; --i) {
        char c = name[at + i];
        value[k] = (value[k] << 8) | static_cast<unsigned char>(c);
        fold[k] = (fold[k] << 8) | (c == '-' ? 0 : 0x20);
      }
    }
  }
};

// NameIsSameSize(name, key.lower) a word at a time; name.size() == key.lower.size() >= 8.
// Always inlined: with a constant key the loop unrolls to a compare or two, while a call costs
// more than the compare, and whether the compiler inlined it on its own changed with unrelated
// code elsewhere in this file.
[[gnu::always_inline]] inline bool NameIs(std::string_view name, const NameKey& key) {
  for (int k = 0; k < key.words; ++k) {
    size_t at = std::min(8 * static_cast<size_t>(k), name.size() - 8);
    if ((LoadWord(name.data() + at) | key.fold[k]) != key.value[k]) return false;
  }
  return true;
}

constexpr NameKey kContentType("content-type");
constexpr NameKey kContentTransferEncoding("content-transfer-encoding");

// The headers the parser reads; decoding only these keeps big header blocks cheap. Returns the
// name in lower case, or "" for a header nobody reads. Always inlined into the two header
// splitters, which ask it for every header line: GCC left it a call, which cost more than most
// of its answers.
__attribute__((always_inline)) inline std::string_view WantedHeader(std::string_view name) {
  // By length first: most header names (Received, DKIM-Signature, X-...) are then rejected
  // by a word or two (a letter or two for the short names).
  auto is = [name](std::string_view lower) {
    return NameIsSameSize(name, lower) ? lower : std::string_view();
  };
  auto is_key = [name](const NameKey& key) {
    return NameIs(name, key) ? key.lower : std::string_view();
  };
  static constexpr NameKey kReplyTo("reply-to"), kSpaSign("x-spasign"), kMessageId("message-id"),
      kPrecedence("precedence"), kReturnPath("return-path"), kAutoReply("x-autoreply"),
      kEnvelopeTo("envelope-to"), kDeliveredTo("delivered-to"), kAutoRespond("x-autorespond"),
      kOriginalTo("x-original-to"), kAutoSubmitted("auto-submitted"),
      kFailedRecipients("x-failed-recipients"), kResponseSuppress("x-auto-response-suppress"),
      kHmxmr("x-hmxmroriginalrecipient"), kAppleAction("x-apple-action");
  switch (name.size()) {
    case 2:
      return is("to");
    case 4:
      return is("from");
    case 6:
      return is("sender");
    case 7:
      return is("subject");
    case 8:
      return is_key(kReplyTo);
    case 9:
      return is_key(kSpaSign);
    case 10:
      return (name[0] | 0x20) == 'm' ? is_key(kMessageId) : is_key(kPrecedence);
    case 11:
      switch (name[0] | 0x20) {
        case 'r':
          return is_key(kReturnPath);
        case 'e':
          return is_key(kEnvelopeTo);
        default:
          return is_key(kAutoReply);
      }
    case 12:
      return is_key(kDeliveredTo);
    case 13:
      return (name[2] | 0x20) == 'a' ? is_key(kAutoRespond) : is_key(kOriginalTo);
    case 14:
      return (name[2] | 0x20) == 'a' ? is_key(kAppleAction) : is_key(kAutoSubmitted);
    case 19:
      return is_key(kFailedRecipients);
    case 24:
      return (name[2] | 0x20) == 'a' ? is_key(kResponseSuppress) : is_key(kHmxmr);
    default:
      return {};
  }
}

bool LooksLikeIso2022Jp(std::string_view s) {
  if (!HasByte(s, '\x1b')) return false;  // no escape at all
  return s.find("\x1b$B") != std::string_view::npos || s.find("\x1b$@") != std::string_view::npos ||
         s.find("\x1b(J") != std::string_view::npos;
}

}  // namespace

bool SingleByteToUtf8(std::string_view bytes, std::string_view charset, std::string* out,
                      size_t* invalid) {
  bool latin1 = EqualsNoCase(charset, "ISO-8859-1");
  if (!latin1 && !EqualsNoCase(charset, "CP1252") && !EqualsNoCase(charset, "WINDOWS-1252"))
    return false;
  // Windows-1252's 0x80-0x9F (0 = undefined); ISO-8859-1 maps them to U+0080-U+009F.
  static constexpr uint16_t kCp1252High[32] = {
      0x20AC, 0,      0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
      0x2039, 0x0152, 0,      0x017D, 0,      0,      0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
      0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0,      0x017E, 0x0178};
  out->clear();
  out->reserve(bytes.size() + bytes.size() / 4);
  const char* p = bytes.data();
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    // ASCII runs (most of such text) are copied whole; they are found eight bytes a step.
    size_t run = i;
    for (uint64_t w; run + 8 <= n; run += 8) {
      std::memcpy(&w, p + run, 8);
      if ((w & 0x8080808080808080ull) != 0) break;
    }
    while (run < n && static_cast<unsigned char>(p[run]) < 0x80) ++run;
    out->append(p + i, run - i);
    if (run == n) break;
    auto b = static_cast<unsigned char>(p[run]);  // >= 0x80
    i = run + 1;
    uint32_t cp = b;
    if (b < 0xA0 && !latin1) cp = kCp1252High[b - 0x80];
    if (cp == 0) {
      out->append("\xEF\xBF\xBD");
      ++*invalid;
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  return true;
}

namespace {

// iconv descriptors per thread and charset: opening one loads a gconv module, far dearer than
// converting a bounce. Unknown charsets are remembered too. The names come from the messages, so
// the cache is capped: when full, a descriptor is closed to make room (refusing instead would
// leave every later charset of the thread unconverted once a message had named enough of them).
constexpr size_t kMaxCachedCharsets = 64;

iconv_t IconvFor(const char* from) {
  struct Cache {
    std::unordered_map<std::string, iconv_t> map;
    ~Cache() {
      for (auto& [name, cd] : map) {
        if (cd != reinterpret_cast<iconv_t>(-1)) iconv_close(cd);
      }
    }
  };
  thread_local Cache cache;
  auto it = cache.map.find(from);
  if (it != cache.map.end()) return it->second;
  if (cache.map.size() >= kMaxCachedCharsets) {
    auto victim = cache.map.begin();
    if (victim->second != reinterpret_cast<iconv_t>(-1)) iconv_close(victim->second);
    cache.map.erase(victim);
  }
  iconv_t cd = iconv_open("UTF-8", from);
  cache.map.emplace(from, cd);
  return cd;
}

// The iconv name GMime gives a charset label ("" when it gives none), kept per thread. GMime's
// table of names is behind a GLib mutex, whose futex locking ThreadSanitizer cannot see: copied
// under a mutex of ours, the name another thread's lookup made is read with a visible
// happens-before (tests/TSAN.md), and each thread asks GMime once per label.
std::string IconvName(std::string_view charset) {
  thread_local std::unordered_map<std::string, std::string> names;
  std::string label(charset);
  auto it = names.find(label);
  if (it != names.end()) return it->second;
  if (names.size() >= kMaxCachedCharsets) names.erase(names.begin());
  std::string name;
  {
    static std::mutex mu;
    std::lock_guard lock(mu);
    if (const char* n = Gm().g_mime_charset_iconv_name(label.c_str())) name = n;
  }
  return names.emplace(std::move(label), std::move(name)).first->second;
}

bool IsAscii(std::string_view s);

// Whether a conversion reads to the end or stops at the first invalid byte: a probe only asks
// whether the bytes are valid in a charset, and mislabelled text has an invalid byte in nearly
// every character (each costs an iconv call and a reset when read on).
enum class Invalid { kReplace, kStop };

// Converts to UTF-8; bytes invalid in the charset become U+FFFD (counted in *invalid when
// given). With Invalid::kStop the conversion ends at the first invalid byte (*invalid is then
// 1 and *out a prefix). False when the charset is unknown.
bool TryConvert(std::string_view bytes, const char* from, std::string* out,
                size_t* invalid = nullptr, Invalid on_invalid = Invalid::kReplace) {
  size_t bad = 0;
  if (SingleByteToUtf8(bytes, from, out, &bad)) {
    if (invalid != nullptr) *invalid += bad;
    return true;
  }
  iconv_t cd = IconvFor(from);
  if (cd == reinterpret_cast<iconv_t>(-1)) return false;
  // ISO-2022-JP starts in ASCII and ESC ( B returns to it: 7-bit bytes before the first escape,
  // and after an ESC ( B that is the last escape, convert to themselves (every such byte does,
  // DecodeMime.Iso2022JpLabelledAsciiIsItself checks it). Most of a Japanese bounce is there;
  // only the bytes between go through iconv's stateful converter, which is slow.
  std::string_view head;
  std::string_view tail;
  if (EqualsNoCase(from, "ISO-2022-JP")) {
    size_t first = std::min(bytes.find('\x1b'), bytes.size());
    if (IsAscii(bytes.substr(0, first))) {
      head = bytes.substr(0, first);
      bytes.remove_prefix(first);
    }
    size_t last = bytes.rfind('\x1b');
    if (last != std::string_view::npos && bytes.substr(last).starts_with("\x1b(B") &&
        IsAscii(bytes.substr(last + 3))) {
      tail = bytes.substr(last + 3);
      bytes.remove_suffix(tail.size());
    }
  }
  iconv(cd, nullptr, nullptr, nullptr, nullptr);
  out->assign(head);
  char* in = const_cast<char*>(bytes.data());
  size_t in_left = bytes.size();
  char buf[4096];
  while (in_left > 0) {
    char* o = buf;
    size_t o_left = sizeof buf;
    size_t rc = iconv(cd, &in, &in_left, &o, &o_left);
    out->append(buf, o - buf);
    if (rc != static_cast<size_t>(-1)) continue;
    if (errno == E2BIG) continue;
    if (invalid != nullptr) ++*invalid;
    if (on_invalid == Invalid::kStop) return true;
    out->append("\xEF\xBF\xBD");  // EILSEQ or a sequence cut at the end: skip one byte
    ++in;
    --in_left;
    iconv(cd, nullptr, nullptr, nullptr, nullptr);
  }
  char* o = buf;
  size_t o_left = sizeof buf;
  iconv(cd, nullptr, nullptr, &o, &o_left);  // shift back to the initial state (ISO-2022-JP)
  out->append(buf, o - buf);
  out->append(tail);
  return true;
}

#if defined(__x86_64__) && defined(__GNUC__)
// IsAscii's blocks of 128 bytes from *i while they fit in the n bytes at p: false when one holds
// a byte >= 0x80, else true with *i past them.
__attribute__((target("avx2"))) bool AsciiBlocksAvx2(const char* p, size_t n, size_t* i) {
  __m256i high = _mm256_setzero_si256();
  size_t j = *i;
  for (; j + 128 <= n; j += 128) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + j));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + j + 32));
    __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + j + 64));
    __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + j + 96));
    high = _mm256_or_si256(high, _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d)));
  }
  *i = j;
  return _mm256_movemask_epi8(high) == 0;
}
#endif

// Whether every byte is 7-bit, 128 (AVX2) or 64 (SSE2) bytes a step, else eight: most bounce
// text is, and then neither a UTF-8 check nor a conversion from an ASCII-compatible charset can
// change it.
bool IsAscii(std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  uint64_t any = 0;
  size_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (n >= 128 && HaveAvx2() && !AsciiBlocksAvx2(p, n, &i)) return false;
#endif
#if defined(__SSE2__)
  __m128i high = _mm_setzero_si128();
  auto load = [p](size_t at) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at)); };
  for (; i + 64 <= n; i += 64) {
    high = _mm_or_si128(high, _mm_or_si128(_mm_or_si128(load(i), load(i + 16)),
                                           _mm_or_si128(load(i + 32), load(i + 48))));
  }
  for (; i + 16 <= n; i += 16) high = _mm_or_si128(high, load(i));
  if (_mm_movemask_epi8(high) != 0) return false;
#endif
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    std::memcpy(&v, p + i, 8);
    any |= v;
  }
  for (; i < n; ++i) any |= static_cast<uint8_t>(p[i]);
  return (any & 0x8080808080808080ull) == 0;
}

// Charsets whose 7-bit bytes are not simply ASCII (they encode other characters with them).
bool SevenBitIsNotAscii(std::string_view charset) {
  if (charset.empty()) return false;
  switch (charset[0] | 0x20) {  // by the first letter: a compare or two per charset
    case 'u':
      if (StartsWithNoCase(charset, "ucs")) return true;
      if (!StartsWithNoCase(charset, "utf-")) return false;
      charset.remove_prefix(4);
      return charset.starts_with("7") || charset.starts_with("16") || charset.starts_with("32");
    case 'i':
      return StartsWithNoCase(charset, "iso-2022");
    case 'h':
      return StartsWithNoCase(charset, "hz");
    default:
      return false;
  }
}

// Whether ToUtf8(bytes, charset) is `bytes` itself, by the test that decides most text: 7-bit
// bytes in a charset whose 7-bit bytes are ASCII, and no ISO-2022-JP escape.
bool AlreadyUtf8(std::string_view bytes, std::string_view charset) {
  return IsAscii(bytes) && !SevenBitIsNotAscii(charset) && !HasByte(bytes, '\x1b');
}

// What g_utf8_validate(s.data(), s.size(), nullptr) answers: well-formed UTF-8 (no overlong
// forms, no surrogates, nothing past U+10FFFF) without a NUL byte. GLib's check takes several
// instructions per byte; text that is not all ASCII is still mostly ASCII, skipped here sixteen
// bytes at a time with SSE2.
bool ValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    for (; i + 16 <= n; i += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      // High bit: a byte >= 0x80, or a NUL (all ones after the compare).
      unsigned stop =
          static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(v, _mm_cmpeq_epi8(v, zero))));
      if (stop != 0) {
        i += static_cast<size_t>(__builtin_ctz(stop));
        break;
      }
    }
    if (i >= n) break;
#endif
    unsigned char c = p[i];
    if (c < 0x80) {
      if (c == 0) return false;
      ++i;
      continue;
    }
    size_t len = Utf8SequenceLength(p + i, n - i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string MakeValidUtf8(std::string s) {
  if (IsAscii(s) || ValidUtf8(s)) return s;
  gchar* valid = Gm().g_utf8_make_valid(s.data(), static_cast<gssize>(s.size()));
  std::string out(valid);
  Gm().g_free(valid);
  return out;
}

// A copy of `value` kept in `storage`, viewed.
std::string_view Stored(std::string value, HeaderStorage* storage) {
  return *storage->emplace_back(std::make_unique<std::string>(std::move(value)));
}

void AddHeaders(GMimeObject* obj, std::vector<Header>* out, HeaderStorage* storage) {
  GMimeHeaderList* list = Gm().g_mime_object_get_header_list(obj);
  if (list == nullptr) return;
  int n = Gm().g_mime_header_list_get_count(list);
  for (int i = 0; i < n && i < 512; ++i) {
    GMimeHeader* h = Gm().g_mime_header_list_get_header_at(list, i);
    if (h == nullptr) continue;
    const char* name = Gm().g_mime_header_get_name(h);
    if (name == nullptr) continue;
    std::string_view wanted = WantedHeader(name);  // the name in lower case
    if (wanted.empty()) continue;
    const char* value = Gm().g_mime_header_get_value(h);
    out->push_back(Header{wanted, Stored(MakeValidUtf8(value != nullptr ? value : ""), storage)});
  }
}

std::string TypeOf(GMimeObject* obj) {
  GMimeContentType* ct = Gm().g_mime_object_get_content_type(obj);
  if (ct == nullptr) return "text/plain";
  const char* type = Gm().g_mime_content_type_get_media_type(ct);
  const char* sub = Gm().g_mime_content_type_get_media_subtype(ct);
  return AsciiLowerCopy(std::string(type != nullptr ? type : "text") + "/" +
                        (sub != nullptr ? sub : "plain"));
}

// What `write` writes into a memory stream, at most `limit` bytes of it.
template <typename Write>
std::string StreamedBytes(Write&& write, size_t limit) {
  GMimeStream* mem = Gm().g_mime_stream_mem_new();
  write(mem);
  GByteArray* bytes = Gm().g_mime_stream_mem_get_byte_array(reinterpret_cast<GMimeStreamMem*>(mem));
  std::string out;
  if (bytes != nullptr) {
    out.assign(reinterpret_cast<const char*>(bytes->data), std::min<size_t>(bytes->len, limit));
  }
  Gm().g_object_unref(mem);
  return out;
}

size_t DecodeQuotedPrintable(std::string_view body, char* out);

std::string DecodedContent(GMimePart* part) {
  GMimeDataWrapper* content = Gm().g_mime_part_get_content(part);
  if (content == nullptr) return {};
  auto write = [content](GMimeStream* mem) {
    Gm().g_mime_data_wrapper_write_to_stream(content, mem);
  };
  if (content->encoding != GMIME_CONTENT_ENCODING_QUOTEDPRINTABLE)
    return StreamedBytes(write, kMaxPartTextBytes);
  // Quoted-printable is decoded as the decoder's own split decodes it (DecodeQuotedPrintable
  // drops the soft line breaks padded with blanks that GMime's decoder keeps): the wrapper
  // writes its bytes as they are while its encoding (a public field) says identity.
  content->encoding = GMIME_CONTENT_ENCODING_DEFAULT;
  std::string raw = StreamedBytes(write, 4 * kMaxPartTextBytes);
  content->encoding = GMIME_CONTENT_ENCODING_QUOTEDPRINTABLE;
  std::string out(raw.size() + 2, '\0');
  out.resize(std::min(DecodeQuotedPrintable(raw, out.data()), kMaxPartTextBytes));
  return out;
}

// An attached message as GMime writes it out again (its parser keeps no bytes to view), whole:
// it is no larger than the message it came from.
std::string WrittenOut(GMimeObject* obj) {
  return StreamedBytes(
      [obj](GMimeStream* mem) { Gm().g_mime_object_write_to_stream(obj, nullptr, mem); },
      std::numeric_limits<size_t>::max());
}

// Parts worth reading as text: text/*, message/* reports, and the odd report sent as
// application/octet-stream is left out (binary attachments carry no bounce text).
bool IsTextual(std::string_view type) {
  return type.starts_with("text/") || type.starts_with("message/") || type == "application/json";
}

// type.starts_with("multipart/"), always inlined: called on every part, and whether the compiler
// inlined starts_with there changed with unrelated code elsewhere in this file.
[[gnu::always_inline]] inline bool IsMultipart(std::string_view type) {
  constexpr std::string_view kMultipart = "multipart/";
  return type.size() >= kMultipart.size() &&
         std::memcmp(type.data(), kMultipart.data(), kMultipart.size()) == 0;
}

// A saved message attached as a file of unknown type ("bounce.eml" as application/octet-stream,
// as mail clients and ticket systems attach a file they have no type for): read as an attached
// message/rfc822 is.
bool IsMessageFile(std::string_view type, std::string_view file_name) {
  return file_name.size() > 4 && EqualsNoCase(file_name.substr(file_name.size() - 4), ".eml") &&
         type == "application/octet-stream";
}

// A part holding only the returned message's headers: text/rfc822-headers, or RFC 6533's
// message/global-headers, which Postfix sends for a message with UTF-8 headers (SMTPUTF8).
bool IsReturnedHeaders(std::string_view type) {
  return type == "text/rfc822-headers" || type == "message/global-headers";
}

// Whether an epilogue holds a report glued after the message (a mailbox holding two): its
// delivery-status part, in any case (media types have none), RFC 3464's or RFC 6533's. One
// scan of the epilogue, which may be long.
bool HoldsGluedReport(std::string_view epilogue) {
  for (size_t at = FindNoCase(epilogue, "delivery-status"); at != std::string_view::npos;
       at = FindNoCase(epilogue, "delivery-status", at + 1)) {
    for (std::string_view type : {"message/", "message/global-"}) {
      if (at >= type.size() && EqualsNoCase(epilogue.substr(at - type.size(), type.size()), type))
        return true;
    }
  }
  return false;
}

std::vector<Header> ParseHeaders(std::string_view text, bool wanted_only, HeaderStorage* storage);

// `owner` holds the bytes `message` points into (null: the caller's bytes, alive as long as
// the view is used).
MimeView DecodeMimeNested(std::string_view message, Owner owner);

struct Walker {
  MimeView* view;
  bool nested_ok = true;
  bool have_original = false;

  void AddLeaf(std::string type, const std::string& text, bool attached) {
    if (view->PartsFull()) return;
    view->parts.emplace_back(std::move(type), NormalizeLineEnds(text), attached);
  }

  void Walk(GMimeObject* obj, int depth, bool attached) {
    // A full list of parts does not stop the walk: the text parts it reaches are noted as left
    // out (AddLeaf), the others are not, and attached messages are still kept.
    if (obj == nullptr || depth > kMaxMimeDepth) return;
    if (Gm().IsA(obj, Gm().g_mime_multipart_get_type())) {
      GMimeMultipart* mp = reinterpret_cast<GMimeMultipart*>(obj);
      int n = Gm().g_mime_multipart_get_count(mp);
      for (int i = 0; i < n; ++i) Walk(Gm().g_mime_multipart_get_part(mp, i), depth + 1, attached);
      // Some mailboxes hold a second report glued after the first one's closing boundary.
      const char* epilogue = Gm().g_mime_multipart_get_epilogue(mp);
      if (depth == 0 && !attached && epilogue != nullptr && nested_ok &&
          HoldsGluedReport(epilogue)) {
        // GMime owns the epilogue: the second report's parts get their own copy.
        auto copy = std::make_shared<const std::string>(epilogue);
        MimeView second = DecodeMimeNested(*copy, copy);
        view->TakeParts(std::move(second));
      }
      return;
    }
    if (Gm().IsA(obj, Gm().g_mime_message_part_get_type())) {
      GMimeMessage* msg =
          Gm().g_mime_message_part_get_message(reinterpret_cast<GMimeMessagePart*>(obj));
      if (msg == nullptr) return;
      if (!attached && depth <= 1) {
        if (view->attached_messages.size() >= kMaxAttachedMessages) {
          ++view->attached_skipped;  // not written out: it would not be kept
        } else {
          auto bytes =
              std::make_shared<const std::string>(WrittenOut(reinterpret_cast<GMimeObject*>(msg)));
          std::string_view written = *bytes;
          view->AddAttached(written, std::move(bytes));
        }
      }
      if (!have_original && !attached) {
        have_original = true;
        AddHeaders(reinterpret_cast<GMimeObject*>(msg), &view->original_headers, &view->storage);
      }
      // The returned message's own parts are kept (marked) for bounces that are only a
      // forwarded copy of a bounce; scanners prefer the unattached parts.
      Walk(Gm().g_mime_message_get_mime_part(msg), depth + 1, true);
      return;
    }
    if (!Gm().IsA(obj, Gm().g_mime_part_get_type())) return;
    std::string type = TypeOf(obj);
    if (type == "application/octet-stream" && !attached && depth <= 1) {
      const char* name = Gm().g_mime_object_get_content_type_parameter(obj, "name");
      if (name != nullptr && IsMessageFile(type, name)) {
        if (view->attached_messages.size() >= kMaxAttachedMessages) {
          ++view->attached_skipped;  // not decoded: it would not be kept
          return;
        }
        auto bytes =
            std::make_shared<const std::string>(DecodedContent(reinterpret_cast<GMimePart*>(obj)));
        std::string_view decoded = *bytes;
        view->AddAttached(decoded, std::move(bytes));
        return;
      }
    }
    if (!IsTextual(type)) return;
    std::string raw = DecodedContent(reinterpret_cast<GMimePart*>(obj));
    const char* charset = Gm().g_mime_object_get_content_type_parameter(obj, "charset");
    std::string text = ToUtf8(raw, charset != nullptr ? charset : "");
    if (IsReturnedHeaders(type) && !have_original && !attached) {
      have_original = true;
      view->original_headers = ParseHeaders(text, true, &view->storage);
    }
    AddLeaf(std::move(type), text, attached);
  }
};

}  // namespace

// Out of line: inlined, it made the decoder's walk too big for the compiler to inline the
// small helpers the walk calls on every part.
void MimeView::TakeParts(MimeView&& other) {
  for (MimeLeaf& leaf : other.parts) {
    if (PartsFull()) break;
    parts.push_back(std::move(leaf));
  }
  parts_cut = parts_cut || other.parts_cut;
  attached_skipped += other.attached_skipped;
}

void MimeView::AddAttached(std::string_view bytes, Owner owner) {
  if (attached_messages.size() < kMaxAttachedMessages) {
    attached_messages.push_back(Attached{bytes, std::move(owner)});
  } else {
    ++attached_skipped;
  }
}

namespace {

// ParseHeaderBlock, keeping with `wanted_only` just the headers the parser reads (WantedHeader)
// and the block's first header, whatever it is: lookups of the names the parser reads and
// whether the block held a header at all come out as from the whole list, without a copy of
// every other header (a returned message's Received, DKIM-Signature ... lines).
std::vector<Header> ParseHeaders(std::string_view text, bool wanted_only, HeaderStorage* storage) {
  std::vector<Header> out;
  size_t parsed = 0;
  std::string* last = nullptr;  // the value of the last header parsed, when kept
  size_t pos = 0;
  // The blanks (' ', '\t') a line starts with, and the first non-blank at or before `at`
  // (npos for none): std::string_view's find_first_not_of and find_last_not_of, without their
  // memchr call per byte tested.
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  auto first_not_blank = [&](std::string_view line) {
    size_t i = 0;
    while (i < line.size() && blank(line[i])) ++i;
    return i;
  };
  auto last_not_blank = [&](std::string_view line, size_t at) {
    for (size_t i = at + 1; i-- > 0;) {
      if (!blank(line[i])) return i;
    }
    return std::string_view::npos;
  };
  while (pos < text.size() && parsed < 512) {
    size_t end = FindAnyOf<'\n'>(text.data(), pos, text.size());
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t lead = first_not_blank(line);
    if (lead == line.size()) {  // empty or blank
      if (parsed > 0) break;
      continue;
    }
    if (lead > 0 && parsed > 0) {
      if (last != nullptr) {
        *last += ' ';
        *last += line.substr(lead);
        out.back().value = *last;
      }
      continue;
    }
    size_t colon = line.find(':');
    // Blanks may stand between a name and its colon (RFC 822's "To : a@b"), not inside it.
    size_t name_end =
        colon == std::string_view::npos ? colon : last_not_blank(line, colon == 0 ? 0 : colon - 1);
    if (colon == std::string_view::npos || colon == 0 || name_end == std::string_view::npos ||
        ContainsAnyOf(line.substr(0, name_end + 1), " \t")) {
      if (parsed > 0) break;
      continue;
    }
    std::string_view name = line.substr(0, name_end + 1);
    std::string_view value = line.substr(colon + 1);
    size_t first = value.find_first_not_of(" \t");
    value = first == std::string_view::npos ? std::string_view() : value.substr(first);
    ++parsed;
    last = nullptr;
    std::string_view lower = parsed > 1 || wanted_only ? WantedHeader(name) : std::string_view();
    if (wanted_only && parsed > 1 && lower.empty()) continue;
    if (lower.empty()) lower = Stored(AsciiLowerCopy(name), storage);
    // Values are copied: the text is often a part's, which moves.
    last = storage->emplace_back(std::make_unique<std::string>(value)).get();
    out.push_back(Header{lower, *last});
  }
  return out;
}

}  // namespace

HeaderBlock ParseHeaderBlock(std::string_view text) {
  HeaderBlock block;
  block.headers = ParseHeaders(text, false, &block.storage);
  return block;
}

std::string ToUtf8(std::string_view bytes, std::string_view charset) {
  // Whether the bytes are 7-bit is asked up to three times below: read once.
  const bool ascii = IsAscii(bytes);
  if (ascii && !SevenBitIsNotAscii(charset) && !HasByte(bytes, '\x1b'))
    return std::string(bytes);  // AlreadyUtf8
  std::string out;
  bool ascii_or_utf8 = charset.empty() || EqualsNoCase(charset, "us-ascii") ||
                       EqualsNoCase(charset, "utf-8") || EqualsNoCase(charset, "utf8") ||
                       EqualsNoCase(charset, "ascii") || (ascii && !SevenBitIsNotAscii(charset));
  if (!ascii_or_utf8) {
    const std::string name = IconvName(charset);
    const char* iconv_name = name.empty() ? nullptr : name.c_str();
    // ISO-2022-JP starts in ASCII and stays there without an escape: 7-bit text so labelled
    // (common from Japanese carriers) converts to itself; iconv's stateful converter is slow.
    if (iconv_name != nullptr && EqualsNoCase(iconv_name, "ISO-2022-JP") && ascii &&
        !HasByte(bytes, '\x1b'))
      return std::string(bytes);
    size_t invalid = 0;
    // Read up to the first invalid byte only: valid text (nearly all) is then converted whole,
    // and mislabelled text is not converted byte by byte for a result the readings below
    // usually replace.
    if (iconv_name != nullptr && TryConvert(bytes, iconv_name, &out, &invalid, Invalid::kStop)) {
      if (invalid == 0) return MakeValidUtf8(std::move(out));
      // Mislabelled text: Japanese carriers label EUC-JP or Shift_JIS as ISO-2022-JP, and
      // many MTAs label UTF-8 as anything. Take the first reading without invalid bytes.
      if (ValidUtf8(bytes)) {
        return std::string(bytes);
      }
      for (const char* alt : {"EUC-JP", "SHIFT_JIS", "CP932", "GB18030"}) {
        std::string other;
        size_t bad = 0;
        if (TryConvert(bytes, alt, &other, &bad, Invalid::kStop) && bad == 0)
          return MakeValidUtf8(std::move(other));
      }
      // No reading is clean: the declared charset's, invalid bytes replaced.
      TryConvert(bytes, iconv_name, &out);
      return MakeValidUtf8(std::move(out));
    }
  }
  if (ascii || ValidUtf8(bytes)) {
    // 7-bit text may still be ISO-2022-JP (Japanese carriers send it undeclared).
    if (LooksLikeIso2022Jp(bytes) && TryConvert(bytes, "ISO-2022-JP", &out)) {
      return MakeValidUtf8(std::move(out));
    }
    return std::string(bytes);
  }
  if (TryConvert(bytes, "WINDOWS-1252", &out)) return MakeValidUtf8(std::move(out));
  return MakeValidUtf8(std::string(bytes));
}

namespace {

// ---- Fast path ------------------------------------------------------------------------------
// GMime builds a GObject tree per message, which costs more than everything else the parser
// does. Well-formed messages (the overwhelming majority of bounces) are split here instead:
// header blocks, Content-Type parameters and multipart boundaries by hand, while the decoding
// itself stays GMime's (base64 and quoted-printable decoders, RFC 2047 header words) and
// iconv's. Anything unusual (no header block, RFC 2231 parameters, a boundary that never
// occurs, an unknown transfer encoding, uuencode ...) makes FastDecode give up, and the GMime
// parser does the whole message: results never depend on which path ran, only speed does.

struct RawPart {
  bool any_header = false;  // whether the block held a header line at all
  // The first Content-Type and Content-Transfer-Encoding values, raw; data() is null when absent.
  std::string_view content_type;
  std::string_view transfer_encoding;
  std::string_view body;
  bool ok = true;
};

// The length of a header name: the index of the first ':', ' ' or '\t', or s.size(). Header
// blocks are most of the lines split here, 16 bytes a step with SSE2.
size_t NameEnd(std::string_view s) {
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i colon = _mm_set1_epi8(':');
  const __m128i space = _mm_set1_epi8(' ');
  const __m128i tab = _mm_set1_epi8('\t');
  for (; i + 16 <= s.size(); i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
    __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(v, colon),
                               _mm_or_si128(_mm_cmpeq_epi8(v, space), _mm_cmpeq_epi8(v, tab)));
    int bits = _mm_movemask_epi8(hit);
    if (bits != 0) return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(bits)));
  }
#endif
  while (i < s.size() && s[i] != ':' && s[i] != ' ' && s[i] != '\t') ++i;
  return i;
}

// Splits a header block from its body. The block must start with a header line. Inside a
// message (`nested`), a line that is not a header is dropped and the block read on, as GMime
// reads it: returned messages often carry a mangled header (a Received line folded without
// indentation); at the top such a message goes to GMime's parser whole. An attached message
// (`message`) may even start with such a line: samples replace the returned message with a
// placeholder ("[original message goes here]"), which GMime drops the same way. The headers the
// parser reads (WantedHeader's lower-case name, the raw value) are appended to *wanted, when
// given: a message's, the one block DecodeHeaderValues reads; a part's headers are never read.
RawPart SplitHeaders(std::string_view text, bool nested, bool message,
                     std::vector<Header>* wanted) {
  RawPart part;
  if (wanted != nullptr) wanted->reserve(12);  // the usual count: no regrowing
  if (!text.empty() && text[0] == '\n') {      // no headers at all: the body starts at once
    part.body = text.substr(1);
    return part;
  }
  bool any = false;
  // Which kept values the last header line set: a folded line widens them.
  bool last_listed = false;
  bool last_type = false;
  bool last_encoding = false;
  auto widen = [](std::string_view* v, std::string_view line) {
    *v = std::string_view(v->data(), line.data() + line.size() - v->data());
  };
  size_t pos = 0;
  while (pos < text.size()) {
    // Inline, sixteen bytes a step: a memchr call per header line cost more than the scan.
    size_t end = FindAnyOf<'\n'>(text.data(), pos, text.size());
    std::string_view line = text.substr(pos, end - pos);
    if (line.empty()) {
      part.body = end < text.size() ? text.substr(end + 1) : std::string_view();
      return part;
    }
    if (line[0] == ' ' || line[0] == '\t') {
      if (!any) {
        part.ok = false;
        return part;
      }
      // Continuation: widen the previous value's view over the folded line.
      if (last_listed) widen(&wanted->back().value, line);
      if (last_type) widen(&part.content_type, line);
      if (last_encoding) widen(&part.transfer_encoding, line);
    } else {
      // A header name: up to a colon within 76 bytes, no blank in it.
      size_t limit = std::min<size_t>(line.size(), 77);
      size_t colon = NameEnd(line.substr(0, limit));
      if (colon == 0 || colon == limit || line[colon] != ':') {
        if (nested && (any || message)) {
          pos = end + 1;  // GMime drops the line and reads on
          continue;
        }
        part.ok = false;  // not a header line: leave the oddity to GMime
        return part;
      }
      // Both built, not line.substr(...): the compiler did not always inline that call (with its
      // bounds check) here, on every header line.
      std::string_view name(line.data(), colon);
      std::string_view value(line.data() + colon + 1, line.size() - colon - 1);
      any = true;
      part.any_header = true;
      last_listed = false;
      if (wanted != nullptr) {
        std::string_view lower = WantedHeader(name);
        last_listed = !lower.empty();
        if (last_listed) wanted->push_back(Header{lower, value});
      }
      last_type =
          part.content_type.data() == nullptr && name.size() == 12 && NameIs(name, kContentType);
      if (last_type) part.content_type = value;
      last_encoding = part.transfer_encoding.data() == nullptr && name.size() == 25 &&
                      NameIs(name, kContentTransferEncoding);
      if (last_encoding) part.transfer_encoding = value;
    }
    pos = end + 1;
  }
  part.body = {};
  return part;
}

// Folded header value -> one line: line ends dropped, tabs made spaces, spaces trimmed.
std::string Unfold(std::string_view raw) {
  raw = TrimSpaceView(raw);
  std::string out(raw.size(), '\0');
  char* w = out.data();
  size_t i = 0;
#if defined(__SSE2__)
  // Folded values (a Content-Type with its boundary on the next line) are copied 16 bytes a
  // step; only a chunk holding a line end or tab goes byte by byte. w never passes the read
  // position, so a 16-byte store stays inside `out`.
  const __m128i nl = _mm_set1_epi8('\n');
  const __m128i tab = _mm_set1_epi8('\t');
  for (; i + 16 <= raw.size(); i += 16) {
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(raw.data() + i));
    if (_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, nl), _mm_cmpeq_epi8(x, tab))) == 0) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(w), x);
      w += 16;
      continue;
    }
    for (size_t j = i; j < i + 16; ++j) {
      char c = raw[j];
      *w = c == '\t' ? ' ' : c;
      w += c != '\n';
    }
  }
#endif
  for (; i < raw.size(); ++i) {
    char c = raw[i];
    *w = c == '\t' ? ' ' : c;
    w += c != '\n';
  }
  out.resize(static_cast<size_t>(w - out.data()));
  return out;
}

// Whether a header value is its own decoding: 7-bit, one line, no tab and no '=' (so no RFC 2047
// encoded word). Most wanted values are; one pass over them replaces Unfold's, the "=?" search's
// and MakeValidUtf8's, 16 bytes a step with SSE2.
bool PlainHeaderValue(std::string_view v) {
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i nl = _mm_set1_epi8('\n');
  const __m128i tab = _mm_set1_epi8('\t');
  const __m128i eq = _mm_set1_epi8('=');
  auto plain16 = [&](size_t at) {
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v.data() + at));
    __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(x, nl),
                               _mm_or_si128(_mm_cmpeq_epi8(x, tab), _mm_cmpeq_epi8(x, eq)));
    return _mm_movemask_epi8(_mm_or_si128(hit, x)) == 0;  // x: the high bits
  };
  for (; i + 16 <= v.size(); i += 16) {
    if (!plain16(i)) return false;
  }
  if (i != 0) return i == v.size() || plain16(v.size() - 16);  // the tail: one overlapping step
#endif
  // Shorter values (a Precedence, an Auto-Submitted, "<>") as two overlapping words of eight or
  // four bytes, four of them padded with a plain byte; three bytes or fewer one by one.
  constexpr uint64_t k01 = 0x0101010101010101ull, k80 = 0x8080808080808080ull;
  auto plain_word = [](uint64_t w) {
    auto has_zero = [](uint64_t x) { return (x - k01) & ~x & k80; };
    return ((w & k80) | has_zero(w ^ ('\n' * k01)) | has_zero(w ^ ('\t' * k01)) |
            has_zero(w ^ ('=' * k01))) == 0;
  };
  auto word = [&v](size_t at, size_t size) {
    uint64_t w = 0x6161616161616161ull;  // 'a'
    std::memcpy(&w, v.data() + at, size);
    return w;
  };
  if (v.size() >= 8 && v.size() <= 16)
    return plain_word(word(0, 8)) && plain_word(word(v.size() - 8, 8));
  if (v.size() >= 4 && v.size() < 8)
    return plain_word(word(0, 4)) && plain_word(word(v.size() - 4, 4));
  for (; i < v.size(); ++i) {
    char c = v[i];
    if ((static_cast<unsigned char>(c) & 0x80) != 0 || c == '\n' || c == '\t' || c == '=')
      return false;
  }
  return true;
}

// GMime decodes each encoded word ("=?ISO-8859-1?Q?...?=") with an iconv descriptor it opens and
// closes, and glibc unloads a charset's gconv module a little after its last descriptor closes:
// bounces whose returned subjects were ISO-8859-1 loaded and unloaded its module over and over
// (a dlopen each time, under glibc's gconv lock, which the other threads then wait for, and with
// TLB-flush interrupts to them for every mapping it changes). A descriptor of this thread's cache
// for each charset the value names keeps the modules loaded: GMime's own open finds them there.
// Only the first few words are looked at: a value's words share a charset or two, and a value of
// thousands of words, each naming another, should not cost an iconv_open more per word.
void KeepCharsetsLoaded(std::string_view v) {
  constexpr int kMaxWords = 8;
  int words = 0;
  for (size_t at = v.find("=?"); at != std::string_view::npos && words < kMaxWords;
       at = v.find("=?", at + 2), ++words) {
    size_t end = v.find('?', at + 2);
    if (end == std::string_view::npos) return;
    std::string_view name = v.substr(at + 2, end - at - 2);
    name = name.substr(0, name.find('*'));  // RFC 2231 adds a language: "=?US-ASCII*EN?"
    if (name.empty() || name.size() > 40 || EqualsNoCase(name, "utf-8") ||
        EqualsNoCase(name, "us-ascii"))
      continue;
    const std::string iconv_name = IconvName(name);
    if (!iconv_name.empty()) IconvFor(iconv_name.c_str());
    at = end;
  }
}

// A header value decoded: a plain value is its own decoding, viewed where it is; any other is
// decoded into `storage`.
std::string_view DecodeHeaderValue(std::string_view raw, HeaderStorage* storage) {
  std::string_view trimmed = TrimSpaceView(raw);
  if (PlainHeaderValue(trimmed)) return trimmed;
  std::string v = Unfold(trimmed);
  if (v.find("=?") != std::string::npos) {
    if (v.find("=?=") != std::string::npos) JoinPaddedBase64Words(&v);  // dsn_words.h
    KeepCharsetsLoaded(v);
    char* decoded = Gm().g_mime_utils_header_decode_text(nullptr, v.c_str());
    if (decoded != nullptr) {
      v = decoded;
      Gm().g_free(decoded);
    }
  }
  return Stored(MakeValidUtf8(std::move(v)), storage);
}

// The raw values SplitHeaders gave `headers` (a message's wanted headers) decoded in place; they
// may view the bytes `owner` holds (null: the caller's message), which the view then keeps.
void DecodeHeaderValues(std::vector<Header>* headers, const Owner& owner, MimeView* view) {
  for (Header& h : *headers) h.value = DecodeHeaderValue(h.value, &view->storage);
  if (owner != nullptr && !headers->empty() &&
      (view->owners.empty() || view->owners.back() != owner))
    view->owners.push_back(owner);
}

// A Content-Type value. Only the parameters the walker reads are kept (the first of each); they
// view the raw header bytes, or `unfolded` when the value had to be unfolded or unescaped, so a
// ContentType is neither copied nor moved.
struct ContentType {
  std::string_view type = "text/plain";  // lower-case: the raw bytes, or `lowered`
  std::string lowered;
  std::string_view charset;
  std::string_view boundary;
  std::string_view report_type;
  std::string_view file_name;  // the name parameter
  bool ok = true;
  std::string unfolded;

  ContentType() = default;
  ContentType(const ContentType&) = delete;
  ContentType& operator=(const ContentType&) = delete;
};

void ParseContentType(std::string_view raw, std::string_view fallback, ContentType* ct) {
  std::string_view v = TrimSpaceView(raw);
  if (v.empty()) {
    ct->type = fallback;
    return;
  }
  // Folded or escaped values are rare: only they get a copy, unescaped in place below. One
  // pass finds whether any of the three bytes is there (three memchr calls cost more on these
  // short values).
  size_t special = FindAnyOf<'\\', '\n', '\t'>(v.data(), 0, v.size());
  bool copied = special != v.size();
  bool escaped = copied && HasByte(v.substr(special), '\\');
  if (copied) {
    ct->unfolded = Unfold(v);
    v = ct->unfolded;
  }
  size_t semi = v.find(';');
  std::string_view type = v.substr(0, semi);
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  if (type.find('/') == std::string_view::npos || ContainsAnyOf(type, " \"(")) {
    ct->ok = false;
    return;
  }
  // Most types are written in lower case already: viewed where they are, not copied.
  if (std::any_of(type.begin(), type.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    ct->lowered = AsciiLowerCopy(type);
    type = ct->lowered;
  }
  ct->type = type;
  size_t pos = semi;
  while (pos != std::string_view::npos && pos < v.size()) {
    ++pos;  // past ';'
    while (pos < v.size() && v[pos] == ' ') ++pos;
    size_t eq = v.find('=', pos);
    if (eq == std::string_view::npos) break;
    std::string_view name = v.substr(pos, eq - pos);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name.find('*') != std::string_view::npos || ContainsAnyOf(name, " ;\"")) {
      ct->ok = false;  // RFC 2231 or garbage: GMime knows better
      return;
    }
    size_t i = eq + 1;
    while (i < v.size() && v[i] == ' ') ++i;
    std::string_view value;
    if (i < v.size() && v[i] == '"') {
      ++i;
      size_t start = i;
      size_t w = i;    // write position: behind the read position once a backslash was skipped
      if (!escaped) {  // the usual value: up to the next quote, found by memchr
        i = std::min(v.find('"', i), v.size());
        w = i;
      }
      while (i < v.size() && v[i] != '"') {
        if (v[i] == '\\' && i + 1 < v.size()) ++i;
        if (w != i) ct->unfolded[w] = v[i];  // only after a backslash, so v is `unfolded`
        ++w;
        ++i;
      }
      if (i >= v.size()) {
        ct->ok = false;  // unterminated quote
        return;
      }
      value = v.substr(start, w - start);
      ++i;
      pos = v.find(';', i);
    } else {
      size_t end = v.find(';', i);
      value = v.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
      while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
      pos = end;
    }
    if (ct->charset.data() == nullptr && EqualsNoCase(name, "charset")) {
      ct->charset = value;
    } else if (ct->boundary.data() == nullptr && EqualsNoCase(name, "boundary")) {
      ct->boundary = value;
    } else if (ct->report_type.data() == nullptr && EqualsNoCase(name, "report-type")) {
      ct->report_type = value;
    } else if (ct->file_name.data() == nullptr && EqualsNoCase(name, "name")) {
      ct->file_name = value;
    }
  }
}

// Content-Transfer-Encoding, compared on the trimmed value: a folded value keeps a space inside
// after unfolding, so it never names an encoding either way.
TransferEncoding EncodingOf(std::string_view cte_raw) {
  std::string_view cte = TrimSpaceView(cte_raw);
  if (cte.empty() || EqualsNoCase(cte, "7bit") || EqualsNoCase(cte, "8bit") ||
      EqualsNoCase(cte, "binary"))
    return TransferEncoding::kIdentity;
  if (EqualsNoCase(cte, "base64")) return TransferEncoding::kBase64;
  if (EqualsNoCase(cte, "quoted-printable")) return TransferEncoding::kQuotedPrintable;
  return TransferEncoding::kUnknown;  // uuencode, x-... : left to GMime
}

size_t DecodeBase64(std::string_view body, char* out) {
  GMimeEncoding state;
  Gm().g_mime_encoding_init_decode(&state, GMIME_CONTENT_ENCODING_BASE64);
  return Gm().g_mime_encoding_flush(&state, body.data(), body.size(), out);
}

// Where a soft line break padded with blanks ("=" then spaces or tabs, then the line end) that
// starts at `eq` ends (past its line end), or 0 when there is none at `eq`. Transport padding:
// RFC 2045 6.7 has decoders drop blanks at a line's end, which GMime's decoder does not.
inline size_t PaddedSoftBreakEnd(const char* in, size_t size, size_t eq) {
  size_t i = eq + 1;
  if (i >= size || (in[i] != ' ' && in[i] != '\t')) return 0;  // the usual case, inlined
  while (i < size && (in[i] == ' ' || in[i] == '\t')) ++i;
  if (i < size && in[i] != '\n') return 0;
  return i < size ? i + 1 : size;
}

// The value of an ASCII hex digit (either case), or -1: isxdigit's digits in the C locale, as
// GMime's decoder reads them.
constexpr std::array<int8_t, 256> kHexValue = [] {
  std::array<int8_t, 256> t{};
  t.fill(-1);
  for (int c = 0; c < 10; ++c) t['0' + c] = static_cast<int8_t>(c);
  for (int c = 0; c < 6; ++c) {
    t['A' + c] = static_cast<int8_t>(10 + c);
    t['a' + c] = static_cast<int8_t>(10 + c);
  }
  return t;
}();

// Quoted-printable decoded as GMime's decoder decodes it. Text between escapes is copied by
// memcpy (GMime copies byte by byte); the two escapes every version of it decodes alike, a byte
// in hex ("=3D") and a soft line break ("=\n"), are decoded here, which most escapes are (a
// call per escape cost more than the decoding). Anything else ("=" before other bytes, or at the
// end) goes to GMime's decoder, a run of such escapes as one call: its state carries over
// between calls, and text is copied here only while it is at the start (no '=' pending), so the
// output is the one-call output. A soft line break padded with blanks is dropped here (no
// call). `out` has room for body.size() + 2 bytes.
size_t DecodeQuotedPrintable(std::string_view body, char* out) {
  const char* in = body.data();
  size_t size = body.size();
  const auto decode_step = Gm().g_mime_encoding_quoted_decode_step;
  char* w = out;
  int state = 0;
  guint32 save = 0;
  size_t pos = 0;
  while (pos < size) {
    if (state == 0) {
      if (in[pos] != '=') {
        const void* eq = std::memchr(in + pos, '=', size - pos);
        size_t at = eq == nullptr ? size : static_cast<size_t>(static_cast<const char*>(eq) - in);
        std::memcpy(w, in + pos, at - pos);
        w += at - pos;
        pos = at;
        if (pos == size) break;
      }
      if (size_t past = PaddedSoftBreakEnd(in, size, pos); past != 0) {
        pos = past;
        continue;
      }
      if (pos + 1 < size && in[pos + 1] == '\n') {
        pos += 2;
        continue;
      }
      if (pos + 2 < size) {
        int high = kHexValue[static_cast<uint8_t>(in[pos + 1])];
        int low = kHexValue[static_cast<uint8_t>(in[pos + 2])];
        if ((high | low) >= 0) {
          *w++ = static_cast<char>(high << 4 | low);
          pos += 3;
          continue;
        }
      }
    }
    size_t end = pos;
    do {
      end = std::min(end + 3, size);
    } while (end < size && in[end] == '=' && PaddedSoftBreakEnd(in, size, end) == 0);
    w += decode_step(reinterpret_cast<const unsigned char*>(in + pos), end - pos,
                     reinterpret_cast<unsigned char*>(w), &state, &save);
    pos = end;
  }
  return static_cast<size_t>(w - out);
}

// The decoded bytes of a body: a prefix of the body itself for the identity encodings (no
// copy), else decoded into *buffer. Nothing for encodings left to GMime.
std::optional<std::string_view> TransferDecoded(std::string_view body, TransferEncoding enc,
                                                std::string* buffer) {
  body = body.substr(0, std::min(body.size(), 4 * kMaxPartTextBytes));
  if (enc == TransferEncoding::kIdentity)
    return body.substr(0, std::min(body.size(), kMaxPartTextBytes));
  if (enc == TransferEncoding::kUnknown) return std::nullopt;
  buffer->resize(body.size() + 16);
  size_t n = enc == TransferEncoding::kBase64 ? DecodeBase64(body, buffer->data())
                                              : DecodeQuotedPrintable(body, buffer->data());
  buffer->resize(std::min({n, buffer->size(), kMaxPartTextBytes}));
  return std::string_view(*buffer);
}

// Transfer-decodes a body into *out; false for encodings left to GMime.
bool TransferDecode(std::string_view body, TransferEncoding enc, std::string* out) {
  std::optional<std::string_view> decoded = TransferDecoded(body, enc, out);
  if (!decoded) return false;
  if (decoded->data() != out->data()) out->assign(*decoded);
  return true;
}

// A leaf's text: the body transfer-decoded and converted to UTF-8. A decoded buffer that needs
// no conversion becomes the text itself.
std::string LeafText(std::string_view body, TransferEncoding enc, std::string_view charset) {
  std::string buffer;
  std::optional<std::string_view> decoded = TransferDecoded(body, enc, &buffer);
  if (!decoded) return {};
  if (enc == TransferEncoding::kIdentity || !AlreadyUtf8(buffer, charset))
    return ToUtf8(*decoded, charset);
  return buffer;
}

struct FastWalker {
  MimeView* view;
  bool nested_ok;
  Owner owner;  // holds the bytes the raw parts point into, or null
  // The end of a message cut short (a part whose body ends there is cut), or null.
  const char* cut_end = nullptr;
  bool have_original = false;
  bool failed = false;
  bool top_without_parts = false;  // a top-level multipart whose boundary never occurs

  void Leaf(const RawPart& part, ContentType* ct, bool attached) {
    if (!IsTextual(ct->type) || view->PartsFull()) return;
    TransferEncoding enc = EncodingOf(part.transfer_encoding);
    if (enc == TransferEncoding::kUnknown) {
      failed = true;
      return;
    }
    if (IsReturnedHeaders(ct->type) && !have_original && !attached) {
      // The returned message's headers: read now.
      have_original = true;
      std::string text = LeafText(part.body, enc, ct->charset);
      view->original_headers = ParseHeaders(text, true, &view->storage);
      view->parts.emplace_back(std::string(ct->type), std::move(text), attached);
      return;
    }
    // Decoded only if something reads it: the returned message's parts seldom are, nor is the
    // HTML alternative of a text part.
    const bool cut = cut_end != nullptr && part.body.data() + part.body.size() == cut_end;
    view->parts.emplace_back(
        std::string(ct->type),
        MimeLeaf::Pending{owner, part.body, enc, std::string(ct->charset), cut}, attached);
  }

  // A saved message attached as a file (IsMessageFile): only kept as an attached message, its
  // bytes transfer-decoded (the first kMaxPartTextBytes, as GMime's path reads a part).
  void AttachedFile(const RawPart& part, const ContentType& ct, int depth, bool attached) {
    if (attached || depth > 1) return;
    if (ct.file_name.find("=?") != std::string_view::npos) {
      failed = true;  // an RFC 2047 encoded name: GMime's parser decodes it
      return;
    }
    auto decoded = std::make_shared<std::string>();
    if (!TransferDecode(part.body, EncodingOf(part.transfer_encoding), decoded.get())) {
      failed = true;
      return;
    }
    std::string_view bytes = *decoded;
    view->AddAttached(bytes, std::move(decoded));
  }

  // One entity (a message's body part or a multipart's part), given its headers and body.
  void Entity(const RawPart& part, int depth, bool attached, std::string_view default_type) {
    // A full list of parts does not stop the walk: see Walker::Walk.
    if (failed || depth > kMaxMimeDepth) return;
    ContentType ct;
    ParseContentType(part.content_type, default_type, &ct);
    if (!ct.ok) {
      failed = true;
      return;
    }
    if (depth == 0) {
      view->content_type = ct.type;
      view->report_type = AsciiLowerCopy(ct.report_type);
      view->body_encoding = EncodingOf(part.transfer_encoding);
    }
    if (IsMultipart(ct.type)) {
      Multipart(part.body, ct, depth, attached);
      return;
    }
    if (ct.type == "message/rfc822" || ct.type == "message/global") {
      std::string_view inner = part.body;
      std::string_view cte = part.transfer_encoding;
      Owner outer = owner;
      if (!TrimSpaceView(cte).empty()) {
        auto decoded = std::make_shared<std::string>();
        TransferEncoding encoding = EncodingOf(cte);
        if (!TransferDecode(part.body, encoding, decoded.get())) {
          failed = true;
          return;
        }
        // Mailers that encode a message (RFC 2046 has them not) encode its canonical form, with
        // CRLF line ends; the split reads LF. (7bit and 8bit bodies have LF ends already.)
        if (encoding != TransferEncoding::kIdentity && HasByte(*decoded, '\r'))
          *decoded = NormalizeLineEnds(*decoded);
        inner = *decoded;
        owner = std::move(decoded);
      }
      if (!attached && depth <= 1) view->AddAttached(inner, owner);
      bool first_original = !have_original && !attached;
      // The first one's headers go straight into the view (a failed split discards it whole).
      RawPart msg =
          SplitHeaders(inner, true, true, first_original ? &view->original_headers : nullptr);
      if (!msg.ok) {
        failed = true;
        return;
      }
      if (first_original) {
        have_original = true;
        DecodeHeaderValues(&view->original_headers, owner, view);
      }
      Entity(msg, depth + 1, true, "text/plain");
      owner = std::move(outer);
      return;
    }
    if (IsMessageFile(ct.type, ct.file_name)) {
      AttachedFile(part, ct, depth, attached);
      return;
    }
    Leaf(part, &ct, attached);
  }

  void Multipart(std::string_view body, const ContentType& ct, int depth, bool attached) {
    if (ct.boundary.empty()) {
      if (depth == 0) failed = true;  // inside: no parts, as below
      return;
    }
    // "\n--boundary": a delimiter counts only at the start of a line, so (but for one at the
    // very start of the body) it is searched for with the line end before it.
    std::string nl_delim;
    nl_delim.reserve(ct.boundary.size() + 3);
    nl_delim += "\n--";
    nl_delim += ct.boundary;
    const std::string_view delim = std::string_view(nl_delim).substr(1);
    std::string_view child_default =
        ct.type == "multipart/digest" ? "message/rfc822" : "text/plain";
    // Delimiter lines: "--boundary" (optionally followed by spaces) or the close "--boundary--".
    size_t pos = 0;
    size_t part_start = std::string_view::npos;
    bool found = false;
    bool closed = false;
    // Delimiters are searched for, not found line by line: the returned message is often most
    // of the bytes, and its lines need not be looked at one by one. FindString (byte_scan.h)
    // tests 32 positions a step for the line end and the boundary's last byte: fewer
    // instructions than memmem, whose setup (a shift table per call) outweighed its skips on
    // these bodies of a few kilobytes. `pos` is 0 or just after a line end, so the search for
    // "\n--boundary" starts at that line end.
    while (pos < body.size()) {
      size_t at = 0;
      if (pos != 0 || !body.starts_with(delim)) {
        size_t from = pos == 0 ? 0 : pos - 1;
        size_t hit = FindString(body, nl_delim, from);
        if (hit == std::string_view::npos) break;
        at = hit + 1;
      }
      size_t end = body.find('\n', at);
      if (end == std::string_view::npos) end = body.size();
      std::string_view rest = body.substr(at + delim.size(), end - at - delim.size());
      bool close = rest.starts_with("--");
      if (close) rest.remove_prefix(2);
      if (TrimSpaceView(rest).empty()) {
        if (part_start != std::string_view::npos) {
          // The line end before a delimiter belongs to the delimiter.
          size_t part_end = at > part_start ? at - 1 : part_start;
          Child(body.substr(part_start, part_end - part_start), depth, attached, child_default);
          if (failed) return;
        }
        found = true;
        if (close) {
          closed = true;
          pos = end + 1;
          break;
        }
        part_start = end + 1;
      }
      if (end >= body.size()) break;
      pos = end + 1;
    }
    if (!found) {
      // The boundary never occurs. Inside, it is a returned message cut short, which has no parts
      // (as with GMime, whose inner parser stops at the enclosing boundary the caller already cut
      // at). At the top, GMime sees a multipart without parts, and DecodeMimeImpl then reads the
      // whole body as text (a report whose MIME structure a gateway stripped): the caller does
      // the same.
      if (depth == 0) top_without_parts = true;
      return;
    }
    if (!closed && part_start != std::string_view::npos && part_start < body.size()) {
      Child(body.substr(part_start), depth, attached, child_default);  // truncated message
    }
    if (closed && depth == 0 && !attached && nested_ok && pos < body.size()) {
      std::string_view epilogue = body.substr(pos);
      if (HoldsGluedReport(epilogue)) {
        MimeView second = DecodeMimeNested(epilogue, owner);
        view->TakeParts(std::move(second));
      }
    }
  }

  void Child(std::string_view text, int depth, bool attached, std::string_view default_type) {
    RawPart part = SplitHeaders(text, true, false, nullptr);
    if (!part.ok) {
      failed = true;
      return;
    }
    Entity(part, depth + 1, attached, default_type);
  }
};

// Returns false when the message needs GMime's parser.
bool FastDecode(std::string_view normalized, const Owner& owner, bool nested_ok, bool cut_short,
                MimeView* view) {
  // An mbox "From " separator line before the headers is not part of the message.
  if (normalized.starts_with("From ")) {
    size_t nl = normalized.find('\n');
    if (nl == std::string_view::npos) return false;
    normalized.remove_prefix(nl + 1);
  }
  RawPart top = SplitHeaders(normalized, false, false, &view->headers);
  if (!top.ok || !top.any_header) return false;  // the caller discards the view
  DecodeHeaderValues(&view->headers, owner, view);
  view->parts.reserve(8);
  FastWalker walker{view, nested_ok, owner,
                    cut_short ? normalized.data() + normalized.size() : nullptr};
  walker.Entity(top, 0, false, "text/plain");
  if (walker.failed) return false;
  if (walker.top_without_parts && view->parts.empty()) {
    // As the GMime path reads a multipart without parts: its body is the text.
    size_t blank = normalized.find("\n\n");
    if (blank != std::string_view::npos) {
      view->parts.emplace_back("text/plain", ToUtf8(normalized.substr(blank + 2), ""), false);
    }
  }
  // A multipart that parsed but produced no text (all binary) is fine; an empty body too.
  return true;
}

// Whether a message starts at `text`: an mbox "From " line followed by a header line.
bool StartsGluedMessage(std::string_view text) {
  if (!text.starts_with("From ")) return false;
  size_t nl = text.find('\n');
  if (nl == std::string_view::npos) return false;
  std::string_view next = text.substr(nl + 1, 80);
  size_t colon = next.find(':');
  return colon != std::string_view::npos && colon > 0 &&
         next.substr(0, colon).find_first_of(" \t\n") == std::string_view::npos;
}

// Where the first message glued on at or after `from` starts in `text` (at `from` itself only
// when that is the text's start), or npos.
size_t GluedMessageStart(std::string_view text, size_t from) {
  if (from == 0 && StartsGluedMessage(text)) return 0;
  for (size_t pos = FindString(text, "\nFrom ", from); pos != std::string_view::npos;
       pos = FindString(text, "\nFrom ", pos + 6)) {
    if (StartsGluedMessage(text.substr(pos + 1))) return pos + 1;
  }
  return std::string_view::npos;
}

// Mailbox files hold several messages; a single-part bounce may have a second report glued
// after it behind an mbox "From " line. Its parts are read too (multipart reports get the
// same treatment from their epilogue). A bounce forwarded inline in a base64 or
// quoted-printable text body is only seen once the body is decoded, so that is searched too.
void AppendGluedMessage(std::string_view normalized, const Owner& owner, MimeView* view) {
  if (view->content_type.starts_with("multipart/")) return;
  // Past the first message's own header block only.
  size_t header_end = FindString(normalized, "\n\n");
  if (header_end == std::string_view::npos) return;
  std::string_view rest;
  Owner rest_owner = owner;
  TransferEncoding enc = view->body_encoding;
  if (enc == TransferEncoding::kBase64 || enc == TransferEncoding::kQuotedPrintable) {
    // Looked for in the body's text first (which the parser reads anyway), then read from the
    // decoded bytes themselves: the forwarded message declares its own charsets.
    if (view->parts.empty() ||
        GluedMessageStart(view->parts.front().text(), 0) == std::string_view::npos)
      return;
    std::string text;
    if (!TransferDecode(normalized.substr(header_end + 2), enc, &text)) return;
    auto decoded = std::make_shared<std::string>(HasByte(text, '\r') ? NormalizeLineEnds(text)
                                                                     : std::move(text));
    size_t start = GluedMessageStart(*decoded, 0);
    if (start == std::string_view::npos) return;
    rest = std::string_view(*decoded).substr(start);
    rest_owner = std::move(decoded);
  } else {
    size_t start = GluedMessageStart(normalized, header_end);
    if (start == std::string_view::npos) return;
    rest = normalized.substr(start);
  }
  view->TakeParts(DecodeMimeNested(rest, std::move(rest_owner)));
}

MimeView DecodeMimeImpl(std::string_view message, Owner owner, bool nested_ok, bool fast_ok,
                        bool cut_short = false) {
  MimeView view;
  // Only line ends other than LF need a copy (the parts then point into it); most messages
  // are read where they are.
  std::string_view normalized = message;
  if (HasByte(message, '\r')) {
    // Not zero-filled first (as a std::string would be): every byte is written over at once.
    std::shared_ptr<char[]> copy = std::make_shared_for_overwrite<char[]>(message.size());
    normalized = std::string_view(copy.get(), NormalizeLineEndsInto(message, copy.get()));
    owner = std::move(copy);
  }
  if (fast_ok && FastDecode(normalized, owner, nested_ok, cut_short, &view)) {
    if (nested_ok) AppendGluedMessage(normalized, owner, &view);
    return view;
  }
  view = MimeView();
  GMimeStream* stream =
      Gm().g_mime_stream_mem_new_with_buffer(normalized.data(), normalized.size());
  GMimeParser* parser = Gm().g_mime_parser_new_with_stream(stream);
  Gm().g_mime_parser_set_format(parser, GMIME_FORMAT_MESSAGE);
  GMimeMessage* msg = Gm().g_mime_parser_construct_message(parser, nullptr);
  if (msg != nullptr) {
    AddHeaders(reinterpret_cast<GMimeObject*>(msg), &view.headers, &view.storage);
    GMimeObject* body = Gm().g_mime_message_get_mime_part(msg);
    if (body != nullptr) {
      view.content_type = TypeOf(body);
      const char* rt = Gm().g_mime_object_get_content_type_parameter(body, "report-type");
      if (rt != nullptr) view.report_type = AsciiLowerCopy(rt);
      if (Gm().IsA(body, Gm().g_mime_part_get_type())) {
        GMimeContentEncoding e =
            Gm().g_mime_part_get_content_encoding(reinterpret_cast<GMimePart*>(body));
        view.body_encoding = e == GMIME_CONTENT_ENCODING_BASE64 ? TransferEncoding::kBase64
                             : e == GMIME_CONTENT_ENCODING_QUOTEDPRINTABLE
                                 ? TransferEncoding::kQuotedPrintable
                                 : TransferEncoding::kIdentity;
      }
    }
    Walker walker{&view, nested_ok};
    walker.Walk(body, 0, false);
    if (view.parts.empty() && body != nullptr && Gm().IsA(body, Gm().g_mime_multipart_get_type())) {
      // A multipart type with no parts (the boundary never occurs): the body is plain text.
      size_t blank = normalized.find("\n\n");
      if (blank != std::string_view::npos) {
        view.parts.emplace_back("text/plain", ToUtf8(normalized.substr(blank + 2), ""), false);
      }
    }
    Gm().g_object_unref(msg);
  }
  Gm().g_object_unref(parser);
  Gm().g_object_unref(stream);
  if (view.headers.empty() && view.parts.empty()) {
    // Not a message GMime could read (no header block): scan the bytes as plain text.
    view.content_type = "text/plain";
    view.parts.emplace_back("text/plain", ToUtf8(normalized, ""), false);
  }
  if (nested_ok) AppendGluedMessage(normalized, owner, &view);
  return view;
}

MimeView DecodeMimeNested(std::string_view message, Owner owner) {
  // Glued-on messages start after blank lines, often with an mbox "From " line.
  size_t start = message.find_first_not_of('\n');
  message.remove_prefix(start == std::string_view::npos ? message.size() : start);
  return DecodeMimeImpl(message, std::move(owner), false, true);
}

}  // namespace

std::string_view MimeLeaf::text() const {
  if (pending_) {
    // LeafText's result for an identity-encoded body that needs no conversion is the body's
    // first kMaxPartTextBytes: viewed, not copied.
    std::string_view body = pending_->body.substr(0, kMaxPartTextBytes);
    if (pending_->encoding == TransferEncoding::kIdentity && AlreadyUtf8(body, pending_->charset)) {
      in_place_ = body;
      in_place_owner_ = std::move(pending_->owner);
      is_in_place_ = true;
    } else {
      text_ = LeafText(pending_->body, pending_->encoding, pending_->charset);
    }
    pending_.reset();
    if (cut_at_end_) {
      // Cut short: what follows the last newline is a line's start, not a line.
      if (is_in_place_) {
        in_place_ = WholeLines(in_place_);
      } else {
        text_.resize(WholeLines(text_).size());
      }
    }
  }
  return is_in_place_ ? in_place_ : std::string_view(text_);
}

namespace {

// What some stored copies put before a message's first header, which is no part of it: a UTF-8
// byte-order mark (Windows tools save .eml files with one) and blank lines (exports and pastes).
// Cut only when a header line or an mbox "From " line follows, so that text without a header
// block stays as it is.
std::string_view WithoutLeadingJunk(std::string_view message) {
  std::string_view s = message;
  if (s.starts_with("\xEF\xBB\xBF")) s.remove_prefix(3);
  size_t line_start = 0;
  for (size_t i = 0; i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n');
       ++i) {
    if (s[i] == '\r' || s[i] == '\n') line_start = i + 1;
  }
  s.remove_prefix(line_start);
  if (s.size() == message.size()) return message;
  size_t limit = std::min<size_t>(s.size(), 77);
  size_t name_end = NameEnd(s.substr(0, limit));
  size_t colon = name_end;
  while (colon < limit && (s[colon] == ' ' || s[colon] == '\t')) ++colon;  // "Name : value"
  bool header = name_end > 0 && colon < limit && s[colon] == ':';
  return header || s.starts_with("From ") ? s : message;
}

}  // namespace

MimeView DecodeMime(std::string_view message, MimeDecoder decoder, bool cut_short) {
  return DecodeMimeImpl(WithoutLeadingJunk(message), nullptr, true, decoder == MimeDecoder::kAuto,
                        cut_short);
}

}  // namespace bounced::dsn
