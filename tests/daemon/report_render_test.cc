// report_render_test.cc: the renderers on hand-built models (empty, hostile text), the advice
// file, the report mail (MIME, a real sendmail stand-in process), the bouncectl report,
// postfix-config and doctor commands as real processes, and the HTML page in headless Chromium
// (skipped only when chromium is not installed).
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>
#include <toml++/toml.h>
#include <nlohmann/json.hpp>

#include "daemon/report_advice.h"
#include "daemon/report_mail.h"
#include "daemon/report_model.h"
#include "daemon/report_render.h"
#include "storage/store.h"
#include "tests/read_file.h"

namespace bounced {
namespace {

using testing::ReadFile;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/bounced-render-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs a shell command, returns (exit status, stdout).
std::pair<int, std::string> RunShell(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

AdviceBook Advice() {
  auto book = AdviceBook::Load(BOUNCED_SOURCE_DIR "/packaging/advice.toml");
  EXPECT_TRUE(book.ok()) << book.error();
  return book.ok() ? *book : AdviceBook();
}

// A small model with hostile text in every place the database can put text.
ReportData HostileData() {
  ReportData d;
  d.date = "2026-11-28";
  d.generated_at = "2026-11-29T06:00:00Z";
  d.host = "mx<1>";
  d.counters = {
      {"2026-11-28", "icloud.com", "icloud", "policy_rejection", "CS01", "bounced", 12},
      {"2026-11-28", "icloud.com", "icloud", "delivered", "", "sent", 100},
      {"2026-11-28", "evil<script>.example", "", "user_unknown", "", "bounced", 1},
      {"2026-11-27", "icloud.com", "icloud", "policy_rejection", "CS01", "bounced", 3},
  };
  d.sender = {{"2026-11-28", "icloud", "CS01", "5.7.1", "policy_rejection", 12},
              {"2026-11-25", "icloud", "CS01", "5.7.1", "policy_rejection", 7}};
  d.samples = {{"icloud", "CS01", "5.7.1", "policy_rejection",
                "554 5.7.1 [CS01] <script>alert(1)</script> & \"quotes\"", 12, 1796000000}};
  d.suppression_changes = {
      {1, 1796000000, "a<b>@evil.example", "add", "bounce", "hard_bounce", "user_unknown", -1}};
  return d;
}

TEST(ReportRenderTest, EmptyReportSaysSoInEveryForm) {
  ReportData d;
  d.date = "2026-11-28";
  Report r = BuildReport(d, AdviceBook());
  std::string text = RenderText(r);
  EXPECT_NE(text.find("None in this period."), std::string::npos);
  EXPECT_NE(text.find("No deliveries in this period."), std::string::npos);
  std::string html = RenderHtml(r);
  EXPECT_NE(html.find("None in this period."), std::string::npos);
  auto j = nlohmann::json::parse(RenderJson(r));
  EXPECT_EQ(j["totals"]["recipients"]["bounce_rate"], 0.0);
  EXPECT_TRUE(j["sender_problems"].empty());
  EXPECT_EQ(j["trend"]["days"].size(), 14u);
}

TEST(ReportRenderTest, HtmlEscapesEverythingFromTheDatabaseAndFetchesNothing) {
  Report r = BuildReport(HostileData(), Advice());
  std::string html = RenderHtml(r);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;"),
            std::string::npos);
  EXPECT_NE(html.find("a&lt;b&gt;@evil.example"), std::string::npos);
  EXPECT_NE(html.find("mx&lt;1&gt;"), std::string::npos);
  // Self-contained: no attribute that loads anything, a CSP that forbids loading.
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=)")));
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
  // Charts: the day's categories and the two trends.
  size_t svgs = 0;
  for (size_t p = html.find("<svg"); p != std::string::npos; p = html.find("<svg", p + 1)) ++svgs;
  EXPECT_EQ(svgs, 3u);
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  EXPECT_NE(html.find("<rect"), std::string::npos);
  EXPECT_NE(html.find("name=\"viewport\""), std::string::npos);
}

TEST(ReportRenderTest, JsonKeepsTheStableFieldNames) {
  Report r = BuildReport(HostileData(), Advice());
  auto j = ReportToJson(r);
  for (const char* k :
       {"report_version", "generated_at", "host", "database", "period", "domain", "totals",
        "sender_problems", "providers", "domains", "day_categories", "new_suppressions",
        "lifted_suppressions", "manual_changes", "alerts", "trend"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  const auto& p = j["sender_problems"][0];
  for (const char* k :
       {"provider", "provider_name", "code", "status", "category", "cause", "count",
        "daily_average", "previous_daily_average", "change_percent", "samples", "advice"}) {
    EXPECT_TRUE(p.contains(k)) << k;
  }
  EXPECT_EQ(p["count"], 12);
  EXPECT_DOUBLE_EQ(p["previous_daily_average"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(p["change_percent"].get<double>(), 1100.0);
  EXPECT_EQ(j["providers"][0]["name"], "iCloud");
  EXPECT_EQ(j["providers"][0]["counts"]["sent"], 100);
}

TEST(ReportRenderTest, TextFitsSeventyEightColumns) {
  Report r = BuildReport(HostileData(), Advice());
  std::istringstream in(RenderText(r));
  std::string line;
  while (std::getline(in, line)) {
    // Words longer than a line (a URL) may overflow; nothing else does.
    if (line.find(' ', line.find_first_not_of(' ')) == std::string::npos) continue;
    EXPECT_LE(line.size(), 78u) << line;
  }
}

TEST(ReportAdviceTest, ShippedFileCoversTheProviderCodesAndEverySenderCategory) {
  AdviceBook book = Advice();
  EXPECT_NE(book.Find("icloud", "CS01", "5.7.1", "policy_rejection"), nullptr);
  EXPECT_NE(book.Find("icloud", "cs02", "5.7.1", "content_rejected"), nullptr);
  EXPECT_NE(book.Find("icloud", "HM08", "5.7.1", "auth_failure"), nullptr);
  EXPECT_EQ(book.Find("gmail", "", "5.7.26", "auth_failure")->status, "5.7.26");
  EXPECT_EQ(book.Find("aol", "", "5.7.9", "policy_rejection")->status, "5.7.9");
  EXPECT_EQ(book.Find("microsoft", "", "5.7.350", "spam_content")->status, "5.7.350");
  EXPECT_EQ(book.Find("microsoft", "S3150", "5.7.1", "reputation_block")->code, "S3150");
  for (int c = 0; c < kCategoryCount; ++c) {
    const CategoryInfo& info = Describe(static_cast<Category>(c));
    if (info.fault != Fault::kSender) continue;
    EXPECT_NE(book.Find("", "", "", std::string(info.name)), nullptr) << info.name;
  }
  EXPECT_EQ(book.GroupOf("aol"), "yahoo");
  EXPECT_EQ(book.NameOf("yahoo"), "Yahoo/AOL");
  EXPECT_EQ(book.GroupOf(""), "other");
}

// Every provider the shipped rules can name gets a report row with a readable name, not its id.
TEST(ReportAdviceTest, ShippedFileNamesEveryProviderOfTheShippedRules) {
  AdviceBook book = Advice();
  toml::table rules = toml::parse_file(BOUNCED_SOURCE_DIR "/rules/default.toml");
  const toml::array* providers = rules["provider"].as_array();
  ASSERT_NE(providers, nullptr);
  ASSERT_GT(providers->size(), 10u);
  for (const toml::node& p : *providers) {
    std::string id = p.as_table()->get("name")->value_or(std::string());
    SCOPED_TRACE(id);
    EXPECT_NE(book.Provider(book.GroupOf(id)), nullptr);
  }
}

TEST(ReportAdviceTest, BadFilesAreRefusedWithTheReason) {
  auto bad = AdviceBook::Parse("[[advice]]\ntitle = \"x\"\n", "a.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("a.toml: advice #1"), std::string::npos);
  auto syntax = AdviceBook::Parse("[[advice\n", "b.toml");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.error().find("b.toml:1"), std::string::npos);
  auto unknown = AdviceBook::Parse("[[tips]]\n", "c.toml");
  EXPECT_FALSE(unknown.ok());
}

std::string Base64Decode(const std::string& in) {
  std::string out;
  int val = 0, bits = -8;
  for (unsigned char c : in) {
    const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char* p = strchr(table, c);
    if (c == '=' || p == nullptr || c == 0) continue;
    val = (val << 6) + static_cast<int>(p - table);
    bits += 6;
    if (bits >= 0) {
      out.push_back(static_cast<char>((val >> bits) & 0xff));
      bits -= 8;
    }
  }
  return out;
}

TEST(ReportMailTest, IsMultipartAlternativeWithTextThenHtml) {
  ReportMail m;
  m.from = "bounced@mx.example.net";
  m.to = {"postmaster@example.net", "ops@example.net"};
  m.subject = "bounced daily report 2026-11-28: 3 bounced\r\nBcc: evil@example.com";
  m.text = "Grüße, text part\n";
  m.html = "<p>html part</p>\n";
  m.date = 1795933200;
  m.boundary_seed = "1";
  std::string msg = BuildReportMail(m);
  EXPECT_NE(msg.find("To: postmaster@example.net, ops@example.net\n"), std::string::npos);
  EXPECT_EQ(msg.find("\nBcc:"), std::string::npos);  // no header injection
  EXPECT_NE(msg.find("Content-Type: multipart/alternative; boundary="), std::string::npos);
  EXPECT_NE(msg.find("Auto-Submitted: auto-generated"), std::string::npos);
  const size_t text = msg.find("Content-Type: text/plain; charset=utf-8");
  const size_t html = msg.find("Content-Type: text/html; charset=utf-8");
  ASSERT_NE(text, std::string::npos);
  ASSERT_NE(html, std::string::npos);
  EXPECT_LT(text, html);  // the last alternative is the preferred one
  for (const std::string& line : {std::string("Date: Sun, 29 Nov 2026 06:20:00 +0000")}) {
    EXPECT_NE(msg.find(line), std::string::npos);
  }
  const size_t body = msg.find("\n\n", text) + 2;
  EXPECT_EQ(Base64Decode(msg.substr(body, msg.find("--", body) - body)), m.text);
}

// True when `s` is UTF-8 that neither starts nor ends inside a character.
bool WholeUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xE  ? 3
                     : (c >> 3) == 0x1E ? 4
                                        : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

// A configured subject in another language makes the whole subject (headline included) an
// RFC 2047 encoded-word; a line that holds them may be 76 characters at most, and no word may
// end inside a character.
TEST(ReportMailTest, ANonAsciiSubjectIsFoldedIntoShortEncodedWords) {
  ReportMail m;
  m.to = {"postmaster@example.net"};
  m.subject =
      "Täglicher Bounce-Bericht über alle Empfänger (mail.example.net) 2026-11-28: 59 bounced "
      "(3.3%), 52 sender-side rejections, 1 alert";
  m.text = "t";
  m.html = "h";
  m.date = 1795933200;
  m.boundary_seed = "1";
  const std::string msg = BuildReportMail(m);
  const size_t start = msg.find("Subject: ");
  ASSERT_NE(start, std::string::npos);
  size_t end = msg.find('\n', start);
  while (end != std::string::npos && end + 1 < msg.size() && msg[end + 1] == ' ') {
    end = msg.find('\n', end + 1);  // folded: the field goes on
  }
  const std::string field = msg.substr(start, end - start);
  std::string decoded;
  std::istringstream lines(field);
  std::string line;
  while (std::getline(lines, line)) {
    EXPECT_LE(line.size(), 76u) << line;
    const size_t word = line.find("=?UTF-8?B?");
    ASSERT_NE(word, std::string::npos) << line;
    ASSERT_EQ(line.substr(line.size() - 2), "?=") << line;
    const std::string part = Base64Decode(line.substr(word + 10, line.size() - 2 - word - 10));
    EXPECT_TRUE(WholeUtf8(part)) << line;  // each word decodes on its own (RFC 2047 section 5)
    decoded += part;
  }
  EXPECT_EQ(decoded, m.subject);
}

TEST(ReportMailTest, RecipientListsAreCheckedBeforeTheyReachACommandLine) {
  auto ok = ParseRecipients("a@x.example, b@y.example c@z.example");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size(), 3u);
  EXPECT_FALSE(ParseRecipients("-oQ/tmp@x.example").ok());
  EXPECT_FALSE(ParseRecipients("nobody").ok());
  EXPECT_FALSE(ParseRecipients("").ok());
  EXPECT_FALSE(ParseRecipients("ops@example.com, Ops <ops@example.com>").ok());
  EXPECT_FALSE(ParseRecipients("ops@example.com\nBcc: x@example.net").ok());
}

TEST(ReportMailTest, AcceptsOnlyBareAddresses) {
  for (const char* good :
       {"postmaster@example.com", "o.p+s-1@mx-1.example.com", "!#$%&'*/=?^_`{|}~@example.com",
        "ops@[192.0.2.1]", "ops@[IPv6:2001:db8::1]", "ops@localhost"}) {
    EXPECT_TRUE(CheckMailAddress(good).ok()) << good;
  }
  for (const char* bad : {"",
                          "ops",
                          "ops@",
                          "@example.com",
                          "ops@@example.com",
                          "-f@example.com",
                          "a b@example.com",
                          "a,b@example.com",
                          "<ops@example.com>",
                          "\"ops\"@example.com",
                          "ops@example.com\r",
                          ".ops@example.com",
                          "o..ps@example.com",
                          "ops.@example.com",
                          "ops@.example.com",
                          "ops@example.com.",
                          "ops@exa_mple.com",
                          "ops@[192.0.2.1",
                          "ops@[]",
                          "op\xc3\xa9@example.com"}) {
    EXPECT_FALSE(CheckMailAddress(bad).ok()) << bad;
  }
}

TEST(ReportMailTest, HandsTheMessageToSendmail) {
  TempDir dir;
  const std::string fake = dir.path() + "/sendmail";
  std::ofstream(fake) << "#!/bin/sh\nprintf '%s\\n' \"$@\" > " << dir.path() << "/args\ncat > "
                      << dir.path() << "/message\n";
  chmod(fake.c_str(), 0755);
  ReportMail m;
  m.from = "bounced@mx.example.net";
  m.to = {"postmaster@example.net"};
  m.subject = "s";
  m.text = "t";
  m.html = "h";
  ASSERT_TRUE(SendReportMail(fake, m).ok());
  EXPECT_EQ(ReadFile(dir.path() + "/args"),
            "-oi\n-f\nbounced@mx.example.net\n--\npostmaster@example.net\n");
  EXPECT_EQ(ReadFile(dir.path() + "/message"), BuildReportMail(m));

  std::ofstream(fake) << "#!/bin/sh\ncat >/dev/null\nexit 75\n";
  Status failed = SendReportMail(fake, m);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("exit status 75"), std::string::npos);
  EXPECT_FALSE(SendReportMail(dir.path() + "/missing", m).ok());
}

// ---- bouncectl as a real process ----------------------------------------------------------

class BouncectlReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_.path() + "/bounced.db";
    {
      StoreOptions o;
      o.path = db_;
      auto store = Store::Open(o);
      ASSERT_TRUE(store.ok()) << store.error();
    }
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, ReadFile(BOUNCED_TEST_DATA "/reports/fixture.sql").c_str(), nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
    sendmail_ = dir_.path() + "/sendmail";
    std::ofstream(sendmail_) << "#!/bin/sh\nprintf '%s\\n' \"$@\" > " << dir_.path()
                             << "/args\ncat > " << dir_.path() << "/message\n";
    chmod(sendmail_.c_str(), 0755);
    config_ = dir_.path() + "/bounced.toml";
    std::ofstream(config_) << "[storage]\npath = \"" << db_ << "\"\n"
                           << "[query]\nsocket = \"" << dir_.path() << "/query.sock\"\n"
                           << "[socketmap]\nsocket = \"" << dir_.path() << "/socketmap.sock\"\n"
                           << "[input.log]\npath = \"" << dir_.path() << "/mail.log\"\n"
                           << "[report]\nmail_to = \"postmaster@example.net\"\n"
                           << "mail_from = \"bounced@mx.example.net\"\n"
                           << "sendmail = \"" << sendmail_ << "\"\n"
                           << "advice = \"" << BOUNCED_SOURCE_DIR << "/packaging/advice.toml\"\n";
  }
  std::string Ctl(const std::string& args) {
    return "BOUNCED_REPORT_NOW=1795933200 BOUNCED_REPORT_HOST=mail.example.net " BOUNCED_BINARY_DIR
           "/bouncectl --config " +
           config_ + " " + args;
  }
  TempDir dir_;
  std::string db_, config_, sendmail_;
};

TEST_F(BouncectlReportTest, PrintsEachFormatFromTheConfiguredDatabase) {
  auto [rc, json] = RunShell(Ctl("report --date 2026-11-28 --format json"));
  ASSERT_EQ(rc, 0) << json;
  auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["totals"]["recipients"]["sent"], 1720);
  EXPECT_EQ(j["sender_problems"][0]["code"], "CS01");
  EXPECT_EQ(j["alerts"].size(), 2u);  // iCloud CS01 and Yahoo TSS04
  auto [rc2, text] = RunShell(Ctl("report --date 2026-11-28"));
  EXPECT_EQ(rc2, 0);
  EXPECT_NE(text.find("1. iCloud CS01 - 35 rejections, +1650%"), std::string::npos) << text;
  auto [rc3, html] = RunShell(Ctl("report --date 2026-11-28 --days 7 --format html"));
  EXPECT_EQ(rc3, 0);
  EXPECT_NE(html.find("2026-11-22 to 2026-11-28"), std::string::npos);
  auto [rc4, bad] = RunShell(Ctl("report --date yesterday 2>&1"));
  EXPECT_EQ(rc4, 2);  // a usage error, as --format pdf is
  EXPECT_NE(bad.find("bad date"), std::string::npos);
  auto [rc5, usage] = RunShell(Ctl("report --format pdf 2>&1"));
  EXPECT_EQ(rc5, 2);
}

