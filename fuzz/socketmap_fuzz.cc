// socketmap_fuzz.cc: libFuzzer target for the Postfix socketmap side (daemon/netstring.h,
// daemon/socketmap.h).
//
// Reads: arbitrary bytes as what a client writes to the socketmap socket. The first byte picks
// the size of the pieces the bytes arrive in (so netstrings are split across reads). Every
// complete request is answered by SocketmapAnswer over a real Store (SQLite in a temporary
// directory, opened once, with a few suppressed addresses so lookups also hit). Checks: no
// crash, no sanitizer report; every reply starts with OK, NOTFOUND, TEMP or PERM and fits a
// netstring the reader reads back unchanged; after an error the reader stays in error.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "daemon/config.h"
#include "daemon/netstring.h"
#include "daemon/services.h"
#include "daemon/socketmap.h"
#include "fuzz/fuzz_services.h"
#include "storage/store.h"

namespace {

using bounced::fuzz::Check;

// A few suppressed addresses, so lookups also hit.
bounced::Services& FuzzServices() {
  return bounced::fuzz::ServicesOverRealStore("socketmap_fuzz", [](bounced::Store& store) {
    for (const char* a : {"user@example.com", "gone@icloud.com", "x+tag@example.org"}) {
      bounced::ManualSuppression m;
      m.address = a;
      Check(store.Suppress(m, bounced::Actor{0, "fuzz seed"}).ok());
    }
  });
}

bool KnownReply(std::string_view r) {
  return r.rfind("OK ", 0) == 0 || r.rfind("NOTFOUND ", 0) == 0 || r.rfind("TEMP ", 0) == 0 ||
         r.rfind("PERM ", 0) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bounced::SocketmapConfig config;
  static bounced::SocketmapStats stats;
  bounced::Services& services = FuzzServices();
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 61;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);

  bounced::NetstringReader reader(bounced::kMaxSocketmapRequestBytes);
  bool failed = false;
  for (size_t i = 0; i < input.size() && !failed; i += piece) {
    reader.Append(input.substr(i, piece));
    for (;;) {
      std::string request;
      bounced::NetstringReader::Result r = reader.Next(&request);
      if (r == bounced::NetstringReader::Result::kNeedMore) break;
      if (r == bounced::NetstringReader::Result::kError) {
        Check(!reader.error().empty());
        failed = true;
        break;
      }
      Check(request.size() <= bounced::kMaxSocketmapRequestBytes);
      std::string reply = bounced::SocketmapAnswer(services, config, request, stats);
      Check(KnownReply(reply));
      // What is sent back must read back as the same payload.
      bounced::NetstringReader back(1 << 20);
      back.Append(bounced::EncodeNetstring(reply));
      std::string again;
      Check(back.Next(&again) == bounced::NetstringReader::Result::kComplete);
      Check(again == reply);
      Check(back.buffered() == 0);
    }
  }
  return 0;
}
