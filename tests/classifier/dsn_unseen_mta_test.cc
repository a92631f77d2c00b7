// dsn_unseen_mta_test.cc: bounces from mail systems the accuracy corpus does not have. Accuracy
// is judged on a hold-out set of real bounces; the corpus (tests/data/dsn/corpus) covers about
// sixty mail systems, and a system whose wording the parser has never met may lose a
// recipient, its reason or its stage. Each message in tests/data/dsn/unseen is written the way
// its system sends it (headers, MIME structure, the system's own prose around the remote
// reply), from public facts about that wording (README.md there names the source of each);
// expected.tsv says, per recipient in the order the bounce lists them, its address, category,
// hard_bounce, status and stage. Reads tests/data/dsn/unseen only; writes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "classifier/dsn_parser.h"
#include "classifier/result.h"
#include "classifier/rules.h"
#include "tests/read_file.h"
#include "tests/sample_dir.h"

namespace bounced::testing {
namespace {

std::filesystem::path Dir() { return std::filesystem::path(BOUNCED_TEST_DATA) / "dsn" / "unseen"; }

const RuleSet& Rules() {
  static std::shared_ptr<const RuleSet> rules = RuleSet::Default();
  return *rules;
}

// One row of expected.tsv. "-" in status or stage: the bounce states none to check against
// (the system gives no code, or the stage is not knowable from its words).
struct Expected {
  std::string recipient;
  std::string category;
  bool hard = false;
  std::string status;
  std::string stage;
};

// expected.tsv by file, rows in the order the bounce lists its recipients.
std::map<std::string, std::vector<Expected>> ReadExpectations() {
  std::map<std::string, std::vector<Expected>> out;
  EXPECT_TRUE(std::filesystem::exists(Dir() / "expected.tsv"));
  for (std::vector<std::string>& f : TsvRows(Dir() / "expected.tsv")) {
    EXPECT_EQ(f.size(), 6u) << f[0];
    f.resize(6);
    out[f[0]].push_back(Expected{f[1], f[2], f[3] == "1", f[4], f[5]});
  }
  return out;
}

std::vector<std::string> Messages() { return EmlFiles(Dir()); }

TEST(UnseenMtaBounces, EveryMessageHasExpectationsAndASource) {
  std::map<std::string, std::vector<Expected>> expected = ReadExpectations();
  std::string readme = ReadFile(Dir() / "README.md");
  std::vector<std::string> messages = Messages();
  EXPECT_GE(messages.size(), 25u);
  std::set<std::string> systems;
  for (const std::string& m : messages) {
    EXPECT_TRUE(expected.count(m)) << m << " has no row in expected.tsv";
    EXPECT_NE(readme.find(m), std::string::npos) << m << " is not described in README.md";
    systems.insert(m.substr(0, m.find('-')));
  }
  for (const auto& [file, rows] : expected) {
    EXPECT_TRUE(std::find(messages.begin(), messages.end(), file) != messages.end())
        << file << " in expected.tsv does not exist";
  }
  EXPECT_GE(systems.size(), 15u);
}

TEST(UnseenMtaBounces, EveryRecipientReadAsItsSystemMeansIt) {
  std::map<std::string, std::vector<Expected>> expected = ReadExpectations();
  int checked = 0;
  for (const auto& [file, rows] : expected) {
    std::string bytes = ReadFile(Dir() / file);
    ASSERT_FALSE(bytes.empty()) << file;
    ParsedBounce p = ParseBounce(bytes, Rules());
    EXPECT_NE(p.kind, MessageKind::kNotBounce) << file << ": " << p.error;
    ASSERT_EQ(p.recipients.size(), rows.size()) << file << ": " << p.error;
    for (size_t i = 0; i < rows.size(); ++i) {
      const Result& r = p.recipients[i];
      const Expected& e = rows[i];
      SCOPED_TRACE(file + " #" + std::to_string(i + 1) + " " + e.recipient + ": " + r.diagnostic);
      EXPECT_EQ(r.recipient, e.recipient);
      EXPECT_EQ(ToString(r.category), e.category);
      EXPECT_EQ(r.hard_bounce(), e.hard);
      if (e.status != "-") {
        EXPECT_EQ(r.status, e.status);
      }
      if (e.stage != "-") {
        EXPECT_EQ(r.stage, e.stage);
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 25);
}

// The same bounces with LF line ends where the system wrote CRLF, and the reverse: a system's
// line ends are not part of its wording.
TEST(UnseenMtaBounces, LineEndsDoNotChangeTheReading) {
  for (const std::string& m : Messages()) {
    std::string bytes = ReadFile(Dir() / m);
    ParsedBounce a = ParseBounce(LfLineEnds(bytes), Rules());
    ParsedBounce b = ParseBounce(CrlfLineEnds(bytes), Rules());
    ASSERT_EQ(a.recipients.size(), b.recipients.size()) << m;
    for (size_t i = 0; i < a.recipients.size(); ++i) {
      EXPECT_EQ(a.recipients[i].recipient, b.recipients[i].recipient) << m;
      EXPECT_EQ(a.recipients[i].category, b.recipients[i].category) << m;
      EXPECT_EQ(a.recipients[i].status, b.recipients[i].status) << m;
      EXPECT_EQ(a.recipients[i].stage, b.recipients[i].stage) << m;
    }
  }
}

}  // namespace
}  // namespace bounced::testing
