// ctl_query_test.cc: bouncectl's query commands as a process against sockets that are not a
// well-behaved bounced: a socket of another program that answers JSON of another shape fails the
// request (exit 1, said on stderr) instead of aborting bouncectl, and doctor reports it as a
// finding and goes on with its other checks. Text a person or a file gave bounced (a --reason,
// an import) reaches the terminal without its control characters.
#include <gtest/gtest.h>
#include <poll.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon/daemon_harness.h"

namespace bounced::testing {
namespace {

// A Unix socket that answers every connection's first request line with `reply`, whatever
// was asked, and closes it.
class CannedSocket {
 public:
  CannedSocket(std::string path, std::string reply) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    ::unlink(path_.c_str());
    bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
             ::listen(fd_, 16) == 0;
    thread_ = std::thread([this, reply = std::move(reply)] { Serve(reply); });
  }
  ~CannedSocket() {
    stop_ = true;
    thread_.join();
    if (fd_ >= 0) ::close(fd_);
    ::unlink(path_.c_str());
  }
  CannedSocket(const CannedSocket&) = delete;
  CannedSocket& operator=(const CannedSocket&) = delete;

  bool bound() const { return bound_; }

 private:
  void Serve(const std::string& reply) {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      timeval tv{5, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      RecvUntil(c, [](const std::string& s) { return s.find('\n') != std::string::npos; });
      SendAll(c, reply);
      ::close(c);
    }
  }

  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(CtlQuery, ReplyOfAnotherShapeFailsTheRequestWithoutAborting) {
  TempDir dir;
  const std::string sock = dir / "foreign.sock";
  const std::string input = dir / "list.csv";
  AppendFile(input, "address\nsomeone@example.com\n");
  const std::vector<std::string> commands = {
      "status someone@example.com",
      "list",
      "health",
      "allowlist",
      "stats",
      "reload",
      "export",
      "suppress someone@example.com --reason test",
      "import " + Quote(input),
      "ingest-dsn " + Quote(kTestData + "/milter/remote_dsn.eml"),
  };
  // Valid JSON, but not {"ok": bool, ...}; or bounced's shape with a result of another type.
  for (const char* reply : {"[]\n", "null\n", "{\"ok\":false,\"error\":5}\n", "{\"ok\":\"yes\"}\n",
                            "{\"ok\":true,\"result\":5}\n",
                            "{\"ok\":true,\"result\":{\"storage\":{\"events\":\"x\"}}}\n"}) {
    CannedSocket foreign(sock, reply);
    ASSERT_TRUE(foreign.bound());
    for (const std::string& cmd : commands) {
      int rc = -1;
      std::string out = Shell(kBouncectl + " --socket " + Quote(sock) + " " + cmd + " 2>&1", &rc);
      // Exit 0 is fine where the command reads nothing of the result (suppress prints fields
      // that are absent as empty); an abort (134 through the shell: SIGABRT) or 2 is not.
      EXPECT_TRUE(rc == 0 || rc == 1) << cmd << " on " << reply << "rc " << rc << ": " << out;
      EXPECT_EQ(out.find("terminate called"), std::string::npos) << cmd << " on " << reply << out;
      if (rc == 1) {
        EXPECT_NE(out.find("bouncectl: "), std::string::npos) << cmd << " on " << reply << out;
      }
    }
  }
}

TEST(CtlQuery, ForeignSocketIsNamedAsSuch) {
  TempDir dir;
  const std::string sock = dir / "foreign.sock";
  CannedSocket foreign(sock, "[1,2,3]\n");
  ASSERT_TRUE(foreign.bound());
  int rc = -1;
  std::string out =
      Shell(kBouncectl + " --socket " + Quote(sock) + " status a@example.com 2>&1", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("unexpected reply"), std::string::npos) << out;
  EXPECT_NE(out.find(sock), std::string::npos) << out;
}

// A socket that takes the connection and never answers (a bounced stopped with SIGSTOP, or
// stuck): the query command gives up after --timeout seconds of silence, with exit 1, instead
// of waiting for ever.
TEST(CtlQuery, ASilentSocketIsGivenUpOnAfterTheTimeout) {
  TempDir dir;
  const std::string sock = dir / "silent.sock";
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 16), 0);  // never accepted: the kernel's backlog holds the connection
  int rc = -1;
  std::string out = Shell(
      kBouncectl + " --timeout 1 --socket " + Quote(sock) + " status a@example.com 2>&1", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("no reply from bounced at " + sock + " for 1 s"), std::string::npos) << out;
  out = Shell(kBouncectl + " --timeout -1 status a@example.com 2>&1", &rc);
  EXPECT_EQ(rc, 2) << out;
  ::close(fd);
}

