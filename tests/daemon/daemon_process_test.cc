// daemon_process_test.cc: the real bounced process on temp paths: log input into SQLite,
// status through bouncectl, the Postfix socketmap, crash safety (kill -9 mid-ingest), log
// rotation both ways, hostile input (garbage, a 10 MB line, broken netstrings, invalid JSON,
// oversized requests, unauthorised writes), SIGHUP with broken rules, journald input, DSNs fed
// with bouncectl ingest-dsn (a relay's late DSNs counted against its status=sent lines), --once
// and --check-config.
#include <poll.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>

#include "tests/daemon/daemon_harness.h"
#include "tests/large_bounce.h"

namespace bounced::testing {
namespace {

// A Postfix status line for a unique queue id (one delivery event each).
std::string StatusLine(int i, const std::string& rcpt, bool bounce) {
  char qid[16];
  std::snprintf(qid, sizeof(qid), "%05X%06X", 0xA1B2C, i & 0xFFFFFF);
  std::string line = std::string("Nov 29 17:09:54 mta postfix/smtp[101]: ") + qid + ": to=<" +
                     rcpt + ">, relay=mx.example.com[192.0.2.1]:25, delay=0.05, " +
                     "delays=0.05/0/0/0, ";
  if (bounce) {
    line += "dsn=5.1.1, status=bounced (host mx.example.com[192.0.2.1] said: 550 5.1.1 <" + rcpt +
            ">: Recipient address rejected: User unknown in local recipient table (in reply to "
            "RCPT TO command))\n";
  } else {
    line += "dsn=2.0.0, status=sent (250 2.0.0 Ok: queued as 4AB12C)\n";
  }
  return line;
}

std::string Lines(int from, int to, bool bounce_every_tenth = true) {
  std::string out;
  for (int i = from; i < to; ++i) {
    bool bounce = bounce_every_tenth && i % 10 == 0;
    out += StatusLine(i, "user" + std::to_string(i) + "@example.com", bounce);
  }
  return out;
}

uint64_t FileSize(const std::string& path) {
  std::error_code ec;
  auto n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

uint64_t Inode(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

// Waits until the input has committed everything up to `offset` of the current file.
bool WaitForInputAt(const BouncedProcess& d, uint64_t offset) {
  return WaitUntil([&] {
    json h = d.Health();
    return h.contains("input") && h["input"].contains("committed") &&
           h["input"]["committed"]["offset"].get<uint64_t>() == offset;
  });
}

TEST(DaemonProcess, RecordsHardBounceFromLogAndAnswersStatusAndSocketmap) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), ReadFile(kTestData + "/postfix/icloud-unknown.log"));
  ASSERT_TRUE(WaitUntil([&] {
    return d.Query({{"cmd", "status"}, {"address", "icloud-unknown@icloud.com"}})["result"].value(
        "suppressed", false);
  })) << ReadFile(d.stderr_path());

  int rc = -1;
  std::string line = d.Ctl("status icloud-unknown@icloud.com", &rc);
  EXPECT_EQ(rc, 0) << line;
  EXPECT_NE(line.find("icloud-unknown@icloud.com is SUPPRESSED since"), std::string::npos) << line;
  EXPECT_NE(line.find("user_unknown"), std::string::npos) << line;
  EXPECT_NE(line.find("bouncectl unsuppress"), std::string::npos) << line;
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << "one line: " << line;

  json s = json::parse(d.Ctl("--json status ICLOUD-UNKNOWN@icloud.com", &rc));
  EXPECT_EQ(rc, 0);
  for (const char* key :
       {"address", "suppressed", "reason", "category", "since", "expires", "events"}) {
    EXPECT_TRUE(s.contains(key)) << key;
  }
  EXPECT_TRUE(s["suppressed"].get<bool>());
  EXPECT_EQ(s["category"], "user_unknown");
  EXPECT_TRUE(s["expires"].is_null());
  ASSERT_FALSE(s["events"].empty());
  EXPECT_EQ(s["events"][0]["log_status"], "bounced");

  std::string access =
      SocketmapAsk(d.socketmap_socket(), "recipient_access icloud-unknown@icloud.com");
  EXPECT_EQ(
      access.rfind(
          "OK 550 5.1.1 <icloud-unknown@icloud.com>: recipient suppressed after hard bounce on ",
          0),
      0u)
      << access;
  EXPECT_NE(access.find("(user_unknown)"), std::string::npos) << access;
  std::string transport = SocketmapAsk(d.socketmap_socket(), "transport icloud-unknown@icloud.com");
  EXPECT_EQ(transport.rfind("OK error:5.1.1 <icloud-unknown@icloud.com>: ", 0), 0u) << transport;
  EXPECT_EQ(SocketmapAsk(d.socketmap_socket(), "recipient_access someone-else@icloud.com"),
            "NOTFOUND ");
  EXPECT_EQ(SocketmapAsk(d.socketmap_socket(), "recipient_access icloud.com"), "NOTFOUND ");
  EXPECT_EQ(SocketmapAsk(d.socketmap_socket(), "transport icloud-unknown@"), "NOTFOUND ");
  EXPECT_EQ(SocketmapAsk(d.socketmap_socket(), "nosuchmap x@y").rfind("PERM ", 0), 0u);
  EXPECT_EQ(d.Stop(), 0);
}

TEST(DaemonProcess, KillNineMidIngestLosesAndDuplicatesNothing) {
  constexpr int kLines = 100000;
  TempDir dir;
  BouncedProcess d(dir);
  AppendFile(d.log(), Lines(0, kLines));
  d.Start();
  // Kill it while it is ingesting: some, but not all, events are in.
  ASSERT_TRUE(WaitUntil([&] { return d.StoredEvents() > 0; }, std::chrono::milliseconds(60000)));
  d.Kill9();
  d.Start();
  ASSERT_TRUE(WaitForInputAt(d, FileSize(d.log()))) << d.Health().dump();
  EXPECT_EQ(d.StoredEvents(), kLines);
  // Once more, in the middle of a second burst (large enough that the writer, at ~80k events/s,
  // is still at it when the first events of the burst show up).
  constexpr int kBurst = 200000;
  AppendFile(d.log(), Lines(kLines, kLines + kBurst));
  ASSERT_TRUE(WaitUntil([&] { return d.StoredEvents() > kLines; }));
  d.Kill9();
  d.Start();
  ASSERT_TRUE(WaitForInputAt(d, FileSize(d.log())));
  EXPECT_EQ(d.StoredEvents(), kLines + kBurst);
  json s = d.Query({{"cmd", "status"}, {"address", "user10@example.com"}});
  EXPECT_TRUE(s["result"].value("suppressed", false)) << s.dump();
  EXPECT_EQ(s["result"]["events"].size(), 1u);
}

TEST(DaemonProcess, FollowsRenameRotationMidStream) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), Lines(0, 1000));
  ASSERT_TRUE(d.WaitForEvents(1000));
  fs::rename(d.log(), d.log() + ".1");
  // Postfix (syslog) keeps writing to the renamed file until it reopens its log.
  AppendFile(d.log() + ".1", Lines(1000, 1500));
  AppendFile(d.log(), Lines(1500, 2000));
  ASSERT_TRUE(d.WaitForEvents(2000)) << d.Health().dump();
  AppendFile(d.log(), Lines(2000, 2100));
  ASSERT_TRUE(WaitForInputAt(d, FileSize(d.log())));
  EXPECT_EQ(d.StoredEvents(), 2100);
  EXPECT_GE(d.Health()["input"].value("rotations", 0), 1);
}

TEST(DaemonProcess, FollowsCopytruncateMidStream) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), Lines(0, 1000));
  ASSERT_TRUE(d.WaitForEvents(1000));
  fs::copy_file(d.log(), d.log() + ".1");
  fs::resize_file(d.log(), 0);
  ASSERT_TRUE(WaitUntil([&] { return d.Health()["input"].value("truncations", 0) >= 1; }));
  AppendFile(d.log(), Lines(1000, 1200));
  ASSERT_TRUE(WaitForInputAt(d, FileSize(d.log())));
  EXPECT_EQ(d.StoredEvents(), 1200);
}

TEST(DaemonProcess, RotationWhileStoppedFinishesTheRotatedFileFirst) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), Lines(0, 300));
  ASSERT_TRUE(d.WaitForEvents(300));
  EXPECT_EQ(d.Stop(), 0);
  AppendFile(d.log(), Lines(300, 400));  // written while bounced was down
  fs::rename(d.log(), d.log() + ".1");
  AppendFile(d.log(), Lines(400, 450));
  d.Start();
  ASSERT_TRUE(WaitForInputAt(d, FileSize(d.log())));
  EXPECT_EQ(d.StoredEvents(), 450);
}

