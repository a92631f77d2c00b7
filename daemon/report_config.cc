// report_config.cc: parses [report] (see report_config.h).
#include "daemon/report_config.h"

#include "daemon/config.h"
#include "daemon/report_mail.h"

namespace bounced {
namespace {

std::string KeyError(std::string_view file, const toml::node& value, std::string_view key,
                     std::string_view why) {
  return ConfigError(file, &value, "report." + std::string(key), why);
}

bool HasControl(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

}  // namespace

Expected<ReportConfig> ReportConfigFromToml(const toml::table* report, std::string_view file) {
  ReportConfig c;
  if (report == nullptr) return c;
  for (auto&& [k, value] : *report) {
    const std::string_view key = k.str();
    // A plain reference: clang 14 (the fuzz build) cannot capture structured bindings.
    const toml::node& v = value;
    auto text = [&](std::string& out) -> Status {
      if (!v.is_string()) return Status::Error(KeyError(file, v, key, "must be a string"));
      out = *v.value<std::string>();
      // These end up in mail headers and a command line: no line breaks smuggled in.
      if (HasControl(out)) return Status::Error(KeyError(file, v, key, "control characters"));
      return Status::Ok();
    };
    auto integer = [&](int min, int max, int& out) -> Status {
      auto x = v.value<int64_t>();
      if (!v.is_integer() || !x || *x < min || *x > max) {
        return Status::Error(KeyError(
            file, v, key,
            "must be an integer from " + std::to_string(min) + " to " + std::to_string(max)));
      }
      out = static_cast<int>(*x);
      return Status::Ok();
    };
    Status s;
    if (key == "mail_to") {
      // Checked here, not first when the report is mailed (a timer, at night): "" = no mail.
      s = text(c.mail_to);
      if (s.ok() && !c.mail_to.empty()) {
        if (auto to = ParseRecipients(c.mail_to); !to)
          s = Status::Error(KeyError(file, v, key, to.error()));
      }
    } else if (key == "mail_from") {
      s = text(c.mail_from);
      if (s.ok() && !c.mail_from.empty()) {
        if (Status a = CheckMailAddress(c.mail_from); !a) {
          s = Status::Error(
              KeyError(file, v, key, "not a mail address: '" + c.mail_from + "': " + a.message()));
        }
      }
    } else if (key == "subject") {
      s = text(c.subject);
    } else if (key == "sendmail") {
      s = text(c.sendmail);
      if (s.ok() && (c.sendmail.empty() || c.sendmail[0] != '/')) {
        s = Status::Error(KeyError(file, v, key, "must be an absolute path"));
      }
    } else if (key == "advice") {
      s = text(c.advice);
    } else if (key == "trend_days") {
      s = integer(7, 30, c.trend_days);
    } else if (key == "top") {
      s = integer(1, 100, c.top);
    } else {
      s = Status::Error(KeyError(file, v, key, "unknown key"));
    }
    if (!s.ok()) return s;
  }
  return c;
}

}  // namespace bounced
