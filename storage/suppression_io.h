// suppression_io.h: suppression list export and import text (CSV, JSONL and plain text;
// internal).
//
// Export writes one suppression per line; import parses the same forms, validates every line
// and returns either all entries or every error with its line number (up to kMaxImportErrors).
//
// A CSV header names its columns in any case, and as other tools' exports name them: spaces,
// '_' and '-' do not count ("Email Address" = emailaddress), and besides this file's own names
// import takes an address from email, emailaddress, e-mail, recipient or to; a reason from
// suppressionreason or error; created from createdat, suppressedat, lastupdatetime or date;
// expires from expiresat. A UTF-8 byte order mark (a spreadsheet's) before the header is
// skipped. A text import is one address per line (blank lines and '#' comments skipped).
//
// An ESP's export says why in its own words: a reason column (a reply, or a word such as
// SpamComplaint), a source other than bounced's four (SparkPost's "Spam Complaint"), an
// enhanced status ("status": SendGrid) and a reply code ("code": Mailgun), and its reason may
// be called description. An entry of a file without a category column gets its category from
// these as ImportOptions says; status and code are kept in `detail` when the file has none.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/store.h"

namespace bounced {

inline constexpr size_t kMaxImportErrors = 100;
inline constexpr std::string_view kCsvHeader =
    "address,reason,category,source,first_event,last_event,created,expires,detail";

std::string FormatCsvLine(const Suppression& s);   // with '\n'
std::string FormatJsonLine(const Suppression& s);  // with '\n'
// The line `format` writes for `s` (with '\n'); text: the address as bounced keys it.
std::string FormatExportLine(ExportFormat format, const Suppression& s);

struct ParsedImport {
  std::vector<Suppression> entries;  // address = normalised key, display = as written
  std::vector<std::string> errors;
  std::vector<std::string> ignored_columns;  // as the header wrote them (the first 100)
  size_t categorized = 0;  // accepted entries given a category from their reason (ImportOptions)
};
// `now` fills `created` when the line has none.
ParsedImport ParseImport(ExportFormat format, std::string_view data, std::string_view delimiters,
                         int64_t now, const ImportOptions& options = {});
// The same checks, streaming: each accepted entry is handed to `sink` as its line is read
// (entries may reach it before a later line's error) and none is kept, so a million-line
// import is not held parsed in memory. Returns the errors; its `entries` stay empty.
ParsedImport ParseImportEach(ExportFormat format, std::string_view data,
                             std::string_view delimiters, int64_t now,
                             const std::function<void(Suppression&&)>& sink,
                             const ImportOptions& options = {});

}  // namespace bounced
