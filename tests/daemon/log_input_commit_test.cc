// log_input_commit_test.cc: the real bounced process reading a log while its commits fail or
// it restarts: no line's event is lost or stored twice, and an expiry read after a restart or
// a failed commit is stored as if the log had been read in one go.
#include <sqlite3.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/daemon/daemon_harness.h"

namespace bounced::testing {
namespace {

// A Postfix bounce line for queue id number `i` (one event each).
std::string BounceLine(int i, const std::string& rcpt) {
  char qid[16];
  std::snprintf(qid, sizeof(qid), "%05X%06X", 0xC0FFE, i & 0xFFFFFF);
  return std::string("Nov 29 17:09:54 mta postfix/smtp[101]: ") + qid + ": to=<" + rcpt +
         ">, relay=mx.example.com[192.0.2.1]:25, delay=0.05, delays=0.05/0/0/0, dsn=5.1.1, "
         "status=bounced (host mx.example.com[192.0.2.1] said: 550 5.1.1 <" +
         rcpt + ">: Recipient address rejected: User unknown (in reply to RCPT TO command))\n";
}

// tests/data/postfix/down.log without its comment: a message (message-id on line 1, counting
// from 0) deferred five times (lines 3, 5, 7, 14 and 16), then expired (17) and returned to its
// sender.
std::vector<std::string> DownLog() {
  std::vector<std::string> log;
  std::istringstream in(ReadFile(kTestData + "/postfix/down.log"));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') log.push_back(line + "\n");
  }
  return log;
}
constexpr size_t kDownExpiryLine = 17;

std::string Join(const std::vector<std::string>& lines, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < lines.size(); ++i) out += lines[i];
  return out;
}

