// dsn_mime_test.cc: the DSN parser's MIME layer (classifier/dsn_mime.h). The fast splitter must
// read every well-formed test bounce exactly as GMime's own parser does, and hand everything
// odd to GMime.
#include "classifier/dsn_mime.h"
#include "tests/read_file.h"

#include <gtest/gtest.h>
#include <iconv.h>
#include <link.h>

#include <cctype>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

namespace bounced::dsn {
namespace {

using testing::ReadFile;

std::string TrimEnd(std::string_view v) {
  std::string s(v);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

TEST(DecodeMime, FastPathMatchesGMimeOnEveryTestBounce) {
  int files = 0;
  for (const char* dir : {"/dsn/postfix", "/dsn/corpus"}) {
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(BOUNCED_TEST_DATA) + dir)) {
      if (entry.path().extension() != ".eml") continue;
      std::string msg = ReadFile(entry.path());
      MimeView fast = DecodeMime(msg, MimeDecoder::kAuto);
      MimeView gmime = DecodeMime(msg, MimeDecoder::kGMime);
      std::string name = entry.path().filename().string();
      EXPECT_EQ(fast.content_type, gmime.content_type) << name;
      EXPECT_EQ(fast.report_type, gmime.report_type) << name;
      ASSERT_EQ(fast.headers.size(), gmime.headers.size()) << name;
      for (size_t i = 0; i < fast.headers.size(); ++i) {
        EXPECT_EQ(fast.headers[i].name, gmime.headers[i].name) << name;
        EXPECT_EQ(fast.headers[i].value, gmime.headers[i].value) << name;
      }
      // The report's own parts; the returned message's body may differ in trailing bytes.
      size_t unattached_fast = 0;
      size_t unattached_gmime = 0;
      for (const MimeLeaf& p : fast.parts) unattached_fast += p.attached ? 0 : 1;
      for (const MimeLeaf& p : gmime.parts) unattached_gmime += p.attached ? 0 : 1;
      ASSERT_EQ(unattached_fast, unattached_gmime) << name;
      for (size_t i = 0; i < unattached_fast; ++i) {
        EXPECT_EQ(fast.parts[i].type, gmime.parts[i].type) << name;
        EXPECT_EQ(TrimEnd(fast.parts[i].text()), TrimEnd(gmime.parts[i].text())) << name;
      }
      EXPECT_EQ(MimeView::Find(fast.original_headers, "message-id"),
                MimeView::Find(gmime.original_headers, "message-id"))
          << name;
      ++files;
    }
  }
  EXPECT_GT(files, 100);
}

// Returned messages are often mangled: a header line folded without indentation, a multipart
// whose boundary parameter is missing or never occurs because the body was cut. The fast path
// reads past them (the returned message just has fewer parts) where GMime does too.
TEST(DecodeMime, MangledReturnedMessageReadsAsGMimeReadsIt) {
  const std::string msg =
      "From: MAILER-DAEMON@example.net\n"
      "To: sender@example.org\n"
      "Subject: Undelivered Mail Returned to Sender\n"
      "MIME-Version: 1.0\n"
      "Content-Type: multipart/report; report-type=delivery-status; boundary=\"B1\"\n"
      "\n"
      "--B1\n"
      "Content-Type: text/plain\n"
      "\n"
      "Your message could not be delivered.\n"
      "--B1\n"
      "Content-Type: message/delivery-status\n"
      "\n"
      "Reporting-MTA: dns; mx.example.net\n"
      "\n"
      "Final-Recipient: rfc822; gone@example.com\n"
      "Action: failed\n"
      "Status: 5.1.1\n"
      "--B1\n"
      "Content-Type: message/rfc822\n"
      "\n"
      "Received: from client.example.org\n"
      "from [192.0.2.1] by mx.example.org\n"
      "Message-ID: <lost@example.org>\n"
      "Content-Type: multipart/alternative; boundary=\"never-there\"\n"
      "\n"
      "the body was cut here\n"
      "--B1\n"
      "Content-Type: message/rfc822\n"
      "\n"
      "Message-ID: <second@example.org>\n"
      "Content-Type: multipart/mixed\n"
      "\n"
      "no boundary parameter at all\n"
      "--B1--\n";
  MimeView fast = DecodeMime(msg, MimeDecoder::kAuto);
  MimeView gmime = DecodeMime(msg, MimeDecoder::kGMime);
  EXPECT_EQ(fast.content_type, gmime.content_type);
  EXPECT_EQ(fast.report_type, "delivery-status");
  size_t unattached = 0;
  for (const MimeLeaf& p : fast.parts) unattached += p.attached ? 0 : 1;
  ASSERT_EQ(unattached, 2u);
  size_t unattached_gmime = 0;
  for (const MimeLeaf& p : gmime.parts) unattached_gmime += p.attached ? 0 : 1;
  ASSERT_EQ(unattached_gmime, 2u);
  for (size_t i = 0; i < unattached; ++i) {
    EXPECT_EQ(fast.parts[i].type, gmime.parts[i].type);
    EXPECT_EQ(TrimEnd(fast.parts[i].text()), TrimEnd(gmime.parts[i].text()));
  }
  EXPECT_EQ(MimeView::Find(fast.original_headers, "message-id"),
            MimeView::Find(gmime.original_headers, "message-id"));
}

TEST(DecodeMime, Rfc2047AndBase64) {
  MimeView v = DecodeMime(
      "From: =?ISO-8859-1?Q?Mail_Delivery_Syst=E8me?= <MAILER-DAEMON@example.fr>\r\n"
      "Subject: =?UTF-8?B?VW5kZWxpdmVyZWQ=?=\r\n"
      "Content-Type: text/plain; charset=\"iso-8859-1\"\r\n"
      "Content-Transfer-Encoding: base64\r\n\r\n"
      "RGVzdGluYXRhaXJlIGluY29ubnUg6Q==\r\n");
  EXPECT_EQ(v.Get("subject"), "Undelivered");
  EXPECT_EQ(v.Get("from"), "Mail Delivery Syst\xc3\xa8me <MAILER-DAEMON@example.fr>");
  ASSERT_EQ(v.parts.size(), 1u);
  EXPECT_EQ(v.parts[0].text(), "Destinataire inconnu \xc3\xa9");
}

// A value of any length with a tab, a non-ASCII byte or an encoded word in it is decoded (tabs
// become spaces, bytes are made UTF-8); one without is viewed as it is. Short values are told
// apart word by word, longer ones sixteen bytes at a time: every length and place is tried.
TEST(DecodeMime, HeaderValuesOfEveryLengthDecodedWhenTheyNeedIt) {
  for (size_t n = 1; n <= 40; ++n) {
    for (size_t at = 0; at < n; ++at) {
      std::string plain(n, 'a');
      std::string tabbed = plain;
      tabbed[at] = '\t';
      std::string high = plain;
      high[at] = '\xe9';  // Latin-1, not UTF-8
      std::string message = "From: x@example.org\nSubject: " + plain + "\nTo: " + tabbed +
                            "\nReply-To: " + high + "\n\nbody\n";
      MimeView v = DecodeMime(message);
      EXPECT_EQ(v.Get("subject"), plain) << n;
      std::string spaced = plain;
      spaced[at] = ' ';
      // Trimmed after unfolding: a tab at either end goes with the blanks.
      std::string_view expected = spaced;
      while (!expected.empty() && expected.front() == ' ') expected.remove_prefix(1);
      while (!expected.empty() && expected.back() == ' ') expected.remove_suffix(1);
      EXPECT_EQ(v.Get("to"), expected) << n << " " << at;
      EXPECT_NE(v.Get("reply-to"), high) << n << " " << at;  // replaced, not kept as is
    }
  }
}

TEST(DecodeMime, Iso2022JpUndeclared) {
  // "\x1b$B" ... "\x1b(B": ISO-2022-JP for the word "mail" (メール) with no charset given.
  MimeView v = DecodeMime("From: a@b.example\nSubject: x\n\n\x1b$B%a!<%k\x1b(B\n");
  ASSERT_EQ(v.parts.size(), 1u);
  EXPECT_EQ(v.parts[0].text(), "\xe3\x83\xa1\xe3\x83\xbc\xe3\x83\xab\n");
}

TEST(DecodeMime, NoHeadersIsPlainText) {
  MimeView v = DecodeMime("just some text\nwith lines\n");
  ASSERT_EQ(v.parts.size(), 1u);
  EXPECT_EQ(v.parts[0].type, "text/plain");
  EXPECT_NE(v.parts[0].text().find("with lines"), std::string::npos);
}

TEST(DecodeMime, MboxFromLineIsSkipped) {
  MimeView v = DecodeMime(
      "From MAILER-DAEMON Thu Apr 29 23:34:45 2010\nFrom: MAILER-DAEMON@x.example\n"
      "Subject: Returned mail\n\nbody\n");
  EXPECT_EQ(v.Get("subject"), "Returned mail");
  ASSERT_EQ(v.parts.size(), 1u);
  EXPECT_EQ(v.parts[0].text(), "body\n");
}

// 7-bit text labelled ISO-2022-JP without an escape skips iconv: it must be what iconv makes of
// it (itself, for every 7-bit byte but ESC); text with escapes is still converted.
TEST(DecodeMime, Iso2022JpLabelledAsciiIsItself) {
  std::string ascii;
  for (int b = 0; b < 0x80; ++b) {
    if (b != 0x1b) ascii += static_cast<char>(b);
  }
  iconv_t cd = iconv_open("UTF-8", "ISO-2022-JP");
  ASSERT_NE(cd, reinterpret_cast<iconv_t>(-1));
  std::string converted(ascii.size() * 4, '\0');
  char* in = ascii.data();
  size_t in_left = ascii.size();
  char* out = converted.data();
  size_t out_left = converted.size();
  ASSERT_NE(iconv(cd, &in, &in_left, &out, &out_left), static_cast<size_t>(-1));
  iconv_close(cd);
  converted.resize(converted.size() - out_left);
  EXPECT_EQ(converted, ascii);
  EXPECT_EQ(ToUtf8(ascii, "iso-2022-jp"), ascii);
  EXPECT_EQ(ToUtf8("\x1b$B%a!<%k\x1b(B", "ISO-2022-JP"), "\xe3\x83\xa1\xe3\x83\xbc\xe3\x83\xab");
}

// Content-Type values the fast path copies before reading (folded lines, a tab, an escaped
// quote in the boundary) and parameter names in any case read as GMime reads them.
TEST(DecodeMime, FoldedAndEscapedContentTypeReadsAsGMimeReadsIt) {
  const std::string msg =
      "From: MAILER-DAEMON@example.net\n"
      "Subject: Undelivered Mail Returned to Sender\n"
      "Content-Type: multipart/report;\n"
      "\tReport-Type=delivery-status;\n"
      "  BOUNDARY=\"b\\\"1\"\n"
      "\n"
      "--b\"1\n"
      "Content-Type: text/plain;\n"
      " charset=\"iso-8859-1\"\n"
      "Content-Transfer-Encoding: quoted-printable\n"
      "\n"
      "Adresse inconnue: caf=E9@example.org\n"
      "--b\"1\n"
      "Content-Type: message/delivery-status\n"
      "\n"
      "Final-Recipient: rfc822; cafe@example.org\n"
      "Action: failed\n"
      "Status: 5.1.1\n"
      "--b\"1--\n";
  MimeView fast = DecodeMime(msg, MimeDecoder::kAuto);
  MimeView gmime = DecodeMime(msg, MimeDecoder::kGMime);
  EXPECT_EQ(fast.content_type, "multipart/report");
  EXPECT_EQ(fast.report_type, "delivery-status");
  EXPECT_EQ(fast.content_type, gmime.content_type);
  EXPECT_EQ(fast.report_type, gmime.report_type);
  ASSERT_EQ(fast.parts.size(), 2u);
  ASSERT_EQ(gmime.parts.size(), 2u);
  for (size_t i = 0; i < fast.parts.size(); ++i) {
    EXPECT_EQ(fast.parts[i].type, gmime.parts[i].type);
    EXPECT_EQ(TrimEnd(fast.parts[i].text()), TrimEnd(gmime.parts[i].text()));
  }
  EXPECT_EQ(TrimEnd(fast.parts[0].text()), "Adresse inconnue: caf\xc3\xa9@example.org");
}

// The returned message's parts are decoded when first read; the text is what GMime decodes,
// parts of a message/rfc822 that is itself base64-encoded read too, and copied leaves read
// after the view is gone: they view the caller's message (kept alive here, as DecodeMime asks)
// or, with CRLF line ends, the decoder's own LF copy, which they keep alive themselves.
TEST(DecodeMime, ReturnedMessagePartsDecodeOnFirstRead) {
  const std::string inner =
      "Message-ID: <orig@example.org>\n"
      "Content-Type: multipart/alternative; boundary=\"A\"\n"
      "\n"
      "--A\n"
      "Content-Type: text/plain; charset=iso-8859-1\n"
      "Content-Transfer-Encoding: quoted-printable\n"
      "\n"
      "Caf=E9 au lait, soft line=\n"
      " break\n"
      "--A\n"
      "Content-Type: text/html; charset=utf-8\n"
      "Content-Transfer-Encoding: base64\n"
      "\n"
      "PHA+aGVsbG88L3A+Cg==\n"
      "--A--\n";
  auto message = [](const std::string& rfc822, const std::string& cte) {
    return "From: MAILER-DAEMON@example.net\n"
           "Subject: Undelivered Mail Returned to Sender\n"
           "Content-Type: multipart/report; report-type=delivery-status; boundary=\"B\"\n"
           "\n"
           "--B\n"
           "Content-Type: text/plain\n"
           "\n"
           "Your message could not be delivered.\n"
           "--B\n"
           "Content-Type: message/rfc822\n" +
           cte + "\n" + rfc822 + "--B--\n";
  };
  const std::string base64_inner =
      "TWVzc2FnZS1JRDogPG9yaWdAZXhhbXBsZS5vcmc+CkNvbnRlbnQtVHlwZTogbXVsdGlwYXJ0L2FsdGVybmF0aXZl"
      "OyBib3VuZGFyeT0iQSIKCi0tQQpDb250ZW50LVR5cGU6IHRleHQvcGxhaW47IGNoYXJzZXQ9aXNvLTg4NTktMQpD"
      "b250ZW50LVRyYW5zZmVyLUVuY29kaW5nOiBxdW90ZWQtcHJpbnRhYmxlCgpDYWY9RTkgYXUgbGFpdCwgc29mdCBs"
      "aW5lPQogYnJlYWsKLS1BCkNvbnRlbnQtVHlwZTogdGV4dC9odG1sOyBjaGFyc2V0PXV0Zi04CkNvbnRlbnQtVHJh"
      "bnNmZXItRW5jb2Rpbmc6IGJhc2U2NAoKUEhBK2FHVnNiRzg4TDNBK0NnPT0KLS1BLS0K\n";
  auto crlf = [](const std::string& lf) {
    std::string out;
    for (char c : lf) {
      if (c == '\n') out += '\r';
      out += c;
    }
    return out;
  };
  for (const auto& [rfc822, cte, crlf_ends] :
       {std::tuple<std::string, std::string, bool>{inner, "", false},
        {base64_inner, "Content-Transfer-Encoding: base64\n", false},
        {inner, "", true},
        {base64_inner, "Content-Transfer-Encoding: base64\n", true}}) {
    std::vector<MimeLeaf> attached;
    std::optional<std::string> bytes = message(rfc822, cte);
    if (crlf_ends) bytes = crlf(*bytes);
    {
      MimeView fast = DecodeMime(*bytes, MimeDecoder::kAuto);
      MimeView gmime = DecodeMime(*bytes, MimeDecoder::kGMime);
      EXPECT_EQ(MimeView::Find(fast.original_headers, "message-id"), "<orig@example.org>");
      for (const MimeLeaf& p : fast.parts) {
        if (p.attached) attached.push_back(p);  // copies, read after the views are gone
      }
      std::vector<std::string> expected;
      for (const MimeLeaf& p : gmime.parts) {
        if (p.attached) expected.emplace_back(p.text());
      }
      ASSERT_EQ(attached.size(), 2u) << cte;
      // GMime's parser leaves an encoded message/rfc822 undecoded (no parts); the fast path
      // decodes it first, so only the plain case is compared.
      if (cte.empty()) {
        ASSERT_EQ(expected.size(), 2u);
        EXPECT_EQ(TrimEnd(attached[0].text()), TrimEnd(expected[0]));
        EXPECT_EQ(TrimEnd(attached[1].text()), TrimEnd(expected[1]));
      }
    }
    if (crlf_ends) bytes.reset();  // the leaves hold the decoder's LF copy, not these bytes
    EXPECT_EQ(attached[0].type, "text/plain");
    EXPECT_EQ(TrimEnd(attached[0].text()), "Caf\xc3\xa9 au lait, soft line break");
    EXPECT_EQ(attached[1].type, "text/html");
    EXPECT_EQ(attached[1].text(), "<p>hello</p>\n");
  }
}

// The table conversions give what iconv gives, byte for byte, for every byte value.
TEST(DecodeMime, SingleByteCharsetsMatchIconv) {
  auto with_iconv = [](const std::string& bytes, const char* from, size_t* invalid) {
    iconv_t cd = iconv_open("UTF-8", from);
    EXPECT_NE(cd, reinterpret_cast<iconv_t>(-1)) << from;
    std::string out;
    char* in = const_cast<char*>(bytes.data());
    size_t in_left = bytes.size();
    while (in_left > 0) {
      char buf[64];
      char* o = buf;
      size_t o_left = sizeof buf;
      size_t rc = iconv(cd, &in, &in_left, &o, &o_left);
      out.append(buf, o - buf);
      if (rc == static_cast<size_t>(-1) && errno != E2BIG) {
        out.append("\xEF\xBF\xBD");
        ++*invalid;
        ++in;
        --in_left;
      }
    }
    iconv_close(cd);
    return out;
  };
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  for (const char* charset : {"ISO-8859-1", "CP1252", "WINDOWS-1252", "windows-1252"}) {
    for (int b = 0; b < 256; ++b) {
      std::string one = "a" + std::string(1, static_cast<char>(b)) + "z";
      size_t bad_iconv = 0;
      size_t bad_table = 0;
      std::string table;
      ASSERT_TRUE(SingleByteToUtf8(one, charset, &table, &bad_table));
      EXPECT_EQ(table, with_iconv(one, charset, &bad_iconv)) << charset << " byte " << b;
      EXPECT_EQ(bad_table, bad_iconv) << charset << " byte " << b;
    }
    size_t bad_iconv = 0;
    size_t bad_table = 0;
    std::string table;
    ASSERT_TRUE(SingleByteToUtf8(all, charset, &table, &bad_table));
    EXPECT_EQ(table, with_iconv(all, charset, &bad_iconv)) << charset;
    // ASCII runs are copied a word at a time: a byte to convert at every place of a word.
    for (size_t at = 0; at < 24; ++at) {
      for (char b : {'\x80', '\x81', '\xe9'}) {
        std::string text(24, 'x');
        text[at] = b;
        bad_iconv = 0;
        bad_table = 0;
        ASSERT_TRUE(SingleByteToUtf8(text, charset, &table, &bad_table));
        EXPECT_EQ(table, with_iconv(text, charset, &bad_iconv)) << charset << " at " << at;
        EXPECT_EQ(bad_table, bad_iconv) << charset << " at " << at;
      }
    }
  }
  std::string out;
  size_t bad = 0;
  EXPECT_FALSE(SingleByteToUtf8("x", "ISO-8859-15", &out, &bad));
  EXPECT_FALSE(SingleByteToUtf8("x", "UTF-8", &out, &bad));
}

// A thread's iconv descriptors are capped, and the charset names come from the messages: once
// a message has named more charsets than the cap, a charset named after them still converts
// (a descriptor is closed to make room) instead of falling back to Windows-1252.
TEST(DecodeMime, CharsetsNamedAfterTheCacheFillsStillConvert) {
  std::thread([] {
    for (int i = 0; i < 200; ++i) ToUtf8("\xc1", "x-unknown-" + std::to_string(i));
    for (int i = 0; i < 200; ++i) {
      std::string subject = "Subject: =?x-named-" + std::to_string(i) + "?Q?a?=\n";
      DecodeMime("From: a@b.example\n" + subject + "\nbody\n");
    }
    EXPECT_EQ(ToUtf8("\xc1", "KOI8-R"), "\xd0\xb0");      // Cyrillic a
    EXPECT_EQ(ToUtf8("\xb1", "ISO-8859-2"), "\xc4\x85");  // a with ogonek
  }).join();
}

// GMime opens and closes an iconv descriptor for each encoded word it decodes, and glibc unloads
// a charset's gconv module a few closes after its last descriptor went: the decoder keeps a
// descriptor of its own for each charset a header names, so the module stays loaded (a bounce
// stream with Latin-9 subjects no longer loads it once per few messages).
TEST(DecodeMime, EncodedWordCharsetsStayLoaded) {
  auto loaded = [](const char* file) {
    struct Query {
      const char* file;
      bool found = false;
    } q{file};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
          auto* q = static_cast<Query*>(data);
          std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
          if (name.ends_with(std::string("/") + q->file)) q->found = true;
          return 0;
        },
        &q);
    return q.found;
  };
  std::thread([&] {
    MimeView v = DecodeMime("From: a@b.example\nSubject: =?ISO-8859-13?Q?=E0?=\n\nbody\n");
    EXPECT_EQ(v.Get("subject"), "\xc4\x85");  // a with ogonek
    // Other charsets' descriptors opened and closed by GMime: each close is a chance for glibc
    // to unload modules no descriptor holds.
    for (const char* other : {"KOI8-U", "ISO-8859-4", "ISO-8859-10", "ISO-8859-14", "CP1257"}) {
      for (int i = 0; i < 3; ++i) {
        DecodeMime(std::string("From: a@b.example\nSubject: =?") + other + "?Q?=E0?=\n\nx\n");
      }
    }
    EXPECT_TRUE(loaded("ISO8859-13.so"));
  }).join();
}

