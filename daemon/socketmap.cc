// socketmap.cc: Postfix socketmap server sessions (see socketmap.h).
#include "daemon/socketmap.h"

#include <spdlog/spdlog.h>

#include <cctype>
#include <ctime>

#include "classifier/text.h"
#include "daemon/netstring.h"

namespace bounced {
namespace {

std::string Day(int64_t unix_time) {
  if (unix_time <= 0) return "an unknown date";
  std::time_t t = static_cast<std::time_t>(unix_time);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm);
  return buf;
}

std::string_view ReasonWords(const SuppressionHit& hit) {
  if (hit.manual) return "manual request";
  if (hit.category == Category::kComplaint) return "complaint";
  if (Describe(hit.category).hard_bounce) return "hard bounce";
  if (Describe(hit.category).action == Action::kCount) return "repeated failures";
  return "bounce";
}

// Only printable ASCII goes back into an SMTP reply or a transport result.
std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u >= 0x7f) ? '?' : c;
  }
  return out;
}

class SocketmapSession : public Session {
 public:
  SocketmapSession(Services& services, SocketmapConfig config,
                   std::shared_ptr<SocketmapStats> stats)
      : services_(services),
        config_(std::move(config)),
        stats_(std::move(stats)),
        reader_(kMaxSocketmapRequestBytes) {}

  bool OnData(std::string_view bytes, std::string* reply) override {
    reader_.Append(bytes);
    std::string request;
    for (;;) {
      switch (reader_.Next(&request)) {
        case NetstringReader::Result::kNeedMore:
          return true;
        case NetstringReader::Result::kComplete:
          reply->append(EncodeNetstring(SocketmapAnswer(services_, config_, request, *stats_)));
          break;
        case NetstringReader::Result::kError:
          ++stats_->malformed;
          spdlog::warn("socketmap: malformed request ({}); connection closed ({} so far)",
                       reader_.error(), stats_->malformed.load());
          return false;
      }
    }
  }

 private:
  Services& services_;
  SocketmapConfig config_;
  std::shared_ptr<SocketmapStats> stats_;
  NetstringReader reader_;
};

}  // namespace

std::string FillTemplate(
    std::string_view tmpl,
    std::initializer_list<std::pair<std::string_view, std::string_view>> values) {
  std::string out;
  size_t i = 0;
  while (i < tmpl.size()) {
    if (tmpl[i] == '{') {
      size_t close = tmpl.find('}', i);
      if (close != std::string_view::npos) {
        std::string_view name = tmpl.substr(i + 1, close - i - 1);
        bool replaced = false;
        for (const auto& [k, v] : values) {
          if (k == name) {
            out.append(v);
            replaced = true;
            break;
          }
        }
        if (replaced) {
          i = close + 1;
          continue;
        }
      }
    }
    out += tmpl[i++];
  }
  return out;
}