// Two rotations while bounced was down (logrotate without "delaycompress": the file it was
// reading is now mail.log.2.gz): what it had not read of that file is out of reach (counted in
// health), but mail.log.1, all written since, is read whole before mail.log, and nothing is
// read twice.
TEST(DaemonProcess, TwoRotationsWhileStoppedReadTheNextRotatedFileWhole) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), Lines(0, 300));
  ASSERT_TRUE(d.WaitForEvents(300));
  EXPECT_EQ(d.Stop(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // mtimes after the commit
  AppendFile(d.log(), Lines(300, 350));  // lost: rotated on, then compressed
  fs::rename(d.log(), d.log() + ".2");
  int rc = -1;
  Shell("gzip " + Quote(d.log() + ".2"), &rc);
  ASSERT_EQ(rc, 0);
  AppendFile(d.log() + ".1", Lines(350, 500));
  AppendFile(d.log(), Lines(500, 550));
  d.Start();
  ASSERT_TRUE(WaitForInputAt(d, FileSize(d.log())));
  EXPECT_EQ(d.StoredEvents(), 300 + 150 + 50);
  EXPECT_EQ(d.Health()["input"].value("unread_rotated", 0), 1);
}

// syslog writes the renamed file until logrotate's postrotate HUP: lines written to it after
// bounced saw the new mail.log are read too, in order; a kill -9 meanwhile resumes in the
// renamed file (the committed position stays there until it is finished), nothing twice.
TEST(DaemonProcess, ReadsTheRenamedLogOnWhileSyslogStillWritesItAcrossAKill) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), Lines(0, 3));
  ASSERT_TRUE(d.WaitForEvents(3));
  fs::rename(d.log(), d.log() + ".1");
  AppendFile(d.log(), "");  // logrotate's create
  ASSERT_TRUE(WaitUntil([&] { return d.Health()["input"].value("rotations", 0) >= 1; }));
  AppendFile(d.log() + ".1", Lines(3, 5));
  ASSERT_TRUE(d.WaitForEvents(5)) << d.Health().dump();
  d.Kill9();
  AppendFile(d.log() + ".1", Lines(5, 6));
  AppendFile(d.log(), Lines(6, 8));
  d.Start();
  ASSERT_TRUE(d.WaitForEvents(8)) << d.Health().dump() << ReadFile(d.stderr_path());
  ASSERT_TRUE(WaitUntil([&] {
    json h = d.Health();
    return h["input"]["committed"]["inode"].get<uint64_t>() == Inode(d.log()) &&
           h["input"]["committed"]["offset"].get<uint64_t>() == FileSize(d.log());
  }));
  EXPECT_EQ(d.StoredEvents(), 8);
}

// copytruncate right after Postfix wrote lines bounced had not read yet (bounced is stopped with
// SIGSTOP so it cannot read them first): they are read from the copy, then the emptied log.
TEST(DaemonProcess, CopytruncateReadsTheCopyFromWhereBouncedWas) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), Lines(0, 3));
  ASSERT_TRUE(d.WaitForEvents(3));
  ASSERT_GT(d.pid(), 0);  // never kill(-1, ...)
  ::kill(d.pid(), SIGSTOP);
  AppendFile(d.log(), Lines(3, 5));
  fs::copy_file(d.log(), d.log() + ".1");
  fs::resize_file(d.log(), 0);
  AppendFile(d.log(), Lines(5, 6));
  ::kill(d.pid(), SIGCONT);
  ASSERT_TRUE(d.WaitForEvents(6)) << d.Health().dump();
  ASSERT_TRUE(WaitForInputAt(d, FileSize(d.log())));
  EXPECT_EQ(d.StoredEvents(), 6);
  EXPECT_EQ(d.Health()["input"].value("truncations", 0), 1);
}

// copytruncate while bounced was down, the log then written past the stored offset again: the
// copy is found by the bytes before the stored offset and finished first, then the new log from
// its start (no line of it lost, none taken for garbage).
TEST(DaemonProcess, CopytruncateWhileStoppedFinishesTheCopyFirst) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), Lines(0, 3));
  ASSERT_TRUE(d.WaitForEvents(3));
  EXPECT_EQ(d.Stop(), 0);
  AppendFile(d.log(), Lines(3, 5));
  fs::copy_file(d.log(), d.log() + ".1");
  fs::resize_file(d.log(), 0);
  AppendFile(d.log(), Lines(5, 20));
  d.Start();
  ASSERT_TRUE(WaitForInputAt(d, FileSize(d.log()))) << d.Health().dump();
  EXPECT_EQ(d.StoredEvents(), 20);
  EXPECT_EQ(d.Health()["input"].value("skipped_garbage", -1), 0);
}

// logrotate's dateext while bounced was down: the stored file is found as mail.log-YYYYMMDD.
TEST(DaemonProcess, DatedRotationWhileStoppedFinishesTheRotatedFileFirst) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), Lines(0, 3));
  ASSERT_TRUE(d.WaitForEvents(3));
  EXPECT_EQ(d.Stop(), 0);
  AppendFile(d.log(), Lines(3, 5));
  fs::rename(d.log(), d.log() + "-20261201");
  AppendFile(d.log(), Lines(5, 6));
  d.Start();
  ASSERT_TRUE(WaitForInputAt(d, FileSize(d.log()))) << d.Health().dump();
  EXPECT_EQ(d.StoredEvents(), 6);
}

// "\r\n" line ends: the "\r" is not stored with the diagnostic.
TEST(DaemonProcess, StripsCarriageReturnsOfCrlfLogLines) {
  TempDir dir;
  BouncedProcess d(dir);
  std::string text = Lines(1, 2);  // a delivery: "... status=sent (250 2.0.0 Ok: queued as ...)"
  text.insert(text.size() - 1, "\r");
  AppendFile(d.log(), text);
  d.Start();
  ASSERT_TRUE(d.WaitForEvents(1));
  int rc = -1;
  std::string out = d.Ctl("--json status user1@example.com", &rc);
  ASSERT_EQ(rc, 0) << out;
  json s = json::parse(out);
  ASSERT_EQ(s["events"].size(), 1u) << out;
  // With the "\r" left on, the reply's closing parenthesis was not taken off either.
  EXPECT_EQ(s["events"][0]["diagnostic"], "250 2.0.0 Ok: queued as 4AB12C") << out;
}

TEST(DaemonProcess, WaitsForAMissingLogAndSkipsGarbageAndTenMegabyteLines) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();  // mail.log does not exist yet: bounced waits, never exits
  EXPECT_TRUE(WaitUntil([&] { return d.Health()["input"].value("problem", "") != ""; }));
  std::string garbage =
      "this is not a log line\n\x01\x02\xff\xfe binary junk\n"
      "Nov 29 17:09:54 mta postfix/smtp[1]: truncated\n";
  std::string huge(10 * 1024 * 1024, 'x');
  AppendFile(d.log(), garbage + huge + "\n" + StatusLine(7, "after-huge@example.com", true));
  ASSERT_TRUE(WaitForInputAt(d, FileSize(d.log()))) << d.Health().dump();
  json h = d.Health();
  EXPECT_EQ(h["input"].value("skipped_too_long", 0), 1) << h.dump();
  EXPECT_EQ(h["input"].value("problem", "x"), "");
  EXPECT_EQ(d.StoredEvents(), 1);
  EXPECT_TRUE(d.Alive());
  EXPECT_TRUE(d.Query({{"cmd", "status"}, {"address", "after-huge@example.com"}})["result"].value(
      "suppressed", false));
}

TEST(DaemonProcess, BrokenNetstringClosesTheConnectionAndTheDaemonKeepsServing) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  for (const std::string& bad :
       {std::string("abc:hello,"), std::string("5:hello!"), std::string("99999999999999999999:x,"),
        std::string("5000:") + std::string(5000, 'a') + ","}) {
    int fd = ConnectUnix(d.socketmap_socket());
    ASSERT_GE(fd, 0);
    SendAll(fd, bad);
    std::string got = RecvUntil(fd, [](const std::string&) { return false; });  // until EOF
    ::close(fd);
    EXPECT_EQ(got, "") << "closed without a reply for " << bad.substr(0, 30);
  }
  EXPECT_EQ(SocketmapAsk(d.socketmap_socket(), "recipient_access nobody@example.com"), "NOTFOUND ");
  EXPECT_EQ(d.Health()["socketmap"].value("malformed", 0), 4);
  // Several requests on one connection, split across writes, as Postfix reuses connections.
  int fd = ConnectUnix(d.socketmap_socket());
  SendAll(fd, "30:recipient_access a@example.com,3");
  SendAll(fd, "0:recipient_access b@example.com,");
  std::string both =
      RecvUntil(fd, [](const std::string& s) { return s == "9:NOTFOUND ,9:NOTFOUND ,"; });
  ::close(fd);
  EXPECT_EQ(both, "9:NOTFOUND ,9:NOTFOUND ,");
}

// Query commands that wait for the database (two writes behind another process's write lock,
// as many as the query socket has io threads) wait on threads of their own: Postfix's lookups
// and other query clients are answered meanwhile, from memory (socketmap, lookup) and from
// SQLite (status reads a WAL snapshot, which the lock does not block).
TEST(DaemonProcess, LookupsAndOtherQueryClientsAreAnsweredWhileWritesWaitForALockedDatabase) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  int rc = -1;
  std::string out = d.Ctl("suppress victim@example.com --reason test", &rc);
  ASSERT_EQ(rc, 0) << out;

  // Another process holds the write lock: the daemon's writer waits for it (busy timeout 5 s,
  // then it gives up; each write waits in turn), and so do the query commands that write.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(d.db().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  std::vector<int> writers;
  for (int i = 0; i < 2; ++i) {  // as many as the daemon has query threads
    writers.push_back(ConnectUnix(d.query_socket()));
    SendAll(writers.back(), json{{"cmd", "suppress"},
                                 {"address", "w" + std::to_string(i) + "@example.com"},
                                 {"reason", "test"}}
                                    .dump() +
                                "\n");
  }
  // Time for both requests to be taken up (no assertion rests on it).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  // Postfix's lookups read memory only: answered at once, well inside the writers' wait.
  EXPECT_EQ(SocketmapAsk(d.socketmap_socket(), "recipient_access victim@example.com",
                         std::chrono::seconds(2))
                .rfind("OK 550", 0),
            0u);
  EXPECT_EQ(
      SocketmapAsk(d.socketmap_socket(), "transport other@example.com", std::chrono::seconds(2)),
      "NOTFOUND ");
  // Answered while both writers still wait (the lock is held until after these): with the
  // query io threads taken by the writers, they would only be answered after a writer's reply.
  json lookup = d.Query({{"cmd", "lookup"}, {"address", "victim@example.com"}});
  json status = d.Query({{"cmd", "status"}, {"address", "victim@example.com"}});
  EXPECT_TRUE(lookup.value("ok", false)) << lookup.dump();
  EXPECT_TRUE(lookup["result"].value("suppressed", false)) << lookup.dump();
  EXPECT_TRUE(status.value("ok", false)) << status.dump();
  for (int fd : writers) {
    pollfd p{fd, POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 0), 0) << "a writer was answered before the other clients";
  }

  ASSERT_EQ(sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  for (int fd : writers) {
    std::string reply =
        RecvUntil(fd, [](const std::string& s) { return !s.empty() && s.back() == '\n'; });
    EXPECT_FALSE(reply.empty());  // done or "database is locked": either way answered
    ::close(fd);
  }
  EXPECT_TRUE(d.Query({{"cmd", "health"}})["ok"]);
}