// Header values of every length around the 16-byte steps of the plain-value check and of
// Unfold: plain ones are copied as they are, folded ones lose their line ends (tabs become
// spaces), encoded words are decoded, and a non-ASCII byte anywhere is made valid UTF-8.
TEST(DecodeMime, HeaderValuesOfEveryLengthDecode) {
  for (size_t n = 0; n < 40; ++n) {
    const std::string plain(n, 'a');
    for (size_t at = 0; at <= n; ++at) {
      std::string folded = plain;
      folded.insert(at, "\n\t");
      std::string latin = plain;
      latin.insert(at, "\xe9");
      std::string encoded = plain;
      encoded.insert(at, " =?utf-8?q?caf=C3=A9?= ");
      const std::string msg = "From: x" + plain + "y\nTo: x" + folded + "y\nSubject: x" + latin +
                              "y\nReply-To: x" + encoded + "y\n\nbody\n";
      MimeView view = DecodeMime(msg);
      SCOPED_TRACE(::testing::Message() << "n=" << n << " at=" << at);
      EXPECT_EQ(view.Get("from"), "x" + plain + "y");
      std::string unfolded = plain;
      unfolded.insert(at, " ");
      EXPECT_EQ(view.Get("to"), "x" + unfolded + "y");
      std::string valid = plain;
      valid.insert(at, "\xef\xbf\xbd");
      EXPECT_EQ(view.Get("subject"), "x" + valid + "y");
      EXPECT_NE(view.Get("reply-to").find("caf\xc3\xa9"), std::string_view::npos);
    }
  }
}