// A --limit bounced would refuse is a usage error here (exit 2), before any connection.
TEST(CtlQuery, ALimitOutOfRangeIsAUsageError) {
  for (const char* limit : {"-1", "99999999999999999"}) {
    for (const char* cmd : {"list", "export"}) {
      int rc = -1;
      std::string out = Shell(
          kBouncectl + " --socket /nonexistent/q.sock " + cmd + " --limit " + limit + " 2>&1", &rc);
      EXPECT_EQ(rc, 2) << cmd << " --limit " << limit << ": " << out;
      EXPECT_NE(out.find("--limit"), std::string::npos) << out;
    }
  }
}

// A refusal names the command once ("bouncectl: unsuppress: ..."), though the store's message
// names its operation too.
TEST(CtlQuery, ARefusalNamesTheCommandOnce) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  int rc = -1;
  std::string out = d.Ctl("unsuppress nobody@example.com --reason test", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("bouncectl: unsuppress: nobody@example.com is not suppressed"),
            std::string::npos)
      << out;
  out = d.Ctl("allow 'ex ample.org' --reason test", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("bouncectl: allow: 'ex ample.org' is neither"), std::string::npos) << out;
}

// What is no address is refused by status, suppress and unsuppress alike, by bouncectl before it
// connects (a usage error: no bounced runs here) ...
TEST(CtlQuery, StatusSuppressAndUnsuppressRefuseANonAddressAlikeBeforeConnecting) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"nobody", "'nobody'"},
      {"nobody@", "'nobody@'"},
      {"@example.com", "'@example.com'"},
      {"<>", "'<>'"},
      {"a\x1b[31m@example.com", "'a?[31m@example.com'"},
      {std::string(321, 'a') + "@example.com", "'" + std::string(321, 'a') + "@example.com'"},
  };
  for (const auto& [address, shown] : bad) {
    for (const char* cmd : {"status", "suppress", "unsuppress"}) {
      const std::string reason = std::string(cmd) == "status" ? "" : " --reason test";
      int rc = -1;
      std::string out = Shell(kBouncectl + " --socket /nonexistent/q.sock " + cmd + " " +
                                  Quote(address) + reason + " 2>&1",
                              &rc);
      EXPECT_EQ(rc, 2) << cmd << " " << address << ": " << out;
      EXPECT_EQ(out, "bouncectl: " + std::string(cmd) + ": invalid address " + shown + "\n");
    }
  }
  // Any spelling of an address is one: these get as far as the (missing) socket.
  for (const char* address :
       {"User+news@Example.COM", "<user@example.com>", "\"a b\"@example.com"}) {
    int rc = -1;
    std::string out = Shell(kBouncectl + " --socket /nonexistent/q.sock unsuppress " +
                                Quote(address) + " --reason test 2>&1",
                            &rc);
    EXPECT_EQ(rc, 1) << address << ": " << out;
    EXPECT_NE(out.find("cannot connect to bounced"), std::string::npos) << out;
  }
}

