// suppression_io.h: suppression list export and import text (CSV and JSONL; internal).
//
// Export writes one suppression per line; import parses the same forms, validates every line
// and returns either all entries or every error with its line number (up to kMaxImportErrors).
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

struct ParsedImport {
  std::vector<Suppression> entries;  // address = normalised key, display = as written
  std::vector<std::string> errors;
};
// `now` fills `created` when the line has none.
ParsedImport ParseImport(ExportFormat format, std::string_view data, std::string_view delimiters,
                         int64_t now);
// The same checks, streaming: each accepted entry is handed to `sink` as its line is read
// (entries may reach it before a later line's error) and none is kept, so a million-line
// import is not held parsed in memory. Returns the errors; its `entries` stay empty.
ParsedImport ParseImportEach(ExportFormat format, std::string_view data,
                             std::string_view delimiters, int64_t now,
                             std::function<void(Suppression&&)> sink);

}  // namespace bounced