TEST(DaemonProcess, InvalidJsonAndUnknownCommandsGetClearErrorsOnTheSameConnection) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  int fd = ConnectUnix(d.query_socket());
  SendAll(
      fd,
      "{not json\n[1,2]\n{\"cmd\":\"frobnicate\"}\n{\"cmd\":\"status\"}\n{\"cmd\":\"health\"}\n");
  std::string replies =
      RecvUntil(fd, [](const std::string& s) { return std::count(s.begin(), s.end(), '\n') >= 5; });
  ::close(fd);
  std::istringstream in(replies);
  std::string line;
  std::vector<json> r;
  while (std::getline(in, line)) r.push_back(json::parse(line));
  ASSERT_EQ(r.size(), 5u) << replies;
  EXPECT_FALSE(r[0]["ok"]);
  EXPECT_NE(r[0]["error"].get<std::string>().find("invalid JSON"), std::string::npos);
  EXPECT_NE(r[1]["error"].get<std::string>().find("JSON object"), std::string::npos);
  EXPECT_NE(r[2]["error"].get<std::string>().find("unknown command"), std::string::npos);
  EXPECT_NE(r[3]["error"].get<std::string>().find("missing \"address\""), std::string::npos);
  EXPECT_TRUE(r[4]["ok"]);
}

TEST(DaemonProcess, OversizedRequestIsRefusedAndTheDaemonKeepsServing) {
  TempDir dir;
  BouncedProcess d(dir, "max_request_bytes = 4096\n");
  // max_request_bytes belongs to [query]: rewrite the config with it in the right table.
  std::string cfg = d.BaseConfig();
  cfg.insert(cfg.find("mode = \"0666\"\n") + 14, "max_request_bytes = 4096\n");
  std::ofstream(d.config_path()) << cfg;
  d.Start();
  int fd = ConnectUnix(d.query_socket());
  SendAll(fd, "{\"cmd\":\"status\",\"address\":\"" + std::string(100000, 'a'));
  std::string reply = RecvUntil(fd, [](const std::string&) { return false; });  // until close
  ::close(fd);
  json r = json::parse(reply);
  EXPECT_FALSE(r["ok"]);
  EXPECT_NE(r["error"].get<std::string>().find("request too large"), std::string::npos) << reply;
  EXPECT_TRUE(d.Query({{"cmd", "health"}})["ok"]);
}

TEST(DaemonProcess, WriteCommandsNeedRootOrTheGroupAndAreAudited) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as nobody";
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  int rc = -1;
  std::string out = d.Ctl("suppress victim@example.com --reason test", &rc, /*as_nobody=*/true);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("permission denied"), std::string::npos) << out;
  out = d.Ctl("status victim@example.com", &rc, true);  // reads are for everyone
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("is not suppressed"), std::string::npos) << out;

  out = d.Ctl("suppress victim@example.com --reason 'asked by postmaster'", &rc);
  EXPECT_EQ(rc, 0) << out;
  json s = json::parse(d.Ctl("--json status victim@example.com", &rc));
  EXPECT_TRUE(s["suppressed"]);
  EXPECT_EQ(s["source"], "manual");
  EXPECT_EQ(
      SocketmapAsk(d.socketmap_socket(), "recipient_access victim@example.com").rfind("OK 550", 0),
      0u);
  // A bulk lift's dry run only reads: anyone may ask it; the lift itself needs the right.
  out = d.Ctl("unsuppress --domain example.com --dry-run", &rc, true);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("victim@example.com"), std::string::npos) << out;
  out = d.Ctl("unsuppress --domain example.com --reason test", &rc, true);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("permission denied"), std::string::npos) << out;
  out = d.Ctl("unsuppress victim@example.com --reason test --dry-run", &rc, true);
  EXPECT_NE(rc, 0) << out;  // an address with --dry-run is a usage error
  out = d.Ctl("unsuppress victim@example.com --reason 'wrong address'", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(SocketmapAsk(d.socketmap_socket(), "recipient_access victim@example.com"), "NOTFOUND ");
  out = d.Ctl("suppress x@example.com", &rc);  // --reason is required
  EXPECT_EQ(rc, 2) << out;
  EXPECT_TRUE(d.Alive());
}

TEST(DaemonProcess, SuppressRefusesAnExpiryThatOverflowsOrHasPassed) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  int rc = -1;
  std::string out = d.Ctl("suppress far@example.com --reason test --expires 999999999999999d", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("longer than 100 years"), std::string::npos) << out;
  out = d.Ctl("suppress past@example.com --reason test --expires 2020-01-01", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("2020-01-01 is not in the future"), std::string::npos) << out;
  for (const char* address : {"far@example.com", "past@example.com"}) {
    json s = json::parse(d.Ctl(std::string("--json status ") + address, &rc));
    EXPECT_FALSE(s["suppressed"]) << s;
    EXPECT_TRUE(s["suppression"].is_null()) << s;  // nothing stored, not even expired
  }
  out = d.Ctl("suppress soon@example.com --reason test --expires 30d", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("soon@example.com suppressed (test), expires "), std::string::npos) << out;
  EXPECT_EQ(
      SocketmapAsk(d.socketmap_socket(), "recipient_access soon@example.com").rfind("OK 550", 0),
      0u);
}

TEST(DaemonProcess, ImportIsAllOrNothingWithLineNumbersAndExportRoundTrips) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  std::ofstream(dir / "bad.csv") << "address,reason\nok1@example.com,list\nnot-an-address,x\n"
                                    "ok2@example.com,list\n";
  int rc = -1;
  std::string out = d.Ctl("import " + dir / "bad.csv", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("line 3"), std::string::npos) << out;
  EXPECT_EQ(d.Ctl("--json list", &rc), "[]\n");
  std::ofstream(dir / "good.jsonl") << "{\"address\":\"a@example.com\",\"reason\":\"old list\"}\n"
                                       "{\"address\":\"b@example.org\",\"reason\":\"old list\"}\n";
  out = d.Ctl("import " + dir / "good.jsonl", &rc);
  EXPECT_EQ(rc, 0) << out;
  json list = json::parse(d.Ctl("--json list --domain example.com", &rc));
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["address"], "a@example.com");
  out = d.Ctl("export --format csv", &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out.rfind("address,", 0), 0u) << out;
  EXPECT_NE(out.find("b@example.org"), std::string::npos);
  out = d.Ctl("list", &rc);
  EXPECT_NE(out.find("ADDRESS"), std::string::npos) << out;
  EXPECT_NE(out.find("2 suppressed"), std::string::npos) << out;
}

// A file that is not UTF-8 (Latin-1 here) is refused with its line, and nothing is imported:
// the bytes would otherwise reach bounced as U+FFFD, a different address.
TEST(DaemonProcess, ImportRefusesAFileThatIsNotUtf8) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  std::ofstream(dir / "latin1.csv") << "address,reason\nok1@example.com,list\n"
                                       "m\xfcller@example.de,Kunde w\xfcnscht keine Post\n";
  int rc = -1;
  std::string out = d.Ctl("import " + dir / "latin1.csv", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("line 3: byte 0xFC is not UTF-8"), std::string::npos) << out;
  EXPECT_EQ(d.Ctl("--json list", &rc), "[]\n");
  std::ofstream(dir / "utf8.csv") << "address,reason\nm\xc3\xbcller@example.de,Kunde\n";
  out = d.Ctl("import " + dir / "utf8.csv", &rc);
  EXPECT_EQ(rc, 0) << out;
  json list = json::parse(d.Ctl("--json list", &rc));
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["address"], "m\xc3\xbcller@example.de");
}

