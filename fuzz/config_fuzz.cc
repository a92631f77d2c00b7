// config_fuzz.cc: libFuzzer target for the configuration loader (daemon/config.h).
//
// Reads: arbitrary bytes as a bounced.toml (the seeds include DefaultConfigToml's text).
// ParseConfig must either accept the text or refuse it with a message naming the file. Checks:
// no crash, no sanitizer report, no exception escaping.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "daemon/config.h"

namespace {

void Check(bool ok) {
  if (!ok) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = bounced::ParseConfig(text, "fuzz.toml");
  if (!c.ok()) {
    Check(!c.error().empty());
    Check(c.error().find("fuzz.toml") != std::string::npos);
  }
  return 0;
}