// Header names match in any case, and only the names themselves (a '_' where the '-' is does
// not make a "Content-Type" or "Reply-To").
TEST(DecodeMime, HeaderNamesMatchInAnyCaseOnly) {
  const std::string msg =
      "rEPLY-tO: a@example.org\n"
      "Reply_To: b@example.org\n"
      "Content_Type: text/html\n"
      "CONTENT-TYPE: text/plain; charset=\"iso-8859-1\"\n"
      "content-transfer-ENCODING: quoted-printable\n"
      "\n"
      "caf=E9\n";
  MimeView view = DecodeMime(msg);
  EXPECT_EQ(view.Get("reply-to"), "a@example.org");
  ASSERT_EQ(view.headers.size(), 1u);
  EXPECT_EQ(view.content_type, "text/plain");
  ASSERT_EQ(view.parts.size(), 1u);
  EXPECT_EQ(TrimEnd(view.parts[0].text()), "caf\xc3\xa9");
}

// Quoted-printable bodies of every shape (soft breaks, "=\r\n", lower-case and broken escapes,
// a '=' at the very end) decode as GMime's parser decodes them: the fast path decodes hex
// escapes and soft breaks itself and hands GMime's decoder the other escapes.
TEST(DecodeMime, QuotedPrintableReadsAsGMimeReadsIt) {
  const char* pieces[] = {"a",
                          "Bc ",
                          " ",
                          "\t",
                          "\n",
                          "=\n",
                          "= \n",
                          "=41",
                          "=3D",
                          "=3d",
                          "=4",
                          "=G1",
                          "==",
                          "=\r\n",
                          "=C3=A9",
                          "x=",
                          "=0A",
                          "=20",
                          "=\r=",
                          "=a9",
                          "=fF",
                          "=\xff"
                          "1",
                          "=1\xff",
                          "=\n=",
                          "=9\n",
                          "abcdefghijklmnopqrstuvwxyz0123456789"};
  std::mt19937 rng(42);
  for (int round = 0; round < 400; ++round) {
    std::string body;
    size_t n = rng() % 40;
    for (size_t i = 0; i < n; ++i) body += pieces[rng() % std::size(pieces)];
    if (round % 3 == 0) body += "=";  // trailing rubbish GMime drops
    const std::string msg =
        "From: MAILER-DAEMON@example.net\n"
        "Subject: Undelivered Mail\n"
        "Content-Type: multipart/report; report-type=delivery-status; boundary=\"B1\"\n"
        "\n"
        "--B1\n"
        "Content-Type: text/plain; charset=utf-8\n"
        "Content-Transfer-Encoding: quoted-printable\n"
        "\n" +
        body +
        "\n--B1\n"
        "Content-Type: message/delivery-status\n"
        "\n"
        "Final-Recipient: rfc822; user@example.org\n"
        "Status: 5.1.1\n"
        "\n--B1--\n";
    MimeView fast = DecodeMime(msg, MimeDecoder::kAuto);
    MimeView gmime = DecodeMime(msg, MimeDecoder::kGMime);
    ASSERT_EQ(fast.parts.size(), 2u) << body;
    ASSERT_EQ(gmime.parts.size(), 2u) << body;
    EXPECT_EQ(TrimEnd(fast.parts[0].text()), TrimEnd(gmime.parts[0].text())) << body;
  }
}

