// test_util.h: shared helpers for the storage tests: a temporary directory per test and
// builders for events as the classifier would return them, and raw SQL on a database file.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "storage/store.h"

namespace bounced::testing {

// Runs `sql` on the database file at `path` through its own connection (test set-up and
// tampering behind the store's back); fails the test with SQLite's message.
inline void ExecSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

// The first column of the first row `sql` returns from the database file at `path`, read
// through its own read-only connection; -1 when there is no row.
inline int64_t Scalar(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  int64_t v = -1;
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

// Every row `sql` returns from the database file at `path`, each as its columns' text (NULL as
// "<null>"), read through its own read-only connection.
inline std::vector<std::vector<std::string>> QueryRows(const std::string& path,
                                                       const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::vector<std::vector<std::string>> rows;
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::vector<std::string>& row = rows.emplace_back();
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const unsigned char* t = sqlite3_column_text(st, i);
      row.emplace_back(t ? reinterpret_cast<const char*>(t) : "<null>");
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rows;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "bounced-storage-XXXXXX").string();
    char* p = mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// prefix + n + suffix ("u" 7 "@example.com" -> "u7@example.com"), built by appending: the same
// with `"u" + std::to_string(n) + ...` trips a GCC 12 -O3 -Wrestrict false positive.
inline std::string Numbered(std::string_view prefix, int64_t n, std::string_view suffix = {}) {
  return std::string(prefix).append(std::to_string(n)).append(suffix);
}

inline Event MakeEvent(const std::string& rcpt, Category c, const std::string& log_status,
                       int64_t t, EventSource source = EventSource::kLog) {
  Event e;
  e.source = source;
  e.unix_time = t;
  e.log_status = log_status;
  e.queue_id = "";
  e.result.recipient = rcpt;
  e.result.category = c;
  e.result.diagnostic = "550 5.1.1 <" + rcpt + ">: test reply";
  return e;
}

inline std::unique_ptr<Store> OpenStore(const std::string& path,
                                        SuppressionPolicy policy = SuppressionPolicy(),
                                        RetentionPolicy retention = RetentionPolicy()) {
  StoreOptions o;
  o.path = path;
  o.policy = policy;
  o.retention = retention;
  auto s = Store::Open(o);
  EXPECT_TRUE(s.ok()) << s.error();
  return s.ok() ? std::move(*s) : nullptr;
}

// 2026-11-01T00:00:00Z: a fixed base for event times.
inline constexpr int64_t kT0 = 1793491200;
inline constexpr int64_t kDay = 86400;

}  // namespace bounced::testing
