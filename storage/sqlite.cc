// sqlite.cc: RAII wrappers over the SQLite C API (see sqlite.h).
#include "storage/sqlite.h"

namespace bounced::sql {

Db::~Db() {
  if (db_) sqlite3_close_v2(db_);
}

Db& Db::operator=(Db&& o) noexcept {
  if (this != &o) {
    if (db_) sqlite3_close_v2(db_);
    db_ = o.db_;
    path_ = std::move(o.path_);
    o.db_ = nullptr;
  }
  return *this;
}

Status Db::Open(const std::string& path, bool read_only, int busy_timeout_ms) {
  path_ = path;
  int flags = SQLITE_OPEN_NOMUTEX |
              (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    if (db_) sqlite3_close_v2(db_);
    db_ = nullptr;
    return Status::Error(path + ": open: " + msg);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, busy_timeout_ms);
  return Status::Ok();
}

Status Db::Exec(std::string_view sql) {
  std::string s(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    std::string head(sql.substr(0, 60));
    return Status::Error(path_ + ": " + msg + " (in: " + head + ")");
  }
  return Status::Ok();
}

Status Db::Error(std::string_view what) const {
  return Status::Error(path_ + ": " + std::string(what) + ": " +
                       (db_ ? sqlite3_errmsg(db_) : "not open"));
}

Stmt::~Stmt() {
  if (st_) sqlite3_finalize(st_);
}

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    if (st_) sqlite3_finalize(st_);
    st_ = o.st_;
    db_ = o.db_;
    o.st_ = nullptr;
  }
  return *this;
}

Status Stmt::Prepare(Db& db, std::string_view sql) {
  if (st_) sqlite3_finalize(st_);
  st_ = nullptr;
  db_ = &db;
  int rc = sqlite3_prepare_v3(db.get(), sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &st_, nullptr);
  if (rc != SQLITE_OK) return db.Error("prepare '" + std::string(sql.substr(0, 60)) + "'");
  return Status::Ok();
}

Stmt& Stmt::Bind(int i, int64_t v) {
  sqlite3_bind_int64(st_, i, v);
  return *this;
}

Stmt& Stmt::Bind(int i, std::string_view v) {
  // An empty view may have no data pointer, which SQLite would bind as NULL.
  sqlite3_bind_text64(st_, i, v.data() ? v.data() : "", v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}

Stmt& Stmt::BindRef(int i, std::string_view v) {
  sqlite3_bind_text64(st_, i, v.data() ? v.data() : "", v.size(), SQLITE_STATIC, SQLITE_UTF8);
  return *this;
}

Expected<bool> Stmt::Step() {
  int rc = sqlite3_step(st_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->Error("step");
}

Status Stmt::Run() {
  Status st = StepToEnd();
  Reset();
  return st;
}

Status Stmt::RunKeepBindings() {
  Status st = StepToEnd();
  if (!st) {
    Reset();
    return st;
  }
  sqlite3_reset(st_);
  return Status::Ok();
}

Status Stmt::StepToEnd() {
  for (;;) {
    auto r = Step();
    if (!r) return r.status();
    if (!*r) return Status::Ok();
  }
}

Stmt& Stmt::BindNull(int i) {
  sqlite3_bind_null(st_, i);
  return *this;
}

void Stmt::Reset() {
  sqlite3_reset(st_);
  sqlite3_clear_bindings(st_);
}

std::string Stmt::Text(int col) const { return std::string(TextView(col)); }

std::string_view Stmt::TextView(int col) const {
  const unsigned char* p = sqlite3_column_text(st_, col);
  if (!p) return {};
  return std::string_view(reinterpret_cast<const char*>(p),
                          static_cast<size_t>(sqlite3_column_bytes(st_, col)));
}

}  // namespace bounced::sql