uint64_t FileSize(const std::string& path) {
  std::error_code ec;
  auto n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

uint64_t InputOffset(const BouncedProcess& d, const char* which) {
  json h = d.Health();
  if (!h.contains("input") || !h["input"].contains(which)) return 0;
  return h["input"][which].value("offset", uint64_t{0});
}

bool CommittedToTheEnd(const BouncedProcess& d) {
  return WaitUntil([&] { return InputOffset(d, "committed") == FileSize(d.log()); });
}

// Starts bounced, waits until it committed the whole log, stops it.
void ReadAll(BouncedProcess& d) {
  d.Start();
  EXPECT_TRUE(CommittedToTheEnd(d)) << d.Health().dump();
  EXPECT_EQ(d.Stop(), 0);
}

// Every column of the rows of `sql`, joined with '|', one string per row, read through a
// connection of the test's own.
std::vector<std::string> RowsText(const std::string& db_path, const std::string& sql) {
  std::vector<std::string> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << db_path;
    sqlite3_close(db);
    return out;
  }
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  while (st != nullptr && sqlite3_step(st) == SQLITE_ROW) {
    std::string row;
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const unsigned char* v = sqlite3_column_text(st, i);
      row += (i ? "|" : "") + std::string(v ? reinterpret_cast<const char*>(v) : "");
    }
    out.push_back(row);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

// How many events each recipient has.
std::map<std::string, int64_t> EventsPerRecipient(const BouncedProcess& d,
                                                  const std::string& where = "1") {
  std::map<std::string, int64_t> out;
  for (const std::string& row : RowsText(d.db(), "SELECT recipient, count(*) FROM events WHERE " +
                                                     where + " GROUP BY recipient")) {
    size_t bar = row.rfind('|');
    out[row.substr(0, bar)] = std::stoll(row.substr(bar + 1));
  }
  return out;
}

// The stored `expired` events, every column but source_ref (the position, with the inode of a
// test's own file).
std::vector<std::string> Expiries(const BouncedProcess& d) {
  return RowsText(d.db(),
                  "SELECT queue_id, recipient, original_recipient, message_id, sender, time, "
                  "time_text, relay, program, bounce_queue_id, category, status, reply_code, "
                  "stage, provider, provider_code, diagnostic, remote_mta, dsn_action, rule, "
                  "counted FROM events WHERE log_status = 'expired' ORDER BY id");
}

// Makes the commit of `a` fail: holds the database's write lock from the test (another process,
// as far as bounced can tell) while `a`, then `b`, is appended and read, until bounced reports
// the failure (its busy timeout is 5 s). `b`'s batch is then queued behind the failed one; the
// lock is released while it waits for it.
void FailTheCommitOf(const BouncedProcess& d, const std::string& a, const std::string& b) {
  sqlite3* lock = nullptr;
  ASSERT_EQ(sqlite3_open(d.db().c_str(), &lock), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(lock, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  AppendFile(d.log(), a);
  // Read, and so submitted (the input submits whenever it reached the end), before b is written.
  ASSERT_TRUE(WaitUntil([&] { return InputOffset(d, "position") == FileSize(d.log()); }));
  AppendFile(d.log(), b);
  ASSERT_TRUE(WaitUntil([&] { return InputOffset(d, "position") == FileSize(d.log()); }));
  ASSERT_TRUE(WaitUntil([&] {
    json h = d.Health();
    return h.contains("storage") && !h["storage"].value("last_write_error", "").empty();
  })) << d.Health().dump();
  ASSERT_EQ(sqlite3_exec(lock, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(lock);
}

// Line A's batch fails; line B's, already queued behind it, must not commit once the lock is
// gone (its position would skip A): the input reads A and B again.
TEST(LogInputCommit, ABatchQueuedBehindAFailedOneDoesNotSkipItsLines) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), BounceLine(0, "zero@example.com"));
  ASSERT_TRUE(CommittedToTheEnd(d));
  FailTheCommitOf(d, BounceLine(1, "a@example.com"), BounceLine(2, "b@example.com"));
  ASSERT_TRUE(CommittedToTheEnd(d)) << d.Health().dump();
  EXPECT_EQ(d.Stop(), 0);
  std::map<std::string, int64_t> want = {
      {"zero@example.com", 1}, {"a@example.com", 1}, {"b@example.com", 1}};
  EXPECT_EQ(EventsPerRecipient(d), want) << ReadFile(d.stderr_path());
}

// The `expired` events stored after reading `log`, stopping (SIGTERM) after its first `split`
// lines and starting again for the rest (0: read in one go).
std::vector<std::string> ExpiriesAfterARestartAt(const std::vector<std::string>& log,
                                                 size_t split) {
  TempDir dir;
  BouncedProcess d(dir);
  if (split > 0) {
    AppendFile(d.log(), Join(log, 0, split));
    ReadAll(d);
  }
  AppendFile(d.log(), Join(log, split, log.size()));
  ReadAll(d);
  return Expiries(d);
}

// The correlator keeps a queue id's pending recipients in memory only, and its queue facts
// (sender, message-id) in memory and with each batch. Read across a restart, the expiry of a
// message whose deferrals (or cleanup line) came before it must still be stored as read in one
// go: with the recipient, the message-id and the deferral's reply classified as given up on. A
// restart after every line of the fixture (after line 2 or 3: between the cleanup line and the
// first delivery attempt, when only the queue facts know the message-id).
TEST(LogInputCommit, AnExpiryReadAfterARestartIsStoredAsReadInOneGo) {
  const std::vector<std::string> log = DownLog();
  ASSERT_EQ(log.size(), 24u);
  const std::vector<std::string> whole = ExpiriesAfterARestartAt(log, 0);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].rfind("96C9DA74BD8|someone@down.example||<20261129170956.029193@vm>|"
                           "sender@testbed.local|",
                           0),
            0u)
      << whole[0];
  EXPECT_NE(whole[0].find("|expired|"), std::string::npos) << whole[0];
  // The reviewer's case: stopped after the last deferral, started for the expiry.
  EXPECT_EQ(ExpiriesAfterARestartAt(log, kDownExpiryLine), whole);
  for (size_t split = 1; split < log.size(); ++split) {
    if (split == kDownExpiryLine) continue;
    EXPECT_EQ(ExpiriesAfterARestartAt(log, split), whole) << "restarted after line " << split;
  }
}

