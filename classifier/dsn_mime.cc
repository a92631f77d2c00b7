// dsn_mime.cc: see dsn_mime.h. All GMime calls of the classifier live here.
#include "classifier/dsn_mime.h"

#include <gmime/gmime.h>

#include <iconv.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace bounced::dsn {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

void InitGMimeOnce() {
  static std::once_flag once;
  std::call_once(once, [] { g_mime_init(); });
}

// CRLF and lone CR become LF: GMime and every scanner after it then see one line-end style.
std::string NormalizeLineEnds(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t pos = 0;
  while (pos < in.size()) {
    const void* cr = std::memchr(in.data() + pos, '\r', in.size() - pos);
    size_t at = cr == nullptr ? in.size() : static_cast<const char*>(cr) - in.data();
    out.append(in.data() + pos, at - pos);
    if (at == in.size()) break;
    out.push_back('\n');
    pos = at + 1;
    if (pos < in.size() && in[pos] == '\n') ++pos;
  }
  return out;
}

// The headers the parser reads; decoding only these keeps big header blocks cheap.
bool WantedHeader(const char* name) {
  static constexpr const char* kNames[] = {
      "from",
      "to",
      "subject",
      "message-id",
      "return-path",
      "reply-to",
      "sender",
      "x-failed-recipients",
      "auto-submitted",
      "precedence",
      "x-autoreply",
      "x-autorespond",
      "x-auto-response-suppress",
      "x-original-to",
      "delivered-to",
      "envelope-to",
      "x-hmxmroriginalrecipient",
      "content-type",
  };
  for (const char* n : kNames) {
    if (g_ascii_strcasecmp(name, n) == 0) return true;
  }
  return false;
}

bool LooksLikeIso2022Jp(std::string_view s) {
  return s.find("\x1b$B") != std::string_view::npos || s.find("\x1b$@") != std::string_view::npos ||
         s.find("\x1b(J") != std::string_view::npos;
}

// iconv descriptors per thread and charset: opening one loads a gconv module, far dearer than
// converting a bounce. Unknown charsets are remembered too; the cache is capped because the
// names come from the messages.
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
  iconv_t cd = iconv_open("UTF-8", from);
  if (cache.map.size() >= kMaxCachedCharsets) {
    // Full: hand back nothing rather than leak; callers fall back to Windows-1252.
    if (cd != reinterpret_cast<iconv_t>(-1)) iconv_close(cd);
    return reinterpret_cast<iconv_t>(-1);
  }
  cache.map.emplace(from, cd);
  return cd;
}

// Converts to UTF-8; bytes invalid in the charset become U+FFFD. False when the charset is
// unknown.
bool TryConvert(std::string_view bytes, const char* from, std::string* out) {
  iconv_t cd = IconvFor(from);
  if (cd == reinterpret_cast<iconv_t>(-1)) return false;
  iconv(cd, nullptr, nullptr, nullptr, nullptr);
  out->clear();
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
    out->append("\xEF\xBF\xBD");  // EILSEQ or a sequence cut at the end: skip one byte
    ++in;
    --in_left;
    iconv(cd, nullptr, nullptr, nullptr, nullptr);
  }
  char* o = buf;
  size_t o_left = sizeof buf;
  iconv(cd, nullptr, nullptr, &o, &o_left);  // shift back to the initial state (ISO-2022-JP)
  out->append(buf, o - buf);
  return true;
}

std::string MakeValidUtf8(std::string_view s) {
  if (g_utf8_validate(s.data(), static_cast<gssize>(s.size()), nullptr)) return std::string(s);
  gchar* valid = g_utf8_make_valid(s.data(), static_cast<gssize>(s.size()));
  std::string out(valid);
  g_free(valid);
  return out;
}

void AddHeaders(GMimeObject* obj, std::vector<Header>* out) {
  GMimeHeaderList* list = g_mime_object_get_header_list(obj);
  if (list == nullptr) return;
  int n = g_mime_header_list_get_count(list);
  for (int i = 0; i < n && i < 512; ++i) {
    GMimeHeader* h = g_mime_header_list_get_header_at(list, i);
    if (h == nullptr) continue;
    const char* name = g_mime_header_get_name(h);
    if (name == nullptr || !WantedHeader(name)) continue;
    const char* value = g_mime_header_get_value(h);
    out->push_back(Header{Lower(name), MakeValidUtf8(value != nullptr ? value : "")});
  }
}

