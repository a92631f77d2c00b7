// dsn_metamorphic_test.cc: the same bounce written differently must parse the same. Each real
// bounce in tests/data/dsn (corpus and Postfix captures) is rewritten in ways MTAs and mail
// stores really differ (line ends, header-name case, space after the colon, the multipart
// boundary's spelling and quoting, a folded Content-Type, trailing space on a delimiter line),
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

namespace bounced::testing {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

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

}  // namespace
}  // namespace bounced::testing
