// sqlite.h: thin RAII wrappers over the SQLite C API used inside storage/ (not a public API).
//
// Db owns a connection, Stmt a prepared statement. Errors come back as Status with the SQLite
// message and the file name, never as exceptions.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/status.h"

namespace bounced::sql {

class Db {
 public:
  Db() = default;
  ~Db();
  Db(Db&& o) noexcept : db_(o.db_), path_(std::move(o.path_)) { o.db_ = nullptr; }
  Db& operator=(Db&& o) noexcept;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Opens `path` (read-write-create, or read-only) with the busy timeout set.
  Status Open(const std::string& path, bool read_only, int busy_timeout_ms);
  // Runs one or more statements without results.
  Status Exec(std::string_view sql);
  // "<path>: <what>: <sqlite message>"
  Status Error(std::string_view what) const;
  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }
  int64_t changes() const { return sqlite3_changes64(db_); }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Stmt {
 public:
  Stmt() = default;
  ~Stmt();
  Stmt(Stmt&& o) noexcept : st_(o.st_), db_(o.db_) { o.st_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Status Prepare(Db& db, std::string_view sql);

  // Binds are 1-based, as in SQLite.
  Stmt& Bind(int i, int64_t v);
  Stmt& Bind(int i, std::string_view v);  // copied (SQLITE_TRANSIENT)
  // Not copied (SQLITE_STATIC): `v` must stay valid until the statement is reset. For hot paths.
  Stmt& BindRef(int i, std::string_view v);
  // SQLITE_ROW -> true, SQLITE_DONE -> false; anything else is an error.
  Expected<bool> Step();
  // Steps through the result rows, calling row() on each to read its columns; a row() that
  // returns bool ends the walk early with false. Returns the first step's error, else ok.
  template <typename Row>
  Status ForEachRow(Row&& row) {
    for (;;) {
      Expected<bool> more = Step();
      if (!more) return more.status();
      if (!*more) return Status::Ok();
      if constexpr (std::is_same_v<std::invoke_result_t<Row&>, bool>) {
        if (!row()) return Status::Ok();
      } else {
        row();
      }
    }
  }
  // Steps until done, for statements without results; then resets.
  Status Run();
  // Run, then reset keeping the bindings (cleared only on error): for a hot statement whose
  // caller rebinds, or binds NULL to, every parameter it bound before the next run. A
  // BindRef'd text may be gone by then; SQLite does not read it until the next step.
  Status RunKeepBindings();
  void Reset();  // reset and clear bindings, ready to reuse
  Stmt& BindNull(int i);

  bool IsNull(int col) const { return sqlite3_column_type(st_, col) == SQLITE_NULL; }
  int64_t Int(int col) const { return sqlite3_column_int64(st_, col); }
  std::string Text(int col) const;
  std::string_view TextView(int col) const;

 private:
  Status StepToEnd();  // steps until SQLITE_DONE; no reset

  sqlite3_stmt* st_ = nullptr;
  Db* db_ = nullptr;
};

}  // namespace bounced::sql