std::string TypeOf(GMimeObject* obj) {
  GMimeContentType* ct = g_mime_object_get_content_type(obj);
  if (ct == nullptr) return "text/plain";
  const char* type = g_mime_content_type_get_media_type(ct);
  const char* sub = g_mime_content_type_get_media_subtype(ct);
  return Lower(std::string(type != nullptr ? type : "text") + "/" +
               (sub != nullptr ? sub : "plain"));
}

std::string DecodedContent(GMimePart* part) {
  GMimeDataWrapper* content = g_mime_part_get_content(part);
  if (content == nullptr) return {};
  GMimeStream* mem = g_mime_stream_mem_new();
  g_mime_data_wrapper_write_to_stream(content, mem);
  GByteArray* bytes = g_mime_stream_mem_get_byte_array(GMIME_STREAM_MEM(mem));
  std::string out;
  if (bytes != nullptr) {
    out.assign(reinterpret_cast<const char*>(bytes->data),
               std::min<size_t>(bytes->len, kMaxPartTextBytes));
  }
  g_object_unref(mem);
  return out;
}

// Parts worth reading as text: text/*, message/* reports, and the odd report sent as
// application/octet-stream is left out (binary attachments carry no bounce text).
bool IsTextual(std::string_view type) {
  return type.starts_with("text/") || type.starts_with("message/") || type == "application/json";
}

MimeView DecodeMimeNested(std::string_view message);

struct Walker {
  MimeView* view;
  bool nested_ok = true;
  bool have_original = false;

  void AddLeaf(std::string type, std::string text, bool attached) {
    if (view->parts.size() >= kMaxMimeParts) return;
    view->parts.push_back(MimeLeaf{std::move(type), NormalizeLineEnds(text), attached});
  }

  void Walk(GMimeObject* obj, int depth, bool attached) {
    if (obj == nullptr || depth > kMaxMimeDepth || view->parts.size() >= kMaxMimeParts) return;
    if (GMIME_IS_MULTIPART(obj)) {
      GMimeMultipart* mp = GMIME_MULTIPART(obj);
      int n = g_mime_multipart_get_count(mp);
      for (int i = 0; i < n; ++i) Walk(g_mime_multipart_get_part(mp, i), depth + 1, attached);
      // Some mailboxes hold a second report glued after the first one's closing boundary.
      const char* epilogue = g_mime_multipart_get_epilogue(mp);
      if (depth == 0 && !attached && epilogue != nullptr && nested_ok &&
          std::string_view(epilogue).find("message/delivery-status") != std::string_view::npos) {
        MimeView second = DecodeMimeNested(epilogue);
        for (MimeLeaf& leaf : second.parts) {
          if (view->parts.size() >= kMaxMimeParts) break;
          view->parts.push_back(std::move(leaf));
        }
      }
      return;
    }
    if (GMIME_IS_MESSAGE_PART(obj)) {
      GMimeMessage* msg = g_mime_message_part_get_message(GMIME_MESSAGE_PART(obj));
      if (msg == nullptr) return;
      if (!have_original && !attached) {
        have_original = true;
        AddHeaders(GMIME_OBJECT(msg), &view->original_headers);
      }
      // The returned message's own parts are kept (marked) for bounces that are only a
      // forwarded copy of a bounce; scanners prefer the unattached parts.
      Walk(g_mime_message_get_mime_part(msg), depth + 1, true);
      return;
    }
    if (!GMIME_IS_PART(obj)) return;
    std::string type = TypeOf(obj);
    if (!IsTextual(type)) return;
    std::string raw = DecodedContent(GMIME_PART(obj));
    const char* charset = g_mime_object_get_content_type_parameter(obj, "charset");
    std::string text = ToUtf8(raw, charset != nullptr ? charset : "");
    if (type == "text/rfc822-headers" && !have_original && !attached) {
      have_original = true;
      view->original_headers = ParseHeaderBlock(text);
    }
    AddLeaf(std::move(type), std::move(text), attached);
  }
};

}  // namespace

std::string_view MimeView::Find(const std::vector<Header>& headers, std::string_view name) {
  for (const Header& h : headers) {
    if (h.name == name) return h.value;
  }
  return {};
}