// One byte >= 0x80 anywhere in a long text is seen (the 7-bit test reads 64 or 128 bytes a
// step): undeclared 8-bit text that is not UTF-8 is read as Windows-1252.
TEST(DecodeMime, OneHighByteAnywhereIsConverted) {
  for (size_t n : {size_t{127}, size_t{128}, size_t{200}, size_t{257}}) {
    for (size_t at = 0; at < n; ++at) {
      std::string text(n, 'a');
      text[at] = '\xff';  // y with diaeresis in Windows-1252
      std::string expected = text.substr(0, at) + "\xc3\xbf" + text.substr(at + 1);
      ASSERT_EQ(ToUtf8(text, ""), expected) << n << " " << at;
    }
  }
}

// Text labelled with a charset it is not valid in: the first clean reading wins (UTF-8, then
// the Japanese and Chinese charsets), else the declared charset's with U+FFFD for each invalid
// byte.
TEST(DecodeMime, MislabelledTextTakesTheFirstCleanReading) {
  // "メール" in EUC-JP and in UTF-8, both labelled ISO-2022-JP.
  EXPECT_EQ(ToUtf8("\xa5\xe1\xa1\xbc\xa5\xeb", "iso-2022-jp"),
            "\xe3\x83\xa1\xe3\x83\xbc\xe3\x83\xab");
  EXPECT_EQ(ToUtf8("ok \xe3\x83\xa1", "iso-2022-jp"), "ok \xe3\x83\xa1");
  // 0xFF and 0x80 are invalid in every reading: each becomes U+FFFD, the rest is converted.
  EXPECT_EQ(ToUtf8("a\xff\x80z \x1b$B%a\x1b(B", "iso-2022-jp"),
            "a\xef\xbf\xbd\xef\xbf\xbdz \xe3\x83\xa1");
}

