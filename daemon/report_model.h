// report_model.h: the daily report's numbers, and how they are computed from stored counts.
//
// Pure code. ReportData is what the database gives (report_db.h reads it; tests build it by
// hand): per-day counters, sender-side rejection counts with sample replies, distinct message
// counts, suppression list changes, manual changes and alert incidents. BuildReport() turns it
// into a Report, the one model every renderer (report_render.h: text, HTML, JSON) prints, so
// the three always show the same numbers.
//
// Definitions (also in the README):
// - Days are UTC calendar days 'YYYY-MM-DD'; the period is `days` days ending on `date`.
// - Outcomes are the events' log_status: sent, deferred, bounced, expired (plus complaint,
//   blocked). Recipients = events; messages = distinct Postfix queue ids.
// - bounce rate = (bounced + expired) / (sent + bounced + expired), over recipients.
// - Sender-side problems: counted events whose category's fault is "sender" (result.h),
//   grouped by provider group and code (provider code, else enhanced status, else category),
//   compared with the daily average of the 7 days before the period.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/alert_detector.h"
#include "daemon/report_advice.h"
#include "storage/store.h"

namespace bounced {

// ---- input -------------------------------------------------------------------------------

// One daily_counters row (storage/schema.sql).
struct CounterRow {
  std::string day;
  std::string domain;
  std::string provider;
  std::string category;
  std::string provider_code;
  std::string log_status;
  int64_t count = 0;
};

// Sender-side rejections per day and key, from the events table (it has the enhanced status
// the counters lack).
struct SenderRow {
  std::string day;
  std::string provider;
  std::string provider_code;
  std::string status;
  std::string category;
  int64_t count = 0;
};

// A distinct remote reply for a sender-side key in the period, with how often it was seen.
struct SampleRow {
  std::string provider;
  std::string provider_code;
  std::string status;
  std::string category;
  std::string diagnostic;
  int64_t count = 0;
  int64_t last_seen = 0;
};

// Sender-side rejections in the period per key and envelope sender domain (lower-cased; "<>"
// for the null sender or one not known): which of our own domains a problem hit.
struct SenderDomainRow {
  std::string provider;
  std::string provider_code;
  std::string status;
  std::string category;
  std::string sender_domain;
  int64_t count = 0;
};

// Distinct messages (queue ids) per outcome in the period.
struct MessageCountRow {
  std::string log_status;
  int64_t count = 0;
};

// suppression_log rows are SuppressionChange (storage/store.h).

// One audit row: a manual change.
struct ManualChange {
  int64_t time = 0;
  int64_t actor_uid = -1;
  std::string action;  // suppress, unsuppress, allow, disallow, import
  std::string target;
  std::string reason;
};

struct ReportData {
  std::string date;  // last day of the period
  int days = 1;      // period length
  int trend_days = 14;
  std::string domain;        // only this recipient domain ("" = all)
  std::string generated_at;  // RFC 3339
  std::string host;
  std::string database;
  // Counters of the period. Rows of one day are kept apart (`day`) only as far as the report
  // needs: report_db.cc sums the days before the last one into rows dated on the first day,
  // so a long period over many domains costs a row per domain and outcome, not per day too.
  std::vector<CounterRow> counters;
  // Failed deliveries per day, provider and category over the trend window (domain and
  // provider_code empty). nullopt: the trend is taken from `counters`, which then hold every
  // day of the trend window one by one (tests that build ReportData by hand).
  std::optional<std::vector<CounterRow>> trend_counters;
  // Sender rows for the period and the 7 days before it.
  std::vector<SenderRow> sender;
  std::vector<SampleRow> samples;
  std::vector<SenderDomainRow> sender_domains;  // in the period
  std::vector<MessageCountRow> messages;
  std::vector<SuppressionChange> suppression_changes;  // in the period
  std::vector<ManualChange> manual_changes;            // in the period
  std::vector<Incident> incidents;                     // open at some point in the period
};

// ---- model -------------------------------------------------------------------------------

struct OutcomeCounts {
  int64_t sent = 0;
  int64_t deferred = 0;
  int64_t bounced = 0;
  int64_t expired = 0;
  int64_t complaint = 0;
  int64_t blocked = 0;  // refused by bounced itself (suppressed recipients)
  void Add(const std::string& log_status, int64_t n);
  // (bounced + expired) / (sent + bounced + expired); 0 when nothing finished.
  double bounce_rate() const;
};

struct NamedCount {
  std::string name;
  int64_t count = 0;
};

struct GroupStats {
  std::string id;       // domain, or provider group id
  std::string name;     // display name
  std::string domains;  // provider groups: "icloud.com, me.com, mac.com"
  OutcomeCounts counts;
  std::vector<NamedCount> top_categories;  // failures by category, most first
  std::vector<NamedCount> codes;           // failures by provider code, most first
};

struct SenderProblem {
  std::string provider;       // group id
  std::string provider_name;  // display
  std::string code;           // provider code, else status, else category
  std::string status;         // enhanced status seen most
  std::string category;
  std::string cause;                     // reputation, content, authentication, configuration
  int64_t count = 0;                     // in the period
  double daily_average = 0;              // in the period
  double previous_daily_average = 0;     // the 7 days before the period
  std::optional<double> change_percent;  // nullopt when there was nothing before ("new")
  std::vector<std::string> samples;      // up to 3 distinct replies
  // Our sending domains (envelope sender) it hit in the period, most first, at most 5; a
  // reputation or content problem of one brand shows as one domain here.
  std::vector<NamedCount> sender_domains;
  std::string advice_title;
  std::string advice_why;
  std::vector<std::string> advice_steps;
};

// A problem's sender domains as one line: "brand-a.example 120, news.example 3" ("<>" reads as
// "null or unknown sender").
std::string SenderDomains(const SenderProblem& p);

// What `count` of a problem's events are called: "deferral(s)" for a provider's throttling
// (rate_limited: Postfix tries again), else "rejection(s)".
std::string ProblemCount(const SenderProblem& p, const std::string& count_text);

// What a suppression-list change says beyond the entry's own reason: for a lift, who lifted it
// and why ("uid 1000: their DNS outage"), or "expired" for an entry bounced removed at its
// expiry; "" when the change has no note (a bounce's add; a database before schema 8).
std::string ChangeNote(const SuppressionChange& c);

struct Series {
  std::string name;
  std::vector<int64_t> values;  // one per Trend::days
};

struct Trend {
  std::vector<std::string> days;   // oldest first, ending on the report date
  std::vector<Series> providers;   // failed deliveries (bounced, expired, deferred) per day
  std::vector<Series> categories;  // failed deliveries per day, top categories
};

struct Report {
  std::string generated_at;
  std::string host;
  std::string database;
  std::string first_day;
  std::string last_day;
  int days = 1;
  std::string domain;  // filter, "" = all
  OutcomeCounts recipients;
  OutcomeCounts messages;
  int64_t new_suppressions = 0;
  int64_t lifted_suppressions = 0;
  std::vector<NamedCount> new_suppressions_by_reason;
  std::vector<SuppressionChange> new_suppression_list;  // newest first, at most `top`
  std::vector<SuppressionChange> lifted_list;
  std::vector<ManualChange> manual_changes;
  std::vector<SenderProblem> sender_problems;  // biggest first
  std::vector<GroupStats> providers;
  std::vector<GroupStats> domains;
  std::vector<NamedCount> day_categories;  // failures on the last day by category
  std::vector<Incident> incidents;
  Trend trend;
};

// Adds `days` (may be negative) to a 'YYYY-MM-DD' day; "" when `day` is not a valid date.
std::string AddDays(const std::string& day, int days);
// Today's UTC date.
std::string TodayUtc();

// `top` bounds every table (domains, providers, categories, codes, lists).
Report BuildReport(const ReportData& data, const AdviceBook& advice, int top = 10);

}  // namespace bounced
