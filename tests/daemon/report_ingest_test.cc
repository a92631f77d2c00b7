// report_ingest_test.cc: the daily report on databases filled the real way: Postfix log lines
// (reply texts as the providers write them) read by the real `bounced --once` into a real SQLite
// file, then read back by ReadReportData. These cover what the small golden fixture cannot: busy
// days (many distinct replies, many domains, many incidents).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "daemon/report_db.h"
#include "daemon/report_render.h"

namespace bounced {
namespace {

constexpr int64_t kDay = 86400;
constexpr int64_t kDec1 = 1796083200;  // 2026-12-01T00:00:00Z

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/bounced-report-ingest-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A Postfix log written line by line, with RFC 3339 time stamps (no year guessing).
class PostfixLog {
 public:
  // One delivery attempt of a one-recipient message; `reply` is what the remote server said.
  void Delivery(int64_t t, const std::string& to, const std::string& relay, const std::string& dsn,
                const std::string& status, const std::string& reply) {
    char qid[16];
    snprintf(qid, sizeof qid, "%010llX", static_cast<unsigned long long>(++messages_));
    const std::string stamp = Stamp(t);
    text_ += stamp + " mta postfix/qmgr[200]: " + qid +
             ": from=<news@sender.example>, size=2048, nrcpt=1 (queue active)\n";
    text_ += stamp + " mta postfix/smtp[300]: " + qid + ": to=<" + to + ">, relay=" + relay +
             ", delay=0.5, delays=0.1/0/0.2/0.2, dsn=" + dsn + ", status=" + status + " (" + reply +
             ")\n";
  }
  void Sent(int64_t t, const std::string& to) {
    Delivery(t, to, "mx.example[192.0.2.25]:25", "2.0.0", "sent", "250 2.0.0 Ok: queued as X");
  }
  const std::string& text() const { return text_; }

