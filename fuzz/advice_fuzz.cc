// advice_fuzz.cc: libFuzzer target for the report's advice file parser (daemon/report_advice.h:
// packaging/advice.toml, or the file `[report] advice` names).
//
// Reads: arbitrary bytes as an advice file (the seeds include the packaged one). Checks: no
// crash, no sanitizer report, no exception escaping; a refused file is named in its error; an
// accepted one answers lookups: every provider group it names has a display name, a classifier
// provider id maps to a group that is itself or was declared, and a found entry has a title.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "daemon/report_advice.h"

namespace {

void Check(bool ok) {
  if (!ok) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto book = bounced::AdviceBook::Parse(text, "fuzz-advice.toml");
  if (!book.ok()) {
    Check(book.error().find("fuzz-advice.toml") != std::string::npos);
    return 0;
  }
  for (std::string_view provider : {"icloud", "gmail", "yahoo", "aol", "microsoft", "", "x"}) {
    const std::string group = book->GroupOf(provider);
    Check(!group.empty());
    Check(!book->NameOf(group).empty());
    for (std::string_view code : {"CS01", "TSS04", ""}) {
      for (std::string_view status : {"5.7.1", "4.7.0", ""}) {
        const bounced::AdviceEntry* a = book->Find(provider, code, status, "policy_rejection");
        Check(a == nullptr || !a->title.empty());
      }
    }
  }
  return 0;
}