// ... and by bounced itself, for a client of its query socket: the same error from the three,
// about the address first (unsuppress and suppress without the reason they also need). Every
// spelling of a suppressed address still names it: unsuppress lifts an entry whatever case,
// brackets or extension it was stored or is asked with.
TEST(CtlQuery, QuerySocketRefusesANonAddressAlikeAndUnsuppressTakesAnySpelling) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  for (const char* address : {"nobody", "nobody@", "<>", "a\x01@example.com"}) {
    std::string expected = std::string("invalid address '") + address + "'";
    if (expected.find('\x01') != std::string::npos) expected.replace(expected.find('\x01'), 1, "?");
    for (const char* cmd : {"status", "suppress", "unsuppress"}) {
      json r = d.Query({{"cmd", cmd}, {"address", address}});
      EXPECT_FALSE(r.value("ok", true)) << cmd << " " << address << ": " << r;
      EXPECT_EQ(r.value("error", ""), expected) << cmd << ": " << r;
    }
  }

  int rc = -1;
  std::string out = d.Ctl("suppress 'Jane.Doe+News@Example.COM' --reason test", &rc);
  ASSERT_EQ(rc, 0) << out;
  const std::string csv = dir / "list.csv";
  AppendFile(csv, "address\nJOHN@EXAMPLE.ORG\n");
  out = d.Ctl("import --reason test " + Quote(csv), &rc);
  ASSERT_EQ(rc, 0) << out;
  out = d.Ctl("list", &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("jane.doe@example.com"), std::string::npos) << out;
  EXPECT_NE(out.find("john@example.org"), std::string::npos) << out;
  out = d.Ctl("status '<JANE.DOE@example.com>'", &rc);
  EXPECT_NE(out.find("is SUPPRESSED"), std::string::npos) << out;
  out = d.Ctl("unsuppress '<JANE.DOE+other@example.com>' --reason test", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "jane.doe@example.com is no longer suppressed\n");  // the key it lifted
  out = d.Ctl("--json unsuppress '<JANE.DOE+other@example.com>' --reason again", &rc);
  EXPECT_EQ(rc, 1) << out;                                        // lifted already
  out = d.Ctl("unsuppress john@example.org --reason test", &rc);  // as list shows it
  EXPECT_EQ(rc, 0) << out;
  out = d.Ctl("list", &rc);
  EXPECT_NE(out.find("0 suppressed"), std::string::npos) << out;
}

