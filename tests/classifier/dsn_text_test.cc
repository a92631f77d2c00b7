// dsn_text_test.cc: the text side of the DSN parser (classifier/dsn_text.h): the explanation a
// bounce's text parts make (viewed in place or joined, cut at the returned message, split into
// lines once), and the recipient blocks read from it.
#include "classifier/dsn_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace bounced::dsn {
namespace {

MimeView ViewOf(std::vector<MimeLeaf> parts) {
  MimeView view;
  view.parts = std::move(parts);
  return view;
}

// What the lines of `text` must be: split at '\n', no line for a final '\n'.
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

TEST(Explanation, OnePlainPartIsViewedInPlace) {
  MimeView view = ViewOf({MimeLeaf("text/plain", "Delivery failed.\n\na@example.org\n", false),
                          MimeLeaf("text/plain", "returned copy\n", true)});
  Explanation e(view);
  EXPECT_EQ(e.text(), "Delivery failed.\n\na@example.org\n");
  EXPECT_EQ(e.text().data(), view.parts[0].text().data());
  EXPECT_EQ(e.lines(), Lines(e.text()));
  ASSERT_EQ(e.lines().size(), 3u);
  EXPECT_EQ(e.lines()[2], "a@example.org");
}

TEST(Explanation, SeveralPlainPartsAreJoinedAndHtmlOnlyWithoutPlain) {
  MimeView two = ViewOf({MimeLeaf("text/plain", "first", false),
                         MimeLeaf("text/html", "<p>ignored</p>", false),
                         MimeLeaf("text/plain", "second", false)});
  Explanation joined(two);
  EXPECT_EQ(joined.text(), "first\n\nsecond");
  EXPECT_EQ(joined.lines(), Lines(joined.text()));

  MimeView html = ViewOf({MimeLeaf("text/html", "Mail to<br>a@example.org &amp; b failed", false)});
  Explanation stripped(html);
  EXPECT_EQ(stripped.text(), "Mail to\na@example.org & b failed");
  EXPECT_EQ(stripped.lines(), Lines(stripped.text()));
}

TEST(Explanation, CutWhereTheReturnedMessageBeginsButNotAtALeadingMarker) {
  std::string body =
      "----- Original message -----\n"  // a heading over the explanation: kept
      "Your message to a@example.org could not be delivered: mailbox unavailable.\n"
      "\n"
      "----- Original message -----\n"
      "Subject: hello\n";
  MimeView view = ViewOf({MimeLeaf("text/plain", body, false)});
  Explanation e(view);
  EXPECT_EQ(e.text(), body.substr(0, body.find("\n\n") + 2));
  EXPECT_EQ(e.lines(), Lines(e.text()));
  EXPECT_EQ(e.lines().size(), 3u);
}

TEST(Explanation, LongTextIsCappedAtALineAndStillSplit) {
  std::string line(99, 'x');
  std::string body;
  while (body.size() < kMaxExplanationBytes + 1000) body += line + "\n";
  MimeView view = ViewOf({MimeLeaf("text/plain", body, false)});
  Explanation e(view);
  // Cut after the last whole line before the limit, and says so.
  EXPECT_EQ(e.text().size(), kMaxExplanationBytes / 100 * 100);
  EXPECT_TRUE(e.cut());
  EXPECT_EQ(e.lines(), Lines(e.text()));
  // A text that ends (at a returned-message marker) before the limit is not cut.
  MimeView returned = ViewOf({MimeLeaf(
      "text/plain", "550 5.1.1 user unknown: a@b.example\n\n--- Original message follows.\n" + body,
      false)});
  Explanation whole(returned);
  EXPECT_FALSE(whole.cut());
  EXPECT_LT(whole.text().size(), 100u);
}

TEST(BlocksFor, MatchesAddressesWithoutCaseAndKeepsEachOwnBlock) {
  Explanation e(
      std::string_view("The following recipients failed:\n"
                       "\n"
                       "  User.One@Example.ORG\n"
                       "    550 5.1.1 mailbox unknown here\n"
                       "  two@example.org\n"
                       "    552 5.2.2 mailbox over quota, try later\n"));
  std::vector<std::string> blocks = BlocksFor(
      e, {"User.One@example.org", "nobody@example.org", "two@EXAMPLE.org", "user.one@example.org"});
  ASSERT_EQ(blocks.size(), 4u);
  // The paragraph heading the list comes first (a report may state the reason there).
  EXPECT_EQ(blocks[0],
            "The following recipients failed:\nUser.One@Example.ORG\n550 5.1.1 mailbox unknown "
            "here\n");
  EXPECT_EQ(blocks[1], "");
  EXPECT_EQ(blocks[2], "two@example.org\n552 5.2.2 mailbox over quota, try later\n");
  // The local part is compared without case too (as before): the same block again.
  EXPECT_EQ(blocks[3], blocks[0]);
}

TEST(ScanExplanation, SkipsExcludedAddressesAndNormalisesTheDomain) {
  Explanation e(std::string_view(
      "This message was created automatically by mail delivery software.\n"
      "A message that you sent from sender@example.net could not be delivered.\n"
      "\n"
      "  Rcpt@Example.COM\n"
      "    host mx.example.com [192.0.2.1]: 550 5.1.1 user unknown in reply to RCPT TO\n"));
  std::vector<Finding> found = ScanExplanation(e, {"sender@example.net"}, {});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].recipient, "Rcpt@example.com");
  EXPECT_NE(found[0].diagnostic.find("550 5.1.1 user unknown"), std::string::npos);
  EXPECT_EQ(found[0].stage, "rcpt");
  EXPECT_EQ(found[0].remote_mta, "mx.example.com");
}

TEST(ScanExplanation, HostileTextDoesNotCrash) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "@@a@b.cc\n550 5.1.1 <x@y.zz>...\n>>> RCPT\n\n-----\n";
  Explanation e{std::string_view(text)};
  std::vector<Finding> found = ScanExplanation(e, {}, {});
  EXPECT_LE(found.size(), kMaxTextRecipients);
  std::vector<std::string> blocks = BlocksFor(e, {"a@b.cc", "x@y.zz", "|/bin/cat", ""});
  EXPECT_EQ(blocks.size(), 4u);
}

}  // namespace
}  // namespace bounced::dsn