// ingest-dsn over a saved mailbox and a Maildir: each bounce is recorded at its own Date (a
// hard bounce of 1 October suppresses since 1 October), a message that is no bounce (or empty) is
// named and counted (exit 1) and the run goes on, and feeding the same mailbox again records
// nothing new.
TEST(DaemonProcess, IngestDsnTakesMailboxesAndFoldersAtTheirDates) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  // The first Date line (the bounce's own header) replaced.
  auto redated = [](const std::string& file, const std::string& date) {
    std::string m = ReadFile(kTestData + "/dsn/postfix/" + file);
    const size_t at = m.find("\nDate: ");
    const size_t end = m.find('\n', at + 1);
    return m.substr(0, at + 1) + "Date: " + date + m.substr(end);
  };
  const std::string mbox_path = dir / "bounces.mbox";
  AppendFile(mbox_path, "From MAILER-DAEMON Thu Oct  1 08:00:00 2026\n" +
                            redated("icloud-unknown-09.eml", "Thu, 1 Oct 2026 08:00:00 +0000") +
                            "\nFrom someone@example.org Thu Oct  1 09:00:00 2026\n"
                            "From: someone@example.org\nSubject: hello\n\njust mail\n\n"
                            "From MAILER-DAEMON Thu Oct  1 10:00:00 2026\n\n"  // empty
                            "From MAILER-DAEMON Fri Oct  2 07:00:00 2026\n" +
                            redated("gmail-unknown-01.eml", "Fri, 2 Oct 2026 09:00:00 +0200") +
                            "\n");
  int rc = -1;
  std::string out = d.Ctl("ingest-dsn --mbox " + Quote(mbox_path), &rc);
  EXPECT_EQ(rc, 1) << out;  // the message that is no bounce
  EXPECT_NE(out.find(mbox_path + "#1: dsn with 1 recipient(s) recorded (2026-10-01T08:00:00Z)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(mbox_path + "#2: not a bounce"), std::string::npos) << out;
  EXPECT_NE(out.find(mbox_path + "#3: not a bounce: the message is empty"), std::string::npos)
      << out;
  EXPECT_NE(out.find(mbox_path + "#4: dsn with 1 recipient(s) recorded (2026-10-02T07:00:00Z)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("4 message(s): 2 recorded"), std::string::npos) << out;
  ASSERT_TRUE(d.WaitForEvents(2));
  const int64_t events = d.StoredEvents();
  out = d.Ctl("status icloud-unknown@icloud.com", &rc);
  EXPECT_NE(out.find("SUPPRESSED since 2026-10-01"), std::string::npos) << out;
  out = d.Ctl("status gmail-unknown@gmail.com", &rc);
  EXPECT_NE(out.find("SUPPRESSED since 2026-10-02"), std::string::npos) << out;

  // The same mailbox again, from stdin: nothing new.
  out = d.Ctl("ingest-dsn --mbox - < " + Quote(mbox_path), &rc);
  EXPECT_NE(out.find("4 message(s): 2 recorded"), std::string::npos) << out;
  EXPECT_EQ(d.StoredEvents(), events);

  // A Maildir: its messages; all of them bounces, so exit 0. --json: a line per message.
  const std::string md = dir / "Maildir";
  std::filesystem::create_directories(md + "/new");
  std::filesystem::create_directories(md + "/cur");
  AppendFile(md + "/new/1790000000.M1.mx", ReadFile(kTestData + "/dsn/postfix/ms-unknown-15.eml"));
  out = d.Ctl("--json ingest-dsn " + Quote(md), &rc);
  EXPECT_EQ(rc, 0) << out;
  json line = json::parse(out, nullptr, false);
  ASSERT_FALSE(line.is_discarded()) << out;
  EXPECT_EQ(line["file"], md + "/new/1790000000.M1.mx");
  EXPECT_EQ(line["time"], "2026-11-29T17:09:55Z");  // its own Date
  EXPECT_EQ(line["recipients"][0]["recipient"], "ms-unknown@hotmail.com");
}

// [storage] event_retention_days, turned on by a reload: the events before it go (the
// suppressions they made stay), a bounce older than it is not recorded and says so, and
// health and metrics count both.
TEST(DaemonProcess, EventRetentionTakenAtReloadPrunesAndSkipsWhatIsTooOld) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  auto dated = [](const std::string& file, int days_ago) {
    std::string m = ReadFile(kTestData + "/dsn/postfix/" + file);
    const size_t at = m.find("\nDate: ");
    const size_t end = m.find('\n', at + 1);
    const std::time_t t = std::time(nullptr) - days_ago * 86400;
    char date[64];
    std::tm tm{};
    std::strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S +0000", ::gmtime_r(&t, &tm));
    return m.substr(0, at + 1) + "Date: " + date + m.substr(end);
  };
  const std::string mbox = dir / "old.mbox";
  AppendFile(mbox, "From MAILER-DAEMON Thu Oct  1 08:00:00 2026\n" +
                       dated("icloud-unknown-09.eml", 60) +
                       "\nFrom MAILER-DAEMON Thu Oct  1 08:00:00 2026\n" +
                       dated("gmail-unknown-01.eml", 5) + "\n");
  int rc = -1;
  std::string out = d.Ctl("ingest-dsn --mbox " + Quote(mbox), &rc);
  ASSERT_EQ(rc, 0) << out;
  ASSERT_NE(out.find("2 message(s): 2 recorded"), std::string::npos) << out;
  ASSERT_EQ(d.StoredEvents(), 2);

  d.SetStorageConfig("event_retention_days = 30\n");
  json r = d.Query({{"cmd", "reload"}});
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_EQ(r["result"]["restart_needed"], json::array()) << "the retention applies at once";
  // Pruned by the writer on its own: no batch comes.
  ASSERT_TRUE(WaitUntil([&] { return d.StoredEvents() == 1; })) << d.Health().dump();
  json storage = d.Health()["storage"];
  EXPECT_EQ(storage["event_retention_days"], 30);
  EXPECT_EQ(storage["events_pruned"], 1);
  out = d.Ctl("status icloud-unknown@icloud.com", &rc);
  EXPECT_NE(out.find("SUPPRESSED"), std::string::npos) << "the suppression stays:\n" << out;

  // Too old to be kept: said, counted, not recorded, and no failure.
  const std::string eml = dir / "old.eml";
  AppendFile(eml, dated("ms-unknown-15.eml", 45));
  out = d.Ctl("ingest-dsn " + Quote(eml), &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("dsn with 1 recipient(s) not recorded (too old)"), std::string::npos) << out;
  EXPECT_NE(out.find("before what [storage] event_retention_days (30) keeps"), std::string::npos)
      << out;
  out = d.Ctl("status ms-unknown@hotmail.com", &rc);
  EXPECT_EQ(out.find("SUPPRESSED"), std::string::npos) << out;
  out = d.Ctl("ingest-dsn --mbox " + Quote(mbox), &rc);
  EXPECT_NE(out.find("2 message(s): 1 recorded (1 recipient event(s); one already recorded is "
                     "not recorded again), 1 too old for the event retention"),
            std::string::npos)
      << out;
  EXPECT_EQ(d.StoredEvents(), 1);
  out = d.Ctl("metrics", &rc);
  EXPECT_NE(out.find("bounced_events_pruned_total 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("bounced_events_too_old_total 2\n"), std::string::npos) << out;
  out = d.Ctl("health", &rc);
  EXPECT_NE(out.find("storage: events kept 30 days (oldest "), std::string::npos) << out;
  EXPECT_NE(out.find("), 1 pruned and 2 too old since start\n"), std::string::npos) << out;
}

TEST(DaemonProcess, IngestDsnRecordsOncePerMessageAndRecipient) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  std::string eml = kTestData + "/dsn/postfix/icloud-unknown-09.eml";
  int rc = -1;
  std::string out = d.Ctl("ingest-dsn " + eml, &rc);
  EXPECT_EQ(rc, 0) << out;
  int64_t events = d.StoredEvents();
  EXPECT_GE(events, 1);
  out = d.Ctl("ingest-dsn - < " + eml, &rc);  // the same bounce again, on stdin
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(d.StoredEvents(), events);
  // And gzip-compressed, as a saved copy may be: read through gzip, still the same bounce.
  Shell("gzip -c < " + eml + " > " + Quote(dir / "saved.eml.gz"), &rc);
  out = d.Ctl("ingest-dsn " + Quote(dir / "saved.eml.gz"), &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.rfind("dsn with 1 recipient(s) recorded", 0), 0u) << out;
  EXPECT_EQ(d.StoredEvents(), events);
  out = d.Ctl("ingest-dsn " + d.config_path(), &rc);  // not a bounce
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("not a bounce"), std::string::npos) << out;
}

// [verp] on: a bounce delivered to a VERP return path and fed with ingest-dsn is about the
// recipient the path encodes, read from the message's X-Original-To or from
// --envelope-recipient (a pipe transport's ${original_recipient}), even when the bounce names
// no recipient. A return path the format does not take is no VERP: the bounce reads as it is.
TEST(DaemonProcess, IngestDsnReadsTheVerpReturnPathItWasDeliveredTo) {
  TempDir dir;
  BouncedProcess d(dir, "[verp]\nenabled = true\nprefixes = [\"bounces\"]\n");
  d.Start();
  auto write = [&dir](const std::string& name, const std::string& header) {
    std::ofstream(dir / name) << header
                              << "From: MAILER-DAEMON@mx.example.net\n"
                                 "Subject: Undeliverable: news\n"
                                 "Message-ID: <"
                              << name
                              << "@mx.example.net>\n\n"
                                 "Your message could not be delivered.\n\n"
                                 "The remote server said: 550 5.1.1 User unknown\n";
    return Quote(dir / name);
  };
  int rc = -1;
  std::string out =
      d.Ctl("--json ingest-dsn " +
                write("a.eml", "X-Original-To: bounces+verp-a=Example.com@news.example.org\n"),
            &rc);
  EXPECT_EQ(rc, 0) << out;
  json r = json::parse(out);
  EXPECT_EQ(r["verp_recipient"], "verp-a@example.com");
  ASSERT_EQ(r["recipients"].size(), 1u) << out;
  EXPECT_EQ(r["recipients"][0]["recipient"], "verp-a@example.com");
  EXPECT_EQ(r["recipients"][0]["category"], "user_unknown");
  out = d.Ctl("ingest-dsn --envelope-recipient bounces+verp-b=example.com@news.example.org " +
                  write("b.eml", "To: news@news.example.org\n"),
              &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("for verp-b@example.com (VERP)"), std::string::npos) << out;
  for (const char* address : {"verp-a@example.com", "verp-b@example.com"}) {
    json s = json::parse(d.Ctl(std::string("--json status ") + address, &rc));
    EXPECT_TRUE(s["suppressed"].get<bool>()) << address;
  }
  // A forward: the bounce names the address it failed at, the return path the one sent to.
  // The failure is that address's; status of the one sent to shows it too, marked.
  std::ofstream(dir / "d.eml") << "X-Original-To: bounces+verp-d=example.com@news.example.org\n"
                                  "From: MAILER-DAEMON@mx.example.net\n"
                                  "Subject: Undelivered Mail Returned to Sender\n"
                                  "Message-ID: <d.eml@mx.example.net>\n\n"
                                  "<moved@elsewhere.example>: host mx.elsewhere.example said: 550 "
                                  "5.1.1 <moved@elsewhere.example>: User unknown\n";
  out = d.Ctl("--json ingest-dsn " + Quote(dir / "d.eml"), &rc);
  ASSERT_EQ(rc, 0) << out;
  r = json::parse(out);
  ASSERT_EQ(r["recipients"].size(), 1u) << out;
  EXPECT_EQ(r["recipients"][0]["recipient"], "moved@elsewhere.example") << out;
  EXPECT_EQ(r["recipients"][0]["original_recipient"], "verp-d@example.com") << out;
  json sd = json::parse(d.Ctl("--json status verp-d@example.com", &rc));
  EXPECT_FALSE(sd["suppressed"].get<bool>()) << "suppress_original_recipient is off";
  ASSERT_EQ(sd["events"].size(), 1u) << sd.dump();
  EXPECT_EQ(sd["events"][0]["recipient"], "moved@elsewhere.example");
  EXPECT_EQ(sd["events"][0]["as_original_recipient"], true);
  out = d.Ctl("status -v verp-d@example.com", &rc);
  EXPECT_NE(out.find("verp-d@example.com is not suppressed; last event "), std::string::npos)
      << out;
  EXPECT_NE(out.find("bounced user_unknown 5.1.1 (at moved@elsewhere.example, which it "
                     "forwarded to)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("[for moved@elsewhere.example] <moved@elsewhere.example>: host"),
            std::string::npos)
      << out;
  json moved = json::parse(d.Ctl("--json status moved@elsewhere.example", &rc));
  EXPECT_TRUE(moved["suppressed"].get<bool>());
  ASSERT_EQ(moved["events"].size(), 1u);
  EXPECT_FALSE(moved["events"][0].contains("as_original_recipient"));
  // Not a return path of the configured prefix: recorded as the bounce reads, for nobody.
  out = d.Ctl("--json ingest-dsn " +
                  write("c.eml", "X-Original-To: news+verp-c=example.com@news.example.org\n"),
              &rc);
  EXPECT_EQ(rc, 0) << out;
  r = json::parse(out);
  EXPECT_FALSE(r.contains("verp_recipient")) << out;
  EXPECT_EQ(r["recipients"][0]["recipient"], "") << out;
}

// What a smarthost that accepts a message to full@example.org and bounces it later leaves:
// Postfix's log lines for message `id` (queue id `qid`) accepted on 2026-11-`day` at 10:00:0x
// (status=sent to the relay, which queued it as E3DE4A74B`tag`), and the relay's DSN for it
// (from tests/data's Postfix DSN full-16.eml, dated `date`, quoting the original's Message-ID).
std::string RelaySentLines(const std::string& day, const std::string& qid, const std::string& id,
                           const std::string& tag, int second = 0) {
  const std::string at = "2026-11-" + day + "T10:00:0";
  return at + std::to_string(second) + "+00:00 mta postfix/cleanup[100]: " + qid +
         ": message-id=<" + id + ">\n" + at + std::to_string(second + 1) +
         "+00:00 mta postfix/smtp[101]: " + qid +
         ": to=<full@example.org>, relay=smarthost.example.net[192.0.2.25]:587, delay=0.5, "
         "delays=0.1/0/0.2/0.2, dsn=2.0.0, status=sent (250 2.0.0 Ok: queued as E3DE4A74B" +
         tag + ")\n";
}
std::string RelayDsn(const std::string& id, const std::string& date, const std::string& tag) {
  std::string m = ReadFile(kTestData + "/dsn/postfix/full-16.eml");
  auto replace = [&m](const std::string& from, const std::string& to) {
    for (size_t at = m.find(from); at != std::string::npos; at = m.find(from, at + to.size()))
      m.replace(at, from.size(), to);
  };
  replace("Sun, 29 Nov 2026 17:09:55", date);
  replace("<20261129170955.029161@vm>", "<" + id + ">");
  replace("20261129170955.F12C4A74BBB", "bounce" + tag);
  replace("E3DE4A74BB8", "E3DE4A74B" + tag);
  return m;
}

// A smarthost that accepts every message (status=sent in the log) and sends a DSN for it later
// (mailbox full), fed with ingest-dsn: the log's Message-ID (<...>, from the cleanup line) and
// the one the DSN quotes are the same message's, so its delivery does not reset the count, and
// the third message 8 days after the first suppresses the mailbox.
TEST(DaemonProcess, MailboxThatARelayAcceptsAndBouncesLaterIsSuppressedAtTheThreshold) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  int rc = -1;
  std::string out;
  for (int i = 0; i < 3; ++i) {
    const std::string day = "0" + std::to_string(1 + 4 * i);  // 2026-11-01, -05, -09
    const std::string id = "news" + std::to_string(i) + "@shop.example";
    AppendFile(d.log(),
               RelaySentLines(day, "1A2B3C4D5" + std::to_string(i), id, "B" + std::to_string(i)));
    ASSERT_TRUE(d.WaitForEvents(2 * i + 1));
    if (i == 1) {
      out = d.Ctl("status full@example.org", &rc);
      EXPECT_NE(out.find("1 failure incident(s) since 2026-11-01 count toward suppression (message "
                         "<news1@shop.example> delivered 2026-11-05"),
                std::string::npos)
          << out;
    }
    const char* const weekday[] = {"Sun", "Thu", "Mon"};
    const std::string file = dir / ("dsn" + std::to_string(i) + ".eml");
    AppendFile(file, RelayDsn(id, std::string(weekday[i]) + ", " + day + " Nov 2026 11:00:00",
                              "B" + std::to_string(i)));
    out = d.Ctl("ingest-dsn " + Quote(file), &rc);
    EXPECT_EQ(rc, 0) << out;
    ASSERT_TRUE(d.WaitForEvents(2 * i + 2));
    out = d.Ctl("status full@example.org", &rc);
    EXPECT_EQ(out.find("full@example.org is SUPPRESSED since 2026-11-09 (repeated_failure, "
                       "mailbox_full") != std::string::npos,
              i == 2)
        << out;
  }
  EXPECT_EQ(d.Stop(), 0);
}

// The same relay with two of the recipient's messages in hand at once (a newsletter and a
// receipt accepted before the newsletter's DSN came back): both deliveries wait, each DSN drops
// its own message's, and the third incident suppresses.
TEST(DaemonProcess, RelayHoldingTwoMessagesAtOnceStillReachesTheThreshold) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  int rc = -1;
  AppendFile(d.log(), RelaySentLines("01", "1A2B3C4D50", "news0@shop.example", "B0"));
  ASSERT_TRUE(d.WaitForEvents(1));
  AppendFile(dir / "dsn0.eml", RelayDsn("news0@shop.example", "Sun, 01 Nov 2026 11:00:00", "B0"));
  std::string out = d.Ctl("ingest-dsn " + Quote(dir / "dsn0.eml"), &rc);
  EXPECT_EQ(rc, 0) << out;
  ASSERT_TRUE(d.WaitForEvents(2));
  AppendFile(d.log(), RelaySentLines("05", "1A2B3C4D51", "news1@shop.example", "B1") +
                          RelaySentLines("05", "1A2B3C4D52", "receipt2@shop.example", "B2", 5));
  ASSERT_TRUE(d.WaitForEvents(4));
  out = d.Ctl("status full@example.org", &rc);
  EXPECT_NE(out.find("1 failure incident(s) since 2026-11-01 count toward suppression (2 "
                     "deliveries waiting, the latest message <receipt2@shop.example> delivered "
                     "2026-11-05"),
            std::string::npos)
      << out;
  out = d.Ctl("--json status full@example.org", &rc);
  EXPECT_NE(out.find("\"pending_deliveries\":[{\"delivered\":\"2026-11-05T10:00:01Z\","
                     "\"message_id\":\"news1@shop.example\"},{\"delivered\":"
                     "\"2026-11-05T10:00:06Z\",\"message_id\":\"receipt2@shop.example\"}]"),
            std::string::npos)
      << out;
  AppendFile(dir / "dsn1.eml", RelayDsn("news1@shop.example", "Thu, 05 Nov 2026 11:00:00", "B1"));
  out = d.Ctl("ingest-dsn " + Quote(dir / "dsn1.eml"), &rc);
  EXPECT_EQ(rc, 0) << out;
  ASSERT_TRUE(d.WaitForEvents(5));
  out = d.Ctl("status full@example.org", &rc);
  EXPECT_EQ(out.find("SUPPRESSED"), std::string::npos) << out;
  EXPECT_NE(out.find("2 failure incident(s) since 2026-11-01 count toward suppression (message "
                     "<receipt2@shop.example> delivered 2026-11-05"),
            std::string::npos)
      << out;
  AppendFile(dir / "dsn2.eml",
             RelayDsn("receipt2@shop.example", "Mon, 09 Nov 2026 11:00:00", "B2"));
  out = d.Ctl("ingest-dsn " + Quote(dir / "dsn2.eml"), &rc);
  EXPECT_EQ(rc, 0) << out;
  ASSERT_TRUE(d.WaitForEvents(6));
  out = d.Ctl("status full@example.org", &rc);
  EXPECT_NE(out.find("full@example.org is SUPPRESSED since 2026-11-09 (repeated_failure, "
                     "mailbox_full"),
            std::string::npos)
      << out;
  EXPECT_EQ(d.Stop(), 0);
}

// A bounce for thousands of recipients (one Postfix DSN for a list message) is recorded
// whole; one longer than the parser reads is recorded as far as it was read, and the reply says
// what was not.
TEST(DaemonProcess, IngestDsnRecordsEveryRecipientOfALargeBounce) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  const size_t n = 3000;
  AppendFile(dir / "large.eml", LargePostfixDsn(n));
  int rc = -1;
  std::string out = d.Ctl("ingest-dsn " + Quote(dir / "large.eml"), &rc);
  EXPECT_EQ(rc, 0) << out.substr(0, 300);
  EXPECT_EQ(out.rfind("dsn with 3000 recipient(s) recorded", 0), 0u) << out.substr(0, 300);
  ASSERT_TRUE(d.WaitForEvents(n));
  out = d.Ctl("status " + NumberedAddress(n - 1), &rc);
  EXPECT_NE(out.find("SUPPRESSED"), std::string::npos) << out;

  std::string big = LargePostfixDsn(2);
  while (big.size() <= (size_t{17} << 20)) big += std::string(99, 'x') + '\n';
  AppendFile(dir / "big.eml", big);
  out = d.Ctl("ingest-dsn " + Quote(dir / "big.eml"), &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\n  warning: the message is longer than 16 MiB; only its first 16 MiB were "
                     "read\n"),
            std::string::npos)
      << out;
  EXPECT_TRUE(d.WaitForEvents(n + 2));
}

