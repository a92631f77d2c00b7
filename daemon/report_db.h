// report_db.h: reads what the daily report needs from the bounced database, read-only.
//
// Opens the SQLite file with SQLITE_OPEN_READONLY (WAL lets it read beside the running daemon;
// a copy of the file works too) and runs plain SQL on the tables documented in
// storage/schema.sql and storage/migrate_2.sql: daily_counters (volume per day, domain,
// provider, category, code, outcome), events (sender-side rejections with their enhanced status
// and replies, distinct queue ids; a view in schema version 2, read by event_days' id ranges),
// suppression_log and audit. Alert incidents are recomputed by replaying the
// stored sender-side rejections through a SpikeDetector with the configured thresholds, so the
// report shows them even when the daemon was restarted. Writes nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"
#include "daemon/alert_detector.h"
#include "daemon/report_model.h"

namespace bounced {

struct ReportRequest {
  std::string db_path;
  std::string date;  // last day of the period, 'YYYY-MM-DD' (UTC); "" = yesterday
  int days = 1;      // 1..366
  int trend_days = 14;
  std::string domain;  // only this recipient domain; "" = all
  bool alerts = true;  // recompute alert incidents
  AlertThresholds thresholds;
  int64_t now = 0;   // the report's clock (tests); 0 = the current time
  std::string host;  // "" = this machine's name
};

// Errors: the file cannot be opened read-only, is not a bounced database, has a schema newer
// than this build knows, or a query fails ("report: /x.db: no such table: events").
Expected<ReportData> ReadReportData(const ReportRequest& request);

// Calls fn, oldest first, for every stored sender-side rejection and hard bounce
// (kHardBounceFailureSql: RejectionEvent::hard_bounce) with from <= time < to. The daemon seeds its
// AlertMonitor with this at start, so a restart keeps the baseline.
Status ReplaySenderRejections(const std::string& db_path, int64_t from, int64_t to,
                              const std::function<void(const RejectionEvent&)>& fn);

}  // namespace bounced