// Moving from an ESP: its CSV export, with column names and columns of its own, imports once
// told to skip the columns bounced does not know (and says which it skipped); a plain list of
// addresses (.txt) imports as text; export --format text gives the keys back, one per line.
TEST(CtlQuery, ImportsAnEspExportAndAPlainList) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  const std::string csv = dir / "esp-suppressions.csv";
  AppendFile(csv,
             "\xEF\xBB\xBF\"Email Address\",\"Suppression Reason\",Origin,\"Created At\"\n"
             "ann@example.com,HardBounce,Recipient,2026-10-01T08:00:00-05:00\n"
             "ben@example.org,SpamComplaint,Recipient,2026-10-02T09:30:00Z\n");
  int rc = -1;
  std::string out = d.Ctl("import --reason 'from our ESP' " + Quote(csv), &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("unknown column 'Origin'"), std::string::npos) << out;
  out = d.Ctl("import --ignore-unknown-columns --reason 'from our ESP' " + Quote(csv), &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out,
            "imported: 2 added, 0 updated\n"
            "categorized: 1 from their reason (bouncectl list --source import --category C shows "
            "them)\n"
            "ignored columns: Origin\n");
  json ann = json::parse(d.Ctl("--json status ann@example.com", &rc));
  EXPECT_TRUE(ann.value("suppressed", false)) << ann;
  EXPECT_EQ(ann.value("reason", ""), "HardBounce") << ann;
  EXPECT_EQ(ann.value("category", "?"), "") << ann;  // a hard bounce, but of what kind?
  json ben = json::parse(d.Ctl("--json status ben@example.org", &rc));
  EXPECT_EQ(ben.value("category", ""), "complaint") << ben;

  // SendGrid's bounces and blocks: the replies are classified by bounced's own rules, so a
  // block (about the sender, not the address) can be told apart and lifted.
  const std::string sendgrid = dir / "sendgrid-bounces.csv";
  AppendFile(sendgrid,
             "created,email,reason,status\n"
             "1793491200,gone@gmail.com,\"550 5.1.1 The email account that you tried to reach "
             "does not exist.\",5.1.1\n"
             "1793491200,someone@icloud.com,\"554 5.7.1 [CS01] Message rejected due to local "
             "policy\",5.7.1\n");
  out = d.Ctl("import --dry-run " + Quote(sendgrid), &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out,
            "would import: 2 added, 0 updated\n"
            "categorized: 2 from their reason (bouncectl list --source import --category C shows "
            "them)\n"
            "categories: policy_rejection 1, user_unknown 1\n");
  out = d.Ctl("--json status gone@gmail.com", &rc);
  EXPECT_FALSE(json::parse(out).value("suppressed", true)) << out;  // a dry run wrote nothing
  out = d.Ctl("--json import " + Quote(sendgrid), &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(json::parse(out).value("categorized", 0), 2) << out;
  json gone = json::parse(d.Ctl("--json status gone@gmail.com", &rc));
  EXPECT_EQ(gone.value("category", ""), "user_unknown") << gone;
  EXPECT_EQ(gone["suppression"].value("detail", ""), "5.1.1") << gone;
  out = d.Ctl("list --source import --category policy_rejection", &rc);
  EXPECT_NE(out.find("someone@icloud.com"), std::string::npos) << out;
  EXPECT_EQ(out.find("gone@gmail.com"), std::string::npos) << out;
  // doctor points at them (a warning: keeping them may be meant).
  out =
      Shell(kBouncectl + " --config " + Quote(d.config_path()) + " doctor --no-postfix 2>&1", &rc);
  EXPECT_NE(out.find("warn  1 imported suppressions are about the sending, not the address "
                     "(policy_rejection 1)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("bouncectl unsuppress --source import --category policy_rejection --dry-run"),
            std::string::npos)
      << out;
  // A list of spam reports has no reason to read: the import says which category it is.
  const std::string reports = dir / "spam-reports.txt";
  AppendFile(reports, "complainer@example.com\n");
  out = d.Ctl("import --category complaint " + Quote(reports), &rc);
  ASSERT_EQ(rc, 0) << out;
  json complainer = json::parse(d.Ctl("--json status complainer@example.com", &rc));
  EXPECT_EQ(complainer.value("category", ""), "complaint") << complainer;
  out = d.Ctl("import --category no_such " + Quote(reports), &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("unknown category 'no_such'"), std::string::npos) << out;

  const std::string txt = dir / "unsubscribed.txt";
  AppendFile(txt, "# old list\ncid@example.net\n\n  Dee+x@Example.net\n");
  out = d.Ctl("import --reason 'old list' " + Quote(txt), &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "imported: 2 added, 0 updated\n");
  out = d.Ctl("export --format text --domain example.net", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "cid@example.net\ndee@example.net\n");
}

// unsuppress lifts a selection in one go (a recipient domain's outage read as unknown users):
// a dry run first, with no reason needed; then the lift, audited. An ADDRESS and a selection,
// or neither, are usage errors; bounced refuses a request that selects nothing or too much.
TEST(CtlQuery, UnsuppressLiftsASelectionAfterADryRun) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  const std::string csv = dir / "list.csv";
  std::string lines = "address,category\n";
  for (int i = 0; i < 25; ++i) {
    lines += 'u';  // not "u" + std::to_string(...): a GCC 12 -O3 -Wrestrict false positive
    lines += std::to_string(100 + i) + "@outage.example,domain_unknown\n";
  }
  lines += "kept@outage.example,user_unknown\nother@example.org,domain_unknown\n";
  AppendFile(csv, lines);
  int rc = -1;
  std::string out = d.Ctl("import --reason test " + Quote(csv), &rc);
  ASSERT_EQ(rc, 0) << out;

  out = d.Ctl("unsuppress --domain outage.example --category domain_unknown --dry-run", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("  u100@outage.example\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  ... and 5 more\n"), std::string::npos) << out;
  EXPECT_NE(out.find("25 suppressions would be lifted (dry run: nothing changed)"),
            std::string::npos)
      << out;
  out = d.Ctl("list --domain outage.example", &rc);
  EXPECT_NE(out.find("26 suppressed"), std::string::npos) << out;
  // Created before a day ago: none.
  out = d.Ctl("--json unsuppress --domain outage.example --until 1d --dry-run", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(json::parse(out).value("count", -1), 0) << out;
  out = d.Ctl("list --until 1d", &rc);
  EXPECT_NE(out.find("0 suppressed"), std::string::npos) << out;

  for (const char* usage : {"unsuppress --domain outage.example",  // no reason
                            "unsuppress --reason r",               // nothing named
                            "unsuppress a@outage.example --domain outage.example --reason r",
                            "unsuppress --all --domain outage.example --reason r"}) {
    out = d.Ctl(usage, &rc);
    EXPECT_EQ(rc, 2) << usage << ": " << out;
  }
  json r = d.Query({{"cmd", "unsuppress"}, {"reason", "r"}});
  EXPECT_FALSE(r.value("ok", true)) << r;
  EXPECT_NE(r.value("error", "").find("name an \"address\""), std::string::npos) << r;
  r = d.Query({{"cmd", "unsuppress"}, {"reason", "r"}, {"all", true}, {"domain", "x.example"}});
  EXPECT_FALSE(r.value("ok", true)) << r;
  r = d.Query({{"cmd", "unsuppress"}, {"reason", "r"}, {"domain", "x.example"}, {"limit", 1}});
  EXPECT_FALSE(r.value("ok", true)) << r;

  out = d.Ctl("unsuppress --domain outage.example --category domain_unknown --reason 'their DNS'",
              &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("25 suppressions lifted"), std::string::npos) << out;
  out = d.Ctl("status u110@outage.example", &rc);
  EXPECT_EQ(out.find("is SUPPRESSED"), std::string::npos) << out;
  out = d.Ctl("list", &rc);
  EXPECT_NE(out.find("kept@outage.example"), std::string::npos) << out;
  EXPECT_NE(out.find("other@example.org"), std::string::npos) << out;
  EXPECT_NE(out.find("2 suppressed"), std::string::npos) << out;
  out = d.Ctl("--json unsuppress --all --reason 'start over'", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(json::parse(out).value("count", -1), 2) << out;
  out = d.Ctl("unsuppress --all --reason 'once more'", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("0 suppressions lifted"), std::string::npos) << out;
}

// `bouncectl changes`: a sending application's feed of the list. Each change once, in commit
// order, with the id to continue after; --follow prints the later ones as they commit.
TEST(CtlQuery, ChangesFeedTheListOnceInOrderAndFollow) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  // A change of last month (as an older bounced logged it): shown only when asked for.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(d.db().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "INSERT INTO suppression_log (time, day, address, action, source, reason) "
                         "VALUES (strftime('%s', 'now') - 30 * 86400, date('now', '-30 days'), "
                         "'old@example.com', 'add', 'bounce', 'hard_bounce')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  int rc = -1;
  std::string out = d.Ctl("suppress a@example.com --reason one", &rc);
  ASSERT_EQ(rc, 0) << out;
  out = d.Ctl("suppress b@example.org --reason two --category user_unknown", &rc);
  ASSERT_EQ(rc, 0) << out;
  out = d.Ctl("unsuppress a@example.com --reason three", &rc);
  ASSERT_EQ(rc, 0) << out;

  out = d.Ctl("changes", &rc);  // the last 24 hours
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ID"), std::string::npos) << out;
  EXPECT_EQ(out.find("old@example.com"), std::string::npos) << out;
  EXPECT_NE(out.find("remove"), std::string::npos) << out;
  EXPECT_NE(out.find("uid "), std::string::npos) << out;
  out = d.Ctl("--json changes --after 1", &rc);  // after the old one
  ASSERT_EQ(rc, 0) << out;
  json all = json::parse(out);
  ASSERT_EQ(all.size(), 3u) << out;
  EXPECT_EQ(all[0].value("action", ""), "add");
  EXPECT_EQ(all[1].value("address", ""), "b@example.org");
  EXPECT_EQ(all[1].value("category", ""), "user_unknown");
  EXPECT_EQ(all[2].value("action", ""), "remove");
  EXPECT_EQ(all[2].value("reason", ""), "one");  // the entry's own reason
  EXPECT_EQ(all[2].value("note", ""), "three");  // why it was lifted
  out = d.Ctl("status -v a@example.com", &rc);
  EXPECT_NE(out.find("is not suppressed (lifted "), std::string::npos) << out;
  EXPECT_NE(out.find(" by uid "), std::string::npos) << out;
  EXPECT_NE(out.find(": \"three\")"), std::string::npos) << out;
  EXPECT_NE(out.find("suppression history (newest first):"), std::string::npos) << out;
  EXPECT_NE(out.find("remove  manual"), std::string::npos) << out;
  const int64_t cursor = all[1].value("id", int64_t{0});
  out = d.Ctl("--json changes --after " + std::to_string(cursor), &rc);
  ASSERT_EQ(rc, 0) << out;
  json rest = json::parse(out);
  ASSERT_EQ(rest.size(), 1u) << out;
  EXPECT_EQ(rest[0].value("address", ""), "a@example.com");
  out = d.Ctl("--json changes --domain example.org", &rc);
  EXPECT_EQ(json::parse(out).size(), 1u) << out;
  out = d.Ctl("changes --limit 2", &rc);
  EXPECT_NE(out.find("(more may follow: --after " + std::to_string(cursor) + ")"),
            std::string::npos)
      << out;
  out = d.Ctl("changes --limit 0", &rc);
  EXPECT_EQ(rc, 2) << out;

  // --follow without --after starts with the last 24 hours too.
  const std::string recent = dir / "recent.txt";
  Shell("timeout 60 " + std::string(kBouncectl) + " --socket " + Quote(d.query_socket()) +
        " changes --follow > " + Quote(recent) + " 2>&1 &");
  ASSERT_TRUE(WaitUntil([&] {
    return ReadFile(recent).find("b@example.org") != std::string::npos;
  })) << ReadFile(recent);
  Shell("pkill -f " + Quote(d.query_socket() + " changes --follow") + " >/dev/null 2>&1");
  EXPECT_EQ(ReadFile(recent).find("old@example.com"), std::string::npos) << ReadFile(recent);

  const std::string follow = dir / "changes.jsonl";
  const std::string err = dir / "changes.err";
  Shell("timeout 60 " + std::string(kBouncectl) + " --socket " + Quote(d.query_socket()) +
        " --json changes --follow --after " + std::to_string(cursor) + " --limit 1 > " +
        Quote(follow) + " 2> " + Quote(err) + " &");
  auto count_lines = [&] {
    std::string text = ReadFile(follow);
    return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  };
  ASSERT_TRUE(WaitUntil([&] { return count_lines() >= 1; })) << ReadFile(err);
  out = d.Ctl("suppress c@example.net --reason four", &rc);
  ASSERT_EQ(rc, 0) << out;
  out = d.Ctl("unsuppress --all --reason five", &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(WaitUntil([&] { return count_lines() >= 4; }, std::chrono::seconds(10)))
      << ReadFile(follow) << ReadFile(err);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a look more: nothing twice
  Shell("pkill -f " + Quote(d.query_socket() + " --json changes --follow") + " >/dev/null 2>&1");
  std::vector<std::string> got;
  std::istringstream in(ReadFile(follow));
  for (std::string l; std::getline(in, l);) {
    json c = json::parse(l);
    got.push_back(c.value("action", "") + " " + c.value("address", ""));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"remove a@example.com", "add c@example.net",
                                           "remove b@example.org", "remove c@example.net"}))
      << ReadFile(follow);
}

