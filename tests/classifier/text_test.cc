// text_test.cc: the shared text helpers (classifier/text.h) on real reply texts.
#include "classifier/text.h"

#include <gtest/gtest.h>

#include <cctype>
#include <memory>
#include <random>
#include <string>
#include <string_view>

namespace bounced {
namespace {

TEST(FoldWhitespace, CollapsesRunsAndTrims) {
  EXPECT_EQ(FoldWhitespace("  550-5.1.1 The email\r\n550-5.1.1  account\t \n"),
            "550-5.1.1 The email 550-5.1.1 account");
  EXPECT_EQ(FoldWhitespace(""), "");
  EXPECT_EQ(FoldWhitespace(" \r\n\t "), "");
  EXPECT_EQ(FoldWhitespace("a"), "a");
}

TEST(LowerNonAsciiLetters, LowersEuropeanCapitalsInPlace) {
  auto lower = [](std::string s) {
    const size_t size = s.size();
    LowerNonAsciiLetters(s);
    EXPECT_EQ(s.size(), size);
    return s;
  };
  // Latin-1: À É Ö Ø Þ fold, × and ß stay; ASCII is left to AsciiLower.
  EXPECT_EQ(lower("\u00C0\u00C9\u00D6\u00D8\u00DE \u00D7\u00DF ABC"),
            "\u00E0\u00E9\u00F6\u00F8\u00FE \u00D7\u00DF ABC");
  // Latin Extended-A, both parities: Ą Ł Ś Ž Ÿ; İ, ı and ſ (whose pairs are ASCII) stay.
  EXPECT_EQ(lower("\u0104\u0141\u015A\u017D\u0178 \u0130\u0131\u017F \u0105\u0142"),
            "\u0105\u0142\u015B\u017E\u00FF \u0130\u0131\u017F \u0105\u0142");
  // Greek, with accents: Ω Σ Ά Έ Ό Ώ.
  EXPECT_EQ(lower("\u03A9\u03A3\u0386\u0388\u038C\u038F"), "\u03C9\u03C3\u03AC\u03AD\u03CC\u03CE");
  // Cyrillic: Я Ё Є Ґ Ӂ Ӑ Ӏ.
  EXPECT_EQ(lower("\u042F\u0401\u0404\u0490\u04C1\u04D0\u04C0"),
            "\u044F\u0451\u0454\u0491\u04C2\u04D1\u04CF");
  // Other scripts, three-byte letters and ill-formed bytes are left alone.
  EXPECT_EQ(lower("\u7528\u6237 \u212A \u1E9E"), "\u7528\u6237 \u212A \u1E9E");
  EXPECT_EQ(lower(std::string("x\xC3") + "A" + "\xD0"), std::string("x\xC3") + "A" + "\xD0");
  EXPECT_EQ(lower(""), "");
}

TEST(Sanitize, DropsControlsAndFixesUtf8) {
  EXPECT_EQ(Sanitize("a\x01"
                     "b\x7f"
                     "c"),
            "abc");
  EXPECT_EQ(Sanitize("line1\r\nline2"), "line1 line2");
  EXPECT_EQ(Sanitize("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(Sanitize("bad\xff"
                     "byte"),
            "bad\xef\xbf\xbd"
            "byte");
  EXPECT_EQ(Sanitize("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");                  // overlong '/'
  EXPECT_EQ(Sanitize("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  EXPECT_EQ(Sanitize("\xc2\x85x"), "x");  // C1 control (NEL) dropped
  EXPECT_EQ(Sanitize(std::string("nul\0in", 6)), "nulin");
}

TEST(MaskControls, ShowsEachControlAsAQuestionMarkAndKeepsTheRest) {
  EXPECT_EQ(MaskControls("a\x1b[31mb\r\n\x7f\tc"), "a?[31mb????c");
  EXPECT_EQ(MaskControls("caf\xc3\xa9 x"), "caf\xc3\xa9 x");  // UTF-8 and blanks stay
  EXPECT_EQ(MaskControls(""), "");
}

TEST(Sanitize, CapsAtCharacterBoundary) {
  EXPECT_EQ(Sanitize("abcdef", 4), "abcd");
  EXPECT_EQ(Sanitize("ab\xc3\xa9\xc3\xa9", 5), "ab\xc3\xa9");
  EXPECT_EQ(Sanitize(std::string(10000, 'x')).size(), kMaxDiagnosticBytes);
}

// Clean text (printable ASCII, single inner spaces) is returned as is without being rebuilt;
// a trailing control byte sends the same text down the byte-by-byte path, which must agree.
// Sanitize also folds whitespace as FoldWhitespace does, so the DSN parser calls it alone.
TEST(Sanitize, FastPathAgreesWithFullPath) {
  std::mt19937 rng(7);
  const std::string alphabet = std::string("ab .:<>@\t\r\n\x01\x7f\xc3\xa9\xff") + '\0';
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    size_t len = rng() % 80;
    bool clean = rng() % 2 == 0;  // half of them from the clean alphabet only
    for (size_t k = 0; k < len; ++k) {
      s.push_back(clean ? "abc .:5"[rng() % 7] : alphabet[rng() % alphabet.size()]);
    }
    size_t max = 1 + rng() % 100;
    ASSERT_EQ(Sanitize(s, max), Sanitize(s + '\x01', max)) << s;
    ASSERT_EQ(Sanitize(FoldWhitespace(s), max), Sanitize(s, max)) << s;
  }
  EXPECT_EQ(Sanitize("550 5.1.1 no such user"), "550 5.1.1 no such user");
  EXPECT_EQ(Sanitize("two  spaces"), "two spaces");
  EXPECT_EQ(Sanitize(" lead"), "lead");
  EXPECT_EQ(Sanitize(std::string(15, 'x') + "  " + std::string(15, 'y')),
            std::string(15, 'x') + " " + std::string(15, 'y'));  // across a 16-byte block
}

TEST(ExtractEnhancedStatus, FindsCodesInRealReplies) {
  EXPECT_EQ(ExtractEnhancedStatus("550 5.1.1 <a@icloud.com>: user does not exist"), "5.1.1");
  EXPECT_EQ(ExtractEnhancedStatus("550-5.1.1 The email account that you tried to reach"), "5.1.1");
  EXPECT_EQ(ExtractEnhancedStatus("550 #5.1.0 Address rejected."), "5.1.0");
  EXPECT_EQ(ExtractEnhancedStatus("550 5.7.350 Remote server returned message detected as spam"),
            "5.7.350");
  EXPECT_EQ(ExtractEnhancedStatus("smtp; 5.2.2 - Over quota"), "5.2.2");
  EXPECT_EQ(ExtractEnhancedStatus("421 4.7.28 [1.2.3.4] Our system has detected"), "4.7.28");
  EXPECT_EQ(ExtractEnhancedStatus("(5.1.1)"), "5.1.1");
}

TEST(ExtractEnhancedStatus, IgnoresAddressesAndVersions) {
  EXPECT_EQ(ExtractEnhancedStatus("host 5.1.1.4 refused"), "");
  EXPECT_EQ(ExtractEnhancedStatus("client 10.5.1.1 blocked"), "");
  EXPECT_EQ(ExtractEnhancedStatus("Exim 4.94.2"), "");
  EXPECT_EQ(ExtractEnhancedStatus("v4.2.0 release"), "");
  EXPECT_EQ(ExtractEnhancedStatus("version 2.4.1-beta3"), "");
  EXPECT_EQ(ExtractEnhancedStatus("Sendmail 8.15.2"), "");
  EXPECT_EQ(ExtractEnhancedStatus("took 2.5.10x longer"), "");
  EXPECT_EQ(ExtractEnhancedStatus("no code at all"), "");
}

TEST(ExtractEnhancedStatus, PrefersTheOneAfterTheReplyCode) {
  EXPECT_EQ(ExtractEnhancedStatus("see RFC 5.7.1 notes; 550 5.1.1 no such user"), "5.1.1");
}

TEST(ExtractReplyCode, FindsCodesWhereMtasPutThem) {
  EXPECT_EQ(ExtractReplyCode("550 5.1.1 user unknown"), "550");
  EXPECT_EQ(ExtractReplyCode("550-5.1.1 The email account"), "550");
  EXPECT_EQ(ExtractReplyCode("host mx.example.com[1.2.3.4] said: 554 5.7.1 rejected"), "554");
  EXPECT_EQ(ExtractReplyCode("smtp; 552 5.2.2 mailbox full"), "552");
  EXPECT_EQ(ExtractReplyCode("SMTP error from remote mail server after RCPT TO:<a@b.c>:\n"
                             "    550 5.1.1 unknown"),
            "550");
  EXPECT_EQ(ExtractReplyCode("... while talking to mx.b.c.:\n>>> RCPT To:<a@b.c>\n<<< 550 No"),
            "550");
  EXPECT_EQ(ExtractReplyCode("Remote Server returned '550 5.1.10 RESOLVER.ADR.RecipientNotFound"),
            "550");
  EXPECT_EQ(ExtractReplyCode("421"), "421");
}

TEST(ExtractReplyCode, IgnoresOtherNumbers) {
  EXPECT_EQ(ExtractReplyCode("connect to mx.b.c[1.2.3.4]:25: Connection refused"), "");
  EXPECT_EQ(ExtractReplyCode("connect to mx.b.c[1.2.3.4]:587: Connection timed out"), "");
  EXPECT_EQ(ExtractReplyCode("mailbox is 550 MB over quota"), "");
  EXPECT_EQ(ExtractReplyCode("5500 things"), "");
  EXPECT_EQ(ExtractReplyCode("at 12:500 ms"), "");
  EXPECT_EQ(ExtractReplyCode("Host or domain name not found"), "");
}

TEST(HasCodes, AgreeWithTheExtractors) {
  for (std::string_view t :
       {"550 5.1.1 <a@b.c>: Recipient address rejected", "said: 421 try later", "5.7.1 denied",
        "mailbox is 550 MB over quota", "host 1.2.3.4 said nothing", "at 12:500 ms", "", "4.4.7",
        "v4.2.0.1", "<<< 554 no"}) {
    EXPECT_EQ(HasReplyCode(t), !ExtractReplyCode(t).empty()) << t;
    EXPECT_EQ(HasEnhancedStatus(t), !ExtractEnhancedStatus(t).empty()) << t;
  }
}

TEST(EqualsNoCase, FoldsOnlyAsciiLettersAtEveryLength) {
  EXPECT_TRUE(EqualsNoCase("Content-Transfer-Encoding", "content-transfer-encoding"));
  EXPECT_FALSE(EqualsNoCase("Content-Transfer-Encoding", "content-transfer-encodinG!"));
  // Every byte pair, in each position of an eight-byte word and in the tail.
  for (int x = 0; x < 256; ++x) {
    for (int y = 0; y < 256; ++y) {
      bool same = AsciiLower(static_cast<char>(x)) == AsciiLower(static_cast<char>(y));
      std::string a(11, 'q'), b(11, 'Q');
      a[x % 11] = static_cast<char>(x);
      b[x % 11] = static_cast<char>(y);
      ASSERT_EQ(EqualsNoCase(a, b), same) << x << " " << y;
    }
  }
}

TEST(Addresses, NormalizeAndDomain) {
  EXPECT_EQ(CanonicalAddress(" <John.Doe@Example.COM> "), "John.Doe@example.com");
  EXPECT_EQ(CanonicalAddress("rfc822; user@ICLOUD.com"), "user@icloud.com");
  EXPECT_EQ(CanonicalAddress("John <j@Mail.Example.ORG.>"), "j@mail.example.org");
  EXPECT_EQ(CanonicalAddress("postmaster"), "postmaster");
  EXPECT_EQ(DomainOf("User@Me.Com"), "me.com");
  EXPECT_EQ(DomainOf("<a@b.example>"), "b.example");
  EXPECT_EQ(DomainOf("nodomain"), "");
  EXPECT_EQ(DomainOf(""), "");
}

// DomainOf is what CanonicalAddress keeps after its last '@', whatever the input's shape.
TEST(Addresses, DomainOfMatchesCanonicalAddress) {
  std::mt19937 rng(11);
  const std::string alphabet = "aB.@<> ;rfc822X";
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    size_t len = rng() % 24;
    for (size_t k = 0; k < len; ++k) s.push_back(alphabet[rng() % alphabet.size()]);
    std::string normalized = CanonicalAddress(s);
    size_t at = normalized.rfind('@');
    ASSERT_EQ(DomainOf(s), at == std::string::npos ? "" : normalized.substr(at + 1)) << s;
  }
}

TEST(StageFromText, Postfix) {
  EXPECT_EQ(StageFromText("host x[1.2.3.4] said: 550 5.1.1 no (in reply to RCPT TO command)"),
            "rcpt");
  EXPECT_EQ(StageFromText("said: 554 5.7.1 spam (in reply to end of DATA command)"), "eom");
  EXPECT_EQ(StageFromText("said: 554 no (in reply to DATA command)"), "data");
  EXPECT_EQ(StageFromText("said: 553 sender (in reply to MAIL FROM command)"), "mail");
  EXPECT_EQ(StageFromText("said: 550 go away (in reply to EHLO command)"), "helo");
  EXPECT_EQ(StageFromText("said: 554 no service (in reply to initial greeting)"), "connect");
  EXPECT_EQ(StageFromText("connect to mx.b.c[1.2.3.4]:25: Connection refused"), "connect");
  EXPECT_EQ(StageFromText("lost connection with mx.b.c[1.2.3.4] while sending RCPT TO"), "rcpt");
  EXPECT_EQ(StageFromText("conversation with x timed out while sending end of data -- message "
                          "may be sent more than once"),
            "eom");
}

TEST(StageFromText, EximSendmailAndGeneric) {
  EXPECT_EQ(StageFromText("SMTP error from remote mail server after RCPT TO:<a@b.c>: 550 no"),
            "rcpt");
  EXPECT_EQ(StageFromText("SMTP error from remote mail server after end of data: 550 spam"), "eom");
  EXPECT_EQ(StageFromText("SMTP error from remote mail server after MAIL FROM:<a@b.c> SIZE=1"),
            "mail");
  EXPECT_EQ(StageFromText("SMTP error from remote mail server after initial connection: 554"),
            "connect");
  EXPECT_EQ(StageFromText(">>> MAIL From:<a@b.c>\n<<< 250 ok\n>>> RCPT To:<x@y.z>\n<<< 550 no"),
            "rcpt");
  EXPECT_EQ(StageFromText(">>> DATA\n<<< 354 go\n>>> .\n<<< 554 rejected"), "eom");
  EXPECT_EQ(StageFromText("550 5.1.1 user unknown"), "");
  EXPECT_EQ(NormalizeStage("RCPT"), "rcpt");
  EXPECT_EQ(NormalizeStage("end-of-data"), "eom");
  EXPECT_EQ(NormalizeStage("bogus"), "");
}

// StageFromText filters sixteen positions at a time: a phrase must be found wherever it sits
// relative to the blocks, in any case, and the earliest specific phrase must win over a
// generic one wherever either sits.
TEST(StageFromText, SameAnswerAtEveryOffsetAndCase) {
  const std::string words[] = {"in reply to RCPT TO command",
                               "while sending MAIL FROM",
                               "after end of data",
                               "end of message",
                               "connection refused",
                               "unable to connect",
                               "server greeting",
                               "smtp:rcpt",
                               "mail",
                               "data",
                               "reply",
                               "while",
                               "550",
                               "5.1.1",
                               "user",
                               "x"};
  std::mt19937 rng(3);
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    size_t count = 1 + rng() % 6;
    for (size_t k = 0; k < count; ++k) {
      text += words[rng() % std::size(words)];
      text += rng() % 3 == 0 ? "\n" : " ";
    }
    std::string_view expected = StageFromText(text);
    std::string upper = text;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    ASSERT_EQ(StageFromText(upper), expected) << text;
    for (size_t pad = 1; pad < 34; ++pad) {  // every start within a 16- or 32-position step
      ASSERT_EQ(StageFromText(std::string(pad, '.') + text), expected) << pad << " " << text;
    }
  }
  EXPECT_EQ(StageFromText("rcpt to x, then (in reply to end of DATA command)"), "eom");
  EXPECT_EQ(StageFromText("connection refused, later rcpt to"), "connect");
  EXPECT_EQ(StageFromText(std::string(40, ' ') + "while connecting"), "connect");
}

// FindNoCase looks at sixteen or thirty-two positions at a time; it must agree with a plain
// byte-by-byte search everywhere: at both ends, across block edges, for letters, digits and
// punctuation, with high bytes, and from any start.
size_t NaiveFindNoCase(std::string_view h, std::string_view n, size_t from) {
  if (n.empty()) return from <= h.size() ? from : std::string_view::npos;
  for (size_t i = from; i + n.size() <= h.size(); ++i) {
    size_t k = 0;
    while (k < n.size() && AsciiLower(h[i + k]) == AsciiLower(n[k])) ++k;
    if (k == n.size()) return i;
  }
  return std::string_view::npos;
}

TEST(FindNoCase, AgreesWithAPlainSearch) {
  EXPECT_EQ(FindNoCase("550 User Unknown", "user unknown"), 4u);
  EXPECT_EQ(FindNoCase("550 USER UNKNOWN here", "unknown", 5), 9u);
  EXPECT_EQ(FindNoCase("abc", "abcd"), std::string_view::npos);
  EXPECT_EQ(FindNoCase("@[`{", "`{"), 2u);  // neighbours of the letters do not fold
  EXPECT_EQ(FindNoCase("@@", "`"), std::string_view::npos);
  std::mt19937 rng(7);
  const char alphabet[] = "aAbB@`[{ .5\xc3\xa4zZ";
  for (int i = 0; i < 50000; ++i) {
    std::string h(rng() % 140, ' '), n(1 + rng() % 4, ' ');
    for (char& c : h) c = alphabet[rng() % (sizeof alphabet - 1)];
    for (char& c : n) c = alphabet[rng() % (sizeof alphabet - 1)];
    size_t from = h.empty() ? 0 : rng() % (h.size() + 2);
    ASSERT_EQ(FindNoCase(h, n, from), NaiveFindNoCase(h, n, from))
        << "haystack '" << h << "' needle '" << n << "' from " << from;
  }
}

// PhraseSet::ContainsAny answers as a ContainsNoCase per phrase: on real subjects, and on random
// text made of the phrases' own bytes in both cases (so that near misses and phrases cut at
// the end occur), including a non-ASCII phrase.
TEST(PhraseSet, AgreesWithContainsNoCasePerPhrase) {
  static constexpr std::string_view kPhrases[] = {"auto reply", "out of office", "vacation",
                                                  "fail",       "不在",          "mail delivery"};
  static constexpr PhraseSet kSet(kPhrases);
  auto expected = [](std::string_view text) {
    for (std::string_view p : kPhrases) {
      if (ContainsNoCase(text, p)) return true;
    }
    return false;
  };
  for (std::string_view text :
       {"Auto Reply: lunch", "OUT OF OFFICE", "Mail Delivery Subsystem", "Re: vacatio", "", "f",
        "不在のお知らせ", "Undelivered Mail Returned to Sender"}) {
    EXPECT_EQ(kSet.ContainsAny(text), expected(text)) << text;
  }
  const std::string alphabet = "autoReplyOUTFICEvcnMDL \xe4\xb8\x8d\xe5\x9c\xa8";
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::string text(rng() % 40, ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    ASSERT_EQ(kSet.ContainsAny(text), expected(text)) << text;
  }
}

// FindString gives std::string_view::find's answer.
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
