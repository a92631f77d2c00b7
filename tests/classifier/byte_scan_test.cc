// Tests for classifier/byte_scan.h: FindString gives std::string_view::find's answer.
#include "classifier/byte_scan.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

namespace bounced {
namespace {

TEST(FindString, FindsMultipartDelimitersAsFindDoes) {
  const std::string body =
      "--b1\nContent-Type: text/plain\n\nThe mail system\n\n--b1\nContent-Type: "
      "message/delivery-status\n\nAction: failed\n--b1--\n";
  for (size_t from = 0; from <= body.size() + 1; ++from) {
    EXPECT_EQ(FindString(body, "\n--b1", from), std::string_view(body).find("\n--b1", from))
        << from;
  }
  EXPECT_EQ(FindString(body, "\n--b2"), std::string_view::npos);
  EXPECT_EQ(FindString(body, ""), 0u);
  EXPECT_EQ(FindString("", "\n\n"), std::string_view::npos);
}

// Every needle position in buffers of every length up to past two 64-position SIMD steps, each
// buffer allocated to its exact size (a sanitizer build sees any read past it).
TEST(FindString, AgreesWithFindAtEveryPositionAndLength) {
  for (std::string_view needle : {"\nFrom ", "\n\n", "ab", "\n--=_Part_803174_1699560241.14"}) {
    for (size_t n = 0; n < 200; ++n) {
      for (size_t at = 0; at + needle.size() <= n; ++at) {
        auto buffer = std::make_unique<char[]>(n);
        for (size_t i = 0; i < n; ++i) buffer[i] = static_cast<char>('a' + i % 3);
        // A near miss before the needle: first and last byte right, the middle not.
        if (at >= needle.size() + 1 && needle.size() > 2) {
          needle.copy(buffer.get(), needle.size());
          buffer[1] = '#';
        }
        needle.copy(buffer.get() + at, needle.size());
        std::string_view text(buffer.get(), n);
        for (size_t from : {size_t{0}, at, at + 1, n}) {
          ASSERT_EQ(FindString(text, needle, from), text.find(needle, from))
              << "n=" << n << " at=" << at << " from=" << from;
        }
      }
    }
  }
}

}  // namespace
}  // namespace bounced
