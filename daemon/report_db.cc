// report_db.cc: read-only SQL for the daily report (see report_db.h).
#include "daemon/report_db.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "storage/store.h"

namespace bounced {
namespace {

// Sample replies read per (provider, code, status, category); the report shows up to three
// distinct ones per problem.
constexpr int kSamplesPerKind = 3;

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;

struct StmtCloser {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtCloser>;

std::string Text(sqlite3_stmt* s, int col) {
  const unsigned char* t = sqlite3_column_text(s, col);
  return t ? std::string(reinterpret_cast<const char*>(t),
                         static_cast<size_t>(sqlite3_column_bytes(s, col)))
           : std::string();
}

int64_t DayStart(const std::string& day) {
  struct tm tm {};
  strptime(day.c_str(), "%Y-%m-%d", &tm);
  return static_cast<int64_t>(timegm(&tm));
}

// `path` as a read-only, immutable SQLite URI ("file:/x/b.db?immutable=1"): the characters a
// URI gives meaning to are escaped.
std::string ImmutableUri(const std::string& path) {
  std::string out = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "?immutable=1";
}

class Query {
 public:
  Query(sqlite3* db, const std::string& path) : db_(db), path_(path) {}

  // Runs `sql` with text/integer parameters bound in order; calls `row` for each result row.
  Status Run(const std::string& sql, const std::vector<std::string>& text_params,
             const std::function<void(sqlite3_stmt*)>& row) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
      return Error();
    }
    Stmt stmt(raw);
    for (size_t i = 0; i < text_params.size(); ++i) {
      sqlite3_bind_text(raw, static_cast<int>(i + 1), text_params[i].c_str(), -1, SQLITE_TRANSIENT);
    }
    for (;;) {
      int rc = sqlite3_step(raw);
      if (rc == SQLITE_ROW) {
        row(raw);
      } else if (rc == SQLITE_DONE) {
        return Status::Ok();
      } else {
        return Error();
      }
    }
  }

  Status Error() const { return Status::Error("report: " + path_ + ": " + sqlite3_errmsg(db_)); }

 private:
  sqlite3* db_;
  const std::string& path_;
};

// Bounds a scan of `events` to the days ?first..?last (parameter numbers). Schema version 1 has
// an index on events.day, used by the caller's `day BETWEEN`; version 2 has none, but the
// event_days table gives each day's id range, which SQLite turns into a rowid range.
std::string DayRange(int version, int first, int last) {
  if (version < 2) return "";
  const std::string days = " FROM event_days WHERE day BETWEEN ?" + std::to_string(first) +
                           " AND ?" + std::to_string(last);
  return " AND id BETWEEN (SELECT min(first_id)" + days + ") AND (SELECT max(last_id)" + days + ")";
}

// Stored sender-side rejections in a time range (?1..?2), within the days ?4..?5 (so SQLite
// reads only those days' events); ?3 is the optional domain filter.
std::string ReplaySql(int version) {
  return "SELECT time, provider, provider_code, status, category, domain, diagnostic, sender, " +
         std::string(kHardBounceFailureSql) + " FROM events WHERE day BETWEEN ?4 AND ?5" +
         DayRange(version, 4, 5) +
         " AND time >= CAST(?1 AS INTEGER) AND time < CAST(?2 AS INTEGER) AND counted = 1 AND (" +
         kSenderSideSql + " OR " + kHardBounceFailureSql + ")";
}

RejectionEvent RejectionFromRow(sqlite3_stmt* st) {
  RejectionEvent e;
  e.unix_time = sqlite3_column_int64(st, 0);
  e.provider = Text(st, 1);
  e.provider_code = Text(st, 2);
  e.status = Text(st, 3);
  e.category = Text(st, 4);
  e.recipient_domain = Text(st, 5);
  e.diagnostic = Text(st, 6);
  e.sender_domain = SenderDomainOf(Text(st, 7));
  e.hard_bounce = sqlite3_column_int(st, 8) != 0;
  return e;
}

}  // namespace