// Every header the parser reads is kept in any case, under its lower-case name; a name that
// differs in one byte (another letter, '_' for '-', a CR or a NUL) is not.
TEST(DecodeMime, EveryWantedHeaderNameMatchesExactly) {
  const char* names[] = {"to",
                         "from",
                         "sender",
                         "subject",
                         "reply-to",
                         "x-spasign",
                         "message-id",
                         "precedence",
                         "return-path",
                         "x-autoreply",
                         "envelope-to",
                         "delivered-to",
                         "x-autorespond",
                         "x-original-to",
                         "auto-submitted",
                         "x-failed-recipients",
                         "x-auto-response-suppress",
                         "x-hmxmroriginalrecipient"};
  for (std::string lower : names) {
    std::string upper = lower;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::string mixed = lower;
    for (size_t i = 0; i < mixed.size(); i += 2) mixed[i] = upper[i];
    for (const std::string& name : {lower, upper, mixed}) {
      // Header values view the message: it outlives the view.
      const std::string msg = name + ": v\nX-Other: w\n\nbody\n";
      MimeView view = DecodeMime(msg);
      ASSERT_EQ(view.headers.size(), 1u) << name;
      EXPECT_EQ(view.headers[0].name, lower);
      EXPECT_EQ(view.headers[0].value, "v");
    }
    for (size_t i = 0; i < lower.size(); ++i) {
      for (char other : {'_', '\r', '\0', 'q', '-', '@'}) {
        if (lower[i] == other) continue;
        std::string name = lower;
        name[i] = other;
        const std::string msg = "X-First: a\n" + name + ": v\n\nbody\n";
        MimeView view = DecodeMime(msg);
        EXPECT_TRUE(view.Get(lower).empty()) << lower << " byte " << i << " " << int{other};
      }
    }
  }
}