 private:
  static std::string Stamp(int64_t t) {
    time_t tt = static_cast<time_t>(t);
    struct tm tm {};
    gmtime_r(&tt, &tm);
    char buf[64];
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S.000000+00:00", &tm);
    return buf;
  }
  std::string text_;
  unsigned long long messages_ = 0x1000000000ULL;
};

// Feeds `log` to the real bounced (--once) and returns the database it wrote.
std::string Ingest(const TempDir& dir, const PostfixLog& log) {
  const std::string db = dir / "bounced.db";
  std::ofstream(dir / "mail.log", std::ios::binary) << log.text();
  std::ofstream(dir / "bounced.toml")
      << "[storage]\npath = \"" << db << "\"\n[input.log]\npath = \"" << (dir / "mail.log")
      << "\"\n[query]\nsocket = \"" << (dir / "q.sock") << "\"\ngroup = \"\"\n"
      << "[socketmap]\nsocket = \"\"\n[rules]\nfiles = [\"" BOUNCED_SOURCE_DIR
         "/rules/default.toml\"]\n";
  const std::string cmd = std::string(BOUNCED_BINARY_DIR) + "/bounced --once -c " +
                          (dir / "bounced.toml") + " > " + (dir / "bounced.out") + " 2>&1";
  const int status = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  return db;
}

AdviceBook Advice() {
  auto book = AdviceBook::Load(BOUNCED_SOURCE_DIR "/packaging/advice.toml");
  EXPECT_TRUE(book.ok()) << book.error();
  return book.ok() ? *book : AdviceBook();
}

ReportRequest Request(const std::string& db, const std::string& date) {
  ReportRequest r;
  r.db_path = db;
  r.date = date;
  r.now = kDec1 + 6 * 3600;
  r.host = "mail.example.net";
  return r;
}

const SenderProblem* Find(const Report& r, const std::string& provider, const std::string& code) {
  for (const auto& p : r.sender_problems) {
    if (p.provider == provider && p.code == code) return &p;
  }
  return nullptr;
}

std::string GmailUnauthenticated(int n) {
  // Gmail ends every reply with a per-message id: no two replies of a day are the same text.
  char id[64];
  snprintf(id, sizeof id, "d9443c01a7336-21c9f1b2a3bsi%06dad.%d", n, n % 97);
  return std::string(
             "host gmail-smtp-in.l.google.com[142.250.102.27] said: 550-5.7.26 This mail has "
             "been blocked because the sender is unauthenticated. Gmail requires all senders to "
             "authenticate with either SPF or DKIM. For instructions on setting up "
             "authentication, go to 550 5.7.26 "
             "https://support.google.com/mail/answer/81126#authentication ") +
         id + " - gsmtp (in reply to end of DATA command)";
}

std::string MicrosoftBlocked(int n) {
  // Outlook.com names the front end that answered: it varies from connection to connection.
  char host[64];
  snprintf(host, sizeof host, "AM4PEPF%08X.eurprd04.prod.outlook.com", 0x27A5F + n);
  return std::string(
             "host outlook-com.olc.protection.outlook.com[52.101.68.1] said: 550 5.7.1 "
             "Unfortunately, messages from [192.0.2.10] weren't sent. Please contact your "
             "Internet service provider since part of their network is on our block list "
             "(S3150). You can also refer your provider to "
             "http://mail.live.com/mail/troubleshooting.aspx#errors. [") +
         host + "] (in reply to RCPT TO command)";
}

// A big Gmail problem late in the day must not leave a smaller one of the morning without its
// sample replies: each problem gets its own.
TEST(ReportIngestTest, EverySenderSideProblemKeepsItsSampleRepliesOnABusyDay) {
  TempDir dir;
  PostfixLog log;
  const int64_t day = kDec1 - kDay;  // 2026-11-30
  for (int i = 0; i < 5; ++i) {
    log.Delivery(day + 6 * 3600 + i * 60, "user" + std::to_string(i) + "@outlook.com",
                 "outlook-com.olc.protection.outlook.com[52.101.68.1]:25", "5.7.1", "bounced",
                 MicrosoftBlocked(i));
  }
  for (int i = 0; i < 1200; ++i) {
    log.Delivery(day + 12 * 3600 + i * 10, "person" + std::to_string(i) + "@gmail.com",
                 "gmail-smtp-in.l.google.com[142.250.102.27]:25", "5.7.26", "bounced",
                 GmailUnauthenticated(i));
  }
  const std::string db = Ingest(dir, log);
  auto data = ReadReportData(Request(db, "2026-11-30"));
  ASSERT_TRUE(data.ok()) << data.error();
  Report r = BuildReport(*data, Advice());

  const SenderProblem* gmail = Find(r, "gmail", "5.7.26");
  ASSERT_NE(gmail, nullptr);
  EXPECT_EQ(gmail->count, 1200);
  EXPECT_EQ(gmail->samples.size(), 3u);
  const SenderProblem* microsoft = Find(r, "microsoft", "S3150");
  ASSERT_NE(microsoft, nullptr);
  EXPECT_EQ(microsoft->count, 5);
  ASSERT_EQ(microsoft->samples.size(), 3u);
  EXPECT_NE(microsoft->samples[0].find("(S3150)"), std::string::npos) << microsoft->samples[0];
}

// A campaign sent every morning to iCloud meets CS01 and HM08 bursts each day: every burst of the
// period is an alert in a month's report, not only the newest few.
TEST(ReportIngestTest, AMonthsReportShowsEveryAlertOfTheMonth) {
  TempDir dir;
  PostfixLog log;
  const int days = 37;  // the 30 days of the report and the 7 days of baseline before them
  for (int d = days; d >= 1; --d) {
    const int64_t morning = kDec1 - d * kDay + 9 * 3600;
    for (const char* code : {"CS01", "HM08"}) {
      for (int i = 0; i < 12; ++i) {
        log.Delivery(morning + i * 30, "reader" + std::to_string(i) + "@icloud.com",
                     "mx01.mail.icloud.com[17.57.154.6]:25", "5.7.1", "bounced",
                     std::string("host mx01.mail.icloud.com[17.57.154.6] said: 554 5.7.1 [") +
                         code +
                         "] Message rejected due to local policy. Please visit "
                         "https://support.apple.com/en-us/HT204137 (in reply to end of DATA "
                         "command)");
      }
    }
  }
  const std::string db = Ingest(dir, log);
  ReportRequest req = Request(db, "2026-11-30");
  req.days = 30;
  auto data = ReadReportData(req);
  ASSERT_TRUE(data.ok()) << data.error();
  Report r = BuildReport(*data, Advice());
  EXPECT_EQ(r.incidents.size(), 60u);  // two codes, one burst a day for 30 days
  ASSERT_FALSE(r.incidents.empty());
  EXPECT_EQ(FormatUtc(r.incidents.front().opened).substr(0, 10), "2026-11-01");
  EXPECT_NE(Headline(r).find("60 alerts"), std::string::npos) << Headline(r);
}

// A long report over many recipient domains reads the period's counts summed per domain, not a
// row per domain and day: its memory follows the number of domains, not domains x days.
TEST(ReportIngestTest, ALongReportOverManyDomainsKeepsOneRowPerDomainAndOutcome) {
  TempDir dir;
  PostfixLog log;
  const int days = 40, domains = 150;
  for (int d = days; d >= 1; --d) {
    for (int k = 0; k < domains; ++k) {
      const std::string domain = "customer" + std::to_string(k) + ".example";
      log.Sent(kDec1 - d * kDay + 8 * 3600 + k, "a@" + domain);
      if (k % 10 == 0) {
        log.Delivery(kDec1 - d * kDay + 10 * 3600 + k, "gone" + std::to_string(d) + "@" + domain,
                     "mx." + domain + "[192.0.2.30]:25", "5.1.1", "bounced",
                     "host mx." + domain + "[192.0.2.30] said: 550 5.1.1 <gone@" + domain +
                         ">: Recipient address rejected: User unknown in virtual mailbox table "
                         "(in reply to RCPT TO command)");
      }
    }
  }
  const std::string db = Ingest(dir, log);
  ReportRequest req = Request(db, "2026-11-30");
  req.days = 30;
  auto data = ReadReportData(req);
  ASSERT_TRUE(data.ok()) << data.error();
  // 150 domains sent to, 15 of them also bounced; the last day apart (its own categories): at
  // most twice that, where a row per domain and day would be 30 times that.
  EXPECT_LE(data->counters.size(), 2u * (domains + domains / 10));
  Report r = BuildReport(*data, Advice(), 1000);
  EXPECT_EQ(r.recipients.sent, 30 * domains);
  EXPECT_EQ(r.recipients.bounced, 30 * domains / 10);
  ASSERT_EQ(r.domains.size(), static_cast<size_t>(domains));
  EXPECT_EQ(r.domains[0].counts.sent, 30);
  EXPECT_EQ(r.domains[0].counts.bounced, 30);
  ASSERT_EQ(r.day_categories.size(), 1u);
  EXPECT_EQ(r.day_categories[0].name, "user_unknown");
  EXPECT_EQ(r.day_categories[0].count, domains / 10);
  // The trend still has a value per day: the 30 days of the period, as many bounces each.
  ASSERT_EQ(r.trend.days.size(), 30u);
  ASSERT_EQ(r.trend.categories.size(), 1u);
  for (int64_t v : r.trend.categories[0].values) EXPECT_EQ(v, domains / 10);
}

// Characters on the screen, for UTF-8 that is whole; npos when it is not.
size_t Utf8Columns(const std::string& s) {
  size_t cols = 0;
  for (size_t i = 0; i < s.size(); ++cols) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xE  ? 3
                     : (c >> 3) == 0x1E ? 4
                                        : 0;
    if (n == 0 || i + n > s.size()) return std::string::npos;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return std::string::npos;
    }
    i += n;
  }
  return cols;
}