Status ReplaySenderRejections(const std::string& db_path, int64_t from, int64_t to,
                              const std::function<void(const RejectionEvent&)>& fn) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(db_path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) {
    return Status::Error("alerts: open " + db_path + ": " +
                         (raw ? sqlite3_errmsg(raw) : "out of memory"));
  }
  sqlite3_busy_timeout(raw, 5000);
  Query q(raw, db_path);
  int version = 0;
  if (Status s = q.Run("PRAGMA user_version", {},
                       [&](sqlite3_stmt* st) { version = sqlite3_column_int(st, 0); });
      !s) {
    return s;
  }
  std::vector<std::string> params = {std::to_string(from), std::to_string(to), "",
                                     FormatUtc(from).substr(0, 10), FormatUtc(to).substr(0, 10)};
  return q.Run(ReplaySql(version) + " ORDER BY time", params,
               [&](sqlite3_stmt* st) { fn(RejectionFromRow(st)); });
}

Expected<ReportData> ReadReportData(const ReportRequest& req) {
  const int64_t now = req.now ? req.now : static_cast<int64_t>(time(nullptr));
  ReportData data;
  data.days = std::clamp(req.days, 1, 366);
  data.trend_days = std::clamp(req.trend_days, 7, 90);
  data.domain = req.domain;
  data.database = req.db_path;
  data.generated_at = FormatUtc(now);
  data.host = req.host;
  if (data.host.empty()) {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) == 0) data.host = buf;
  }
  if (req.date.empty()) {
    data.date = AddDays(FormatUtc(now).substr(0, 10), -1);
  } else {
    data.date = AddDays(req.date, 0);  // validates
    if (data.date.empty() || data.date != req.date) {
      return Status::Error("report: bad date '" + req.date + "' (want YYYY-MM-DD)");
    }
  }

  if (access(req.db_path.c_str(), R_OK) != 0) {
    return Status::Error("report: cannot read " + req.db_path + ": " + strerror(errno));
  }
  Db db;
  int version = -1;
  // A database in WAL mode is read through its -shm file, which a reader must be able to create
  // when no writer has: a copy made with sqlite3's .backup (the README's way) in a folder the
  // reader cannot write to fails so. With no -wal file beside it nothing is pending in a log,
  // and the file is read as it is (immutable).
  for (bool immutable : {false, true}) {
    sqlite3* raw = nullptr;
    const std::string name = immutable ? ImmutableUri(req.db_path) : req.db_path;
    int rc = sqlite3_open_v2(name.c_str(), &raw,
                             SQLITE_OPEN_READONLY | (immutable ? SQLITE_OPEN_URI : 0), nullptr);
    db.reset(raw);
    if (rc != SQLITE_OK) {
      return Status::Error("report: open " + req.db_path + ": " +
                           (raw ? sqlite3_errmsg(raw) : "out of memory"));
    }
    sqlite3_busy_timeout(raw, 5000);
    Query probe(raw, req.db_path);
    Status s = probe.Run("PRAGMA user_version", {},
                         [&](sqlite3_stmt* st) { version = sqlite3_column_int(st, 0); });
    if (s) break;
    const bool cannot_init = (sqlite3_errcode(raw) & 0xff) == SQLITE_READONLY ||
                             (sqlite3_errcode(raw) & 0xff) == SQLITE_CANTOPEN;
    if (immutable || !cannot_init || access((req.db_path + "-wal").c_str(), F_OK) == 0) return s;
  }
  sqlite3* raw = db.get();
  Query q(raw, req.db_path);
  if (version == 0) {
    return Status::Error("report: " + req.db_path + " is not a bounced database (no schema)");
  }
  if (version > kSchemaVersion) {
    return Status::Error("report: " + req.db_path + ": database schema version " +
                         std::to_string(version) + " is newer than this bouncectl (knows " +
                         std::to_string(kSchemaVersion) + ")");
  }
  // One read transaction: every query sees the same snapshot while the daemon keeps writing.
  if (Status s = q.Run("BEGIN", {}, [](sqlite3_stmt*) {}); !s) return s;

  const std::string last = data.date;
  const std::string first = AddDays(last, -(data.days - 1));
  const std::string prev_first = AddDays(first, -7);
  // As BuildReport draws it: at least the period, at most 90 days.
  const std::string trend_first =
      AddDays(last, -(std::clamp(std::max(data.trend_days, data.days), 1, 90) - 1));
  const bool by_domain = !req.domain.empty();
  const std::string domain_clause = by_domain ? " AND domain = ?3" : "";
  auto params = [&](const std::string& a, const std::string& b) {
    std::vector<std::string> p = {a, b};
    if (by_domain) p.push_back(req.domain);
    return p;
  };

  // The period's counts per domain, provider, category, code and outcome, the days before the
  // last one summed (dated on the first day): the last day's categories are shown apart, and
  // nothing else needs the day. A row per day would cost memory in days x domains.
  Status s = q.Run(
      "SELECT CASE WHEN day = ?2 THEN ?2 ELSE ?1 END, domain, provider, category, provider_code, "
      "log_status, sum(count) FROM daily_counters WHERE day BETWEEN ?1 AND ?2" +
          domain_clause + " GROUP BY 1, 2, 3, 4, 5, 6",
      params(first, last), [&](sqlite3_stmt* st) {
        data.counters.push_back({Text(st, 0), Text(st, 1), Text(st, 2), Text(st, 3), Text(st, 4),
                                 Text(st, 5), sqlite3_column_int64(st, 6)});
      });
  if (!s) return s;
  // The trend: failed deliveries per day, provider and category, over all domains.
  data.trend_counters.emplace();
  s = q.Run(
      "SELECT day, provider, category, log_status, sum(count) FROM daily_counters "
      "WHERE day BETWEEN ?1 AND ?2 AND log_status IN ('bounced', 'expired', 'deferred')" +
          domain_clause + " GROUP BY 1, 2, 3, 4",
      params(trend_first, last), [&](sqlite3_stmt* st) {
        data.trend_counters->push_back({Text(st, 0), "", Text(st, 1), Text(st, 2), "", Text(st, 3),
                                        sqlite3_column_int64(st, 4)});
      });
  if (!s) return s;

  const std::string sender_where = " WHERE day BETWEEN ?1 AND ?2" + DayRange(version, 1, 2) +
                                   " AND counted = 1 AND " + kSenderSideSql + domain_clause;
  s = q.Run("SELECT day, provider, provider_code, status, category, COUNT(*) FROM events" +
                sender_where + " GROUP BY 1, 2, 3, 4, 5",
            params(prev_first, last), [&](sqlite3_stmt* st) {
              data.sender.push_back({Text(st, 0), Text(st, 1), Text(st, 2), Text(st, 3),
                                     Text(st, 4), sqlite3_column_int64(st, 5)});
            });
  if (!s) return s;

  // Which of our sending domains each kind of rejection hit in the period.
  s = q.Run("SELECT provider, provider_code, status, category, " + SenderDomainSql("sender") +
                ", COUNT(*) FROM events" + sender_where + " GROUP BY 1, 2, 3, 4, 5",
            params(first, last), [&](sqlite3_stmt* st) {
              data.sender_domains.push_back({Text(st, 0), Text(st, 1), Text(st, 2), Text(st, 3),
                                             Text(st, 4), sqlite3_column_int64(st, 5)});
            });
  if (!s) return s;

  // The most frequent replies of each kind of rejection, kSamplesPerKind each: a bound over all
  // of them would go to the biggest problem of a busy day (whose replies differ by a per-message
  // id, as Gmail's and Microsoft's do) and leave the others without a sample.
  s = q.Run(
      "SELECT provider, provider_code, status, category, diagnostic, n, last FROM ("
      "SELECT provider, provider_code, status, category, diagnostic, COUNT(*) AS n, "
      "MAX(time) AS last, ROW_NUMBER() OVER (PARTITION BY provider, provider_code, status, "
      "category ORDER BY COUNT(*) DESC, MAX(time) DESC) AS rank FROM events" +
          sender_where + " AND diagnostic <> '' GROUP BY 1, 2, 3, 4, 5) WHERE rank <= " +
          std::to_string(kSamplesPerKind),
      params(first, last), [&](sqlite3_stmt* st) {
        data.samples.push_back({Text(st, 0), Text(st, 1), Text(st, 2), Text(st, 3), Text(st, 4),
                                sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6)});
      });
  if (!s) return s;

  s = q.Run(
      "SELECT log_status, COUNT(DISTINCT queue_id) FROM events "
      "WHERE day BETWEEN ?1 AND ?2" +
          DayRange(version, 1, 2) + " AND counted = 1 AND queue_id <> ''" + domain_clause +
          " GROUP BY 1",
      params(first, last), [&](sqlite3_stmt* st) {
        data.messages.push_back({Text(st, 0), sqlite3_column_int64(st, 1)});
      });
  if (!s) return s;

  // suppression_log has no domain column: the address key ends in "@domain".
  std::vector<std::string> supp_params = {first, last};
  std::string supp_clause;
  if (by_domain) {
    supp_clause = " AND substr(address, -length(?3) - 1) = '@' || ?3";
    supp_params.push_back(req.domain);
  }
  // The change's note (why it was lifted) came with schema 8: a copy from before has none.
  s = q.Run(
      std::string("SELECT id, time, address, action, source, reason, category, actor_uid, ") +
          (version >= 8 ? "note" : "''") + " FROM suppression_log WHERE day BETWEEN ?1 AND ?2" +
          supp_clause + " ORDER BY id",
      supp_params, [&](sqlite3_stmt* st) {
        data.suppression_changes.push_back(
            {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), Text(st, 2), Text(st, 3),
             Text(st, 4), Text(st, 5), Text(st, 6), sqlite3_column_int64(st, 7), Text(st, 8)});
      });
  if (!s) return s;

  const int64_t start_ts = DayStart(first);
  const int64_t end_ts = DayStart(last) + 86400;
  std::vector<std::string> audit_params = {std::to_string(start_ts), std::to_string(end_ts)};
  std::string audit_clause;
  if (by_domain) {
    audit_clause = " AND (target = ?3 OR substr(target, -length(?3) - 1) = '@' || ?3)";
    audit_params.push_back(req.domain);
  }
  s = q.Run(
      "SELECT time, actor_uid, action, target, reason FROM audit "
      "WHERE time >= CAST(?1 AS INTEGER) AND time < CAST(?2 AS INTEGER)" +
          audit_clause + " ORDER BY id",
      audit_params, [&](sqlite3_stmt* st) {
        data.manual_changes.push_back({sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                                       Text(st, 2), Text(st, 3), Text(st, 4)});
      });
  if (!s) return s;

  if (req.alerts) {
    // Every incident of the replay is kept, not only the daemon's recent few: a month's report
    // has more than that, and the oldest of them are in the period too.
    AlertThresholds thresholds = req.thresholds;
    thresholds.max_recent = std::numeric_limits<size_t>::max();
    SpikeDetector detector(thresholds);
    const int64_t replay_from =
        start_ts - req.thresholds.baseline_seconds - req.thresholds.window_seconds;
    // The day bounds (?4, ?5) keep SQLite from scanning the whole table.
    std::vector<std::string> replay_params = {std::to_string(replay_from), std::to_string(end_ts),
                                              req.domain, FormatUtc(replay_from).substr(0, 10),
                                              last};
    s = q.Run(ReplaySql(version) + domain_clause + " ORDER BY time", replay_params,
              [&](sqlite3_stmt* st) { detector.Observe(RejectionFromRow(st)); });
    if (!s) return s;
    detector.Advance(std::min(now, end_ts));
    std::vector<Incident> all(detector.Closed().begin(), detector.Closed().end());
    for (Incident& i : detector.Open()) all.push_back(std::move(i));
    for (Incident& i : all) {
      if (i.opened < end_ts && (i.open() || i.closed >= start_ts)) {
        data.incidents.push_back(std::move(i));
      }
    }
    std::sort(data.incidents.begin(), data.incidents.end(),
              [](const Incident& a, const Incident& b) { return a.opened < b.opened; });
  }
  q.Run("COMMIT", {}, [](sqlite3_stmt*) {});
  return data;
}

}  // namespace bounced
