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
//
// VERP (classifier/verp.h): the return path read from the message's header, and the input's first
// line read as one, is a printable address with one '@' and a lower-case domain; applied to the
// parsed bounce, it keeps the number of results and fills every one that named no address.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "classifier/dsn_parser.h"
#include "classifier/mail_date.h"
#include "classifier/rules.h"
#include "classifier/text.h"
#include "classifier/verp.h"

namespace {

void CheckAddress(const std::string& a) {
  const size_t at = a.find('@');
  if (at == 0 || at == std::string::npos || a.find('@', at + 1) != std::string::npos) abort();
  for (size_t i = 0; i < a.size(); ++i) {
    const char c = a[i];
    if (c <= ' ' || c >= 0x7f || (i > at && c >= 'A' && c <= 'Z')) abort();
  }
}

void CheckVerp(std::string_view input, const bounced::RuleSet& rules) {
  bounced::VerpFormat any;
  std::optional<std::string> ours = bounced::VerpRecipientOf(input, any);
  if (std::optional<std::string> line = bounced::DecodeVerp(input.substr(0, input.find('\n')), any))
    CheckAddress(*line);
  if (!ours) return;
  CheckAddress(*ours);
  bounced::ParsedBounce parsed = bounced::ParseBounce(input, rules);
  const size_t before = parsed.recipients.size();
  bounced::ApplyVerp(&parsed, *ours, rules);
  if (parsed.recipients.size() != before) abort();
  for (const bounced::Result& r : parsed.recipients) {
    if (r.recipient.empty()) abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::shared_ptr<const bounced::RuleSet> rules = bounced::RuleSet::Default();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckVerp(input, *rules);
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
