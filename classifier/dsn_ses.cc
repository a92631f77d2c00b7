// dsn_ses.cc: see dsn_ses.h.
#include "classifier/dsn_ses.h"

#include <nlohmann/json.hpp>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "classifier/dsn_fields.h"
#include "classifier/text.h"

namespace bounced::dsn {
namespace {

// Where the next byte that matters inside a JSON string ('"', '\\', '\n', '\r') is, from
// `from`, or text.size(); sixteen bytes at a time.
size_t NextInString(std::string_view text, size_t from) {
  const char* p = text.data();
  size_t n = text.size(), i = from;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'),
                lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                               _mm_or_si128(_mm_cmpeq_epi8(v, lf), _mm_cmpeq_epi8(v, cr)));
    int mask = _mm_movemask_epi8(hit);
    if (mask != 0) return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
  }
#endif
  for (; i < n; ++i) {
    char c = p[i];
    if (c == '"' || c == '\\' || c == '\n' || c == '\r') return i;
  }
  return n;
}

// Mail transports wrap long lines, even inside JSON strings: drop line breaks within strings
// (not an escaped one). Text is copied in runs between the bytes that matter.
std::string UnwrapJson(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  bool in_string = false;
  while (i < text.size()) {
    if (!in_string) {
      size_t quote = text.find('"', i);
      if (quote == std::string_view::npos) {
        out.append(text.substr(i));
        break;
      }
      out.append(text.substr(i, quote + 1 - i));
      in_string = true;
      i = quote + 1;
      continue;
    }
    size_t at = NextInString(text, i);
    out.append(text.substr(i, at - i));
    if (at == text.size()) break;
    char c = text[at];
    if (c == '\\') {
      // The escaped byte is kept whatever it is.
      out.append(text.substr(at, 2));
      i = at + 2;
    } else if (c == '"') {
      out.push_back(c);
      in_string = false;
      i = at + 1;
    } else {
      i = at + 1;  // a line break inside a string
    }
  }
  return out;
}

std::string StringAt(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

std::optional<nlohmann::json> ParseObject(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(UnwrapJson(text), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

}  // namespace

std::optional<SesNotification> ParseSesNotification(std::string_view text) {
  size_t open = text.find('{');
  size_t close = text.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close <= open) {
    return std::nullopt;
  }
  if (FindNoCase(text, "notificationType") == std::string_view::npos &&
      FindNoCase(text, "eventType") == std::string_view::npos) {
    return std::nullopt;
  }
  std::optional<nlohmann::json> doc = ParseObject(text.substr(open, close - open + 1));
  if (!doc) return std::nullopt;
  // SNS envelope: the notification is a JSON string in "Message".
  std::string inner = StringAt(*doc, "Message");
  if (!inner.empty()) {
    doc = ParseObject(inner);
    if (!doc) return std::nullopt;
  }
  std::string type = StringAt(*doc, "notificationType");
  if (type.empty()) type = StringAt(*doc, "eventType");
  SesNotification out;
  if (type == "Bounce") {
    out.type = SesNotification::Type::kBounce;
    auto b = doc->find("bounce");
    if (b == doc->end() || !b->is_object()) return std::nullopt;
    std::string bounce_type = StringAt(*b, "bounceType");
    std::string sub_type = StringAt(*b, "bounceSubType");
    if (sub_type == "Suppressed" || sub_type == "OnAccountSuppressionList") {
      out.forced_category = Category::kSuppressedUpstream;
    }
    std::string reporting = std::string(StripTypePrefix(StringAt(*b, "reportingMTA")));
    auto list = b->find("bouncedRecipients");
    if (list == b->end() || !list->is_array()) return std::nullopt;
    for (const nlohmann::json& r : *list) {
      if (!r.is_object() || out.recipients.size() >= kMaxTextRecipients) continue;
      Finding f;
      f.recipient = CanonicalAddress(StringAt(r, "emailAddress"));
      f.action = AsciiLowerCopy(StringAt(r, "action"));
      f.status = ExtractEnhancedStatus(StringAt(r, "status"));
      f.diagnostic = std::string(StripTypePrefix(StringAt(r, "diagnosticCode")));
      if (f.diagnostic.empty()) {
        // No remote reply: SES's own words for the bounce are the best reason there is.
        f.diagnostic = bounce_type + " bounce: " + sub_type;
      }
      f.remote_mta = reporting;
      out.recipients.push_back(std::move(f));
    }
  } else if (type == "Complaint") {
    out.type = SesNotification::Type::kComplaint;
    auto c = doc->find("complaint");
    if (c == doc->end() || !c->is_object()) return std::nullopt;
    out.feedback_type = StringAt(*c, "complaintFeedbackType");
    auto list = c->find("complainedRecipients");
    if (list == c->end() || !list->is_array()) return std::nullopt;
    for (const nlohmann::json& r : *list) {
      if (!r.is_object() || out.recipients.size() >= kMaxTextRecipients) continue;
      Finding f;
      f.recipient = CanonicalAddress(StringAt(r, "emailAddress"));
      f.diagnostic = StringAt(*c, "complaintFeedbackType");
      out.recipients.push_back(std::move(f));
    }
  } else if (type == "Delivery") {
    out.type = SesNotification::Type::kDelivery;
    auto d = doc->find("delivery");
    if (d == doc->end() || !d->is_object()) return std::nullopt;
    std::string response = StringAt(*d, "smtpResponse");
    std::string reporting = StringAt(*d, "reportingMTA");
    auto list = d->find("recipients");
    if (list == d->end() || !list->is_array()) return std::nullopt;
    for (const nlohmann::json& r : *list) {
      if (!r.is_string() || out.recipients.size() >= kMaxTextRecipients) continue;
      Finding f;
      f.recipient = CanonicalAddress(r.get<std::string>());
      f.action = "delivered";
      f.diagnostic = response;
      f.status = ExtractEnhancedStatus(response);
      f.remote_mta = reporting;
      out.recipients.push_back(std::move(f));
    }
  } else {
    return std::nullopt;
  }
  if (out.recipients.empty()) return std::nullopt;
  return out;
}

}  // namespace bounced::dsn
