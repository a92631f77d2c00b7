// suppression_io.cc: CSV (RFC 4180), JSONL and plain text forms of the suppression list.
#include "storage/suppression_io.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <optional>

#include "classifier/mail_date.h"
#include "storage/store_json.h"
#include "storage/timefmt.h"

namespace bounced {
namespace {

// Export's columns, then two that only an ESP's export has (an enhanced status and a reply code
// beside its reason), read to classify the reason.
enum Column {
  kAddress,
  kReason,
  kCategory,
  kSource,
  kFirst,
  kLast,
  kCreated,
  kExpires,
  kDetail,
  kStatus,
  kCode,
  kColumnCount
};
constexpr std::array<std::string_view, kColumnCount> kColumns = {
    "address", "reason",  "category", "source", "first_event", "last_event",
    "created", "expires", "detail",   "status", "code"};
// One entry's fields as text (missing = nullopt).
using Fields = std::array<std::optional<std::string>, kColumnCount>;
// 10000-01-01T00:00:00Z: the first time RFC 3339's four-digit year cannot write.
constexpr int64_t kYear10000 = 253402300800;
// A UTF-8 byte order mark, which spreadsheets and some exporters write first.
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

constexpr int kIgnored = -1;  // a field export writes that import recomputes
constexpr int kUnknown = -2;

// The names import reads a column or field by, as ColumnKey writes them: the export's own, then
// those of other tools' exports (ESPs' suppression lists, spreadsheets).
struct ColumnName {
  std::string_view key;
  int column;
};
constexpr ColumnName kColumnNames[] = {
    {"address", kAddress},
    {"reason", kReason},
    {"category", kCategory},
    {"source", kSource},
    {"firstevent", kFirst},
    {"lastevent", kLast},
    {"created", kCreated},
    {"expires", kExpires},
    {"detail", kDetail},
    {"display", kIgnored},
    {"deliveredafter", kIgnored},
    {"email", kAddress},
    {"emailaddress", kAddress},
    {"recipient", kAddress},
    {"to", kAddress},
    {"suppressionreason", kReason},
    {"error", kReason},
    {"createdat", kCreated},
    {"suppressedat", kCreated},
    {"lastupdatetime", kCreated},
    {"date", kCreated},
    {"expiresat", kExpires},
    {"description", kReason},
    {"status", kStatus},
    {"code", kCode},
};

// A column name as import compares it: ASCII lower case, without spaces, '_' and '-'
// ("Email Address", "email_address" and "E-Mail-Address" are one name).
std::string ColumnKey(std::string_view name) {
  std::string key;
  for (char c : name) {
    if (c == ' ' || c == '_' || c == '-' || c == '\t') continue;
    key.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  return key;
}

// The column `name` stands for, kIgnored, or kUnknown.
int ColumnOf(std::string_view name) {
  const std::string key = ColumnKey(name);
  for (const ColumnName& c : kColumnNames) {
    if (c.key == key) return c.column;
  }
  return kUnknown;
}

void AppendCsvField(std::string& out, std::string_view v) {
  bool quote = v.find_first_of(",\"\r\n") != std::string_view::npos ||
               (!v.empty() && (v.front() == ' ' || v.back() == ' '));
  if (!quote) {
    out.append(v);
    return;
  }
  out.push_back('"');
  for (char c : v) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

std::string Printable(std::string_view v) {
  std::string out(v);
  for (char& c : out) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = ' ';
  }
  return out;
}

std::string Quoted(std::string_view v) {
  std::string s = Printable(v.substr(0, 80));
  return "'" + s + (v.size() > 80 ? "...'" : "'");
}

// The display form of an address as written: without the blanks around it (NormalizeAddress
// drops them too) and printable, so that what export writes reads back the same.
std::string DisplayForm(std::string_view written) {
  const size_t first = written.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return Printable(written.substr(first, written.find_last_not_of(" \t") + 1 - first));
}

// An ESP's short label (a reason or source word, not a reply: at most 60 bytes) as its words
// compare: lower case, letters and digits only ("Spam Complaint" = "spamcomplaint"); "" for
// longer text.
std::string FoldedLabel(std::string_view text) {
  std::string key;
  if (text.size() > 60) return key;
  for (char c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) key.push_back(c);
  }
  return key;
}

// Whether an ESP's reason or source word says the recipient complained (Postmark's
// SpamComplaint, Amazon SES's COMPLAINT, SendGrid's spam reports, SparkPost's Spam Complaint,
// Mailchimp's abuse).
bool IsComplaintWord(std::string_view word) {
  static constexpr std::string_view kWords[] = {
      "complaint",      "complaints",  "spamcomplaint", "spamcomplaints",
      "spamreport",     "spamreports", "abuse",         "abusereport",
      "abusecomplaint", "fbl",         "feedbackloop",  "markedasspam"};
  return std::find(std::begin(kWords), std::end(kWords), FoldedLabel(word)) != std::end(kWords);
}

// Whether an ESP's reason labels the address a spam trap ("Spam Trap", "spamtrap", "pristine
// trap"): an address never to mail again, but read as a reply it would look like a complaint
// about content (spam_content), which says the opposite. It gets no category from its reason.
bool IsSpamTrapLabel(std::string_view reason) {
  return FoldedLabel(reason).find("trap") != std::string::npos;
}

// An ESP's status or code column as a reply reads it: "5.1.1" (or "4.7.0"), "550"; anything
// else is no status or code (and not an error: the column is the ESP's, not bounced's).
std::string_view EnhancedStatus(const std::optional<std::string>& v) {
  if (!v) return {};
  std::string_view s = *v;
  const size_t a = s.find('.'), b = s.rfind('.');
  const bool ok = s.size() >= 5 && s.size() <= 9 && (s[0] == '2' || s[0] == '4' || s[0] == '5') &&
                  a == 1 && b > a + 1 && b < s.size() - 1 &&
                  s.find_first_not_of("0123456789.") == std::string_view::npos;
  return ok ? s : std::string_view();
}
std::string_view ReplyCode(const std::optional<std::string>& v) {
  if (!v) return {};
  std::string_view s = *v;
  const bool ok = s.size() == 3 && s[0] >= '2' && s[0] <= '5' &&
                  s.find_first_not_of("0123456789") == std::string_view::npos;
  return ok ? s : std::string_view();
}

// Validates one entry's fields into `out`. Returns "" or the error text (without the line
// prefix). `*categorized`: the category came from the reason (ImportOptions).
std::string BuildEntry(const Fields& f, std::string_view delimiters, int64_t now,
                       const ImportOptions& options, Suppression& out, bool* categorized) {
  if (!f[kAddress] || f[kAddress]->empty()) return "missing address";
  out.address = NormalizeAddress(*f[kAddress], delimiters);
  if (out.address.empty()) return "invalid address " + Quoted(*f[kAddress]);
  out.display = DisplayForm(*f[kAddress]);
  // A source that is not one of bounced's own is an ESP's (SparkPost's "Hard Bounce", "Spam
  // Complaint"): it says why, as a reason does.
  std::string esp_source;
  if (f[kSource] && !f[kSource]->empty()) {
    const std::string& s = *f[kSource];
    if (s != "bounce" && s != "complaint" && s != "manual" && s != "import") {
      esp_source = Printable(s);
    }
  }
  const bool has_reason = f[kReason] && !f[kReason]->empty();
  out.reason = has_reason ? Printable(*f[kReason]) : !esp_source.empty() ? esp_source : "import";
  const std::string_view status = EnhancedStatus(f[kStatus]);
  const std::string_view code = ReplyCode(f[kCode]);
  if (f[kCategory]) {
    // bounced's own export, or a file that says: "" is no category.
    if (!f[kCategory]->empty() && !CategoryFromName(*f[kCategory])) {
      return "unknown category " + Quoted(*f[kCategory]);
    }
    out.category = *f[kCategory];
  } else if ((has_reason && IsComplaintWord(*f[kReason])) || IsComplaintWord(esp_source)) {
    out.category = "complaint";
    *categorized = true;
  } else if (options.classify && (has_reason || !status.empty() || !code.empty()) &&
             !(has_reason && IsSpamTrapLabel(*f[kReason]))) {
    out.category = options.classify(
        ImportedReply{has_reason ? std::string_view(*f[kReason]) : std::string_view(), status, code,
                      *f[kAddress]});
    *categorized = !out.category.empty();
  }
  if (out.category.empty() && !f[kCategory]) out.category = options.category;
  out.source = "import";
  struct TimeField {
    Column col;
    int64_t* dest;
  };
  for (TimeField tf : {TimeField{kFirst, &out.first_event}, TimeField{kLast, &out.last_event},
                       TimeField{kCreated, &out.created}, TimeField{kExpires, &out.expires}}) {
    if (!f[tf.col] || f[tf.col]->empty()) continue;
    // An ESP may write a mail date (Mailgun's "Fri, 21 Oct 2026 11:02:55 GMT").
    auto t = ParseTime(*f[tf.col]);
    if (!t) t = ParseMailDate(*f[tf.col]);
    if (!t) {
      return "bad time " + Quoted(*f[tf.col]) + " in " + std::string(kColumns[tf.col]) +
             " (RFC 3339, an RFC 5322 date or Unix seconds)";
    }
    // Export writes these back as RFC 3339 with a four-digit year: a time it could not write
    // (before 1970, after 9999) is refused here rather than exported unreadable later.
    if (*t < 0 || *t >= kYear10000) {
      return "time " + Quoted(*f[tf.col]) + " in " + std::string(kColumns[tf.col]) +
             " is out of range (1970 to 9999)";
    }
    *tf.dest = *t;
  }
  if (out.created == 0) out.created = now;
  out.detail = f[kDetail] ? Printable(*f[kDetail]) : "";
  if (out.detail.empty() && !(code.empty() && status.empty())) {
    // The ESP's reply code and status, which the reason may not repeat.
    out.detail =
        std::string(code) + (code.empty() || status.empty() ? "" : " ") + std::string(status);
  }
  return {};
}

// Splits CSV text into records; each record remembers the line it starts on.
struct CsvRecord {
  size_t line = 0;
  std::vector<std::string> fields;
};

std::optional<std::string> ReadCsvRecord(std::string_view data, size_t& pos, size_t& line,
                                         CsvRecord& rec) {
  rec.fields.clear();
  rec.line = line;
  std::string field;
  bool in_quotes = false, quoted = false;
  while (pos < data.size()) {
    char c = data[pos++];
    if (in_quotes) {
      if (c == '"') {
        if (pos < data.size() && data[pos] == '"') {
          field.push_back('"');
          ++pos;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        field.push_back(c);
      }
      continue;
    }
    if (c == '"' && field.empty() && !quoted) {
      in_quotes = quoted = true;
    } else if (c == ',') {
      rec.fields.push_back(std::move(field));
      field.clear();
      quoted = false;
    } else if (c == '\r' && pos < data.size() && data[pos] == '\n') {
      continue;
    } else if (c == '\n') {
      ++line;
      rec.fields.push_back(std::move(field));
      return std::nullopt;
    } else if (quoted) {
      return "text after a closing quote";
    } else {
      field.push_back(c);
    }
  }
  if (in_quotes) return "unterminated quoted field";
  rec.fields.push_back(std::move(field));
  return std::nullopt;
}

// Where an accepted entry goes: ParseImport's list, or ParseImportEach's caller.
using Sink = std::function<void(Suppression&&)>;

void AddError(ParsedImport& r, size_t line, const std::string& what) {
  if (r.errors.size() < kMaxImportErrors) {
    r.errors.push_back("line " + std::to_string(line) + ": " + what);
  }
}

void ParseCsv(std::string_view data, std::string_view delimiters, int64_t now, const Sink& keep,
              const ImportOptions& options, ParsedImport& r) {
  size_t pos = 0, line = 1;
  if (data.substr(0, kByteOrderMark.size()) == kByteOrderMark) pos = kByteOrderMark.size();
  CsvRecord rec;
  std::vector<int> map;  // column index -> Column, or -1 ignored
  bool have_header = false;
  while (pos < data.size()) {
    auto err = ReadCsvRecord(data, pos, line, rec);
    if (err) {
      AddError(r, rec.line, *err);
      return;  // the record boundaries after this are unknown
    }
    if (rec.fields.size() == 1 && rec.fields[0].empty()) continue;  // blank line
    if (!have_header) {
      have_header = true;
      std::array<std::string, kColumnCount> named;  // the header's name for each column it has
      for (const std::string& name : rec.fields) {
        int col = ColumnOf(name);
        if (col == kUnknown && options.ignore_unknown_columns) {
          if (r.ignored_columns.size() < kMaxImportErrors) {
            r.ignored_columns.push_back(Printable(name));
          }
          col = kIgnored;
        }
        if (col == kUnknown) {
          AddError(r, rec.line,
                   "unknown column " + Quoted(name) +
                       " (header must name columns: " + std::string(kCsvHeader) +
                       ", or as other exports do: email, created_at ...; "
                       "bouncectl import --ignore-unknown-columns skips the others)");
          return;
        }
        if (col >= 0) {
          if (!named[col].empty()) {
            AddError(r, rec.line,
                     "columns " + Quoted(named[col]) + " and " + Quoted(name) + " both give " +
                         std::string(kColumns[col]));
            return;
          }
          named[col] = name.empty() ? "(empty)" : name;
        }
        map.push_back(col);
      }
      if (named[kAddress].empty()) {
        AddError(r, rec.line, "header has no 'address' column (or email, email address, ...)");
        return;
      }
      continue;
    }
    if (rec.fields.size() != map.size()) {
      AddError(r, rec.line,
               "expected " + std::to_string(map.size()) + " fields, found " +
                   std::to_string(rec.fields.size()));
      continue;
    }
    Fields f;
    for (size_t i = 0; i < map.size(); ++i) {
      if (map[i] >= 0) f[map[i]] = std::move(rec.fields[i]);
    }
    Suppression s;
    bool categorized = false;
    std::string e = BuildEntry(f, delimiters, now, options, s, &categorized);
    if (!e.empty()) {
      AddError(r, rec.line, e);
    } else {
      r.categorized += categorized;
      keep(std::move(s));
    }
  }
  if (!have_header) AddError(r, 1, "empty input (a header line is required)");
}

// Calls `each(line, text)` for every line of `data` after a byte order mark: `line` counts
// from 1, `text` is without its line end (nor a '\r' before it).
template <typename Each>
void ForEachLine(std::string_view data, Each each) {
  size_t pos = data.substr(0, kByteOrderMark.size()) == kByteOrderMark ? kByteOrderMark.size() : 0;
  size_t line = 0;
  while (pos < data.size()) {
    size_t end = data.find('\n', pos);
    if (end == std::string_view::npos) end = data.size();
    std::string_view text = data.substr(pos, end - pos);
    pos = end + 1;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    each(++line, text);
  }
}

void ParseJsonl(std::string_view data, std::string_view delimiters, int64_t now, const Sink& keep,
                const ImportOptions& options, ParsedImport& r) {
  ForEachLine(data, [&](size_t line, std::string_view text) {
    if (text.find_first_not_of(" \t") == std::string_view::npos) return;
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      AddError(r, line, "not a JSON object");
      return;
    }
    Fields f;
    std::string err;
    std::string display;  // export's "display": the address as first seen (case kept)
    for (auto& [key, value] : j.items()) {
      if (key == "display" && value.is_string()) display = value.get<std::string>();
      int col = ColumnOf(key);
      if (col == kUnknown && options.ignore_unknown_columns) {
        if (std::find(r.ignored_columns.begin(), r.ignored_columns.end(), Printable(key)) ==
                r.ignored_columns.end() &&
            r.ignored_columns.size() < kMaxImportErrors) {
          r.ignored_columns.push_back(Printable(key));
        }
        col = kIgnored;
      }
      if (col == kUnknown) {
        err = "unknown field " + Quoted(key);
        break;
      }
      if (col == kIgnored || value.is_null()) continue;
      if (f[col]) {
        err = "two fields give " + std::string(kColumns[col]);
        break;
      }
      if (value.is_string()) {
        f[col] = value.get<std::string>();
      } else if (value.is_number_integer() &&
                 ((col >= kFirst && col <= kExpires) || col == kCode)) {
        f[col] = std::to_string(value.get<int64_t>());
      } else {
        err = "field " + Quoted(key) + " must be a string";
        break;
      }
    }
    if (err.empty()) {
      Suppression s;
      bool categorized = false;
      err = BuildEntry(f, delimiters, now, options, s, &categorized);
      if (err.empty()) r.categorized += categorized;
      // "address" is the normalised key in an export; its display form comes back with it, so
      // an export imported again keeps the case it was first seen in.
      if (err.empty() && !display.empty() && NormalizeAddress(display, delimiters) == s.address) {
        s.display = DisplayForm(display);
      }
      if (err.empty()) keep(std::move(s));
    }
    if (!err.empty()) AddError(r, line, err);
  });
}

// Whether a text import's line (trimmed) is a comment: '#' then a blank or the end, or a '#' line
// with no '@'. An address may itself begin with '#' ("#ops@example.com" is one), and so may a
// key that export writes.
bool IsCommentLine(std::string_view text) {
  if (text.empty() || text[0] != '#') return false;
  return text.size() == 1 || text[1] == ' ' || text[1] == '\t' ||
         text.find('@') == std::string_view::npos;
}

// One address per line; leading and trailing blanks, blank lines and comment lines skipped.
void ParseText(std::string_view data, std::string_view delimiters, int64_t now, const Sink& keep,
               const ImportOptions& options, ParsedImport& r) {
  ForEachLine(data, [&](size_t line, std::string_view text) {
    const size_t first = text.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) return;
    text = text.substr(first, text.find_last_not_of(" \t\r") + 1 - first);
    if (IsCommentLine(text)) return;
    Fields f;
    f[kAddress] = std::string(text);
    Suppression s;
    bool categorized = false;
    if (std::string err = BuildEntry(f, delimiters, now, options, s, &categorized); !err.empty()) {
      AddError(r, line, err);
    } else {
      keep(std::move(s));
    }
  });
}

}  // namespace