TEST(DaemonProcess, SighupWithBrokenRulesKeepsTheOldRules) {
  TempDir dir;
  BouncedProcess d(dir);
  fs::create_directories(d.rules_dir());
  d.Start();
  int64_t rules_before = d.Health()["rules"].value("count", 0);
  ASSERT_GT(rules_before, 0);
  std::ofstream(d.rules_dir() + "/broken.toml") << "[[rule]\nthis is = = not toml\n";
  ::kill(d.pid(), SIGHUP);
  ASSERT_TRUE(WaitUntil(
      [&] { return ReadFile(d.stderr_path()).find("keeping the running") != std::string::npos; }));
  EXPECT_TRUE(d.Alive());
  EXPECT_EQ(d.Health()["rules"].value("count", 0), rules_before);
  EXPECT_NE(ReadFile(d.stderr_path()).find("broken.toml"), std::string::npos);
  // Said by health, bouncectl health and metrics until a reload takes.
  const json reload = d.Health()["last_reload"];
  EXPECT_EQ(reload.value("ok", true), false) << reload.dump();
  EXPECT_NE(reload.value("error", "").find("broken.toml"), std::string::npos) << reload.dump();
  EXPECT_TRUE(reload["time"].is_number_integer()) << reload.dump();
  int rc = -1;
  std::string out = d.Ctl("health", &rc);
  EXPECT_NE(out.find("\nreload: REFUSED at "), std::string::npos) << out;
  EXPECT_NE(d.Ctl("metrics", &rc).find("\nbounced_config_last_reload_successful 0\n"),
            std::string::npos);
  out = d.Ctl("reload", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("broken.toml"), std::string::npos) << out;
  out =
      Shell(kBouncectl + " --config " + Quote(d.config_path()) + " doctor --no-postfix 2>&1", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("FAIL  rules: " + d.rules_dir() + "/broken.toml"), std::string::npos) << out;
  EXPECT_NE(out.find("warn  bounced refused its last reload: rules: "), std::string::npos) << out;
  fs::remove(d.rules_dir() + "/broken.toml");
  out = d.Ctl("reload", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(d.Health()["last_reload"].value("ok", false), true);
  EXPECT_EQ(d.Ctl("health", &rc).find("REFUSED"), std::string::npos);
  EXPECT_NE(d.Ctl("metrics", &rc).find("\nbounced_config_last_reload_successful 1\n"),
            std::string::npos);
  // The daemon still classifies after all this.
  AppendFile(d.log(), StatusLine(1, "late@example.com", true));
  EXPECT_TRUE(d.WaitForEvents(1));
}

// SIGHUP (a log rotation script's kill -HUP) and SIGTERM that arrive while bounced is still
// starting (loading rules, opening the database) are acted on once it is up, never fatal.
TEST(DaemonProcess, SignalsDuringStartUpAreHandledOnceItIsUp) {
  TempDir dir;
  BouncedProcess d(dir);
  std::ofstream(d.config_path()) << d.BaseConfig();
  // A rules file that is a FIFO holds bounced in its start-up (reading the rules) for as long as
  // the test wants: the signal is sent while bounced reads it.
  fs::create_directories(d.rules_dir());
  const std::string fifo = d.rules_dir() + "/slow.toml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  // Waits until bounced opens the FIFO to read it, then (after `then`) lets it read an empty file.
  auto hold_rules_read = [&](pid_t pid, const std::function<void()>& then) {
    int fd = -1;
    EXPECT_TRUE(WaitUntil([&] {
      fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);  // ENXIO: no reader yet
      return fd >= 0 || ::waitpid(pid, nullptr, WNOHANG) == pid;
    }));
    then();
    if (fd >= 0) ::close(fd);
  };
  auto start = [&] {
    pid_t pid = ::fork();
    if (pid == 0) {
      int fd = ::open(d.stderr_path().c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 2);
      ::execl(kBounced.c_str(), kBounced.c_str(), "--config", d.config_path().c_str(), nullptr);
      ::_exit(127);
    }
    return pid;
  };
  pid_t pid = start();
  ASSERT_GT(pid, 0);
  // Whatever fails below, no bounced is left behind (one waiting for the FIFO would never end).
  struct Reaper {
    pid_t* pid;
    ~Reaper() {
      if (*pid > 0 && ::waitpid(*pid, nullptr, WNOHANG) == 0) {
        ::kill(*pid, SIGKILL);
        ::waitpid(*pid, nullptr, 0);
      }
    }
  } reaper{&pid};
  auto dead = [&] { return ::waitpid(pid, nullptr, WNOHANG) == pid; };
  hold_rules_read(pid, [&] { ::kill(pid, SIGHUP); });
  ASSERT_TRUE(WaitUntil([&] {
    return ReadFile(d.stderr_path()).find("SIGHUP: reloading") != std::string::npos || dead();
  }));
  ASSERT_EQ(::kill(pid, 0), 0) << "SIGHUP at start killed bounced\n" << ReadFile(d.stderr_path());
  // The reload the SIGHUP asked for reads the rules again.
  hold_rules_read(pid, [] {});
  ASSERT_TRUE(WaitUntil([&] {
    return ReadFile(d.stderr_path()).find("reload: configuration") != std::string::npos || dead();
  })) << ReadFile(d.stderr_path());
  EXPECT_TRUE(d.Query({{"cmd", "health"}}).value("ok", false));
  ASSERT_GT(pid, 0);
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  pid = -1;

  // SIGTERM at start: a clean stop (exit 0, "bounced stopped"), not death by the signal.
  pid = start();
  ASSERT_GT(pid, 0);
  hold_rules_read(pid, [&] { ::kill(pid, SIGTERM); });
  status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n"
                                                             << ReadFile(d.stderr_path());
}