namespace {

constexpr std::string_view kTemplatePlaceholders[] = {"{address}", "{date}", "{reason}",
                                                      "{category}"};

// What both templates need: one line of printable ASCII, no leading blank, known placeholders.
Status CheckTemplateText(std::string_view tmpl) {
  if (tmpl.find_first_not_of(" \t") == std::string_view::npos) {
    return Status::Error("must not be empty (the answer would be \"OK \" with nothing after it)");
  }
  for (unsigned char c : tmpl) {
    if (c < 0x20 || c >= 0x7f) {
      return Status::Error("must be one line of printable ASCII (no control characters)");
    }
  }
  if (tmpl[0] == ' ' || tmpl[0] == '\t') return Status::Error("must not start with a blank");
  for (size_t pos = tmpl.find('{'); pos != std::string_view::npos; pos = tmpl.find('{', pos + 1)) {
    bool known = false;
    for (std::string_view p : kTemplatePlaceholders)
      known = known || tmpl.substr(pos, p.size()) == p;
    if (!known) {
      return Status::Error("unknown placeholder at '" + std::string(tmpl.substr(pos, 12)) +
                           "' (known: {address} {date} {reason} {category})");
    }
  }
  if (tmpl[0] == '{') return Status::Error("must start with the action, not a placeholder");
  return Status::Ok();
}

// A master.cf service name, as a transport(5) result or a FILTER names it.
bool IsServiceName(std::string_view name) {
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

// The argument of FILTER and REDIRECT (access(5): "FILTER transport:destination", "REDIRECT
// user@domain"). smtpd ignores either action when its argument is unusable (a warning in its
// log, then the next restriction: the suppressed recipient gets through), and takes all the text
// after the action as the argument, blanks included. So it must be one word, and fixed text: a
// placeholder is filled at lookup time, where {date} or {reason} would put blanks into it.
Status CheckRouteArgument(std::string_view action, std::string_view argument) {
  const bool filter = EqualsNoCase(action, "FILTER");
  const std::string what = filter ? "FILTER's transport:destination" : "REDIRECT's address";
  const std::string skipped = std::string(" (Postfix would skip the ") +
                              (filter ? "FILTER" : "REDIRECT") +
                              " and let the suppressed recipient through)";
  if (argument.empty()) {
    return Status::Error((filter ? std::string("FILTER needs transport:destination after it, e.g. "
                                               "\"FILTER smtp:[127.0.0.1]:10025\"")
                                 : std::string("REDIRECT needs a user@domain address after it")) +
                         skipped);
  }
  if (argument.find('{') != std::string_view::npos) {
    return Status::Error(what + " must be fixed text, without placeholders");
  }
  if (argument.find_first_of(" \t") != std::string_view::npos) {
    return Status::Error(what + " must be one word (Postfix takes all the text after the " +
                         "action as its argument, blanks included)");
  }
  if (filter) {
    const size_t colon = argument.find(':');
    if (colon == std::string_view::npos) {
      return Status::Error("FILTER needs transport:destination, with a ':', not '" +
                           std::string(argument) + "'" + skipped);
    }
    if (colon == 0 || !IsServiceName(argument.substr(0, colon))) {
      return Status::Error("FILTER's transport before ':' must be a master.cf service name");
    }
    return Status::Ok();
  }
  if (argument.find_first_of("<>") != std::string_view::npos) {
    return Status::Error("REDIRECT's address must be written without angle brackets");
  }
  const size_t at = argument.rfind('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == argument.size()) {
    return Status::Error("REDIRECT needs a user@domain address, not '" + std::string(argument) +
                         "'" + skipped);
  }
  return Status::Ok();
}

// The argument of PREPEND: a header, "name: value" (access(5)). smtpd checks it as a header
// (is_header) and otherwise ignores the action with a warning in its log, so the header a
// filter or a mailbox rule would look for never comes. The name is fixed text (a placeholder
// could fill it with blanks); the value may hold placeholders.
Status CheckPrependArgument(std::string_view argument) {
  const size_t colon = argument.find(':');
  std::string_view name = argument.substr(0, colon);
  while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
  if (colon == std::string_view::npos || name.empty()) {
    return Status::Error(
        "PREPEND needs a header after it, \"Name: value\", e.g. "
        "\"PREPEND X-Suppressed: {address}\" (Postfix would skip the PREPEND)");
  }
  for (char c : name) {
    if (c == '{')
      return Status::Error("PREPEND's header name must be fixed text, without placeholders");
    if (c == ' ' || c == '\t') {
      return Status::Error("PREPEND's header name must be one word, not '" + std::string(name) +
                           "' (Postfix would skip the PREPEND)");
    }
  }
  return Status::Ok();
}

// smtpd's reading of an access(5) result (check_table_result in Postfix's smtpd_check.c).
Status CheckAccessAction(std::string_view tmpl) {
  if (Status s = CheckTemplateText(tmpl); !s.ok()) return s;
  const size_t blank = tmpl.find_first_of(" \t");
  const std::string_view action = tmpl.substr(0, blank);
  const std::string_view text =
      blank == std::string_view::npos ? std::string_view() : tmpl.substr(blank);
  const bool has_text = text.find_first_not_of(" \t") != std::string_view::npos;
  if (action.find_first_not_of("0123456789") == std::string_view::npos) {
    if (action.size() != 3 || (action[0] != '4' && action[0] != '5')) {
      return Status::Error("reply code must be 4xx or 5xx (Postfix reads any other number as OK)");
    }
    if (!has_text) {
      return Status::Error("needs a text after the reply code (a bare number is OK to Postfix)");
    }
    return Status::Ok();
  }
  // Postfix compares these without case.
  if (EqualsNoCase(action, "OK") || EqualsNoCase(action, "RELAY") ||
      StartsWithNoCase(action, "permit")) {
    return Status::Error("'" + std::string(action) +
                         "' would accept suppressed recipients (and relay them: the map comes "
                         "first in smtpd_recipient_restrictions)");
  }
  const size_t start = text.find_first_not_of(" \t");
  const std::string_view argument =
      start == std::string_view::npos ? std::string_view() : text.substr(start);
  if (EqualsNoCase(action, "FILTER") || EqualsNoCase(action, "REDIRECT")) {
    return CheckRouteArgument(action, argument);
  }
  if (EqualsNoCase(action, "PREPEND")) return CheckPrependArgument(argument);
  return Status::Ok();
}

Status CheckTransportAction(std::string_view tmpl) {
  if (Status s = CheckTemplateText(tmpl); !s.ok()) return s;
  const size_t colon = tmpl.find(':');
  if (colon == std::string_view::npos) {
    return Status::Error("must be a transport(5) result like \"error:5.1.1 ...\"");
  }
  if (!IsServiceName(tmpl.substr(0, colon))) {
    return Status::Error("the transport before ':' must be a master.cf service name");
  }
  if (colon == 0 && tmpl.substr(1).find_first_not_of(" \t") == std::string_view::npos) {
    return Status::Error("\":\" alone would route suppressed mail as usual");
  }
  return Status::Ok();
}

}  // namespace

Status ValidateSocketmapConfig(const SocketmapConfig& config) {
  if (Status s = CheckAccessAction(config.access_action); !s.ok()) {
    return Status::Error("socketmap.access_action: " + s.message());
  }
  if (Status s = CheckTransportAction(config.transport_action); !s.ok()) {
    return Status::Error("socketmap.transport_action: " + s.message());
  }
  return Status::Ok();
}

std::string SocketmapAnswer(Services& services, const SocketmapConfig& config,
                            std::string_view request, SocketmapStats& stats) {
  ++stats.lookups;
  size_t sp = request.find(' ');
  if (sp == std::string_view::npos || sp == 0) {
    ++stats.perm;
    return "PERM request is not \"name key\"";
  }
  std::string_view name = request.substr(0, sp);
  std::string_view key = request.substr(sp + 1);
  const bool access = name == "recipient_access";
  if (!access && name != "transport") {
    ++stats.perm;
    return "PERM unknown map '" + Printable(name.substr(0, 64)) +
           "' (bounced serves recipient_access and transport)";
  }
  std::shared_ptr<Store> store = services.store();
  if (!store) {
    ++stats.temp;
    return "TEMP bounced storage unavailable";
  }
  // Domains, ".domain" and "user@" partial keys: we only suppress whole addresses.
  size_t at = key.find('@');
  if (at == std::string_view::npos || at == 0 || at + 1 >= key.size()) return "NOTFOUND ";
  std::optional<SuppressionHit> hit = store->view().Lookup(key);
  if (!hit) return "NOTFOUND ";
  ++stats.found;
  std::string address = Printable(key);
  std::string date = Day(hit->since);
  std::string_view category = hit->category == Category::kUndetermined ? std::string_view("manual")
                                                                       : ToString(hit->category);
  std::string_view reason = ReasonWords(*hit);
  const std::string& tmpl = access ? config.access_action : config.transport_action;
  return "OK " +
         FillTemplate(
             tmpl,
             {{"address", address}, {"date", date}, {"reason", reason}, {"category", category}});
}

std::unique_ptr<Session> MakeSocketmapSession(Services& services, SocketmapConfig config,
                                              std::shared_ptr<SocketmapStats> stats) {
  return std::make_unique<SocketmapSession>(services, std::move(config), std::move(stats));
}

}  // namespace bounced
