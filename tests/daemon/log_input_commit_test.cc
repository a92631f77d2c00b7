// log_input_commit_test.cc: the real bounced process reading a log while its commits fail or
// it restarts: no line's event is lost or stored twice.
#include <sqlite3.h>

#include <cstdio>
#include <map>
#include <string>

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

// Rows of `sql` (two columns: text, integer) read through a connection of the test's own.
std::map<std::string, int64_t> Rows(const std::string& db_path, const std::string& sql) {
  std::map<std::string, int64_t> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << db_path;
    sqlite3_close(db);
    return out;
  }
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  while (st != nullptr && sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* key = sqlite3_column_text(st, 0);
    out[key ? reinterpret_cast<const char*>(key) : ""] = sqlite3_column_int64(st, 1);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

// Another process holds the write lock longer than the busy timeout (5 s): the batch of line A
// fails. Line B, appended meanwhile, is in a batch already queued behind it; once the lock is
// gone that batch must not commit (its position would skip A): the input reads A and B again.
TEST(LogInputCommit, ABatchQueuedBehindAFailedOneDoesNotSkipItsLines) {
  TempDir dir;
  BouncedProcess d(dir);
  d.Start();
  AppendFile(d.log(), BounceLine(0, "zero@example.com"));
  ASSERT_TRUE(WaitUntil([&] { return InputOffset(d, "committed") == FileSize(d.log()); }));

  sqlite3* lock = nullptr;
  ASSERT_EQ(sqlite3_open(d.db().c_str(), &lock), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(lock, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  AppendFile(d.log(), BounceLine(1, "a@example.com"));
  // Read (and so submitted: the input submits at the end of what it read) before B is written.
  ASSERT_TRUE(WaitUntil([&] { return InputOffset(d, "position") == FileSize(d.log()); }));
  AppendFile(d.log(), BounceLine(2, "b@example.com"));
  ASSERT_TRUE(WaitUntil([&] { return InputOffset(d, "position") == FileSize(d.log()); }));
  // A's batch failed; B's now waits for the lock.
  ASSERT_TRUE(WaitUntil([&] {
    json h = d.Health();
    return h.contains("storage") && !h["storage"].value("last_write_error", "").empty();
  })) << d.Health().dump();
  ASSERT_EQ(sqlite3_exec(lock, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(lock);

  ASSERT_TRUE(WaitUntil([&] { return InputOffset(d, "committed") == FileSize(d.log()); }))
      << d.Health().dump();
  EXPECT_EQ(d.Stop(), 0);
  std::map<std::string, int64_t> want = {
      {"zero@example.com", 1}, {"a@example.com", 1}, {"b@example.com", 1}};
  EXPECT_EQ(Rows(d.db(), "SELECT recipient, count(*) FROM events GROUP BY recipient"), want)
      << ReadFile(d.stderr_path());
}

}  // namespace
}  // namespace bounced::testing