std::string_view MimeView::Get(std::string_view name) const { return Find(headers, name); }

std::vector<Header> ParseHeaderBlock(std::string_view text) {
  std::vector<Header> out;
  size_t pos = 0;
  while (pos < text.size() && out.size() < 512) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line.find_first_not_of(" \t") == std::string_view::npos) {
      if (!out.empty()) break;
      continue;
    }
    if ((line[0] == ' ' || line[0] == '\t') && !out.empty()) {
      out.back().value += ' ';
      out.back().value += line.substr(line.find_first_not_of(" \t"));
      continue;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 ||
        line.substr(0, colon).find_first_of(" \t") != std::string_view::npos) {
      if (!out.empty()) break;
      continue;
    }
    std::string_view value = line.substr(colon + 1);
    size_t first = value.find_first_not_of(" \t");
    value = first == std::string_view::npos ? std::string_view() : value.substr(first);
    out.push_back(Header{Lower(line.substr(0, colon)), std::string(value)});
  }
  return out;
}

std::string ToUtf8(std::string_view bytes, std::string_view charset) {
  std::string out;
  bool ascii_or_utf8 = charset.empty() || IEquals(charset, "us-ascii") ||
                       IEquals(charset, "utf-8") || IEquals(charset, "utf8") ||
                       IEquals(charset, "ascii");
  if (!ascii_or_utf8) {
    std::string name(charset);
    const char* iconv_name = g_mime_charset_iconv_name(name.c_str());
    if (iconv_name != nullptr && TryConvert(bytes, iconv_name, &out)) return MakeValidUtf8(out);
  }
  if (g_utf8_validate(bytes.data(), static_cast<gssize>(bytes.size()), nullptr)) {
    // 7-bit text may still be ISO-2022-JP (Japanese carriers send it undeclared).
    if (LooksLikeIso2022Jp(bytes) && TryConvert(bytes, "ISO-2022-JP", &out)) {
      return MakeValidUtf8(out);
    }
    return std::string(bytes);
  }
  if (TryConvert(bytes, "WINDOWS-1252", &out)) return MakeValidUtf8(out);
  return MakeValidUtf8(bytes);
}

namespace {

MimeView DecodeMimeImpl(std::string_view message, bool nested_ok) {
  MimeView view;
  std::string normalized = NormalizeLineEnds(message);
  GMimeStream* stream = g_mime_stream_mem_new_with_buffer(normalized.data(), normalized.size());
  GMimeParser* parser = g_mime_parser_new_with_stream(stream);
  g_mime_parser_set_format(parser, GMIME_FORMAT_MESSAGE);
  GMimeMessage* msg = g_mime_parser_construct_message(parser, nullptr);
  if (msg != nullptr) {
    AddHeaders(GMIME_OBJECT(msg), &view.headers);
    GMimeObject* body = g_mime_message_get_mime_part(msg);
    if (body != nullptr) {
      view.content_type = TypeOf(body);
      const char* rt = g_mime_object_get_content_type_parameter(body, "report-type");
      if (rt != nullptr) view.report_type = Lower(rt);
    }
    Walker walker{&view, nested_ok};
    walker.Walk(body, 0, false);
    if (view.parts.empty() && body != nullptr && GMIME_IS_MULTIPART(body)) {
      // A multipart type with no parts (the boundary never occurs): the body is plain text.
      size_t blank = normalized.find("\n\n");
      if (blank != std::string::npos) {
        view.parts.push_back(
            MimeLeaf{"text/plain", ToUtf8(normalized.substr(blank + 2), ""), false});
      }
    }
    g_object_unref(msg);
  }
  g_object_unref(parser);
  g_object_unref(stream);
  if (view.headers.empty() && view.parts.empty()) {
    // Not a message GMime could read (no header block): scan the bytes as plain text.
    view.content_type = "text/plain";
    view.parts.push_back(MimeLeaf{"text/plain", ToUtf8(normalized, ""), false});
  }
  return view;
}

MimeView DecodeMimeNested(std::string_view message) { return DecodeMimeImpl(message, false); }

}  // namespace

MimeView DecodeMime(std::string_view message) {
  InitGMimeOnce();
  return DecodeMimeImpl(message, true);
}

}  // namespace bounced::dsn
