// byte_scan_test.cc: FindAnyOf (classifier/byte_scan.h) finds what a byte-by-byte search finds
// for every start and limit, across its 32-byte, 16-byte and tail steps.
#include "classifier/byte_scan.h"

#include <gtest/gtest.h>

#include <string>

namespace bounced {
namespace {

size_t Naive(const std::string& s, size_t from, size_t limit) {
  for (size_t i = from; i < limit; ++i) {
    if (s[i] == '\n' || s[i] == '\t') return i;
  }
  return limit;
}

TEST(FindAnyOf, FindsWhatAByteByByteSearchFindsForEveryStartAndLimit) {
  for (size_t size = 0; size <= 80; ++size) {
    for (size_t hit = 0; hit <= size; ++hit) {  // hit == size: none in the text
      std::string s(size, 'x');
      if (hit < size) s[hit] = hit % 2 == 0 ? '\n' : '\t';
      if (hit + 7 < size) s[hit + 7] = '\n';  // a second one after it
      for (size_t limit = 0; limit <= size; ++limit) {
        for (size_t from = 0; from <= limit; ++from) {
          ASSERT_EQ((FindAnyOf<'\n', '\t'>(s.data(), from, limit)), Naive(s, from, limit))
              << size << " " << hit << " " << from << " " << limit;
        }
      }
    }
  }
}

}  // namespace
}  // namespace bounced
