// dsn_fields_test.cc: delivery-status fields (classifier/dsn_fields.h) as real MTAs write them:
// names in any case and of any length, blanks before the colon, groups per recipient.
#include "classifier/dsn_fields.h"

#include <gtest/gtest.h>

#include <string>

namespace bounced::dsn {
namespace {

TEST(DsnFields, FindsFieldsWrittenInAnyCase) {
  DeliveryStatus ds = ParseDeliveryStatus(
      "REPORTING-MTA: dns; mx.example.org\n"
      "X-Postfix-Queue-ID: 4F2A1C0123\n"
      "\n"
      "final-RECIPIENT: rfc822; a@example.com\n"
      "ACTION: failed\n"
      "Status: 5.1.1\n"
      "diagnostic-code: smtp; 550 5.1.1 no such user\n");
  EXPECT_EQ(FindField(ds.per_message, "reporting-mta"), "dns; mx.example.org");
  EXPECT_EQ(FindField(ds.per_message, "x-postfix-queue-id"), "4F2A1C0123");
  ASSERT_EQ(ds.per_recipient.size(), 1u);
  const auto& g = ds.per_recipient[0];
  EXPECT_EQ(FindField(g, "final-recipient"), "rfc822; a@example.com");
  EXPECT_EQ(FindField(g, "action"), "failed");
  EXPECT_EQ(FindField(g, "status"), "5.1.1");
  EXPECT_EQ(FindField(g, "diagnostic-code"), "smtp; 550 5.1.1 no such user");
  EXPECT_EQ(FindField(g, "remote-mta"), "");
  // A name that only shares the first letter and the size is another field.
  EXPECT_EQ(FindField(g, "actiom"), "");
  EXPECT_EQ(FindField(g, "final-recipiemt"), "");
}

TEST(DsnFields, ReadsNamesOfEveryLengthUpToSixtyFour) {
  for (size_t n = 1; n <= 70; ++n) {
    std::string name;
    for (size_t i = 0; i < n; ++i) name += "Ab-9"[i % 4];
    std::string lower;
    for (char c : name) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    const std::string text = name + ": value\n";  // the fields view it
    DeliveryStatus ds = ParseDeliveryStatus(text);
    if (n <= 64) {
      EXPECT_EQ(FindField(ds.per_message, lower), "value") << n;
    } else {
      EXPECT_TRUE(ds.per_message.empty()) << n;  // too long for a name
    }
  }
}

TEST(DsnFields, NameEndsAtTheFirstByteNoNameHolds) {
  // Blanks before the colon are read (Mimecast); any other byte ends the name, and the line is
  // then a continuation of the field before it.
  DeliveryStatus ds = ParseDeliveryStatus(
      "Final-Recipient : rfc822; a@example.com\n"
      "Diagnostic-Code_with_underscores: x\n"
      "Remote-MTA\xC3\xA9-is-not-a-name-either: y\n");
  ASSERT_EQ(ds.per_recipient.size(), 1u);
  EXPECT_EQ(FindField(ds.per_recipient[0], "final-recipient"),
            "rfc822; a@example.com Diagnostic-Code_with_underscores: x "
            "Remote-MTA\xC3\xA9-is-not-a-name-either: y");
}

TEST(DsnFields, StartsAGroupPerRecipient) {
  DeliveryStatus ds = ParseDeliveryStatus(
      "Reporting-MTA: dns; mx.example.org\n\n"
      "Original-Recipient: rfc822; A@example.com\n"
      "FINAL-RECIPIENT: rfc822; a@example.com\n"
      "Action: failed\n\n"
      "Final-Recipient: rfc822; b@example.com\n"
      "Action: delayed\n");
  ASSERT_EQ(ds.per_recipient.size(), 2u);
  EXPECT_EQ(FindField(ds.per_recipient[0], "original-recipient"), "rfc822; A@example.com");
  EXPECT_EQ(FindField(ds.per_recipient[0], "final-recipient"), "rfc822; a@example.com");
  EXPECT_EQ(FindField(ds.per_recipient[1], "action"), "delayed");
}

}  // namespace
}  // namespace bounced::dsn
