// report_config.h: the [report] section of bounced.toml (daily report and its mail).
//
// Read by bouncectl report (and by the daemon's config parser, which delegates the section
// here so unknown keys are refused in one place). Every key is optional:
//   [report]
//   mail_to = ""                       # where `bouncectl report --mail` sends it; "" = nowhere
//                                      # ("a@example.com, b@example.com": bare addresses)
//   mail_from = ""                     # From: and envelope sender; "" = sendmail's default
//   subject = "bounced daily report"   # the date, host and headline numbers are appended
//   sendmail = "/usr/sbin/sendmail"
//   trend_days = 14                    # days shown in the trend charts (7..30)
//   top = 10                           # rows per table (domains, providers, codes)
//   advice = "/usr/share/bounced/advice.toml"  # what-to-do texts; missing file = built-in path
#pragma once

#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "common/status.h"

namespace bounced {

inline constexpr const char* kDefaultAdvicePath = "/usr/share/bounced/advice.toml";

struct ReportConfig {
  std::string mail_to;
  std::string mail_from;
  std::string subject = "bounced daily report";
  std::string sendmail = "/usr/sbin/sendmail";
  int trend_days = 14;
  int top = 10;
  std::string advice = kDefaultAdvicePath;
};

// Reads the [report] table (nullptr: all defaults). Unknown keys and bad values are errors
// naming the file, the line and the key, as for every other section of bounced.toml:
// "bounced.toml:12: report.trend_days: must be an integer from 7 to 30".
Expected<ReportConfig> ReportConfigFromToml(const toml::table* report, std::string_view file);

}  // namespace bounced