TEST(CtlQuery, DoctorReportsAForeignQuerySocketAndGoesOn) {
  TempDir dir;
  const std::string sock = dir / "foreign.sock";
  CannedSocket foreign(sock, "[]\n");
  ASSERT_TRUE(foreign.bound());
  const std::string config = dir / "bounced.toml";
  AppendFile(config, "[storage]\npath = \"" + (dir / "bounced.db") + "\"\n[input.log]\npath = \"" +
                         (dir / "mail.log") + "\"\n[query]\nsocket = \"" + sock +
                         "\"\n[socketmap]\nsocket = \"\"\n");
  int rc = -1;
  std::string out =
      Shell(kBouncectl + " --config " + Quote(config) + " doctor --no-postfix 2>&1", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("FAIL  query socket " + sock), std::string::npos) << out;
  // The checks after it still ran.
  EXPECT_NE(out.find("socketmap disabled"), std::string::npos) << out;
  EXPECT_NE(out.find("problem"), std::string::npos) << out;
}

// Without --socket, a query command talks to the [query] socket of the configuration file
// (--config), and without a readable file to the default path.
TEST(CtlQuery, QueryCommandsTakeTheSocketFromTheConfigurationFile) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  int rc = -1;
  std::string out = Shell(kBouncectl + " --config " + Quote(d.config_path()) + " health 2>&1", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("healthy: bounced"), std::string::npos) << out;
  if (!fs::exists("/run/bounced/query.sock")) {  // no installed bounced running here
    out = Shell(kBouncectl + " --config " + Quote(dir / "absent.toml") + " health 2>&1", &rc);
    EXPECT_EQ(rc, 1) << out;
    EXPECT_NE(out.find("cannot connect to bounced at /run/bounced/query.sock"), std::string::npos)
        << out;
  }
  // --socket wins over the file.
  out = Shell(kBouncectl + " --config " + Quote(d.config_path()) + " --socket " +
                  Quote(dir / "other.sock") + " health 2>&1",
              &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("other.sock"), std::string::npos) << out;
}

