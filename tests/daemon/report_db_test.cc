// report_db_test.cc: the daily report from a real database. The database is created by the
// real Store (schema and migrations), then filled with tests/data/reports/fixture.sql; the text
// and JSON renderings are compared with golden files in tests/data/reports/ (regenerate with
// BOUNCED_UPDATE_GOLDEN=1 after a deliberate change, and read the diff).
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "daemon/report_db.h"
#include "daemon/report_render.h"
#include "storage/store.h"
#include "tests/read_file.h"

namespace bounced {
namespace {

const std::string kData = BOUNCED_TEST_DATA "/reports";
constexpr int64_t kNow = 1795933200;  // 2026-11-29T06:20:00Z, the morning after

using testing::ReadFile;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/bounced-report-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void Exec(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

// The real schema (Store::Open creates and migrates it), then the fixture rows.
std::string BuildFixtureDb(const TempDir& dir) {
  const std::string path = dir.path() + "/bounced.db";
  {
    StoreOptions o;
    o.path = path;
    auto store = Store::Open(o);
    EXPECT_TRUE(store.ok()) << store.error();
  }
  Exec(path, ReadFile(kData + "/fixture.sql"));
  return path;
}

AdviceBook Advice() {
  auto book = AdviceBook::Load(BOUNCED_SOURCE_DIR "/packaging/advice.toml");
  EXPECT_TRUE(book.ok()) << book.error();
  return book.ok() ? *book : AdviceBook();
}

ReportRequest Request(const std::string& db) {
  ReportRequest r;
  r.db_path = db;
  r.date = "2026-11-28";
  r.now = kNow;
  r.host = "mail.example.net";
  return r;
}

void CompareGolden(const std::string& name, const std::string& got) {
  const std::string path = kData + "/" + name;
  if (getenv("BOUNCED_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << got;
  }
  EXPECT_EQ(got, ReadFile(path)) << "golden " << path << " differs (BOUNCED_UPDATE_GOLDEN=1)";
}

class ReportDbTest : public ::testing::Test {
 protected:
  void SetUp() override { db_ = BuildFixtureDb(dir_); }
  TempDir dir_;
  std::string db_;
};

TEST_F(ReportDbTest, TextAndJsonMatchTheGoldenFiles) {
  auto data = ReadReportData(Request(db_));
  ASSERT_TRUE(data.ok()) << data.error();
  data->database = "bounced.db";  // the temp path differs per run
  Report r = BuildReport(*data, Advice());
  CompareGolden("2026-11-28.txt", RenderText(r));
  CompareGolden("2026-11-28.json", RenderJson(r));
}

TEST_F(ReportDbTest, CountsTheDayAndComparesSenderSideProblemsWithThePreviousWeek) {
  auto data = ReadReportData(Request(db_));
  ASSERT_TRUE(data.ok()) << data.error();
  Report r = BuildReport(*data, Advice());
  EXPECT_EQ(r.first_day, "2026-11-28");
  EXPECT_EQ(r.recipients.sent, 1720);
  EXPECT_EQ(r.recipients.bounced, 58);  // the uncounted DSN copy is not in it
  EXPECT_EQ(r.recipients.deferred, 13);
  EXPECT_EQ(r.recipients.expired, 1);
  EXPECT_EQ(r.recipients.complaint, 1);
  // Two recipients per queue id in the fixture: messages are about half the recipients.
  EXPECT_EQ(r.messages.sent, 300 / 2 + 100 / 2 + 800 / 2 + 250 / 2 + 50 / 2 + 200 / 2 + 20 / 2);

  ASSERT_GE(r.sender_problems.size(), 5u);
  const SenderProblem& first = r.sender_problems[0];  // the biggest, first
  EXPECT_EQ(first.provider, "icloud");
  EXPECT_EQ(first.provider_name, "iCloud");
  EXPECT_EQ(first.code, "CS01");
  EXPECT_EQ(first.count, 35);  // icloud.com and me.com together
  EXPECT_DOUBLE_EQ(first.previous_daily_average, 2.0);
  ASSERT_TRUE(first.change_percent.has_value());
  EXPECT_DOUBLE_EQ(*first.change_percent, 1650.0);
  ASSERT_EQ(first.samples.size(), 1u);
  EXPECT_NE(first.samples[0].find("[CS01]"), std::string::npos);
  EXPECT_NE(first.advice_title.find("CS01"), std::string::npos);
  EXPECT_FALSE(first.advice_steps.empty());
  // Which of our domains it hit: the burst came from the offers brand (its sender spelt in
  // capitals), the rest from the newsletter.
  ASSERT_EQ(first.sender_domains.size(), 2u);
  EXPECT_EQ(first.sender_domains[0].name, "deals.example");
  EXPECT_EQ(first.sender_domains[0].count, 30);
  EXPECT_EQ(first.sender_domains[1].name, "shop.example");
  EXPECT_EQ(first.sender_domains[1].count, 5);
  EXPECT_EQ(SenderDomains(first), "deals.example 30, shop.example 5");

  auto find = [&](const std::string& provider, const std::string& code) -> const SenderProblem* {
    for (const auto& p : r.sender_problems) {
      if (p.provider == provider && p.code == code) return &p;
    }
    return nullptr;
  };
  const SenderProblem* gmail = find("gmail", "5.7.26");
  ASSERT_NE(gmail, nullptr);
  EXPECT_EQ(gmail->count, 8);
  EXPECT_NEAR(gmail->previous_daily_average, 3.0 / 7, 1e-9);
  EXPECT_NE(gmail->advice_title.find("unauthenticated"), std::string::npos);
  const SenderProblem* aol = find("yahoo", "5.7.9");  // aol.com is reported with Yahoo
  ASSERT_NE(aol, nullptr);
  EXPECT_EQ(aol->provider_name, "Yahoo/AOL");
  EXPECT_FALSE(aol->change_percent.has_value());  // new
  ASSERT_NE(find("microsoft", "S3150"), nullptr);
  ASSERT_NE(find("icloud", "HM08"), nullptr);
  // Yahoo deferring for complaints: throttling by a named provider is about our reputation,
  // listed with its advice though transient (it suppresses nothing).
  const SenderProblem* tss04 = find("yahoo", "TSS04");
  ASSERT_NE(tss04, nullptr);
  EXPECT_EQ(tss04->count, 10);
  EXPECT_EQ(tss04->category, "rate_limited");
  EXPECT_NE(tss04->advice_title.find("TSS04"), std::string::npos);

  EXPECT_EQ(r.new_suppressions, 8);        // 5 user_unknown, 1 domain_unknown, complaint, manual
  EXPECT_EQ(r.lifted_suppressions, 2);     // by an operator, and one that expired
  EXPECT_EQ(r.manual_changes.size(), 2u);  // the allow of the day before is not in it

  ASSERT_EQ(r.incidents.size(), 2u);  // the 09:00 CS01 burst, then TSS04 from 12:00
  EXPECT_EQ(r.incidents[0].provider, "icloud");
  EXPECT_EQ(r.incidents[0].code, "CS01");
  EXPECT_EQ(FormatUtc(r.incidents[0].opened).substr(0, 13), "2026-11-28T09");
  EXPECT_EQ(r.incidents[1].code, "TSS04");

  ASSERT_EQ(r.trend.days.size(), 14u);
  EXPECT_EQ(r.trend.days.front(), "2026-11-15");
  EXPECT_EQ(r.trend.days.back(), "2026-11-28");
  ASSERT_FALSE(r.day_categories.empty());
  EXPECT_EQ(r.day_categories[0].name, "policy_rejection");  // 35 CS01 + 2 from AOL
  EXPECT_EQ(r.day_categories[0].count, 37);
}

TEST_F(ReportDbTest, DomainFilterKeepsOnlyThatDomain) {
  ReportRequest req = Request(db_);
  req.domain = "me.com";
  auto data = ReadReportData(req);
  ASSERT_TRUE(data.ok()) << data.error();
  Report r = BuildReport(*data, Advice());
  EXPECT_EQ(r.recipients.sent, 100);
  ASSERT_EQ(r.sender_problems.size(), 1u);
  EXPECT_EQ(r.sender_problems[0].count, 5);
  ASSERT_EQ(r.domains.size(), 1u);
  EXPECT_EQ(r.domains[0].id, "me.com");
  EXPECT_EQ(r.new_suppressions, 0);
  EXPECT_TRUE(r.incidents.empty());  // 5 in a day is not a spike
}

// A lifted entry says who lifted it and why, or that it expired; a copy from before schema 8,
// whose changes have no note, still reports them, without it.
TEST_F(ReportDbTest, LiftedSuppressionsSayWhyAndOlderCopiesStillRead) {
  auto data = ReadReportData(Request(db_));
  ASSERT_TRUE(data.ok()) << data.error();
  Report r = BuildReport(*data, Advice());
  ASSERT_EQ(r.lifted_list.size(), 2u);
  EXPECT_EQ(r.lifted_list[0].address, "paused.reader@example.com");  // newest first
  EXPECT_EQ(ChangeNote(r.lifted_list[0]), "expired");
  EXPECT_EQ(ChangeNote(r.lifted_list[1]), "uid 0: mailbox exists again, confirmed by phone");
  EXPECT_NE(RenderText(r).find("manual; lifted: expired"), std::string::npos);
  EXPECT_NE(RenderHtml(r).find("hard_bounce (user_unknown), bounce; lifted: uid 0: mailbox exists "
                               "again, confirmed by phone</td>"),
            std::string::npos);
  EXPECT_NE(RenderJson(r).find("\"note\": \"expired\""), std::string::npos);

  Exec(db_,
       "DROP INDEX suppression_log_by_address; ALTER TABLE suppression_log DROP COLUMN note; "
       "PRAGMA user_version = 7;");
  auto old = ReadReportData(Request(db_));
  ASSERT_TRUE(old.ok()) << old.error();
  Report o = BuildReport(*old, Advice());
  ASSERT_EQ(o.lifted_list.size(), 2u);
  EXPECT_EQ(ChangeNote(o.lifted_list[1]), "");
  EXPECT_EQ(o.new_suppressions, r.new_suppressions);
}

TEST_F(ReportDbTest, SeveralDaysAddUp) {
  ReportRequest req = Request(db_);
  req.days = 7;
  auto data = ReadReportData(req);
  ASSERT_TRUE(data.ok()) << data.error();
  Report r = BuildReport(*data, Advice());
  EXPECT_EQ(r.first_day, "2026-11-22");
  EXPECT_EQ(r.recipients.sent, 7 * 1720);
  ASSERT_FALSE(r.sender_problems.empty());
  EXPECT_EQ(r.sender_problems[0].code, "CS01");
  EXPECT_EQ(r.sender_problems[0].count, 6 * 2 + 35);
}

TEST_F(ReportDbTest, ReadsWhileAWriterHoldsATransaction) {
  sqlite3* writer = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &writer), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(writer,
                         "BEGIN IMMEDIATE; INSERT INTO audit (time, actor_uid, action, target, "
                         "reason) VALUES (1795867200, 0, 'suppress', 'x@y.z', 'pending');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  auto data = ReadReportData(Request(db_));
  ASSERT_TRUE(data.ok()) << data.error();
  EXPECT_EQ(data->manual_changes.size(), 2u);  // the uncommitted row is not seen
  sqlite3_exec(writer, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(writer);
}

// `bouncectl report ARGS` on the fixture, as JSON; *rc gets its exit code.
std::string RunReport(const std::string& args, int* rc, const std::string& prefix = "") {
  std::string cmd = prefix + "env BOUNCED_REPORT_NOW=" + std::to_string(kNow) +
                    " BOUNCED_REPORT_HOST=mail.example.net " BOUNCED_BINARY_DIR
                    "/bouncectl report --date 2026-11-28 --format json --no-alerts " +
                    args + " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// The domain is taken as stats and list take it: any case, with or without '@' and a final dot.
TEST_F(ReportDbTest, TheCommandTakesTheDomainInAnyCase) {
  int rc = -1;
  std::string plain = RunReport("--db " + db_ + " --domain me.com", &rc);
  ASSERT_EQ(rc, 0) << plain;
  std::string odd = RunReport("--db " + db_ + " --domain @ME.Com.", &rc);
  ASSERT_EQ(rc, 0) << odd;
  EXPECT_EQ(odd, plain);
  EXPECT_NE(plain.find("\"sent\": 100"), std::string::npos) << plain;
  std::string bad = RunReport("--db " + db_ + " --domain 'me com'", &rc);
  EXPECT_EQ(rc, 2) << bad;
  EXPECT_NE(bad.find("is not a domain"), std::string::npos) << bad;
}

// A --date that is no day is a usage error (exit status 2, bouncectl(1)), like any bad option.
TEST_F(ReportDbTest, TheCommandRefusesADateThatIsNoDayAsAUsageError) {
  for (const char* bad : {"2026-13-45", "2026-02-30", "26-11-28", "2026-11-28x"}) {
    const std::string cmd =
        std::string(BOUNCED_BINARY_DIR "/bouncectl report --format json --db ") + db_ +
        " --date '" + bad + "' 2>&1";
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = pclose(p);
    ASSERT_TRUE(WIFEXITED(status)) << cmd;
    EXPECT_EQ(WEXITSTATUS(status), 2) << bad << ": " << out;
    EXPECT_NE(out.find("bad date"), std::string::npos) << out;
  }
}

// A copy made the README's way (sqlite3 .backup, so in WAL mode) in a folder the reader cannot
// write to: the report reads it as it is (there is no -wal file to miss).
TEST_F(ReportDbTest, ReadsABackupInAFolderItCannotWriteTo) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the report as nobody";
  const std::string folder = dir_.path() + "/ro";
  std::filesystem::create_directory(folder);
  const std::string copy = folder + "/b.db";
  Exec(db_, "VACUUM INTO '" + copy + "'");
  Exec(copy, "PRAGMA journal_mode=WAL");
  std::filesystem::remove(copy + "-wal");
  std::filesystem::remove(copy + "-shm");
  std::filesystem::permissions(dir_.path(), std::filesystem::perms(0755));
  std::filesystem::permissions(folder, std::filesystem::perms(0755));
  std::filesystem::permissions(copy, std::filesystem::perms(0644));
  int rc = -1;
  std::string out =
      RunReport("--db " + copy, &rc, "setpriv --reuid=nobody --regid=nogroup --clear-groups ");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\"bounced\": 58"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(copy + "-shm"));
}

TEST(ReportDbErrorsTest, SaysWhatIsWrongWithTheFile) {
  TempDir dir;
  ReportRequest req;
  req.date = "2026-11-28";
  req.db_path = dir.path() + "/missing.db";
  auto missing = ReadReportData(req);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("cannot read"), std::string::npos);

  req.db_path = dir.path() + "/empty.db";
  Exec(req.db_path, "CREATE TABLE t (x)");
  auto empty = ReadReportData(req);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().find("not a bounced database"), std::string::npos);

  req.db_path = dir.path() + "/future.db";
  Exec(req.db_path, "CREATE TABLE t (x); PRAGMA user_version = 99;");
  auto future = ReadReportData(req);
  ASSERT_FALSE(future.ok());
  EXPECT_NE(future.error().find("newer"), std::string::npos);

  req.date = "2026-13-45";
  auto bad_date = ReadReportData(req);
  ASSERT_FALSE(bad_date.ok());
  EXPECT_NE(bad_date.error().find("bad date"), std::string::npos);
}

}  // namespace
}  // namespace bounced
