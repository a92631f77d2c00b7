// address_test.cc: lookup keys (NormalizeAddress) as Postfix compares addresses.
#include <gtest/gtest.h>

#include "storage/store.h"

namespace bounced {
namespace {

TEST(AddressTest, LowerCasesWholeAddressAndDropsExtension) {
  EXPECT_EQ(NormalizeAddress("John.Doe+Newsletter@Example.COM"), "john.doe@example.com");
  EXPECT_EQ(NormalizeAddress("<USER@example.com>"), "user@example.com");
  EXPECT_EQ(NormalizeAddress("  user@example.com.  "), "user@example.com");
  EXPECT_EQ(NormalizeAddress("a+b+c@x.org"), "a@x.org");
}

TEST(AddressTest, DelimitersAreConfigurable) {
  EXPECT_EQ(NormalizeAddress("a+b@x.org", ""), "a+b@x.org");
  EXPECT_EQ(NormalizeAddress("a-b@x.org", "-"), "a@x.org");
  EXPECT_EQ(NormalizeAddress("a-b+c@x.org", "+-"), "a@x.org");
  EXPECT_EQ(NormalizeAddress("+only@x.org"), "+only@x.org");  // never an empty local part
}

TEST(AddressTest, RejectsWhatIsNotAnAddress) {
  EXPECT_EQ(NormalizeAddress(""), "");
  EXPECT_EQ(NormalizeAddress("no-at-sign"), "");
  EXPECT_EQ(NormalizeAddress("@x.org"), "");
  EXPECT_EQ(NormalizeAddress("a@"), "");
  EXPECT_EQ(NormalizeAddress("a\n@x.org"), "");
  EXPECT_EQ(NormalizeAddress(std::string(400, 'a') + "@x.org"), "");
  EXPECT_EQ(DomainOf("a@x.org"), "x.org");
  EXPECT_EQ(DomainOf("none"), "");
}

}  // namespace
}  // namespace bounced