// ISO-2022-JP text converts as iconv converts the whole of it, whatever runs of ASCII lie
// before its first escape and after its last ESC ( B (those runs skip iconv).
TEST(DecodeMime, Iso2022JpConvertsAsIconvConvertsTheWhole) {
  auto with_iconv = [](const std::string& bytes, std::string* out) {
    iconv_t cd = iconv_open("UTF-8", "ISO-2022-JP");
    EXPECT_NE(cd, reinterpret_cast<iconv_t>(-1));
    out->assign(bytes.size() * 4 + 16, '\0');
    char* in = const_cast<char*>(bytes.data());
    size_t in_left = bytes.size();
    char* o = out->data();
    size_t o_left = out->size();
    bool ok = iconv(cd, &in, &in_left, &o, &o_left) != static_cast<size_t>(-1) &&
              iconv(cd, nullptr, nullptr, &o, &o_left) != static_cast<size_t>(-1);
    iconv_close(cd);
    out->resize(out->size() - o_left);
    return ok;
  };
  const char* pieces[] = {"Mail ", "\n",     "\x1b$B", "%a!<%k", "F|K\\", "\x1b(B", "\x1b(J",
                          "\\~",   "\x1b(I", "1",      "\x1b$@", "0!",    "\t",     "\x1b(B\n"};
  std::mt19937 rng(7);
  int checked = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string bytes;
    size_t n = rng() % 12;
    for (size_t i = 0; i < n; ++i) bytes += pieces[rng() % std::size(pieces)];
    std::string expected;
    if (!with_iconv(bytes, &expected)) continue;  // invalid somewhere: another test's matter
    EXPECT_EQ(ToUtf8(bytes, "iso-2022-jp"), expected) << ::testing::PrintToString(bytes);
    ++checked;
  }
  EXPECT_GT(checked, 300);
}

