// mbox_fuzz.cc: libFuzzer target for the mailbox splitter (classifier/mbox.h).
//
// Reads: arbitrary bytes as a mailbox. The first byte picks the piece size it is fed in and a
// small message cap (so truncation runs). Checks: no crash, no sanitizer report; the messages
// (and their truncation flags) do not depend on the piece size (the same bytes fed whole give
// the same); no message is longer than the cap; a message flagged truncated is exactly the cap
// long; the count the splitter reports is the number handed out; and the splitter gives the
// same again after Finish (it can be reused).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "classifier/mbox.h"

namespace {

void Check(bool ok) {
  if (!ok) abort();
}

using Messages = std::vector<std::pair<std::string, bool>>;

Messages Split(bounced::MboxSplitter* splitter, std::string_view mbox, size_t piece) {
  Messages out;
  auto on_message = [&out](std::string_view m, bool truncated) { out.emplace_back(m, truncated); };
  for (size_t at = 0; at < mbox.size(); at += piece)
    splitter->Push(mbox.substr(at, piece), on_message);
  splitter->Finish(on_message);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 37;
  const size_t cap = data[0] & 0x80 ? 1 + data[0] % 61 : size_t{1} << 20;
  std::string_view mbox(reinterpret_cast<const char*>(data + 1), size - 1);

  bounced::MboxSplitter pieces(cap);
  const Messages a = Split(&pieces, mbox, piece);
  bounced::MboxSplitter whole(cap);
  const Messages b = Split(&whole, mbox, mbox.size() + 1);
  Check(a == b);
  Check(pieces.messages() == a.size());
  for (const auto& [m, truncated] : a) {
    Check(m.size() <= cap);
    if (truncated) Check(m.size() == cap);
  }
  // Reused after Finish: the same again.
  Check(Split(&pieces, mbox, piece) == a);
  return 0;
}