// An internationalised recipient domain (SMTPUTF8, as Postfix logs it) too long for the text
// table's first column is cut between characters, and its numbers stay under their headings.
TEST(ReportIngestTest, TheTextTableCutsAUtf8DomainBetweenCharacters) {
  TempDir dir;
  PostfixLog log;
  const std::string domain =
      "kundenservice-team-b\xc3\xbc"
      "cher.example";  // bücher
  log.Delivery(kDec1 - kDay + 3600, "info@" + domain, "mx." + domain + "[192.0.2.40]:25", "5.1.1",
               "bounced",
               "host mx." + domain + "[192.0.2.40] said: 550 5.1.1 <info@" + domain +
                   ">: Recipient address rejected: User unknown (in reply to RCPT TO command)");
  const std::string db = Ingest(dir, log);
  auto data = ReadReportData(Request(db, "2026-11-30"));
  ASSERT_TRUE(data.ok()) << data.error();
  const std::string text = RenderText(BuildReport(*data, Advice()));
  std::istringstream lines(text);
  std::string line, heading, row;
  while (std::getline(lines, line)) {
    if (line.rfind("  domain ", 0) == 0) heading = line;
    if (!heading.empty() && row.empty() && line.rfind("  kundenservice", 0) == 0) row = line;
  }
  ASSERT_FALSE(row.empty()) << text;
  ASSERT_NE(Utf8Columns(row), std::string::npos) << row;  // no character cut in two
  EXPECT_EQ(Utf8Columns(row), Utf8Columns(heading)) << heading << "\n" << row;
}

}  // namespace
}  // namespace bounced