// Every event of a message read after a restart that fell between its first lines (cleanup's
// message-id, qmgr's sender) and its delivery carries them, as read in one go; once Postfix
// removed the message, nothing about it is kept.
TEST(LogInputCommit, EventsAfterARestartKeepTheSenderAndMessageIdOfEarlierLines) {
  const std::string head =
      "Nov 29 17:09:56 mta postfix/cleanup[28966]: 4A1B2C3D4E: "
      "message-id=<kept.across@restart>\n"
      "Nov 29 17:09:56 mta postfix/qmgr[28946]: 4A1B2C3D4E: from=<news@sender.example>, "
      "size=533, nrcpt=2 (queue active)\n";
  const std::string tail =
      "Nov 29 17:09:57 mta postfix/smtp[101]: 4A1B2C3D4E: to=<gone@example.com>, "
      "relay=mx.example.com[192.0.2.1]:25, delay=1, delays=0/0/0/0, dsn=5.1.1, status=bounced "
      "(host mx.example.com[192.0.2.1] said: 550 5.1.1 User unknown (in reply to RCPT TO "
      "command))\n"
      "Nov 29 17:09:57 mta postfix/smtp[101]: 4A1B2C3D4E: to=<here@example.com>, "
      "relay=mx.example.com[192.0.2.1]:25, delay=1, delays=0/0/0/0, dsn=2.0.0, status=sent "
      "(250 2.0.0 Ok)\n"
      "Nov 29 17:09:57 mta postfix/qmgr[28946]: 4A1B2C3D4E: removed\n";
  const std::string columns =
      "SELECT recipient, log_status, sender, message_id FROM events ORDER BY id";
  TempDir dir;
  BouncedProcess d(dir);
  AppendFile(d.log(), head);
  ReadAll(d);
  EXPECT_EQ(
      RowsText(d.db(),
               "SELECT queue_id, sender, sender_known, message_id, nrcpt, size "
               "FROM queue_facts"),
      std::vector<std::string>{"4A1B2C3D4E|news@sender.example|1|<kept.across@restart>|2|533"});
  AppendFile(d.log(), tail);
  ReadAll(d);
  const std::vector<std::string> want = {
      "gone@example.com|bounced|news@sender.example|<kept.across@restart>",
      "here@example.com|sent|news@sender.example|<kept.across@restart>"};
  EXPECT_EQ(RowsText(d.db(), columns), want) << ReadFile(d.stderr_path());
  EXPECT_EQ(RowsText(d.db(), "SELECT count(*) FROM queue_facts"), std::vector<std::string>{"0"});
}

// A failed commit rebuilds the correlator too (the input resumes from the stored position):
// the expiry is in the failed batch, the deferrals were committed before it.
TEST(LogInputCommit, AnExpiryReadAgainAfterAFailedCommitIsStoredAsReadInOneGo) {
  const std::vector<std::string> log = DownLog();
  ASSERT_EQ(log.size(), 24u);
  const std::vector<std::string> whole = ExpiriesAfterARestartAt(log, 0);
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), Join(log, 0, kDownExpiryLine));
  ASSERT_TRUE(CommittedToTheEnd(d));
  FailTheCommitOf(d, log[kDownExpiryLine], Join(log, kDownExpiryLine + 1, log.size()));
  ASSERT_TRUE(CommittedToTheEnd(d)) << d.Health().dump();
  EXPECT_EQ(d.Stop(), 0);
  EXPECT_EQ(Expiries(d), whole) << ReadFile(d.stderr_path());
}

// Log events have no key the store could refuse a repeat by; the position keeps lines from
// being read twice. Should the expiry line still be read again (a stored position set back by
// hand), the events finished from the store for it are not stored a second time.
TEST(LogInputCommit, AnExpiryFinishedFromTheStoreIsNotStoredTwice) {
  const std::vector<std::string> log = DownLog();
  ASSERT_EQ(log.size(), 24u);
  TempDir dir;
  BouncedProcess d(dir);
  AppendFile(d.log(), Join(log, 0, kDownExpiryLine));
  const uint64_t before_expiry = FileSize(d.log());
  ReadAll(d);
  AppendFile(d.log(), Join(log, kDownExpiryLine, log.size()));
  ReadAll(d);
  const std::string expired = "log_status = 'expired'";
  const std::map<std::string, int64_t> once = {{"someone@down.example", 1}};
  ASSERT_EQ(EventsPerRecipient(d, expired), once);

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(d.db().c_str(), &db), SQLITE_OK);
  // Without its fingerprint (the cursor) the position is trusted as stored, as an older
  // bounced's is: the fingerprint of the later offset would not match the earlier one.
  std::string rewind =
      "UPDATE input_positions SET cursor = '', offset = " + std::to_string(before_expiry);
  ASSERT_EQ(sqlite3_exec(db, rewind.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  ReadAll(d);
  EXPECT_EQ(EventsPerRecipient(d, expired), once) << ReadFile(d.stderr_path());
}

}  // namespace
}  // namespace bounced::testing
