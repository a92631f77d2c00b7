// dsn_metamorphic_test.cc: the same bounce written differently must parse the same. Each real
// bounce in tests/data/dsn (corpus and Postfix captures) is rewritten in ways MTAs and mail
// stores really differ (line ends, header-name case, space after the colon, the multipart
// boundary's spelling and quoting, a folded Content-Type, trailing space on a delimiter line,
// media types in title case, a single-part body in base64 or quoted-printable, blanks before
// a header's or a DSN field's colon, a To address on a folded line behind a display name, the
// delivery headers a mailbox adds, the explanation as HTML only, RFC 6533's media types, each
// recipient group's recipient fields last, the whole bounce forwarded as an attachment, alone,
// beside other mail or with other bounces in a forward or digest, quoted-printable soft breaks
// with transport padding, a recipient address quoted whole or followed by a comment, a
// byte-order mark or blank lines before the headers, the Subject in two padded base64 words),
// and every recipient's address, category, status and hard_bounce must stay as they were.
// A parser keyed to one spelling of a message would hold on the corpus and fail on the next
// MTA's copy of the same bounce.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "classifier/dsn_parser.h"
#include "classifier/result.h"
#include "classifier/rules.h"
#include "tests/base64_lines.h"
#include "tests/read_file.h"

namespace bounced::testing {
namespace {

std::vector<std::filesystem::path> Bounces() {
  std::vector<std::filesystem::path> out;
  for (const char* dir : {"corpus", "postfix"}) {
    std::filesystem::path root = std::filesystem::path(BOUNCED_TEST_DATA) / "dsn" / dir;
    for (const auto& entry : std::filesystem::directory_iterator(root)) {
      if (entry.path().extension() == ".eml") out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What must not change: per recipient, in order.
std::string Summary(const ParsedBounce& p) {
  std::string s;
  for (const Result& r : p.recipients) {
    s += r.recipient + " " + std::string(ToString(r.category)) + " " + r.status + " " +
         (r.hard_bounce() ? "hard" : "soft") + "\n";
  }
  return s;
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

std::string Lf(const std::string& s) { return ReplaceAll(s, "\r\n", "\n"); }

// The header names a bounce parser reads, at the start of a line.
const std::regex kHeaderName(
    "(^|\n)(content-type|content-transfer-encoding|final-recipient|original-recipient|action|"
    "status|diagnostic-code|remote-mta|reporting-mta|from|subject|to|x-failed-recipients)"
    "[ \t]*:[ \t]*",
    std::regex::icase);

std::string CaseOfHeaderNames(const std::string& s, bool upper) {
  std::string out;
  auto last = s.cbegin();
  for (std::sregex_iterator it(s.begin(), s.end(), kHeaderName), end; it != end; ++it) {
    out.append(last, (*it)[0].first);
    std::string name = (*it)[2].str();
    for (char& c : name) c = static_cast<char>(upper ? std::toupper(c) : std::tolower(c));
    out += (*it)[1].str() + name + (upper ? ":" : ":   ");
    last = (*it)[0].second;
  }
  out.append(last, s.cend());
  return out;
}

// Every boundary="..." value of the message.
std::set<std::string> Boundaries(const std::string& s) {
  static const std::regex kBoundary("boundary=\"?([^\";\r\n]+)\"?", std::regex::icase);
  std::set<std::string> out;
  for (std::sregex_iterator it(s.begin(), s.end(), kBoundary), end; it != end; ++it) {
    out.insert((*it)[1].str());
  }
  return out;
}

std::string RenameBoundaries(std::string s) {
  int n = 0;
  std::set<std::string> found = Boundaries(s);
  std::vector<std::string> longest_first(found.begin(), found.end());
  std::sort(longest_first.begin(), longest_first.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const std::string& b : longest_first) {
    s = ReplaceAll(s, b, "=_Part_" + std::to_string(n++) + "_renamed." + std::to_string(b.size()));
  }
  return s;
}

std::string UnquoteBoundaries(const std::string& s) {
  static const std::regex kQuoted("boundary=\"([^\"\\s;]+)\"", std::regex::icase);
  return std::regex_replace(s, kQuoted, "boundary=$1");
}

std::string FoldMultipartType(const std::string& s) {
  static const std::regex kMultipart("(\nContent-Type:[ \t]*multipart/[A-Za-z]+;)[ \t]*",
                                     std::regex::icase);
  return std::regex_replace(s, kMultipart, "$1\n\t");
}

// Quoted-printable: '=', control and 8-bit bytes escaped, soft line breaks before 76 columns.
// `soft_break` is "=\n", or with transport padding before the line end ("= \t\n"), which RFC
// 2045 6.7 has decoders drop.
std::string QuotedPrintable(std::string_view in, std::string_view soft_break = "=\n") {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  size_t column = 0;
  for (char c : in) {
    if (c == '\n') {
      out += '\n';
      column = 0;
      continue;
    }
    auto u = static_cast<uint8_t>(c);
    std::string piece(1, c);
    if (c == '=' || u > 126 || (u < 32 && c != '\t')) piece = {'=', kHex[u >> 4], kHex[u & 15]};
    if (column + piece.size() > 75) {
      out += soft_break;
      column = 0;
    }
    out += piece;
    column += piece.size();
  }
  return out;
}

// A single-part message's body transfer-encoded (base64 or quoted-printable), as MTAs that
// encode every text body write it. Multipart messages and encoded bodies stay as they are.
std::string EncodeSinglePartBody(const std::string& s, bool base64,
                                 std::string_view soft_break = "=\n") {
  std::string lf = Lf(s);
  size_t end = lf.find("\n\n");
  if (end == std::string::npos) return s;
  std::string headers = lf.substr(0, end + 1);
  static const std::regex kMultipart("(^|\n)content-type:[ \t]*multipart/", std::regex::icase);
  static const std::regex kEncoded("(^|\n)content-transfer-encoding:", std::regex::icase);
  if (std::regex_search(headers, kMultipart) || std::regex_search(headers, kEncoded)) return s;
  std::string body = lf.substr(end + 2);
  return headers + "Content-Transfer-Encoding: " + (base64 ? "base64" : "quoted-printable") +
         "\n\n" + (base64 ? Base64Lines(body) : QuotedPrintable(body, soft_break));
}

// Media types in title case ("Message/Delivery-Status"), as some MTAs write them: they have no
// case (RFC 2045).
std::string TitleCaseMediaTypes(const std::string& s) {
  static const std::regex kType(
      "(\n[Cc]ontent-[Tt]ype:[ \t]*)(multipart/report|multipart/mixed|message/delivery-status|"
      "message/rfc822|text/plain|text/rfc822-headers)",
      std::regex::icase);
  std::string out;
  auto last = s.cbegin();
  for (std::sregex_iterator it(s.begin(), s.end(), kType), end; it != end; ++it) {
    out.append(last, (*it)[0].first);
    std::string type = (*it)[2].str();
    bool start = true;
    for (char& c : type) {
      c = static_cast<char>(start ? std::toupper(c) : std::tolower(c));
      start = c == '/' || c == '-';
    }
    out += (*it)[1].str() + type;
    last = (*it)[0].second;
  }
  out.append(last, s.cend());
  return out;
}

// "Final-Recipient : rfc822;..." and "To : ...": RFC 822 allowed blanks before the colon, and
// Mimecast still writes every DSN field so.
std::string BlankBeforeColon(const std::string& s) {
  return std::regex_replace(s, kHeaderName, "$1$2 : ");
}

// "To: a@b" as "To: \"Some Person\"\n <a@b>", in the bounce's own headers and in the returned
// message's, the address alone or in angle brackets: mailers fold a long To between the name
// and the address.
std::string FoldedDisplayNameTo(const std::string& s) {
  static const std::regex kTo(
      "(^|\n)(To)[ \t]*:[ \t]*<?([^\\s<>\",;]+@[^\\s<>\",;]+)>?[ \t]*(?=\n)", std::regex::icase);
  return std::regex_replace(s, kTo, "$1$2: \"Some Person\"\n <$3>");
}

// The bounce as filed in the sender's mailbox by Postfix's local(8) or an LMTP server:
// X-Original-To and Delivered-To name the bounce's own recipient on top of its headers.
std::string FiledInSendersMailbox(const std::string& s) {
  static const std::regex kTo("(^|\n)to:[ \t]*[^\n]*?<?([^\\s<>\",;:]+@[^\\s<>\",;]+)>?",
                              std::regex::icase);
  size_t header_end = s.find("\n\n");
  std::smatch to;
  if (header_end == std::string::npos ||
      !std::regex_search(s.cbegin(), s.cbegin() + static_cast<long>(header_end), to, kTo))
    return s;
  return "X-Original-To: " + to[2].str() + "\nDelivered-To: " + to[2].str() + "\n" + s;
}

// HTML for a text: a line per "<br>", with the source's own line end after it, as HTML mailers
// write it.
std::string AsHtml(const std::string& text) {
  std::string html = "<html><body>\n";
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    for (char c : line) {
      if (c == '<') {
        html += "&lt;";
      } else if (c == '>') {
        html += "&gt;";
      } else if (c == '&') {
        html += "&amp;";
      } else {
        html += c;
      }
    }
    html += "<br>\n";
  }
  return html + "</body></html>";
}

// A multipart bounce's plain text parts (its explanation; the returned message is left alone)
// sent as HTML only.
std::string HtmlOnlyExplanation(const std::string& s) {
  static const std::regex kTopType("(^|\n)content-type:[ \t]*multipart/[^\n]*(\n[ \t][^\n]*)*",
                                   std::regex::icase);
  static const std::regex kPlain("(^|\n)content-type:[ \t]*text/plain", std::regex::icase);
  static const std::regex kAnyType("(^|\n)content-type:", std::regex::icase);
  static const std::regex kEncoded("(^|\n)content-transfer-encoding:[ \t]*(base64|quoted)",
                                   std::regex::icase);
  if (s.find('\r') != std::string::npos) return s;
  size_t header_end = s.find("\n\n");
  std::smatch top;
  if (header_end == std::string::npos ||
      !std::regex_search(s.cbegin(), s.cbegin() + static_cast<long>(header_end) + 1, top, kTopType))
    return s;
  std::set<std::string> in_type = Boundaries(top.str());
  if (in_type.size() != 1) return s;
  const std::string delimiter = "\n--" + *in_type.begin();
  std::string out = s;
  for (size_t part = out.find(delimiter + "\n", header_end); part != std::string::npos;
       part = out.find(delimiter + "\n", part)) {
    part += delimiter.size() + 1;
    size_t body = out.find("\n\n", part - 1);
    size_t end = out.find(delimiter, part);
    if (body == std::string::npos || end == std::string::npos || body > end) break;
    std::string headers = out.substr(part, body + 1 - part);
    if (std::regex_search(headers, kEncoded)) continue;
    if (std::regex_search(headers, kPlain)) {
      headers = std::regex_replace(headers, kPlain, "$1Content-Type: text/html");
    } else if (!std::regex_search(headers, kAnyType)) {
      headers += "Content-Type: text/html\n";
    } else {
      continue;
    }
    std::string replaced = headers + "\n" + AsHtml(out.substr(body + 2, end - body - 2));
    out.replace(part, end - part, replaced);
    part += replaced.size();
  }
  return out;
}

// The report's media types as RFC 6533 names them for internationalised mail (Postfix sends
// them for SMTPUTF8 messages): message/global-delivery-status, message/global and
// message/global-headers.
std::string GlobalMediaTypes(const std::string& s) {
  static const std::regex kDeliveryStatus("(\n[Cc]ontent-[Tt]ype:[ \t]*)message/delivery-status",
                                          std::regex::icase);
  static const std::regex kMessage("(\n[Cc]ontent-[Tt]ype:[ \t]*)message/rfc822",
                                   std::regex::icase);
  static const std::regex kHeaders("(\n[Cc]ontent-[Tt]ype:[ \t]*)text/rfc822-headers",
                                   std::regex::icase);
  std::string out = std::regex_replace(s, kDeliveryStatus, "$1message/global-delivery-status");
  out = std::regex_replace(out, kMessage, "$1message/global");
  return std::regex_replace(out, kHeaders, "$1message/global-headers");
}

// The delivery-status part labelled text/plain, as some gateways relabel what they do not know.
// Only a report of the bounce's own: one inside its returned message (lhost-x5-01) is found by
// its media type alone.
std::string ReportAsTextPlain(const std::string& s) {
  static const std::regex kDeliveryStatus("(\n[Cc]ontent-[Tt]ype:[ \t]*)message/delivery-status",
                                          std::regex::icase);
  static const std::regex kMessage("\n[Cc]ontent-[Tt]ype:[ \t]*message/rfc822", std::regex::icase);
  std::smatch report, message;
  if (std::regex_search(s, report, kDeliveryStatus) && std::regex_search(s, message, kMessage) &&
      message.position(0) < report.position(0))
    return s;
  return std::regex_replace(s, kDeliveryStatus, "$1text/plain");
}

// Each recipient group of the delivery-status part with its recipient fields last, as Mimecast
// and Sun's Messaging Server write them ("Action: failed\nStatus: ...\nFinal-Recipient: ...").
std::string RecipientFieldsLast(const std::string& s) {
  static const std::regex kReport("\ncontent-type:[ \t]*message/delivery-status[^\n]*\n",
                                  std::regex::icase);
  static const std::regex kRecipient("(final|original)-recipient[ \t]*:", std::regex::icase);
  std::smatch report;
  if (s.find('\r') != std::string::npos || !std::regex_search(s, report, kReport)) return s;
  size_t start = s.find("\n\n", static_cast<size_t>(report.position(0)));
  if (start == std::string::npos) return s;
  start += 2;
  size_t end = s.find("\n--", start);
  if (end == std::string::npos) return s;
  std::string out = s.substr(0, start);
  size_t at = start;
  while (at < end) {
    size_t group_end = std::min(s.find("\n\n", at), end);
    // The group's fields, each with its folded lines.
    std::vector<std::string> fields;
    std::istringstream lines(s.substr(at, group_end - at));
    for (std::string line; std::getline(lines, line);) {
      if (line.find_first_not_of(" \t") == std::string::npos) return s;  // a blank-ish line
      if ((line[0] == ' ' || line[0] == '\t') && !fields.empty()) {
        fields.back() += "\n" + line;
      } else {
        fields.push_back(line);
      }
    }
    std::stable_partition(fields.begin(), fields.end(), [](const std::string& f) {
      return !std::regex_search(f, kRecipient, std::regex_constants::match_continuous);
    });
    for (size_t i = 0; i < fields.size(); ++i) out += (i > 0 ? "\n" : "") + fields[i];
    size_t next = s.find_first_not_of('\n', group_end);
    if (next == std::string::npos || next > end) next = end;
    out += s.substr(group_end, next - group_end);
    at = next;
  }
  return out + s.substr(end);
}

// The address of each Final-Recipient and Original-Recipient field ("rfc822; a@b") written
// another way: quoted whole ("rfc822; \"a@b\""), or followed by an RFC 822 comment.
std::string RecipientFieldAddresses(const std::string& s, const std::string& replacement) {
  static const std::regex kField(
      "(\n(final|original)-recipient[ \t]*:[ \t]*rfc822[ \t]*;[ \t]*)<?([^\\s<>\"]+@[^\\s<>\"]+?)>?"
      "[ \t]*(?=\r?\n)",
      std::regex::icase);
  return std::regex_replace(s, kField, replacement);
}

// The bounce's Subject as RFC 2047 base64 words, split in two as mailers split a long one, each
// word padded on its own ("=?UTF-8?B?QXV0byByZXA=?=\n =?UTF-8?B?bHk6IE55YWFu?="), folded or,
// as some mailers write them, with nothing between. Subjects with 8-bit bytes or encoded words
// already are left alone.
std::string SubjectInTwoBase64Words(const std::string& s, bool folded) {
  static const std::regex kSubject("(^|\n)subject[ \t]*:[ \t]*([^\r\n]*)", std::regex::icase);
  size_t header_end = Lf(s).find("\n\n");
  std::smatch m;
  if (header_end == std::string::npos || !std::regex_search(s, m, kSubject) ||
      static_cast<size_t>(m.position(0)) > header_end)
    return s;
  std::string subject = m[2].str();
  if (subject.size() < 4 || subject.find("=?") != std::string::npos ||
      std::any_of(subject.begin(), subject.end(), [](char c) { return (c & 0x80) != 0; }))
    return s;
  size_t half = subject.size() / 2;
  if (half % 3 == 0) ++half;  // so that the first word is padded
  auto word = [](std::string_view text) {
    std::string b = Base64Lines(text);
    b.pop_back();  // its line end
    return "=?UTF-8?B?" + b + "?=";
  };
  std::string crlf = s.find("\r\n") != std::string::npos ? "\r\n" : "\n";
  return s.substr(0, static_cast<size_t>(m.position(2))) + word(subject.substr(0, half)) +
         (folded ? crlf + " " : "") + word(subject.substr(half)) +
         s.substr(static_cast<size_t>(m.position(2) + m.length(2)));
}

std::string SpaceAfterDelimiters(std::string s) {
  for (const std::string& b : Boundaries(s))
    s = ReplaceAll(s, "\n--" + b + "\n", "\n--" + b + "  \n");
  return s;
}

TEST(DsnMetamorphic, RewritingABounceTheWayOtherMtasWriteItKeepsItsResults) {
  const std::vector<std::pair<const char*, std::function<std::string(const std::string&)>>>
      rewrites = {
          {"crlf", [](const std::string& s) { return ReplaceAll(Lf(s), "\n", "\r\n"); }},
          {"cr", [](const std::string& s) { return ReplaceAll(Lf(s), "\n", "\r"); }},
          {"upper-case names", [](const std::string& s) { return CaseOfHeaderNames(s, true); }},
          {"lower-case names, wide",
           [](const std::string& s) { return CaseOfHeaderNames(s, false); }},
          {"renamed boundary", [](const std::string& s) { return RenameBoundaries(s); }},
          {"unquoted boundary", [](const std::string& s) { return UnquoteBoundaries(s); }},
          {"folded content-type", [](const std::string& s) { return FoldMultipartType(s); }},
          {"space after delimiter", [](const std::string& s) { return SpaceAfterDelimiters(s); }},
          {"title-case media types", [](const std::string& s) { return TitleCaseMediaTypes(s); }},
          {"blank before colon", [](const std::string& s) { return BlankBeforeColon(s); }},
          {"folded display-name To", [](const std::string& s) { return FoldedDisplayNameTo(s); }},
          {"filed in the sender's mailbox",
           [](const std::string& s) { return FiledInSendersMailbox(s); }},
          {"HTML-only explanation", [](const std::string& s) { return HtmlOnlyExplanation(s); }},
          {"RFC 6533 media types", [](const std::string& s) { return GlobalMediaTypes(s); }},
          {"recipient fields last", [](const std::string& s) { return RecipientFieldsLast(s); }},
          {"report part as text/plain", [](const std::string& s) { return ReportAsTextPlain(s); }},
          {"base64 body", [](const std::string& s) { return EncodeSinglePartBody(s, true); }},
          {"quoted-printable body",
           [](const std::string& s) { return EncodeSinglePartBody(s, false); }},
          {"quoted-printable body, padded soft breaks",
           [](const std::string& s) { return EncodeSinglePartBody(s, false, "= \t \n"); }},
          {"recipient address quoted whole",
           [](const std::string& s) { return RecipientFieldAddresses(s, "$1\"$3\""); }},
          {"comment after the recipient address",
           [](const std::string& s) { return RecipientFieldAddresses(s, "$1$3 (Some Person)"); }},
          {"byte-order mark before the headers",
           [](const std::string& s) { return "\xEF\xBB\xBF" + s; }},
          {"blank lines before the headers", [](const std::string& s) { return "\n\n" + s; }},
          {"subject in two base64 words",
           [](const std::string& s) { return SubjectInTwoBase64Words(s, true); }},
          {"subject in two base64 words, nothing between",
           [](const std::string& s) { return SubjectInTwoBase64Words(s, false); }},
      };
  std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  std::vector<std::filesystem::path> files = Bounces();
  ASSERT_GT(files.size(), 100u);
  size_t rewritten = 0;
  for (const std::filesystem::path& file : files) {
    const std::string original = ReadFile(file);
    const std::string expected = Summary(ParseBounce(original, *rules));
    ASSERT_FALSE(expected.empty()) << file;
    for (const auto& [name, rewrite] : rewrites) {
      std::string changed = rewrite(original);
      if (changed == original) continue;
      ++rewritten;
      EXPECT_EQ(Summary(ParseBounce(changed, *rules)), expected)
          << file.filename().string() << " rewritten: " << name;
    }
  }
  EXPECT_GT(rewritten, files.size() * 4);
}

// A bounce forwarded inline (behind an mbox "From " line) in a single-part text body reads the
// same whether that body is sent as it is, in base64 or in quoted-printable; for Postfix's
// reports (multipart/report) it reads as the report itself does.
TEST(DsnMetamorphic, ABounceForwardedInlineReadsTheSameInAnyTransferEncoding) {
  std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  size_t tried = 0;
  for (const std::filesystem::path& file : Bounces()) {
    const std::string original = Lf(ReadFile(file));
    if (original.find("\nFrom ") != std::string::npos) continue;  // keep the one mbox line ours
    const std::string forwarded =
        "From: postmaster@example.net\nTo: abuse@example.org\nSubject: Fwd: bounce\n"
        "MIME-Version: 1.0\nContent-Type: text/plain; charset=us-ascii\n\n"
        "The bounce we got is below.\n\nFrom MAILER-DAEMON Thu Apr 29 23:34:45 2015\n" +
        original;
    const std::string expected = Summary(ParseBounce(forwarded, *rules));
    if (file.parent_path().filename() == "postfix") {
      EXPECT_EQ(expected, Summary(ParseBounce(original, *rules))) << file.filename().string();
    }
    for (bool base64 : {false, true}) {
      std::string encoded = EncodeSinglePartBody(forwarded, base64);
      ASSERT_NE(encoded, forwarded);
      EXPECT_EQ(Summary(ParseBounce(encoded, *rules)), expected)
          << file.filename().string() << (base64 ? " base64" : " quoted-printable");
    }
    ++tried;
  }
  EXPECT_GT(tried, 100u);
}

// Some mailboxes glue a second report after the first one's closing boundary; it is read
// however its media types are cased, and in RFC 6533's types.
TEST(DsnMetamorphic, ASecondReportGluedAfterTheFirstIsReadInAnyCase) {
  std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  std::filesystem::path dir = std::filesystem::path(BOUNCED_TEST_DATA) / "dsn" / "postfix";
  const std::string first = Lf(ReadFile(dir / "gmail-unknown-01.eml"));
  const std::string second = Lf(ReadFile(dir / "icloud-unknown-09.eml"));
  const std::string expected =
      Summary(ParseBounce(first, *rules)) + Summary(ParseBounce(second, *rules));
  ASSERT_EQ(std::count(expected.begin(), expected.end(), '\n'), 2) << expected;
  for (const std::string& written :
       {second, TitleCaseMediaTypes(second), GlobalMediaTypes(second)}) {
    ASSERT_NE(written.find("--"), std::string::npos);
    EXPECT_EQ(Summary(ParseBounce(first + "\n" + written, *rules)), expected)
        << written.substr(written.find("\n--"), 400);
  }
}

// A report returning only the original's headers in RFC 6533's message/global-headers (Postfix,
// for SMTPUTF8 mail) is read as with text/rfc822-headers: the original's Message-ID too.
TEST(DsnMetamorphic, ReturnedHeadersReadTheSameInRfc6533Types) {
  std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  static const std::regex kHeadersOnly("content-type:[ \t]*text/rfc822-headers", std::regex::icase);
  size_t tried = 0;
  for (const std::filesystem::path& file : Bounces()) {
    const std::string original = ReadFile(file);
    if (!std::regex_search(original, kHeadersOnly)) continue;
    ParsedBounce as_is = ParseBounce(original, *rules);
    if (as_is.original_message_id.empty()) continue;
    ParsedBounce global = ParseBounce(GlobalMediaTypes(original), *rules);
    EXPECT_EQ(global.original_message_id, as_is.original_message_id) << file.filename().string();
    EXPECT_EQ(Summary(global), Summary(as_is)) << file.filename().string();
    ++tried;
  }
  EXPECT_GT(tried, 3u);
}

// An Exim bounce (lhost-exim-49 in the corpus) whose explanation comes as HTML only: the
// step the remote server refused ("after EHLO") is read as from the plain text, which the
// category depends on. HTML sources end each "<br>" line with a line end of their own.
TEST(DsnMetamorphic, AnHtmlOnlyExplanationReadsAsItsPlainText) {
  const std::string head =
      "From: Mail Delivery System <mailer-daemon@neko.example.com>\n"
      "To: sironeko-nyaan@neko.example.com\n"
      "Subject: Mail delivery failed: returning message to sender\nMIME-Version: 1.0\n"
      "Content-Type: multipart/report; report-type=delivery-status; boundary=b1\n\n--b1\n";
  const std::string text =
      "This message was created automatically by mail delivery software.\n\n"
      "A message that you sent could not be delivered to one or more of its\n"
      "recipients. This is a permanent error. The following address(es) failed:\n\n"
      "  kijitora@example.com\n"
      "    host example.com.nekochan.example.net [203.0.113.222]\n"
      "    SMTP error from remote mail server after EHLO neko.example.com:\n"
      "    550 Rejected\n";
  const std::string report =
      "\n--b1\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; neko.example.com\n\n"
      "Action: failed\nFinal-Recipient: rfc822;kijitora@example.com\nStatus: 5.0.0\n"
      "Remote-MTA: dns; example.com.nekochan.example.net\nDiagnostic-Code: smtp; 550 Rejected\n"
      "\n--b1--\n";
  std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  ParsedBounce plain =
      ParseBounce(head + "Content-Type: text/plain; charset=us-ascii\n\n" + text + report, *rules);
  ParsedBounce html = ParseBounce(
      head + "Content-Type: text/html; charset=us-ascii\n\n" + AsHtml(text) + report, *rules);
  ASSERT_EQ(plain.recipients.size(), 1u);
  EXPECT_EQ(plain.recipients[0].stage, "helo");
  EXPECT_EQ(Summary(html), Summary(plain));
  ASSERT_EQ(html.recipients.size(), 1u);
  EXPECT_EQ(html.recipients[0].stage, plain.recipients[0].stage);
}

// A bounce forwarded as an attachment: a person's or a helpdesk's new message whose first part
// is a short note and whose second is the whole bounce as message/rfc822 (or RFC 6533's
// message/global, or a saved .eml file of unknown type), as mail clients and ticket systems
// forward one; in base64 when `encoding` says so. `boundary` must differ from the bounce's own
// boundaries.
std::string ForwardedAsAttachment(const std::string& bounce, std::string_view note_type,
                                  std::string_view message_type, std::string_view encoding,
                                  const std::string& boundary = "fwd-42") {
  std::string subject;
  static const std::regex kSubject("(^|\n)subject[ \t]*:[ \t]*([^\r\n]*)", std::regex::icase);
  std::smatch m;
  const std::string head = bounce.substr(0, bounce.find("\n\n"));
  if (std::regex_search(head, m, kSubject)) subject = m[2].str();
  std::string note = note_type == "text/html"
                         ? "<html><body><p>See the bounce below.</p></body></html>\n"
                         : "See the bounce below.\n";
  std::string out = "From: \"Helpdesk\" <help@forward.example>\nTo: postmaster@example.org\n";
  out += "Subject: Fwd: " + subject + "\nMIME-Version: 1.0\n";
  out += "Content-Type: multipart/mixed; boundary=\"" + boundary + "\"\n\n";
  out += "--" + boundary + "\nContent-Type: " + std::string(note_type) + "; charset=utf-8\n\n";
  out += note + "\n--" + boundary + "\nContent-Type: " + std::string(message_type) + "\n";
  if (!encoding.empty()) out += "Content-Transfer-Encoding: " + std::string(encoding) + "\n";
  if (encoding == "base64") {
    out += "\n" + Base64Lines(bounce);
  } else {
    out += "\n" + bounce + (bounce.ends_with("\n") ? "" : "\n");
  }
  return out + "--" + boundary + "--\n";
}

// Each test bounce forwarded as an attachment, in the ways clients write it (and forwarded
// again), reads as the bounce itself: the attached message is read when the forward says
// nothing of its own.
TEST(DsnMetamorphic, ABounceForwardedAsAnAttachmentReadsAsTheBounce) {
  std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  size_t tried = 0;
  for (const std::filesystem::path& file : Bounces()) {
    const std::string original = ReadFile(file);
    const std::string expected = Summary(ParseBounce(original, *rules));
    if (expected.empty()) continue;
    struct Way {
      const char* note;
      const char* type;
      const char* encoding;
    };
    for (const Way& way :
         {Way{"text/plain", "message/rfc822", ""}, Way{"text/plain", "message/rfc822", "7bit"},
          Way{"text/html", "message/rfc822", "8bit"}, Way{"text/plain", "message/global", ""},
          Way{"text/plain", "message/rfc822", "base64"},
          // A saved message attached as a file of unknown type.
          Way{"text/plain", "application/octet-stream; name=\"bounce.eml\"", "base64"},
          Way{"text/plain", "Application/Octet-Stream; name=Returned.EML", ""}}) {
      std::string forwarded = ForwardedAsAttachment(original, way.note, way.type, way.encoding);
      EXPECT_EQ(Summary(ParseBounce(forwarded, *rules)), expected)
          << file.filename().string() << " forwarded as " << way.type << " " << way.encoding
          << " after " << way.note;
    }
    std::string twice =
        ForwardedAsAttachment(ForwardedAsAttachment(original, "text/plain", "message/rfc822", ""),
                              "text/plain", "message/rfc822", "", "fwd-43");
    EXPECT_EQ(Summary(ParseBounce(twice, *rules)), expected)
        << file.filename().string() << " forwarded twice";
    EXPECT_EQ(Summary(ParseBounce(ReplaceAll(Lf(twice), "\n", "\r\n"), *rules)), expected)
        << file.filename().string() << " forwarded twice, CRLF";
    // A note in an encoding only GMime's parser reads sends the whole forward there.
    std::string note_head = "Content-Type: text/plain; charset=utf-8\n";
    for (const Way& way :
         {Way{"text/plain", "message/rfc822", ""},
          Way{"text/plain", "application/octet-stream; name=bounce.eml", "base64"}}) {
      std::string for_gmime = ForwardedAsAttachment(original, way.note, way.type, way.encoding);
      for_gmime.insert(for_gmime.find(note_head) + note_head.size(),
                       "Content-Transfer-Encoding: x-uuencode\n");
      EXPECT_EQ(Summary(ParseBounce(for_gmime, *rules)), expected)
          << file.filename().string() << " forwarded as " << way.type << ", read by GMime's parser";
    }
    ++tried;
  }
  EXPECT_GT(tried, 100u);
}

// A message whose parts are whole messages: a helpdesk's forward of several mails as
// message/rfc822 attachments after its note, or a multipart/digest (whose parts are
// message/rfc822 without saying so).
std::string WithAttachedMessages(const std::vector<std::string>& messages, bool digest) {
  std::string out = "From: \"Helpdesk\" <help@forward.example>\nTo: postmaster@example.org\n";
  out += "Subject: Fwd: returned mail\nMIME-Version: 1.0\nContent-Type: multipart/";
  out += digest ? "digest" : "mixed";
  out += "; boundary=\"att-7\"\n\n";
  if (!digest) out += "--att-7\nContent-Type: text/plain\n\nThe mails are attached.\n\n";
  for (const std::string& m : messages) {
    out += "--att-7\n";
    out += digest ? "\n" : "Content-Type: message/rfc822\n\n";
    out += Lf(m) + (m.ends_with("\n") ? "" : "\n");
  }
  return out + "--att-7--\n";
}

// Each test bounce attached beside another mail (before or after it) reads as the bounce; the
// other mail says nothing of a delivery.
TEST(DsnMetamorphic, ABounceAttachedBesideOtherMailReadsAsTheBounce) {
  std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  const std::string other =
      "From: Alice <alice@example.org>\nTo: help@forward.example\nSubject: my invoice\n"
      "Message-ID: <inv-1@example.org>\n\nHello, the invoice is attached.\n";
  size_t tried = 0;
  for (const std::filesystem::path& file : Bounces()) {
    const std::string original = ReadFile(file);
    const std::string expected = Summary(ParseBounce(original, *rules));
    if (expected.empty()) continue;
    EXPECT_EQ(Summary(ParseBounce(WithAttachedMessages({original, other}, false), *rules)),
              expected)
        << file.filename().string() << " attached before another mail";
    EXPECT_EQ(Summary(ParseBounce(WithAttachedMessages({other, original}, false), *rules)),
              expected)
        << file.filename().string() << " attached after another mail";
    ++tried;
  }
  EXPECT_GT(tried, 100u);
}

// Several bounces in one forward or digest: every bounce's recipients, in order.
TEST(DsnMetamorphic, SeveralAttachedBouncesGiveEveryBouncesRecipientsInOrder) {
  std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  std::filesystem::path data = std::filesystem::path(BOUNCED_TEST_DATA) / "dsn";
  std::vector<std::string> bounces;
  std::string expected;
  for (const char* name : {"postfix/gmail-unknown-01.eml", "corpus/lhost-exim-05.eml",
                           "postfix/icloud-unknown-09.eml", "corpus/lhost-sendmail-01.eml"}) {
    bounces.push_back(ReadFile(data / name));
    std::string summary = Summary(ParseBounce(bounces.back(), *rules));
    ASSERT_FALSE(summary.empty()) << name;
    expected += summary;
  }
  for (bool digest : {false, true}) {
    ParsedBounce all = ParseBounce(WithAttachedMessages(bounces, digest), *rules);
    EXPECT_EQ(Summary(all), expected) << (digest ? "digest" : "forward");
    EXPECT_EQ(all.kind, MessageKind::kDsn);  // the first bounce's
  }
}

// A real bounce whose returned message is itself a bounce (a bounce of a bounce, or of a
// forward of one) reads as the outer bounce: its own report and text win over the attachment.
TEST(DsnMetamorphic, ABounceReturningABounceReadsAsItself) {
  std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  std::filesystem::path dir = std::filesystem::path(BOUNCED_TEST_DATA) / "dsn" / "postfix";
  const std::string returned = Lf(ReadFile(dir / "icloud-unknown-09.eml"));
  const std::string returned_summary = Summary(ParseBounce(returned, *rules));
  ASSERT_FALSE(returned_summary.empty());
  const std::string head =
      "From: MAILER-DAEMON@mx.example.net (Mail Delivery System)\n"
      "To: postmaster@example.org\nSubject: Undelivered Mail Returned to Sender\n"
      "MIME-Version: 1.0\n";
  const std::string text =
      "This is the mail system at host mx.example.net.\n\n"
      "I'm sorry to have to inform you that your message could not\n"
      "be delivered to one or more recipients.\n\n"
      "<bob@example.com>: host mx.example.com[192.0.2.7] said: 550 5.1.1 <bob@example.com>:\n"
      "    Recipient address rejected: User unknown in local recipient table (in reply to\n"
      "    RCPT TO command)\n";
  const std::string report =
      "Content-Type: message/delivery-status\n\nReporting-MTA: dns; mx.example.net\n\n"
      "Final-Recipient: rfc822; bob@example.com\nAction: failed\nStatus: 5.1.1\n"
      "Remote-MTA: dns; mx.example.com\nDiagnostic-Code: smtp; 550 5.1.1 <bob@example.com>:\n"
      "    Recipient address rejected: User unknown in local recipient table\n";
  const std::string expected = "bob@example.com user_unknown 5.1.1 hard\n";
  // A DSN, and the same bounce in text only (Exim and Sendmail send no report part).
  const std::string dsn =
      head + "Content-Type: multipart/report; report-type=delivery-status; boundary=b1\n\n--b1\n" +
      "Content-Type: text/plain\n\n" + text + "\n--b1\n" + report + "\n--b1\n" +
      "Content-Type: message/rfc822\n\n" + returned + "\n--b1--\n";
  const std::string text_only = head + "Content-Type: multipart/mixed; boundary=b1\n\n--b1\n" +
                                "Content-Type: text/plain\n\n" + text + "\n--b1\n" +
                                "Content-Type: message/rfc822\n\n" + returned + "\n--b1--\n";
  for (const std::string& bounce : {dsn, text_only}) {
    EXPECT_EQ(Summary(ParseBounce(bounce, *rules)), expected);
    // Forwarded as an attachment, it is still the outer bounce that is read.
    EXPECT_EQ(Summary(ParseBounce(ForwardedAsAttachment(bounce, "text/plain", "message/rfc822", ""),
                                  *rules)),
              expected);
  }
}

// A report part labelled text/plain after a notice that ends with its "copy of the original
// message" line (OpenSMTPD's wording): the explanation stops at that line, and the report is
// still read, as the part it is, giving the status it states.
TEST(DsnMetamorphic, AReportLabelledTextPlainAfterTheNoticeIsStillTheReport) {
  std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  const std::string notice =
      "Content-Type: text/plain; charset=us-ascii\n\n"
      "    Hi!\n\n    This is the MAILER-DAEMON, please DO NOT REPLY to this email.\n\n"
      "    An error has occurred while attempting to deliver a message for\n"
      "    the following list of recipients:\n\n"
      "carol@example.net: 550 5.1.1 <carol@example.net>: Recipient address rejected: User "
      "unknown\n\n"
      "    Below is a copy of the original message:\n";
  const std::string report =
      "\nReporting-MTA: dns; mx.example.org\n\nFinal-Recipient: rfc822; carol@example.net\n"
      "Action: failed\nStatus: 5.1.1\nRemote-MTA: dns; mx.example.net\n"
      "Diagnostic-Code: smtp; 550 5.1.1 <carol@example.net>: Recipient address rejected: User "
      "unknown\n";
  auto bounce = [&](const std::string& report_type) {
    return "From: Mailer Daemon <MAILER-DAEMON@mx.example.org>\nTo: alice@example.org\n"
           "Subject: Delivery status notification: failed\nMIME-Version: 1.0\n"
           "Content-Type: multipart/mixed; boundary=\"b1\"\n\n--b1\n" +
           notice + "\n--b1\nContent-Type: " + report_type + "\n" + report +
           "\n--b1\nContent-Type: text/rfc822-headers\n\nFrom: <alice@example.org>\n"
           "To: <carol@example.net>\nSubject: hello\n\n--b1--\n";
  };
  const std::string expected = "carol@example.net user_unknown 5.1.1 hard\n";
  ParsedBounce typed = ParseBounce(bounce("message/delivery-status"), *rules);
  EXPECT_EQ(Summary(typed), expected);
  ParsedBounce relabelled = ParseBounce(bounce("text/plain"), *rules);
  EXPECT_EQ(Summary(relabelled), expected);
  EXPECT_EQ(relabelled.kind, MessageKind::kDsn);
  EXPECT_EQ(relabelled.reporting_mta, "mx.example.org");
}

}  // namespace
}  // namespace bounced::testing
