// mail_date_test.cc: ParseMailDate on the Date forms mail systems write (RFC 5322 and its
// obsolete forms, asctime), values it must refuse, and MessageDate's choice of header.
#include "classifier/mail_date.h"

#include <gtest/gtest.h>

#include <optional>

namespace bounced {
namespace {

constexpr int64_t k20261129_170953 = 1795972193;  // 2026-11-29 17:09:53 UTC

TEST(ParseMailDate, Rfc5322Forms) {
  EXPECT_EQ(ParseMailDate("Sun, 29 Nov 2026 17:09:53 +0000"), k20261129_170953);
  EXPECT_EQ(ParseMailDate("Sun, 29 Nov 2026 18:09:53 +0100 (CET)"), k20261129_170953);
  EXPECT_EQ(ParseMailDate(" 29 Nov 2026 09:09:53 -0800"), k20261129_170953);
  EXPECT_EQ(ParseMailDate("Thu, 5 Dec 2013 13:44:02 +0900 (JST)"), 1386218642);
  EXPECT_EQ(ParseMailDate("29 Nov 2026 17:09 GMT"), 1795972140);  // no day name, no seconds
  EXPECT_EQ(ParseMailDate("Sunday, 29 November 2026 17:09:53 +01:00"), k20261129_170953 - 3600);
  EXPECT_EQ(ParseMailDate("Thu, 29 Feb 2024 00:00:00 Z"), 1709164800);
  // A comment anywhere, and nested.
  EXPECT_EQ(ParseMailDate("Sun, (day) 29 Nov (the (11th) month) 2026 17:09:53 +0000"),
            k20261129_170953);
}

TEST(ParseMailDate, ObsoleteForms) {
  EXPECT_EQ(ParseMailDate("Sun, 29 Nov 26 12:09:53 EST"), k20261129_170953);  // 2-digit year
  EXPECT_EQ(ParseMailDate("Sat, 2 Jan 99 03:04:05 UT"), 915246245);
  EXPECT_EQ(ParseMailDate("Sat, 2 Jan 099 03:04:05 GMT"), 915246245);      // 3-digit year
  EXPECT_EQ(ParseMailDate("29 Nov 2026 17:09:53 A"), k20261129_170953);    // military: +0000
  EXPECT_EQ(ParseMailDate("29 Nov 2026 17:09:53"), k20261129_170953);      // no zone: UTC
  EXPECT_EQ(ParseMailDate("Sun Nov 29 17:09:53 2026"), k20261129_170953);  // asctime
  EXPECT_EQ(ParseMailDate("Sun,\r\n 29 Nov 2026\r\n\t17:09:53 +0000"), k20261129_170953);
}

TEST(ParseMailDate, RefusesWhatIsNoDate) {
  for (const char* bad :
       {"", "garbage", "Sun, 31 Nov 2026 17:09:53 +0000", "Thu, 29 Feb 2025 00:00:00 +0000",
        "29 Nov 2026 24:00:00 +0000", "29 Nov 2026 17:60:00 +0000", "29 Foo 2026 17:09:53",
        "0 Nov 2026 17:09:53", "29 Nov 1969 23:59:59 +0000", "29 Nov 12026 17:09:53", "29 Nov 2026",
        "29 Nov 2026 17", "29 Nov 2026 1709:53", "Sun, 29 Nov", "((((((((((",
        "29 Nov 2026 -5:09:53"}) {
    EXPECT_EQ(ParseMailDate(bad), std::nullopt) << bad;
  }
}

TEST(MessageDate, ReadsTheTopHeaderBlock) {
  EXPECT_EQ(MessageDate("From: MAILER-DAEMON@mx.example\r\nDate: Sun, 29 Nov 2026 17:09:53 "
                        "+0000\r\nSubject: x\r\n\r\nbody\r\n"),
            k20261129_170953);
  // Folded, after an mbox separator, the obsolete "Date :" form.
  EXPECT_EQ(MessageDate("From MAILER-DAEMON Sun Nov 29 17:09:53 2026\nSubject: x\nDATE :\n "
                        "Sun, 29 Nov 2026\n 17:09:53 +0000\n\nbody\n"),
            k20261129_170953);
  // The first Date counts; a Date inside the body (a returned message's) does not.
  EXPECT_EQ(MessageDate("Date: Sun, 29 Nov 2026 17:09:53 +0000\nDate: Mon, 30 Nov 2026 "
                        "00:00:00 +0000\n\n"),
            k20261129_170953);
  EXPECT_EQ(MessageDate("Subject: x\n\nDate: Sun, 29 Nov 2026 17:09:53 +0000\n"), std::nullopt);
  EXPECT_EQ(MessageDate("Dated: Sun, 29 Nov 2026 17:09:53 +0000\n\n"), std::nullopt);
  EXPECT_EQ(MessageDate("Date: yesterday\n\n"), std::nullopt);
  EXPECT_EQ(MessageDate(""), std::nullopt);
}

}  // namespace
}  // namespace bounced