// A reload names every changed key it cannot apply in a running process, and gives the query
// socket and the socketmap their new modes and connection limits at once.
TEST(DaemonProcess, ReloadNamesEveryKeyThatNeedsARestartAndAppliesTheSocketsModesAndLimits) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  std::string cfg = d.BaseConfig();
  const std::string mode = "mode = \"0666\"";
  cfg.replace(cfg.find(mode), mode.size(), "mode = \"0600\"\nmax_connections = 1");
  const std::string sm = "socket = \"" + d.socketmap_socket() + "\"";
  cfg.replace(cfg.find(sm), sm.size(), sm + "\nmode = \"0640\"\nmax_connections = 5");
  const std::string poll = "poll_interval = \"20ms\"";
  cfg.replace(cfg.find(poll), poll.size(), "poll_interval = \"30ms\"\nmax_line_bytes = 4096");
  cfg += "[milter]\naction = \"log\"\nreject_reply = \"550 5.7.1 <{addr}>: no\"\n";
  std::ofstream(d.config_path()) << cfg;
  json r = d.Query({{"cmd", "reload"}});
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  // Only paths wait for a restart; [milter] keys other than its socket apply at once
  // (HostsTheMilter... below), and so do the input's poll_interval and max_line_bytes.
  EXPECT_EQ(r["result"]["restart_needed"], json::array()) << r.dump();
  struct stat st {};
  ASSERT_EQ(::stat(d.query_socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(d.socketmap_socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  // One query connection at a time now: a second is refused, saying the limit in force. (The
  // reload's own connection may not be closed on bounced's side yet: the first asks wait.)
  int held = -1;
  ASSERT_TRUE(WaitUntil([&] {
    if (held >= 0) ::close(held);
    held = ConnectUnix(d.query_socket());
    if (held < 0 || !SendAll(held, "{\"cmd\":\"health\"}\n")) return false;
    const std::string reply =
        RecvUntil(held, [](const std::string& in) { return in.find('\n') != std::string::npos; });
    return reply.find("\"ok\":true") != std::string::npos;
  }));
  r = d.Query({{"cmd", "health"}});
  EXPECT_FALSE(r.value("ok", true)) << r.dump();
  EXPECT_NE(r.dump().find("max_connections = 1)"), std::string::npos) << r.dump();
  ::close(held);
  EXPECT_TRUE(WaitUntil([&] { return d.Query({{"cmd", "health"}}).value("ok", false); }));
  // The limit back to its default (each request above may still hold its connection for a
  // moment: retried until one gets through).
  cfg.replace(cfg.find("\nmax_connections = 1"), std::string("\nmax_connections = 1").size(), "");
  std::ofstream(d.config_path()) << cfg;
  EXPECT_TRUE(WaitUntil([&] { return d.Query({{"cmd", "reload"}}).value("ok", false); }));
  EXPECT_TRUE(WaitUntil([&] { return d.Query({{"cmd", "health"}}).value("ok", false); }));
  // The running input skips a line over the new max_line_bytes (4096), and reads on.
  AppendFile(d.log(), std::string(5000, 'x') + "\n" + Lines(0, 1));
  EXPECT_TRUE(d.WaitForEvents(1)) << d.Health().dump();
  EXPECT_EQ(d.Health()["input"].value("skipped_too_long", 0), 1) << d.Health().dump();
}

TEST(DaemonProcess, ReadsPostfixEntriesFromAJournalFileAndResumesByCursor) {
  const std::string remote = "/lib/systemd/systemd-journal-remote";
  if (!fs::exists(remote)) GTEST_SKIP() << "systemd-journal-remote is not installed";
  TempDir dir;
  // Journal export format: postfix entries and one from another program.
  std::string export_text;
  uint64_t t = 1795964994000000;
  auto entry = [&](const std::string& ident, const std::string& message) {
    t += 1000;
    export_text +=
        "__CURSOR=s=0;i=" + std::to_string(t) + "\n__REALTIME_TIMESTAMP=" + std::to_string(t) +
        "\n__MONOTONIC_TIMESTAMP=" + std::to_string(t / 1000) +
        "\n_BOOT_ID=0123456789abcdef0123456789abcdef\n_HOSTNAME=mta\nSYSLOG_IDENTIFIER=" + ident +
        "\nSYSLOG_PID=101\nMESSAGE=" + message + "\n\n";
  };
  for (int i = 0; i < 20; ++i) {
    std::string l =
        StatusLine(i, std::string("j").append(std::to_string(i)) + "@example.com", i % 2 == 0);
    std::string msg = l.substr(l.find(": ") + 2);
    msg.pop_back();
    entry("postfix/smtp", msg);
    entry("cron", "not postfix: " + msg);
  }
  std::ofstream(dir / "in.export") << export_text;
  int rc = -1;
  std::string out = Shell(
      remote + " --output=" + dir / "postfix.journal" + " " + dir / "in.export" + " 2>&1", &rc);
  ASSERT_EQ(rc, 0) << out;
  std::string extra = "";
  BouncedProcess d(dir);
  std::string cfg = d.BaseConfig();
  size_t p = cfg.find("path = \"" + d.log() + "\"");
  cfg.replace(p, ("path = \"" + d.log() + "\"").size(),
              "path = \"journal\"\njournal_files = [\"" + dir / "postfix.journal" + "\"]");
  std::ofstream(d.config_path()) << cfg;
  d.Start();
  ASSERT_TRUE(d.WaitForEvents(20)) << d.Health().dump() << ReadFile(d.stderr_path());
  EXPECT_TRUE(d.Query({{"cmd", "status"}, {"address", "j0@example.com"}})["result"].value(
      "suppressed", false));
  EXPECT_EQ(d.Stop(), 0);
  d.Start();
  ASSERT_TRUE(WaitUntil([&] { return d.Health()["input"].contains("cursor"); }));
  EXPECT_EQ(d.StoredEvents(), 20);
}

// A real journal file (systemd-journal-remote) of Postfix bounce lines `from` to `to` - 1,
// one second apart; "" when systemd-journal-remote is missing or failed (*why says).
std::string MakePostfixJournal(const TempDir& dir, const std::string& name, int from, int to,
                               std::string* why) {
  const std::string remote = "/lib/systemd/systemd-journal-remote";
  if (!fs::exists(remote)) {
    *why = "systemd-journal-remote is not installed";
    return "";
  }
  std::string export_text;
  for (int i = from; i < to; ++i) {
    const uint64_t t = 1795964994000000 + uint64_t(i) * 1000000;
    // Not "j" + std::to_string(i): a GCC 12 -O3 -Wrestrict false positive.
    std::string l =
        StatusLine(i, std::string("j").append(std::to_string(i)) + "@example.com", true);
    std::string msg = l.substr(l.find(": ") + 2);
    msg.pop_back();
    export_text += "__REALTIME_TIMESTAMP=" + std::to_string(t) +
                   "\n__MONOTONIC_TIMESTAMP=" + std::to_string(t / 1000) +
                   "\n_BOOT_ID=0123456789abcdef0123456789abcdef\n_HOSTNAME=mta\n"
                   "SYSLOG_IDENTIFIER=postfix/smtp\nSYSLOG_PID=101\nMESSAGE=" +
                   msg + "\n\n";
  }
  std::ofstream(dir / (name + ".export")) << export_text;
  const std::string path = dir / name;
  fs::remove(path);
  int rc = -1;
  *why = Shell(remote + " --output=" + path + " " + dir / (name + ".export") + " 2>&1", &rc);
  return rc == 0 ? path : "";
}

// journald vacuumed the entry of the stored cursor (and everything before it) while bounced was
// down: bounced resumes with the first entry after it, not the second.
TEST(DaemonProcess, JournalResumesAtTheFirstEntryAfterAVacuumedCursor) {
  TempDir dir;
  std::string why;
  std::string journal = MakePostfixJournal(dir, "postfix.journal", 0, 10, &why);
  if (journal.empty()) GTEST_SKIP() << why;
  BouncedProcess d(dir);
  std::string cfg = d.BaseConfig();
  const std::string log_path = "path = \"" + d.log() + "\"";
  cfg.replace(cfg.find(log_path), log_path.size(),
              "path = \"journal\"\njournal_files = [\"" + journal + "\"]");
  std::ofstream(d.config_path()) << cfg;
  int rc = -1;
  std::string out = Shell(kBounced + " --config " + d.config_path() + " --once 2>&1", &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("committed 10 events"), std::string::npos) << out;
  // The vacuum: the file now holds only the entries written after the stored cursor's.
  ASSERT_EQ(MakePostfixJournal(dir, "postfix.journal", 10, 20, &why), journal) << why;
  out = Shell(kBounced + " --config " + d.config_path() + " --once 2>&1", &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("the stored cursor is gone"), std::string::npos) << out;
  d.Start();
  EXPECT_EQ(d.StoredEvents(), 20) << out;
  EXPECT_TRUE(d.Query({{"cmd", "status"}, {"address", "j10@example.com"}})["result"].value(
      "suppressed", false));
}

// The journal input keeps a message's queue facts with its cursor too: a bounce read by a later
// run (here after journald vacuumed the entries read before) still carries the sender and the
// message-id of the entries the earlier run read.
TEST(DaemonProcess, JournalEventsAfterARestartKeepTheSenderAndMessageId) {
  const std::string remote = "/lib/systemd/systemd-journal-remote";
  if (!fs::exists(remote)) GTEST_SKIP() << "systemd-journal-remote is not installed";
  TempDir dir;
  auto make = [&](int first, const std::vector<std::pair<std::string, std::string>>& entries) {
    std::string text;
    int i = first;
    for (const auto& [ident, message] : entries) {
      const uint64_t t = 1795964994000000 + uint64_t(i++) * 1000000;
      text +=
          "__REALTIME_TIMESTAMP=" + std::to_string(t) +
          "\n__MONOTONIC_TIMESTAMP=" + std::to_string(t / 1000) +
          "\n_BOOT_ID=0123456789abcdef0123456789abcdef\n_HOSTNAME=mta\nSYSLOG_IDENTIFIER=" + ident +
          "\nSYSLOG_PID=101\nMESSAGE=" + message + "\n\n";
    }
    std::ofstream(dir / "in.export") << text;
    fs::remove(dir / "postfix.journal");
    int rc = -1;
    std::string out = Shell(
        remote + " --output=" + dir / "postfix.journal" + " " + dir / "in.export" + " 2>&1", &rc);
    EXPECT_EQ(rc, 0) << out;
  };
  make(0, {{"postfix/cleanup", "5C6D7E8F9A: message-id=<journal.kept@restart>"},
           {"postfix/qmgr",
            "5C6D7E8F9A: from=<news@sender.example>, size=533, nrcpt=1 (queue "
            "active)"}});
  BouncedProcess d(dir);
  std::string cfg = d.BaseConfig();
  const std::string log_path = "path = \"" + d.log() + "\"";
  cfg.replace(cfg.find(log_path), log_path.size(),
              "path = \"journal\"\njournal_files = [\"" + dir / "postfix.journal" + "\"]");
  std::ofstream(d.config_path()) << cfg;
  int rc = -1;
  std::string out = Shell(kBounced + " --config " + d.config_path() + " --once 2>&1", &rc);
  ASSERT_EQ(rc, 0) << out;
  make(2, {{"postfix/smtp",
            "5C6D7E8F9A: to=<gone@example.com>, relay=mx.example.com[192.0.2.1]:25, delay=1, "
            "delays=0/0/0/1, dsn=5.1.1, status=bounced (host mx.example.com[192.0.2.1] said: 550 "
            "5.1.1 User unknown (in reply to RCPT TO command))"},
           {"postfix/qmgr", "5C6D7E8F9A: removed"}});
  out = Shell(kBounced + " --config " + d.config_path() + " --once 2>&1", &rc);
  ASSERT_EQ(rc, 0) << out;
  d.Start();
  json st = d.Query({{"cmd", "status"}, {"address", "gone@example.com"}});
  ASSERT_TRUE(st.value("ok", false)) << st.dump();
  ASSERT_FALSE(st["result"]["events"].empty()) << st.dump() << out;
  const json& e = st["result"]["events"][0];
  EXPECT_EQ(e.value("sender", ""), "news@sender.example") << st.dump();
  EXPECT_EQ(e.value("message_id", ""), "<journal.kept@restart>") << st.dump();
}

TEST(DaemonProcess, OnceReadsTheLogToItsEndAndExits) {
  TempDir dir;
  BouncedProcess d(dir);
  AppendFile(d.log(), Lines(0, 5000));
  int rc = -1;
  std::string out = Shell(kBounced + " --config " + d.config_path() + " --once 2>&1", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("committed 5000 events"), std::string::npos) << out;
  d.Start();
  EXPECT_EQ(d.StoredEvents(), 5000);
}

// Postfix's own log file and rsyslog's traditional format write local time without a zone or
// year: the daemon reads them in its machine's zone (here TZ=EST5, UTC-5), as parse-log does.
TEST(DaemonProcess, ClassicTimestampsAreReadInTheMachinesZone) {
  TempDir dir;
  BouncedProcess d(dir);
  // Yesterday at 21:30 in UTC-5, which is 02:30 UTC today: the event's day is today's.
  const time_t now = time(nullptr);
  const time_t local_yesterday = now - 5 * 3600 - 86400;
  struct tm day {};
  gmtime_r(&local_yesterday, &day);
  day.tm_hour = 21;
  day.tm_min = 30;
  day.tm_sec = 0;
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%b %e %H:%M:%S", &day);
  const time_t expected = timegm(&day) + 5 * 3600;
  std::string line = std::string(stamp) +
                     " mta postfix/smtp[101]: 4F1A2B3C4D: to=<tz@example.com>, "
                     "relay=mx.example.com[192.0.2.1]:25, delay=0.05, delays=0.05/0/0/0, "
                     "dsn=5.1.1, status=bounced (host mx.example.com[192.0.2.1] said: 550 5.1.1 "
                     "<tz@example.com>: User unknown (in reply to RCPT TO command))\n";
  AppendFile(d.log(), line);
  int rc = -1;
  std::string out =
      Shell("TZ=EST5 " + kBounced + " --config " + d.config_path() + " --once 2>&1", &rc);
  ASSERT_EQ(rc, 0) << out;
  d.Start();
  json s = json::parse(d.Ctl("--json status tz@example.com", &rc));
  ASSERT_EQ(rc, 0);
  ASSERT_TRUE(s["suppressed"].get<bool>()) << s.dump();
  char want[32];
  struct tm utc {};
  gmtime_r(&expected, &utc);
  std::strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%SZ", &utc);
  EXPECT_EQ(s["since"], std::string(want)) << line;
  EXPECT_EQ(d.Stop(), 0);
}

TEST(DaemonProcess, CheckConfigRefusesUnknownKeysWithFileLineAndKey) {
  TempDir dir;
  std::ofstream(dir / "bad.toml")
      << "[storage]\npath = \"/tmp/x.db\"\n\n[policy]\nsoft_treshold = 3\n";
  int rc = -1;
  std::string out = Shell(kBounced + " --check-config --config " + dir / "bad.toml" + " 2>&1", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find(dir / "bad.toml" + ":5: policy.soft_treshold: unknown key"), std::string::npos)
      << out;
  std::ofstream(dir / "bad2.toml") << "[milter]\naction = \"bounce\"\n";
  out = Shell(kBounced + " --check-config --config " + dir / "bad2.toml" + " 2>&1", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("milter.action: must be one of"), std::string::npos) << out;
  out = Shell(kBounced + " --check-config --config " + dir / "missing.toml" + " 2>&1", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("embedded defaults"), std::string::npos) << out;
}

// An empty [socketmap] access_action would answer "OK " and nothing, which Postfix reads as OK:
// --check-config and a reload refuse it on its line, and the running answer stays as it was.
TEST(DaemonProcess, AnEmptySocketmapAccessActionIsRefusedByCheckConfigAndReload) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  int rc = -1;
  std::string out = d.Ctl("suppress victim@example.com --reason test", &rc);
  ASSERT_EQ(rc, 0) << out;
  const std::string before =
      SocketmapAsk(d.socketmap_socket(), "recipient_access victim@example.com");
  ASSERT_EQ(before.rfind("OK 550 5.1.1 <victim@example.com>: ", 0), 0u) << before;

  std::string cfg = d.BaseConfig();
  const std::string socket_line = "socket = \"" + d.socketmap_socket() + "\"\n";
  const size_t at = cfg.find(socket_line);
  ASSERT_NE(at, std::string::npos) << cfg;
  cfg.insert(at + socket_line.size(), "access_action = \"\"\n");
  const int line = 1 + static_cast<int>(std::count(cfg.begin(), cfg.begin() + at, '\n')) + 1;
  std::ofstream(d.config_path()) << cfg;
  const std::string where =
      d.config_path() + ":" + std::to_string(line) + ": socketmap.access_action: must not be empty";

  out = Shell(kBounced + " --check-config --config " + d.config_path() + " 2>&1", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find(where), std::string::npos) << out;

  out = d.Ctl("reload", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find(where), std::string::npos) << out;
  EXPECT_EQ(SocketmapAsk(d.socketmap_socket(), "recipient_access victim@example.com"), before);
  EXPECT_TRUE(d.Alive());
}

// A rules.d bounced may not list would otherwise be read as empty: the rules in it silently
// not in force.
TEST(DaemonProcess, CheckConfigRefusesARulesDirectoryItCannotList) {
  TempDir dir;
  BouncedProcess d(dir);
  fs::create_directories(d.rules_dir());
  std::ofstream(d.rules_dir() + "/local.toml") << "";
  ::chmod(d.rules_dir().c_str(), 0700);  // root's; the check below runs as nobody
  int rc = -1;
  std::string out = Shell("setpriv --reuid=nobody --regid=nogroup --clear-groups " + kBounced +
                              " --check-config --config " + Quote(d.config_path()) + " 2>&1",
                          &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find(d.rules_dir() + ": Permission denied"), std::string::npos) << out;
  // A rules directory that does not exist is still fine: it holds no rules.
  fs::remove_all(d.rules_dir());
  out = Shell(kBounced + " --check-config --config " + Quote(d.config_path()) + " 2>&1", &rc);
  EXPECT_EQ(rc, 0) << out;
}

TEST(DaemonProcess, HostsTheMilterWhenASocketIsConfigured) {
  TempDir dir;
  BouncedProcess d(dir, "[milter]\nsocket = \"unix:" + dir / "milter.sock" + "\"\n");
  d.Start();
  ASSERT_TRUE(WaitUntil([&] { return d.Health()["milter"].value("running", false); }))
      << d.Health().dump() << ReadFile(d.stderr_path());
  int fd = ConnectUnix(dir / "milter.sock");
  EXPECT_GE(fd, 0);
  ::close(fd);
  EXPECT_EQ(d.Health()["milter"].value("action", ""), "reject");
  // A reload gives the running milter its new keys; only a new socket waits for a restart.
  const std::string base =
      d.BaseConfig() + "[milter]\nsocket = \"unix:" + dir / "milter.sock" + "\"\n";
  std::ofstream(d.config_path()) << base << "action = \"log\"\nbounces = \"discard\"\n"
                                 << "[milter.actions]\nmailbox_full = \"tempfail\"\n";
  json r = d.Query({{"cmd", "reload"}});
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_EQ(r["result"]["restart_needed"], json::array()) << r.dump();
  EXPECT_EQ(d.Health()["milter"].value("action", ""), "log");
  EXPECT_EQ(d.Health()["milter"].value("bounces", ""), "discard");
  int rc = -1;
  const std::string health = d.Ctl("health", &rc);
  EXPECT_NE(health.find("\nconfig: " + d.config_path() + ", read at 20"), std::string::npos)
      << health;
  EXPECT_NE(health.find("milter: running (action log, mailbox_full tempfail; bounces discard), 0 "
                        "recipients checked"),
            std::string::npos)
      << health;
  // One the running milter cannot take is refused whole: the running configuration stays.
  std::ofstream(d.config_path()) << base << "action = \"tempfail\"\nbounces = \"quarantine\"\n"
                                 << "quarantine_dir = \"" << dir / "missing"
                                 << "\"\n";
  r = d.Query({{"cmd", "reload"}});
  EXPECT_FALSE(r.value("ok", true)) << r.dump();
  EXPECT_NE(r.dump().find("milter.quarantine_dir"), std::string::npos) << r.dump();
  EXPECT_EQ(d.Health()["milter"].value("action", ""), "log");
  std::ofstream(d.config_path()) << d.BaseConfig()
                                 << "[milter]\nsocket = \"unix:" << dir / "other.sock"
                                 << "\"\n";
  r = d.Query({{"cmd", "reload"}});
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_EQ(r["result"]["restart_needed"], json({"milter.socket"})) << r.dump();
  std::ofstream(d.config_path()) << d.BaseConfig()
                                 << "[milter]\nsocket = \"unix:" << dir / "third.sock"
                                 << "\"\n";
  EXPECT_NE(d.Ctl("reload", &rc).find("; waiting for a restart: milter.socket\n"),
            std::string::npos);
  EXPECT_EQ(d.Health()["milter"].value("action", ""), "reject");
  EXPECT_EQ(d.Stop(), 0);
}

TEST(DaemonProcess, ReadsStandardInputOnce) {
  TempDir dir;
  BouncedProcess d(dir);
  std::string cfg = d.BaseConfig();
  size_t p = cfg.find("path = \"" + d.log() + "\"");
  cfg.replace(p, ("path = \"" + d.log() + "\"").size(), "path = \"-\"");
  std::ofstream(dir / "stdin.toml") << cfg;
  AppendFile(d.log(), Lines(0, 300));
  int rc = -1;
  std::string out =
      Shell(kBounced + " --config " + dir / "stdin.toml" + " --once < " + d.log() + " 2>&1", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("committed 300 events"), std::string::npos) << out;
}

// Standard input from a pipe whose writer stays open: what came is committed at once, and
// SIGTERM stops bounced without waiting for the writer.
TEST(DaemonProcess, StandardInputFromASilentPipeIsCommittedAndStops) {
  TempDir dir;
  BouncedProcess d(dir);
  std::string cfg = d.BaseConfig();
  size_t p = cfg.find("path = \"" + d.log() + "\"");
  cfg.replace(p, ("path = \"" + d.log() + "\"").size(), "path = \"-\"");
  std::ofstream(d.config_path()) << cfg;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  int writer = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);  // does not wait for a reader
  int reader = ::open(fifo.c_str(), O_RDONLY);
  ASSERT_GE(writer, 0);
  ASSERT_GE(reader, 0);
  int saved = ::dup(0);
  ::dup2(reader, 0);  // bounced's standard input
  d.Start();
  ::dup2(saved, 0);
  ::close(saved);
  ::close(reader);
  ASSERT_GT(d.pid(), 0) << ReadFile(d.stderr_path());  // never kill(-1, ...)
  std::string line = Lines(0, 1);
  ASSERT_EQ(::write(writer, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  EXPECT_TRUE(d.WaitForEvents(1)) << d.Health().dump();
  ::kill(d.pid(), SIGTERM);
  const bool stopped = WaitUntil([&] {
    int status = 0;
    return ::waitpid(d.pid(), &status, WNOHANG) == d.pid();
  });
  EXPECT_TRUE(stopped) << "SIGTERM did not stop bounced while its standard input was silent";
  if (stopped) {
    d.Stop();  // reaped already: only forgets the pid
  } else {
    d.Kill9();
  }
  ::close(writer);
}

TEST(DaemonProcess, RefusesToStartOnASocketAnotherBouncedServes) {
  TempDir dir;
  BouncedProcess a(dir);
  a.Start();
  int rc = -1;
  std::string out = Shell(kBounced + " --config " + a.config_path() + " 2>&1", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("already running"), std::string::npos) << out;
  EXPECT_TRUE(a.Query({{"cmd", "health"}})["ok"]);
}

}  // namespace
}  // namespace bounced::testing
