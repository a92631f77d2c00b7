// verp_test.cc: VERP return paths (classifier/verp.h): decoding Postfix's format and its
// variations, finding the return path in a delivered bounce's header, and what it adds to a
// parsed bounce. Reads the embedded rules only; writes nothing.
#include "classifier/verp.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "classifier/dsn_parser.h"
#include "classifier/result.h"
#include "classifier/rules.h"

namespace bounced {
namespace {

const RuleSet& Rules() {
  static std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  return *rules;
}

std::string Decoded(std::string_view path, const VerpFormat& f = {}) {
  return DecodeVerp(path, f).value_or("(none)");
}

TEST(DecodeVerp, PostfixFormat) {
  EXPECT_EQ(Decoded("bounces+alice=example.com@news.example.org"), "alice@example.com");
  EXPECT_EQ(Decoded("<bounces+alice=example.com@news.example.org>"), "alice@example.com");
  EXPECT_EQ(Decoded("Bounces <bounces+alice=Example.COM@news.example.org>"), "alice@example.com");
  EXPECT_EQ(Decoded(" \"bounces+alice=example.com\"@news.example.org "), "alice@example.com");
  // Mailman's list-bounces+...: the prefix runs to the first '+'.
  EXPECT_EQ(Decoded("news-bounces+bob=mail.example.net@lists.example.org"), "bob@mail.example.net");
}

TEST(DecodeVerp, RecipientsWithDelimitersInTheirLocalPart) {
  // The prefix ends at the first '+', the recipient's domain starts after the last '='.
  EXPECT_EQ(Decoded("bounces+alice+news=example.com@x.example.org"), "alice+news@example.com");
  EXPECT_EQ(Decoded("bounces+a=b=example.com@x.example.org"), "a=b@example.com");
}

TEST(DecodeVerp, WhatIsNoVerpAddress) {
  for (std::string_view path :
       {"bounces@news.example.org", "bounces+@news.example.org", "+alice=example.com@x.org",
        "bounces+alice@news.example.org", "bounces+alice=@news.example.org",
        "bounces+=example.com@news.example.org", "bounces+alice=exa mple.com@news.example.org",
        "bounces+alice=example..com@news.example.org", "bounces+alice=example.com",
        "bounces+alice=example.com@", "bounces+al<ice=example.com@news.example.org", "", "<>"}) {
    EXPECT_EQ(DecodeVerp(path, {}), std::nullopt) << path;
  }
}

TEST(DecodeVerp, PrefixesAndDomainsNarrowWhatIsRead) {
  VerpFormat f;
  f.prefixes = {"bounces", "*-bounces"};
  f.domains = {"*.example.org"};
  EXPECT_EQ(Decoded("BOUNCES+alice=example.com@news.example.org", f), "alice@example.com");
  EXPECT_EQ(Decoded("list-bounces+alice=example.com@lists.example.org", f), "alice@example.com");
  // A user's own plus address that happens to hold a '=' is no return path of ours.
  EXPECT_EQ(Decoded("alice+x=y.com@news.example.org", f), "(none)");
  EXPECT_EQ(Decoded("bounces+alice=example.com@example.net", f), "(none)");
}

TEST(DecodeVerp, OtherDelimiters) {
  VerpFormat f;
  f.delimiters = "-=";
  EXPECT_EQ(Decoded("bounce-alice=example.com@news.example.org", f), "alice@example.com");
  EXPECT_EQ(Decoded("bounces+alice=example.com@news.example.org", f), "(none)");
}

TEST(CheckVerpFormat, RefusesWhatCannotBeRead) {
  EXPECT_TRUE(CheckVerpFormat({}).ok());
  for (std::string d : {"+", "++", "+=-", "+@", " =", "+<", "=\x01"}) {
    VerpFormat f;
    f.delimiters = d;
    EXPECT_FALSE(CheckVerpFormat(f).ok()) << d;
  }
  VerpFormat f;
  f.prefixes = {""};
  Status s = CheckVerpFormat(f);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("empty pattern"), std::string::npos) << s.message();
}

TEST(VerpRecipientOf, ReadsTheEnvelopeRecipientsHeaderFirst) {
  const std::string headers =
      "Return-Path: <>\n"
      "Delivered-To: mailbox@news.example.org\n"
      "X-Original-To: bounces+carol=example.com@news.example.org\n"
      "To: bounces+dave=example.com@news.example.org\n"
      "Subject: Undelivered Mail Returned to Sender\n\nbody\n";
  EXPECT_EQ(VerpRecipientOf(headers, {}), "carol@example.com");
  // Delivered-To, the first (the latest hop), when there is no X-Original-To.
  EXPECT_EQ(VerpRecipientOf("Delivered-To: bounces+erin=example.com@news.example.org\r\n"
                            "Delivered-To: bounces+old=example.com@news.example.org\r\n"
                            "To: someone@example.org\r\n\r\n",
                            {}),
            "erin@example.com");
  EXPECT_EQ(VerpRecipientOf("From MAILER-DAEMON Tue Dec  1 10:00:00 2026\n"
                            "To: \"News\" <bounces+frank=example.com@news.example.org>\n\n",
                            {}),
            "frank@example.com");
  // Only the header counts, and only addresses in the format.
  EXPECT_EQ(VerpRecipientOf("To: owner@news.example.org\n\n"
                            "To: bounces+x=example.com@news.example.org\n",
                            {}),
            std::nullopt);
}

constexpr std::string_view kNoAddressBounce =
    "From: MAILER-DAEMON@mx.example.net\n"
    "To: bounces+alice=icloud.com@news.example.org\n"
    "Subject: Undeliverable: Hello\n"
    "Message-ID: <x1@mx.example.net>\n\n"
    "Your message could not be delivered.\n\n"
    "The remote server said: 554 5.7.1 [CS01] Message rejected due to local policy.\n";

TEST(ApplyVerp, ABounceThatNamesNoRecipientIsAboutTheEncodedOne) {
  ParsedBounce b = ParseBounce(kNoAddressBounce, Rules());
  ASSERT_EQ(b.recipients.size(), 1u) << b.error;
  ASSERT_EQ(b.recipients[0].recipient, "");
  std::optional<std::string> ours = VerpRecipientOf(kNoAddressBounce, {});
  ASSERT_EQ(ours, "alice@icloud.com");
  EXPECT_EQ(ApplyVerp(&b, *ours, Rules()), 1u);
  const Result& r = b.recipients[0];
  EXPECT_EQ(r.recipient, "alice@icloud.com");
  EXPECT_EQ(r.original_recipient, "");
  // Classified again with the recipient's domain: iCloud's own code.
  EXPECT_EQ(r.provider, "icloud");
  EXPECT_EQ(r.provider_code, "CS01");
  EXPECT_EQ(r.category, Category::kPolicyRejection);
  EXPECT_FALSE(r.hard_bounce());
  EXPECT_EQ(r.status, "5.7.1");
  EXPECT_EQ(r.reply_code, "554");
  EXPECT_NE(r.diagnostic.find("[CS01]"), std::string::npos);
}

TEST(ApplyVerp, AForwardedRecipientKeepsItsAddressAndGainsOurs) {
  std::string message(kNoAddressBounce);
  message.replace(message.find("delivered."), 10, "delivered to bob@gmail.com.");
  ParsedBounce b = ParseBounce(message, Rules());
  ASSERT_EQ(b.recipients.size(), 1u);
  ASSERT_EQ(b.recipients[0].recipient, "bob@gmail.com");
  const Result before = b.recipients[0];
  EXPECT_EQ(ApplyVerp(&b, "alice@icloud.com", Rules()), 1u);
  EXPECT_EQ(b.recipients[0].recipient, "bob@gmail.com");
  EXPECT_EQ(b.recipients[0].original_recipient, "alice@icloud.com");
  EXPECT_EQ(b.recipients[0].category, before.category);
  EXPECT_EQ(b.recipients[0].provider, before.provider);
  // Told again (a second pass, or the bounce's own Original-Recipient): nothing changes.
  EXPECT_EQ(ApplyVerp(&b, "alice@icloud.com", Rules()), 0u);
}

TEST(ApplyVerp, TheEncodedRecipientItselfChangesNothing) {
  std::string message(kNoAddressBounce);
  message.replace(message.find("delivered."), 10, "delivered to Alice@iCloud.com.");
  ParsedBounce b = ParseBounce(message, Rules());
  ASSERT_EQ(b.recipients.size(), 1u);
  const Result before = b.recipients[0];
  EXPECT_EQ(ApplyVerp(&b, "alice@icloud.com", Rules()), 0u);
  EXPECT_EQ(b.recipients[0].recipient, before.recipient);
  EXPECT_EQ(b.recipients[0].original_recipient, "");
  EXPECT_EQ(ApplyVerp(&b, "", Rules()), 0u);
}

TEST(ApplyVerp, AFeedbackReportKeepsItsCategory) {
  ParsedBounce b;
  b.kind = MessageKind::kFeedbackReport;
  Result r;
  r.category = Category::kComplaint;
  b.recipients.push_back(r);
  EXPECT_EQ(ApplyVerp(&b, "alice@gmail.com", Rules()), 1u);
  EXPECT_EQ(b.recipients[0].recipient, "alice@gmail.com");
  EXPECT_EQ(b.recipients[0].category, Category::kComplaint);
  EXPECT_EQ(b.recipients[0].provider, "gmail");
}

}  // namespace
}  // namespace bounced