// A text/rfc822-headers part keeps the headers the parser reads (and its first header): they
// read as in the whole block, folded lines of the others are not glued onto them, and a block
// of only other headers still counts as one.
TEST(DecodeMime, ReturnedHeaderBlockKeepsTheHeadersTheParserReads) {
  auto report = [](const std::string& headers) {
    return "From: MAILER-DAEMON@example.net\n"
           "Content-Type: multipart/report; report-type=delivery-status; boundary=\"B1\"\n"
           "\n--B1\nContent-Type: text/plain\n\nfailed\n"
           "--B1\nContent-Type: text/rfc822-headers\n\n" +
           headers + "\n--B1--\n";
  };
  const std::string block =
      "Received: from a.example\n"
      "\tby b.example\n"
      "To: <user@example.org>,\n"
      "  <other@example.org>\n"
      "DKIM-Signature: v=1;\n"
      " bh=abc\n"
      "Message-ID: <id@example.net>\n"
      "Subject: hello\n";
  for (MimeDecoder decoder : {MimeDecoder::kAuto, MimeDecoder::kGMime}) {
    const std::string msg = report(block);  // viewed by the headers: kept while they are read
    MimeView view = DecodeMime(msg, decoder);
    HeaderBlock parsed = ParseHeaderBlock(block);
    const std::vector<Header>& all = parsed.headers;
    for (const char* name : {"to", "message-id", "subject", "from", "received"}) {
      EXPECT_EQ(MimeView::Find(view.original_headers, name), MimeView::Find(all, name)) << name;
    }
    EXPECT_EQ(MimeView::Find(view.original_headers, "to"),
              "<user@example.org>, <other@example.org>");
    EXPECT_TRUE(MimeView::Find(view.original_headers, "dkim-signature").empty());
    const std::string other_msg = report("Received: from a.example\nX-Spam: no\n");
    MimeView others = DecodeMime(other_msg, decoder);
    EXPECT_FALSE(others.original_headers.empty());
  }
}

}  // namespace
}  // namespace bounced::dsn