// doctor compiles the rules as configured and says what bounced runs with that the files no
// longer say: a configuration edited after bounced read it, a rules file added since; and a
// milter left in its dry run. A reload clears the first two.
TEST(CtlQuery, DoctorSaysWhatWaitsForAReloadAndAMilterInItsDryRun) {
  TempDir dir;
  BouncedProcess d(dir,
                   "[milter]\nsocket = \"unix:" + dir / "milter.sock" + "\"\naction = \"log\"\n");
  d.Start();
  ASSERT_TRUE(WaitUntil([&] { return d.Health()["milter"].value("running", false); }));
  int rc = -1;
  auto doctor = [&] {
    return Shell(kBouncectl + " --config " + Quote(d.config_path()) + " doctor --no-postfix 2>&1",
                 &rc);
  };
  std::string out = doctor();
  EXPECT_NE(out.find("ok    rules: "), std::string::npos) << out;
  EXPECT_EQ(out.find("changed after bounced read it"), std::string::npos) << out;
  EXPECT_NE(out.find("warn  the milter refuses no suppressed recipient: action = \"log\", a dry "
                     "run (0 only logged"),
            std::string::npos)
      << out;
  // The configuration rewritten a second later (its mtime put ahead, so no sleep is needed),
  // and a rules file dropped in.
  std::ofstream(d.config_path(), std::ios::app) << "\n";
  const auto later = fs::last_write_time(d.config_path()) + std::chrono::seconds(2);
  fs::last_write_time(d.config_path(), later);
  fs::create_directories(d.rules_dir());
  const std::string extra = d.rules_dir() + "/local.toml";
  std::ofstream(extra) << "[[rule]]\nid = \"local-test\"\ncategory = \"user_unknown\"\n"
                          "patterns = ['no such mailbox here']\n";
  out = doctor();
  EXPECT_NE(out.find("warn  " + d.config_path() + " changed after bounced read it"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("warn  rules file(s) bounced has not read: " + extra), std::string::npos)
      << out;
  // A rules file that does not compile is a failure: a reload would be refused.
  std::ofstream(dir / "broken.toml") << "[[rule]]\nid = \"broken\"\ncategory = \"nonsense\"\n";
  fs::rename(dir / "broken.toml", d.rules_dir() + "/zz-broken.toml");
  out = doctor();
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("FAIL  rules: " + d.rules_dir() + "/zz-broken.toml"), std::string::npos)
      << out;
  fs::remove(d.rules_dir() + "/zz-broken.toml");
  // After a reload (one second on, so its time is past the mtime put ahead), nothing waits.
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  json r = d.Query({{"cmd", "reload"}});
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  out = doctor();
  EXPECT_EQ(out.find("changed after bounced read it"), std::string::npos) << out;
  EXPECT_EQ(out.find("has not read"), std::string::npos) << out;
}

