// netstring_test.cc: netstring framing as Postfix's socketmap uses it.
#include "daemon/netstring.h"

#include <gtest/gtest.h>

namespace bounced {
namespace {

TEST(Netstring, EncodesLengthColonPayloadComma) {
  EXPECT_EQ(EncodeNetstring("OK 550 5.1.1 x"), "14:OK 550 5.1.1 x,");
  EXPECT_EQ(EncodeNetstring(""), "0:,");
}

TEST(Netstring, DecodesMessagesSplitAnywhere) {
  NetstringReader r(100);
  std::string out;
  std::string stream = "24:recipient_access a@b.com,0:,3:abc,";
  std::vector<std::string> got;
  for (char c : stream) {
    r.Append(std::string_view(&c, 1));
    while (r.Next(&out) == NetstringReader::Result::kComplete) got.push_back(out);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"recipient_access a@b.com", "", "abc"}));
  EXPECT_EQ(r.buffered(), 0u);
}

TEST(Netstring, RefusesMalformedInput) {
  for (std::string bad :
       {"abc:x,", ":x,", "3:abcd,", "01:a,", "101:", "99999999999999999999999:", "5x"}) {
    NetstringReader r(100);
    r.Append(bad);
    std::string out;
    EXPECT_EQ(r.Next(&out), NetstringReader::Result::kError) << bad;
    EXPECT_FALSE(r.error().empty());
  }
}

TEST(Netstring, WaitsForTheRestOfAPartialMessage) {
  NetstringReader r(100);
  std::string out;
  r.Append("12");
  EXPECT_EQ(r.Next(&out), NetstringReader::Result::kNeedMore);
  r.Append(":hello");
  EXPECT_EQ(r.Next(&out), NetstringReader::Result::kNeedMore);
  r.Append(" world!,");
  EXPECT_EQ(r.Next(&out), NetstringReader::Result::kComplete);
  EXPECT_EQ(out, "hello world!");
}

}  // namespace
}  // namespace bounced
