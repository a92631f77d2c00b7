// dsn_fuzz.cc: libFuzzer target for the DSN parser (classifier/dsn_parser.h). Feeds arbitrary
// bytes to ParseBounce with the embedded default rules, whole and as a message cut short, and
// checks the contract: no crash, no hang, every string bounded and sanitised.
//
// Seeds: fuzz/corpus/dsn_fuzz/, small real DSNs and text bounces copied from tests/data/dsn
// (Postfix captures; Sisimai's set-of-emails, BSD 2-Clause, see tests/data/dsn/corpus/LICENSE).
// Run: build-fuzz/fuzz/dsn_fuzz -max_len=65536 fuzz/corpus/dsn_fuzz
//
// The message's Date (classifier/mail_date.h, as ingest-dsn reads it) is read too, and the
// input's first line as a Date value: a date that reads lies between 1970 and the year 9999
// (zone offsets aside).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "classifier/dsn_parser.h"
#include "classifier/mail_date.h"
#include "classifier/rules.h"
#include "classifier/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::shared_ptr<const bounced::RuleSet> rules = bounced::RuleSet::Default();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // Whole, and as the start of a longer message (the milter's capture cut at its cap).
  for (bool cut_short : {false, true}) {
    bounced::ParsedBounce parsed = bounced::ParseBounce(input, *rules, cut_short);
    if (parsed.recipients.empty() && parsed.error.empty()) abort();
    for (const bounced::Result& r : parsed.recipients) {
      if (r.diagnostic.size() > bounced::kMaxDiagnosticBytes) abort();
      if (bounced::Sanitize(r.diagnostic) != r.diagnostic) abort();
      if (bounced::Sanitize(r.recipient, 4096) != r.recipient) abort();
    }
  }
  constexpr int64_t kLowest = -86400;                 // 1970-01-01 at +2359
  constexpr int64_t kHighest = 253402300799 + 86400;  // 9999-12-31T23:59:59 at -2359, +1 s
  for (std::optional<int64_t> date :
       {bounced::MessageDate(input), bounced::ParseMailDate(input.substr(0, input.find('\n')))}) {
    if (date && (*date < kLowest || *date > kHighest)) abort();
  }
  return 0;
}
