// import_fuzz.cc: libFuzzer target for the suppression import parser (storage/suppression_io.h,
// what `bouncectl import` sends and the daemon validates before anything is written).
//
// Reads: arbitrary bytes as an import file. The first byte picks CSV, JSONL or text, the address
// extension delimiters, whether unknown columns are skipped, and whether an entry without a
// category column gets one (a stand-in for the rules, and a default). Checks: no crash, no
// sanitizer report; all-or-nothing (errors and entries never both), at most kMaxImportErrors
// errors, each naming its line; no more entries categorized than accepted, each category a
// known name or ""; every accepted entry has a key and, written back out with the export
// formatter and parsed again, gives the same entry (export and import agree; text keeps only
// the key).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "storage/suppression_io.h"

namespace {

void Check(bool ok) {
  if (!ok) abort();
}

bool Same(const bounced::Suppression& a, const bounced::Suppression& b) {
  return a.address == b.address && a.display == b.display && a.reason == b.reason &&
         a.category == b.category && a.source == b.source && a.first_event == b.first_event &&
         a.last_event == b.last_event && a.created == b.created && a.expires == b.expires &&
         a.detail == b.detail;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool csv = (data[0] & 1) != 0;
  const bool text = !csv && (data[0] & 8) != 0;
  const std::string_view delimiters = (data[0] & 2) != 0 ? "+" : ((data[0] & 4) != 0 ? "+-" : "");
  const bounced::ExportFormat format = csv    ? bounced::ExportFormat::kCsv
                                       : text ? bounced::ExportFormat::kText
                                              : bounced::ExportFormat::kJsonl;
  bounced::ImportOptions options;
  options.ignore_unknown_columns = (data[0] & 16) != 0;
  if ((data[0] & 32) != 0) {
    // What the status, code and text decide stands in for the rules: any of the three, or none.
    options.classify = [](const bounced::ImportedReply& r) -> std::string {
      if (!r.status.empty()) return "user_unknown";
      if (!r.code.empty()) return "mailbox_full";
      return r.text.size() % 2 == 0 ? "policy_rejection" : "";
    };
  }
  if ((data[0] & 64) != 0) options.category = "complaint";
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  constexpr int64_t kNow = 1793491200;

  bounced::ParsedImport parsed = bounced::ParseImport(format, input, delimiters, kNow, options);
  Check(parsed.errors.empty() || parsed.entries.empty());
  Check(parsed.errors.size() <= bounced::kMaxImportErrors);
  for (const std::string& e : parsed.errors) Check(e.rfind("line ", 0) == 0);
  Check(options.ignore_unknown_columns || parsed.ignored_columns.empty());
  if (parsed.entries.empty()) return 0;
  Check(parsed.categorized <= parsed.entries.size());
  for (const bounced::Suppression& s : parsed.entries) {
    Check(s.category.empty() || bounced::CategoryFromName(s.category).has_value());
  }

  std::string again = csv ? std::string(bounced::kCsvHeader) + "\n" : std::string();
  for (const bounced::Suppression& s : parsed.entries) {
    Check(!s.address.empty());
    again += bounced::FormatExportLine(format, s);
  }
  bounced::ParsedImport back = bounced::ParseImport(format, again, delimiters, kNow);
  Check(back.errors.empty());
  Check(back.entries.size() == parsed.entries.size());
  for (size_t i = 0; i < back.entries.size(); ++i) {
    Check(text ? back.entries[i].address == parsed.entries[i].address
               : Same(back.entries[i], parsed.entries[i]));
  }
  return 0;
}