// doctor says how big the database is and how far back it goes, and warns when it keeps every
// event for more than 400 days: [storage] event_retention_days is the fix.
TEST(CtlQuery, DoctorWarnsOfAHistoryKeptForEver) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  std::string m = ReadFile(kTestData + "/dsn/postfix/icloud-unknown-09.eml");
  const size_t at = m.find("\nDate: ");
  const size_t end = m.find('\n', at + 1);
  const std::time_t t = std::time(nullptr) - 500 * 86400;
  char date[64];
  std::tm tm{};
  std::strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S +0000", ::gmtime_r(&t, &tm));
  AppendFile(dir / "old.eml", m.substr(0, at + 1) + "Date: " + date + m.substr(end));
  int rc = -1;
  std::string out = d.Ctl("ingest-dsn " + Quote(dir / "old.eml"), &rc);
  ASSERT_EQ(rc, 0) << out;
  char day[16];
  std::strftime(day, sizeof(day), "%Y-%m-%d", &tm);
  auto doctor = [&] {
    return Shell(kBouncectl + " --config " + Quote(d.config_path()) + " doctor --no-postfix 2>&1",
                 &rc);
  };
  out = doctor();
  EXPECT_NE(out.find(std::string("warn  database size 0 MiB, events since ") + day +
                     ", kept for ever\n      fix: set [storage] event_retention_days"),
            std::string::npos)
      << out;
  d.SetStorageConfig("event_retention_days = 600\n");
  out = doctor();
  EXPECT_NE(
      out.find(std::string("ok    database size 0 MiB, events since ") + day + ", kept 600 days\n"),
      std::string::npos)
      << out;
}