std::string FormatExportLine(ExportFormat format, const Suppression& s) {
  switch (format) {
    case ExportFormat::kCsv:
      return FormatCsvLine(s);
    case ExportFormat::kJsonl:
      return FormatJsonLine(s);
    case ExportFormat::kText:
      return s.address + "\n";
  }
  return FormatCsvLine(s);
}

std::string FormatCsvLine(const Suppression& s) {
  std::string out;
  AppendCsvField(out, s.display.empty() ? s.address : s.display);
  for (std::string_view v :
       {std::string_view(s.reason), std::string_view(s.category), std::string_view(s.source)}) {
    out.push_back(',');
    AppendCsvField(out, v);
  }
  for (int64_t t : {s.first_event, s.last_event, s.created, s.expires}) {
    out.push_back(',');
    out += FormatTime(t);
  }
  out.push_back(',');
  AppendCsvField(out, s.detail);
  out.push_back('\n');
  return out;
}

std::string FormatJsonLine(const Suppression& s) {
  return ToJson(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

ParsedImport ParseImport(ExportFormat format, std::string_view data, std::string_view delimiters,
                         int64_t now, const ImportOptions& options) {
  std::vector<Suppression> entries;
  ParsedImport r = ParseImportEach(
      format, data, delimiters, now,
      [&entries](Suppression&& s) { entries.push_back(std::move(s)); }, options);
  if (r.errors.empty()) r.entries = std::move(entries);
  return r;
}

ParsedImport ParseImportEach(ExportFormat format, std::string_view data,
                             std::string_view delimiters, int64_t now,
                             const std::function<void(Suppression&&)>& sink,
                             const ImportOptions& options) {
  ParsedImport r;
  switch (format) {
    case ExportFormat::kCsv:
      ParseCsv(data, delimiters, now, sink, options, r);
      break;
    case ExportFormat::kJsonl:
      ParseJsonl(data, delimiters, now, sink, options, r);
      break;
    case ExportFormat::kText:
      ParseText(data, delimiters, now, sink, options, r);
      break;
  }
  return r;
}

}  // namespace bounced
