// stream_registry_test.cc: StreamRegistry, by which a stopping server cancels the replies still
// being produced. A stream a connection takes after the stop (on another io thread, as the
// ThreadSanitizer run found it: tests/TSAN.md) is cancelled as it is added, so its producer
// never hands a piece to the io_context the daemon destroys next.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "daemon/stream_server.h"

namespace bounced::testing {
namespace {

using namespace std::chrono_literals;

// A producer that emits pieces until told to stop; *refused says emit refused a piece.
std::shared_ptr<WorkerStream> EndlessStream(std::atomic<bool>* refused) {
  return std::make_shared<WorkerStream>([refused](const WorkerStream::Emit& emit) {
    for (int i = 0; i < 100000; ++i) {
      if (!emit("piece\n")) {
        *refused = true;
        return std::string();
      }
      std::this_thread::sleep_for(1ms);
    }
    return std::string("end\n");
  });
}

TEST(StreamRegistry, CancelAllCancelsTheStreamsAdded) {
  StreamRegistry registry;
  std::atomic<bool> refused{false};
  auto stream = EndlessStream(&refused);
  registry.Add(stream);
  registry.CancelAll();
  std::atomic<int> delivered{0};
  stream->Next([&](std::string, bool) { ++delivered; });
  stream.reset();  // joins the producer: it saw the cancel
  EXPECT_TRUE(refused.load());
  EXPECT_EQ(delivered.load(), 0);
}

TEST(StreamRegistry, AStreamAddedAfterCancelAllIsCancelledAtOnce) {
  StreamRegistry registry;
  registry.CancelAll();
  std::atomic<bool> refused{false};
  auto stream = EndlessStream(&refused);
  registry.Add(stream);
  std::atomic<int> delivered{0};
  // A connection asks for its next piece right after adding the stream (NextPiece): nothing
  // comes, now or later.
  stream->Next([&](std::string, bool) { ++delivered; });
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(delivered.load(), 0);
  stream.reset();
  EXPECT_TRUE(refused.load());
  EXPECT_EQ(delivered.load(), 0);
}

TEST(StreamRegistry, AStreamAddedBeforeAStopStillDeliversUntilIt) {
  StreamRegistry registry;
  std::atomic<bool> refused{false};
  auto stream = EndlessStream(&refused);
  registry.Add(stream);
  std::atomic<int> delivered{0};
  stream->Next([&](std::string piece, bool last) {
    EXPECT_EQ(piece, "piece\n");
    EXPECT_FALSE(last);
    ++delivered;
  });
  for (int i = 0; i < 2000 && delivered.load() == 0; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(delivered.load(), 1);
  registry.CancelAll();
  stream.reset();
  EXPECT_TRUE(refused.load());
}

}  // namespace
}  // namespace bounced::testing