bool HasControls(const std::string& s) {
  for (unsigned char c : s) {
    if ((c < 0x20 && c != '\n') || c == 0x7F) return true;
  }
  return s.find("\xC2\x9B") != std::string::npos;  // C1 CSI
}

// [verp] on: doctor checks that Postfix delivers bounces to VERP return paths (its
// recipient_delimiter has the first VERP delimiter) and writes them as [verp] reads them
// (default_verp_delimiters), with the real postconf reading a main.cf of the test's (MAIL_CONFIG).
TEST(CtlQuery, DoctorChecksPostfixForVerp) {
  int rc = -1;
  Shell("command -v postconf >/dev/null", &rc);
  if (rc != 0) GTEST_SKIP() << "postconf not installed";
  TempDir dir;
  const std::string config = dir / "bounced.toml";
  AppendFile(config, "[storage]\npath = \"" + (dir / "bounced.db") + "\"\n[query]\nsocket = \"" +
                         (dir / "none.sock") + "\"\n[socketmap]\nsocket = \"\"\n" +
                         "[verp]\nenabled = true\ndelimiters = \"-=\"\n");
  std::filesystem::create_directories(dir / "postfix");
  auto doctor = [&](const std::string& main_cf) {
    std::ofstream((dir / "postfix") + "/main.cf") << main_cf;
    return Shell("MAIL_CONFIG=" + Quote(dir / "postfix") + " " + kBouncectl + " --config " +
                     Quote(config) + " doctor 2>&1",
                 &rc);
  };
  std::string out = doctor("recipient_delimiter =\n");
  EXPECT_NE(out.find("recipient_delimiter = '' lacks '-'"), std::string::npos) << out;
  EXPECT_NE(out.find("default_verp_delimiters = '+=' but [verp] delimiters = '-='"),
            std::string::npos)
      << out;
  out = doctor("recipient_delimiter = +-\ndefault_verp_delimiters = -=\n");
  EXPECT_NE(out.find("recipient_delimiter has '-'"), std::string::npos) << out;
  EXPECT_EQ(out.find("default_verp_delimiters"), std::string::npos) << out;
}

TEST(CtlQuery, StoredTextReachesTheTerminalWithoutControlCharacters) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  // An OSC title change, a colour, a bell and a C1 CSI: what a hostile reason may carry.
  const std::string hostile =
      "asked\x1b]0;pwned\x07 \x1b[31mby\xC2\x9B"
      "2J phone";
  int rc = -1;
  std::string out = d.Ctl("suppress victim@example.com --reason " + Quote(hostile), &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_FALSE(HasControls(out)) << out;
  out = d.Ctl("allow example.net --reason " + Quote(hostile), &rc);
  ASSERT_EQ(rc, 0) << out;
  for (const char* cmd : {"list", "status victim@example.com", "allowlist"}) {
    out = d.Ctl(cmd, &rc);
    EXPECT_EQ(rc, 0) << cmd << ": " << out;
    EXPECT_FALSE(HasControls(out)) << cmd << ": " << out;
    EXPECT_NE(out.find("by"), std::string::npos) << cmd << ": " << out;  // the text is still there
  }
  // The daemon's refusal quotes what it was given.
  out = d.Ctl("allow " +
                  Quote("ex\x1b[1m"
                        "ample.org") +
                  " --reason test",
              &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_FALSE(HasControls(out)) << out;
  // The reason is stored without its control characters (they became spaces), so --json
  // shows the same text.
  out = d.Ctl("--json list", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("asked ]0;pwned   [31mby 2J phone"), std::string::npos) << out;
  EXPECT_EQ(out.find("\\u001b"), std::string::npos) << out;
  // The daily report (text) names the day's manual suppressions with their reasons.
  char today[16];
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  std::strftime(today, sizeof today, "%Y-%m-%d", &utc);
  out = Shell(
      kBouncectl + " --config " + Quote(d.config_path()) + " report --date " + today + " 2>&1",
      &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("pwned"), std::string::npos) << out;
  EXPECT_FALSE(HasControls(out)) << out;
}

}  // namespace
}  // namespace bounced::testing
