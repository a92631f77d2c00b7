// mbox_test.cc: MboxSplitter on the mailbox shapes mail systems write (mboxo/mboxrd separators,
// CRLF line ends, no separator at all, an oversized message), fed whole and in pieces.
#include "classifier/mbox.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace bounced {
namespace {

struct Split {
  std::vector<std::string> messages;
  std::vector<bool> truncated;
};

// The mailbox fed in pieces of `piece` bytes (0: whole).
Split SplitMailbox(std::string_view mbox, size_t piece = 0, size_t max = 1 << 20) {
  Split out;
  MboxSplitter splitter(max);
  auto on_message = [&out](std::string_view m, bool truncated) {
    out.messages.emplace_back(m);
    out.truncated.push_back(truncated);
  };
  if (piece == 0) piece = mbox.size() + 1;
  for (size_t at = 0; at < mbox.size(); at += piece)
    splitter.Push(mbox.substr(at, piece), on_message);
  splitter.Finish(on_message);
  EXPECT_EQ(splitter.messages(), out.messages.size());
  return out;
}

constexpr std::string_view kTwo =
    "From MAILER-DAEMON Sun Nov 29 17:09:53 2026\n"
    "From: MAILER-DAEMON@mta.example\n"
    "Subject: Undelivered Mail Returned to Sender\n"
    "\n"
    "First body line.\n"
    ">From the quoted body line\n"
    "\n"
    "From MAILER-DAEMON Sun Nov 29 17:10:01 2026\n"
    "From: postmaster@mx.example\n"
    "\n"
    "Second body, mentioning\n"
    "From here on, not a separator (no empty line before it).\n"
    "\n";

TEST(MboxSplitter, SplitsAtFromLinesAfterEmptyLines) {
  Split s = SplitMailbox(kTwo);
  ASSERT_EQ(s.messages.size(), 2u);
  EXPECT_EQ(s.messages[0],
            "From: MAILER-DAEMON@mta.example\n"
            "Subject: Undelivered Mail Returned to Sender\n"
            "\n"
            "First body line.\n"
            ">From the quoted body line\n");
  EXPECT_EQ(s.messages[1],
            "From: postmaster@mx.example\n"
            "\n"
            "Second body, mentioning\n"
            "From here on, not a separator (no empty line before it).\n");
  EXPECT_FALSE(s.truncated[0]);
  EXPECT_FALSE(s.truncated[1]);
}

TEST(MboxSplitter, WhereThePiecesBreakChangesNothing) {
  const Split whole = SplitMailbox(kTwo);
  for (size_t piece : {1, 2, 3, 4, 5, 6, 7, 13, 64}) {
    Split s = SplitMailbox(kTwo, piece);
    EXPECT_EQ(s.messages, whole.messages) << piece;
  }
}

TEST(MboxSplitter, CrlfLineEnds) {
  std::string crlf;
  for (char c : kTwo) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  for (size_t piece : {0, 1, 5}) {
    Split s = SplitMailbox(crlf, piece);
    ASSERT_EQ(s.messages.size(), 2u) << piece;
    EXPECT_EQ(s.messages[0].substr(0, 33), "From: MAILER-DAEMON@mta.example\r\n");
    EXPECT_EQ(s.messages[1].substr(s.messages[1].size() - 4), ").\r\n");
  }
}

TEST(MboxSplitter, AMailboxWithoutSeparatorIsOneMessage) {
  constexpr std::string_view kPlain = "From: a@example.org\nSubject: x\n\nbody\n";
  Split s = SplitMailbox(kPlain);
  ASSERT_EQ(s.messages.size(), 1u);
  EXPECT_EQ(s.messages[0], kPlain);
}

TEST(MboxSplitter, EmptyAndDegenerateMailboxes) {
  EXPECT_TRUE(SplitMailbox("").messages.empty());
  EXPECT_TRUE(SplitMailbox("\n\n\r\n").messages.empty());
  // A separator with nothing after it is an empty message.
  Split s = SplitMailbox("From x Sun Nov 29 17:09:53 2026\n");
  ASSERT_EQ(s.messages.size(), 1u);
  EXPECT_EQ(s.messages[0], "");
  // Leading empty lines are dropped; a last line without a line end is kept, even a short one.
  s = SplitMailbox("\n\nFrom x\nA: b\n\nbo");
  ASSERT_EQ(s.messages.size(), 1u);
  EXPECT_EQ(s.messages[0], "A: b\n\nbo");
  // "From" without its space, or ending the line, is content.
  s = SplitMailbox("From x\nA: b\n\nFrom\nFromage\n");
  ASSERT_EQ(s.messages.size(), 1u);
  EXPECT_EQ(s.messages[0], "A: b\n\nFrom\nFromage\n");
}

TEST(MboxSplitter, AnOversizedMessageIsCutAndTheNextOneStillFound) {
  const std::string big = "From a\nA: " + std::string(100, 'x') + "\n\nFrom b\nB: c\n";
  for (size_t piece : {0, 1, 7}) {
    Split s = SplitMailbox(big, piece, 16);
    ASSERT_EQ(s.messages.size(), 2u) << piece;
    EXPECT_EQ(s.messages[0], "A: " + std::string(13, 'x'));
    EXPECT_TRUE(s.truncated[0]);
    EXPECT_EQ(s.messages[1], "B: c\n");
    EXPECT_FALSE(s.truncated[1]);
  }
}

// Inside a message the splitter jumps from "\nFrom " to "\nFrom " instead of reading line by
// line: empty lines before a separator (however many, LF or CRLF) are dropped either way, a
// "From " after a content line stays, and a piece that ends inside the empty lines or the
// "From " itself reads as the whole does.
TEST(MboxSplitter, EmptyLineRunsBeforeASeparator) {
  std::string body;
  for (int i = 0; i < 40; ++i) body += "line " + std::to_string(i) + " of the body\n";
  const std::string mbox = "From a\nA: 1\n\n" + body + "From not-a-separator\n" + body +
                           "\n\r\n\n\r\nFrom b\nB: 2\n\n" + body + "\r\n\r\nFrom c\nC: 3\n";
  const Split whole = SplitMailbox(mbox);
  ASSERT_EQ(whole.messages.size(), 3u);
  EXPECT_EQ(whole.messages[0], "A: 1\n\n" + body + "From not-a-separator\n" + body);
  EXPECT_EQ(whole.messages[1], "B: 2\n\n" + body);
  EXPECT_EQ(whole.messages[2], "C: 3\n");
  for (size_t piece = 1; piece < 80; ++piece) {
    EXPECT_EQ(SplitMailbox(mbox, piece).messages, whole.messages) << piece;
  }
}

TEST(MboxSplitter, TheSplitterCanBeUsedAgainAfterFinish) {
  MboxSplitter splitter(1 << 20);
  std::vector<std::string> got;
  auto on_message = [&got](std::string_view m, bool) { got.emplace_back(m); };
  splitter.Push("From a\nA: 1\n", on_message);
  splitter.Finish(on_message);
  splitter.Push("From b\nB: 2\n", on_message);
  splitter.Finish(on_message);
  EXPECT_EQ(got, (std::vector<std::string>{"A: 1\n", "B: 2\n"}));
  EXPECT_EQ(splitter.messages(), 2u);
}

}  // namespace
}  // namespace bounced
