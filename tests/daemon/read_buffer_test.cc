// read_buffer_test.cc: common/read_buffer.h, the page-aligned buffer the file readers use.
#include "common/read_buffer.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>
#include <thread>

namespace bounced::testing {
namespace {

bool PageAligned(const char* p) { return reinterpret_cast<uintptr_t>(p) % kPageBytes == 0; }

TEST(PageBuffer, IsPageAlignedAndKeepsWhatItIsAskedToKeepWhenItGrows) {
  PageBuffer buffer;
  EXPECT_EQ(buffer.capacity(), 0u);
  buffer.Reserve(10);
  ASSERT_TRUE(PageAligned(buffer.data()));
  EXPECT_EQ(buffer.capacity(), kPageBytes);  // rounded up to whole pages
  const std::string text = "Final-Recipient: rfc822; user@example.org";
  text.copy(buffer.data(), text.size());
  buffer.Reserve(kPageBytes);  // no growth: nothing moves
  EXPECT_EQ(std::string(buffer.data(), text.size()), text);
  buffer.Reserve(3 * kPageBytes + 1, text.size());
  ASSERT_TRUE(PageAligned(buffer.data()));
  EXPECT_EQ(buffer.capacity(), 4 * kPageBytes);
  EXPECT_EQ(std::string(buffer.data(), text.size()), text);
  // Keeping more than the old capacity keeps only what there was.
  buffer.Reserve(8 * kPageBytes, 100 * kPageBytes);
  EXPECT_EQ(std::string(buffer.data(), text.size()), text);
}

TEST(PageBuffer, MovesWithoutCopying) {
  PageBuffer a(100);
  char* data = a.data();
  PageBuffer b = std::move(a);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b.capacity(), kPageBytes);
  EXPECT_EQ(a.capacity(), 0u);  // NOLINT(bugprone-use-after-move): a moved-from buffer is empty
  a.Reserve(1);
  EXPECT_TRUE(PageAligned(a.data()));
}

TEST(ReadAlignment, IsTheOffsetWithinItsPage) {
  EXPECT_EQ(ReadAlignment(0), 0u);
  EXPECT_EQ(ReadAlignment(4095), 4095u);
  EXPECT_EQ(ReadAlignment(4096), 0u);
  EXPECT_EQ(ReadAlignment(65536 + 17), 17u);
  EXPECT_EQ(ReadAlignment((uint64_t{1} << 40) + 4000), 4000u);
}

// A pipe's writes arrive in pieces; ReadToEnd reads to the writer's close, growing the buffer
// past its first size, and stops at `max`.
TEST(ReadToEnd, ReadsToTheEndOrToTheLimit) {
  std::string text;
  for (int i = 0; text.size() < 3 * kPageBytes; ++i)
    text.append("line ").append(std::to_string(i)).append("\n");
  for (size_t max : {text.size() + 100, size_t{5000}}) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    std::thread writer([&] {
      for (size_t at = 0; at < text.size(); at += 1000) {
        size_t n = std::min<size_t>(1000, text.size() - at);
        ASSERT_EQ(::write(fds[1], text.data() + at, n), static_cast<ssize_t>(n));
      }
      ::close(fds[1]);
    });
    PageBuffer buffer;
    size_t size = 99;
    EXPECT_EQ(ReadToEnd(fds[0], &buffer, max, &size, kPageBytes), 0);
    writer.join();
    ::close(fds[0]);
    const size_t want = std::min(max, text.size());
    EXPECT_EQ(size, want);
    EXPECT_EQ(std::string(buffer.data(), size), text.substr(0, want));
    EXPECT_TRUE(PageAligned(buffer.data()));
  }
  // A read that fails gives its errno.
  PageBuffer buffer;
  size_t size = 0;
  EXPECT_EQ(ReadToEnd(-1, &buffer, 100, &size), EBADF);
  EXPECT_EQ(size, 0u);
}

}  // namespace
}  // namespace bounced::testing