TEST_F(BouncectlReportTest, MailsTheReportThroughSendmail) {
  auto [rc, out] = RunShell(Ctl("report --date 2026-11-28 --mail 2>&1"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("mailed the report for 2026-11-28 to postmaster@example.net"),
            std::string::npos);
  EXPECT_EQ(ReadFile(dir_.path() + "/args"),
            "-oi\n-f\nbounced@mx.example.net\n--\npostmaster@example.net\n");
  std::string msg = ReadFile(dir_.path() + "/message");
  EXPECT_NE(msg.find("Subject: bounced daily report (mail.example.net) 2026-11-28: "),
            std::string::npos);
  EXPECT_NE(msg.find("multipart/alternative"), std::string::npos);
  auto [rc2, out2] = RunShell(Ctl("report --date 2026-11-28 --mail-to ops@example.net 2>&1"));
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_NE(ReadFile(dir_.path() + "/args").find("ops@example.net"), std::string::npos);
}

TEST_F(BouncectlReportTest, PostfixConfigPrintsTheSocketmapAndMilterLines) {
  auto [rc, out] = RunShell(Ctl("postfix-config --socketmap"));
  ASSERT_EQ(rc, 0);
  EXPECT_NE(out.find("check_recipient_access proxy:socketmap:unix:" + dir_.path() +
                     "/socketmap.sock:recipient_access"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("transport_maps = proxy:socketmap:unix:" + dir_.path() +
                     "/socketmap.sock:transport"),
            std::string::npos);
  EXPECT_EQ(out.find("smtpd_milters"), std::string::npos);
  auto [rc2, milter] = RunShell(Ctl("postfix-config --milter"));
  ASSERT_EQ(rc2, 0);
  EXPECT_NE(milter.find("smtpd_milters = unix:bounced/milter.sock"), std::string::npos) << milter;
  EXPECT_NE(milter.find("milter_default_action = accept"), std::string::npos);
}

TEST_F(BouncectlReportTest, DoctorFindsTheDaemonMissingAndTheDatabaseHealthy) {
  auto [rc, out] = RunShell(Ctl("doctor --no-postfix"));
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("FAIL  query socket " + dir_.path() + "/query.sock"), std::string::npos)
      << out;
  EXPECT_NE(out.find("fix: start bounced"), std::string::npos);
  EXPECT_NE(out.find("ok    database " + db_ + " (schema " + std::to_string(kSchemaVersion) +
                     ", quick_check ok"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("FAIL  mail log"), std::string::npos);
  EXPECT_NE(out.find("problems found."), std::string::npos);
}

// ---- the HTML page in a real browser -------------------------------------------------------

TEST(ReportHtmlChromiumTest, PageLoadsWithoutErrorsAndHasItsCharts) {
  const char* chromium = nullptr;
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (access(c, X_OK) == 0) chromium = c;
  }
  if (chromium == nullptr) GTEST_SKIP() << "chromium is not installed";
  TempDir dir;
  const std::string page = dir.path() + "/report.html";
  std::ofstream(page) << RenderHtml(BuildReport(HostileData(), Advice()));
  const std::string cmd =
      std::string(chromium) +
      " --headless --no-sandbox --disable-gpu --disable-background-networking"
      " --disable-component-update --disable-sync --no-first-run --disable-dev-shm-usage"
      " --enable-logging=stderr --v=0 --user-data-dir=" +
      dir.path() + "/profile --dump-dom file://" + page + " 2>" + dir.path() + "/stderr";
  auto [rc, dom] = RunShell(cmd);
  ASSERT_EQ(rc, 0) << ReadFile(dir.path() + "/stderr");
  size_t svgs = 0;
  for (size_t p = dom.find("<svg"); p != std::string::npos; p = dom.find("<svg", p + 1)) ++svgs;
  EXPECT_EQ(svgs, 3u) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("<polyline"), std::string::npos);
  EXPECT_NE(dom.find("Sender-side problems"), std::string::npos);
  const std::string log = ReadFile(dir.path() + "/stderr");
  // CSP violations would mean the page tried to fetch something; script errors would show too.
  EXPECT_EQ(log.find("Content Security Policy"), std::string::npos) << log;
  EXPECT_EQ(log.find("Uncaught"), std::string::npos) << log;
}

}  // namespace
}  // namespace bounced
