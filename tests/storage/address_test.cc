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

// Postfix reads "john.doe"@x as john.doe@x (that is what it logs and what its table lookups,
// socketmap included, ask for); a milter sees the recipient as the client wrote it. One key.
TEST(AddressTest, QuotedLocalPartIsUnquotedWhereNoQuotesAreNeeded) {
  EXPECT_EQ(NormalizeAddress("\"john.doe\"@example.org"), "john.doe@example.org");
  EXPECT_EQ(NormalizeAddress("<\"John.Doe\"@Example.ORG>"), "john.doe@example.org");
  // The extension is cut after unquoting (it used to cut inside the quotes: "john.doe@...).
  EXPECT_EQ(NormalizeAddress("\"John.Doe+x\"@example.org"), "john.doe@example.org");
  EXPECT_EQ(NormalizeAddress("\"john.doe+x\"@example.org", ""), "john.doe+x@example.org");
  // Quoted pieces of an RFC 5322 obsolete local part, and escapes that need no quotes.
  EXPECT_EQ(NormalizeAddress("\"john\".doe@example.org"), "john.doe@example.org");
  EXPECT_EQ(NormalizeAddress("\"jo\\hn\"@example.org"), "john@example.org");
  EXPECT_EQ(NormalizeAddress("\"+x\"@example.org"), "+x@example.org");  // never emptied
  // A quote left open runs to the end of the local part.
  EXPECT_EQ(NormalizeAddress("\"john.doe@example.org"), "john.doe@example.org");
}

TEST(AddressTest, QuotesStayWhereTheLocalPartNeedsThem) {
  EXPECT_EQ(NormalizeAddress("\"jane roe\"@example.org"), "\"jane roe\"@example.org");
  EXPECT_EQ(NormalizeAddress("\"Jane Roe+x\"@Example.org"), "\"jane roe\"@example.org");
  EXPECT_EQ(NormalizeAddress("\"a@b\"@example.org"), "\"a@b\"@example.org");
  EXPECT_EQ(NormalizeAddress("\".john\"@example.org"), "\".john\"@example.org");
  EXPECT_EQ(NormalizeAddress("\"john.\"@example.org"), "\"john.\"@example.org");
  EXPECT_EQ(NormalizeAddress("\"john..doe\"@example.org"), "\"john..doe\"@example.org");
  EXPECT_EQ(NormalizeAddress("\"\"@example.org"), "\"\"@example.org");
  // A quote or backslash inside is escaped again, once.
  EXPECT_EQ(NormalizeAddress("\"a\\\"b\"@example.org"), "\"a\\\"b\"@example.org");
  EXPECT_EQ(NormalizeAddress("\"a\\\\b\"@example.org"), "\"a\\\\b\"@example.org");
  // The unquoted spelling of such a local part gets the quotes Postfix would give it.
  EXPECT_EQ(NormalizeAddress("john..doe@example.org"), "\"john..doe\"@example.org");
  // 8-bit bytes (UTF-8) need no quotes (Postfix quotes 8-bit clean).
  EXPECT_EQ(NormalizeAddress("\"j\xc3\xbcrgen\"@example.org"), "j\xc3\xbcrgen@example.org");
}

TEST(AddressTest, NormalisingAKeyAgainKeepsIt) {
  for (const char* a : {"\"john.doe\"@example.org", "\"jane roe\"@example.org",
                        "\"a\\\"b\"@example.org", "\"\"@x.org", "a..b@x.org", "\"a@b\"@x.org",
                        "John.Doe+x@Example.org", "\"john.doe@example.org"}) {
    const std::string key = NormalizeAddress(a);
    ASSERT_FALSE(key.empty()) << a;
    EXPECT_EQ(NormalizeAddress(key), key) << a;
    EXPECT_EQ(NormalizeAddress(key, ""), key) << a;
    // So status, suppress and unsuppress take every stored key, and the spelling it came from.
    EXPECT_TRUE(IsAddress(key)) << a;
    EXPECT_TRUE(IsAddress(a)) << a;
  }
}

// A byte order mark a file left before the address (or its quoted local part) is no part of
// it (found by import_fuzz: a key that began with one lost it in a text export's round trip).
TEST(AddressTest, ALeadingByteOrderMarkIsDropped) {
  EXPECT_EQ(NormalizeAddress("\xEF\xBB\xBF"
                             "Ann@Example.org"),
            "ann@example.org");
  EXPECT_EQ(NormalizeAddress("\"\xEF\xBB\xBFi@x.org"), "i@x.org");
  EXPECT_EQ(NormalizeAddress("\"\xEF\xBB\xBF\xEF\xBB\xBF j\"@x.org"), "\" j\"@x.org");
  EXPECT_EQ(NormalizeAddress("\xEF\xBB\xBF@x.org"), "");
  EXPECT_EQ(NormalizeAddress("a\xEF\xBB\xBF@x.org"), "a\xEF\xBB\xBF@x.org");  // not at the start
  EXPECT_EQ(NormalizeAddress("\"\"@x.org"), "\"\"@x.org");                    // as before
}

TEST(AddressTest, RejectsWhatIsNotAnAddress) {
  EXPECT_EQ(NormalizeAddress(""), "");
  EXPECT_EQ(NormalizeAddress("no-at-sign"), "");
  EXPECT_EQ(NormalizeAddress("@x.org"), "");
  EXPECT_EQ(NormalizeAddress("a@"), "");
  EXPECT_EQ(NormalizeAddress("a\n@x.org"), "");
  EXPECT_EQ(NormalizeAddress(std::string(400, 'a') + "@x.org"), "");
  // Quoting would make the key longer than an address may be.
  EXPECT_EQ(NormalizeAddress(std::string(158, '.') + "@x.org").size(), 158u + 8);
  EXPECT_EQ(NormalizeAddress(std::string(310, '\\') + "@x.org"), "");
  // A blank in the domain (found by import_fuzz: "q3er@ex .." gave the key "q3er@ex ", which
  // normalised again to "q3er@ex").
  EXPECT_EQ(NormalizeAddress("q3er@ex .."), "");
  EXPECT_EQ(NormalizeAddress("a@example .org"), "");
  EXPECT_EQ(NormalizeAddress("a@example.org\t."), "");
  for (const std::string& a :
       {std::string(), std::string("no-at-sign"), std::string("@x.org"), std::string("a@"),
        std::string("<>"), std::string("a\n@x.org"), std::string(400, 'a') + "@x.org"}) {
    EXPECT_FALSE(IsAddress(a)) << a;
  }
  EXPECT_EQ(DomainOfKey("a@x.org"), "x.org");
  EXPECT_EQ(DomainOfKey("none"), "");
}

}  // namespace
}  // namespace bounced
