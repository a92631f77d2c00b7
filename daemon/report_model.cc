// report_model.cc: computes the Report from ReportData (see report_model.h).
#include "daemon/report_model.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>
#include <utility>

#include "classifier/result.h"

namespace bounced {
namespace {

bool IsFailure(const std::string& log_status) {
  return log_status == "bounced" || log_status == "expired" || log_status == "deferred";
}

std::vector<NamedCount> Sorted(const std::map<std::string, int64_t>& m, size_t top) {
  std::vector<NamedCount> v;
  for (const auto& [k, n] : m) {
    if (n > 0) v.push_back({k, n});
  }
  std::stable_sort(v.begin(), v.end(),
                   [](const NamedCount& a, const NamedCount& b) { return a.count > b.count; });
  if (v.size() > top) v.resize(top);
  return v;
}

std::string Cause(const std::string& category) {
  if (auto c = CategoryFromName(category)) return std::string(Describe(*c).cause);
  return "";
}

std::string KeyCode(const std::string& provider_code, const std::string& status,
                    const std::string& category) {
  if (!provider_code.empty()) return provider_code;
  if (!status.empty()) return status;
  return category;
}

struct GroupAcc {
  OutcomeCounts counts;
  std::map<std::string, int64_t> categories;
  std::map<std::string, int64_t> codes;
};

GroupStats Finish(const std::string& id, std::string name, std::string domains, const GroupAcc& acc,
                  size_t top) {
  GroupStats g;
  g.id = id;
  g.name = std::move(name);
  g.domains = std::move(domains);
  g.counts = acc.counts;
  g.top_categories = Sorted(acc.categories, std::min<size_t>(top, 5));
  g.codes = Sorted(acc.codes, std::min<size_t>(top, 5));
  return g;
}

int64_t Volume(const OutcomeCounts& c) {
  return c.sent + c.deferred + c.bounced + c.expired + c.complaint + c.blocked;
}
int64_t Failures(const OutcomeCounts& c) { return c.deferred + c.bounced + c.expired; }

}  // namespace

void OutcomeCounts::Add(const std::string& s, int64_t n) {
  if (s == "sent") {
    sent += n;
  } else if (s == "deferred") {
    deferred += n;
  } else if (s == "bounced") {
    bounced += n;
  } else if (s == "expired") {
    expired += n;
  } else if (s == "complaint") {
    complaint += n;
  } else if (s == "blocked") {
    blocked += n;
  }
}

double OutcomeCounts::bounce_rate() const {
  const int64_t finished = sent + bounced + expired;
  return finished == 0 ? 0.0 : static_cast<double>(bounced + expired) / finished;
}

std::string AddDays(const std::string& day, int days) {
  struct tm tm {};
  if (day.size() != 10 || strptime(day.c_str(), "%Y-%m-%d", &tm) == nullptr) return "";
  tm.tm_hour = 12;  // away from midnight: no leap-second or rounding surprises
  time_t t = timegm(&tm) + static_cast<time_t>(days) * 86400;
  struct tm out {};
  gmtime_r(&t, &out);
  char buf[16];
  strftime(buf, sizeof buf, "%Y-%m-%d", &out);
  return buf;
}

std::string TodayUtc() {
  time_t t = time(nullptr);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[16];
  strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

Report BuildReport(const ReportData& data, const AdviceBook& advice, int top_rows) {
  const size_t top = static_cast<size_t>(std::max(1, top_rows));
  Report r;
  r.generated_at = data.generated_at;
  r.host = data.host;
  r.database = data.database;
  r.days = std::max(1, data.days);
  r.last_day = data.date;
  r.first_day = AddDays(data.date, -(r.days - 1));
  r.domain = data.domain;
  const std::string prev_first = AddDays(r.first_day, -7);
  const std::string prev_last = AddDays(r.first_day, -1);
  auto in_period = [&](const std::string& d) { return d >= r.first_day && d <= r.last_day; };
  auto in_previous = [&](const std::string& d) { return d >= prev_first && d <= prev_last; };

  // Totals, providers, domains, the day's categories.
  std::map<std::string, GroupAcc> providers;
  std::map<std::string, GroupAcc> domains;
  std::map<std::string, int64_t> day_categories;
  for (const CounterRow& c : data.counters) {
    if (!data.domain.empty() && c.domain != data.domain) continue;
    if (!in_period(c.day)) continue;
    r.recipients.Add(c.log_status, c.count);
    const std::string group = advice.GroupOf(c.provider);
    for (GroupAcc* acc : {&providers[group], &domains[c.domain]}) {
      acc->counts.Add(c.log_status, c.count);
      if (IsFailure(c.log_status)) {
        acc->categories[c.category] += c.count;
        if (!c.provider_code.empty()) acc->codes[c.provider_code] += c.count;
      }
    }
    if (c.day == r.last_day && IsFailure(c.log_status)) day_categories[c.category] += c.count;
  }
  for (const MessageCountRow& m : data.messages) r.messages.Add(m.log_status, m.count);

  for (const auto& [id, acc] : providers) {
    std::string shown;
    if (const ProviderInfo* p = advice.Provider(id)) {
      for (const auto& d : p->domains) shown += (shown.empty() ? "" : ", ") + d;
    }
    r.providers.push_back(Finish(id, advice.NameOf(id), shown, acc, top));
  }
  // Known providers by volume; "other" last, as it mixes everything unrecognised.
  std::stable_sort(r.providers.begin(), r.providers.end(),
                   [](const GroupStats& a, const GroupStats& b) {
                     if ((a.id == "other") != (b.id == "other")) return b.id == "other";
                     return Volume(a.counts) > Volume(b.counts);
                   });
  if (r.providers.size() > top) r.providers.resize(top);
  for (const auto& [id, acc] : domains) r.domains.push_back(Finish(id, id, "", acc, top));
  // Domains with the most failures first: they are what needs looking at.
  std::stable_sort(r.domains.begin(), r.domains.end(),
                   [](const GroupStats& a, const GroupStats& b) {
                     if (Failures(a.counts) != Failures(b.counts)) {
                       return Failures(a.counts) > Failures(b.counts);
                     }
                     return Volume(a.counts) > Volume(b.counts);
                   });
  if (r.domains.size() > top) r.domains.resize(top);
  r.day_categories = Sorted(day_categories, kCategoryCount);

  // Sender-side problems: this period against the 7 days before.
  struct ProblemAcc {
    std::string provider;  // a classifier id seen, for the advice lookup
    std::string provider_code;
    int64_t count = 0;
    int64_t previous = 0;
    std::map<std::string, int64_t> statuses;
    std::map<std::string, int64_t> categories;
  };
  std::map<std::pair<std::string, std::string>, ProblemAcc> problems;
  for (const SenderRow& s : data.sender) {
    const bool now = in_period(s.day);
    if (!now && !in_previous(s.day)) continue;
    auto key =
        std::make_pair(advice.GroupOf(s.provider), KeyCode(s.provider_code, s.status, s.category));
    ProblemAcc& p = problems[key];
    if (p.provider.empty()) p.provider = s.provider;
    if (p.provider_code.empty()) p.provider_code = s.provider_code;
    if (now) {
      p.count += s.count;
      p.statuses[s.status] += s.count;
      p.categories[s.category] += s.count;
    } else {
      p.previous += s.count;
    }
  }
  for (auto& [key, p] : problems) {
    if (p.count == 0) continue;  // only in the previous week: nothing to do today
    SenderProblem sp;
    sp.provider = key.first;
    sp.provider_name = advice.NameOf(key.first);
    sp.code = key.second;
    sp.status = Sorted(p.statuses, 1).empty() ? "" : Sorted(p.statuses, 1)[0].name;
    sp.category = Sorted(p.categories, 1).empty() ? "" : Sorted(p.categories, 1)[0].name;
    sp.cause = Cause(sp.category);
    sp.count = p.count;
    sp.daily_average = static_cast<double>(p.count) / r.days;
    sp.previous_daily_average = static_cast<double>(p.previous) / 7.0;
    if (p.previous > 0) {
      sp.change_percent =
          std::round((sp.daily_average / sp.previous_daily_average - 1.0) * 1000.0) / 10.0;
    }
    // Most frequent replies of this key, distinct texts, at most three.
    std::vector<const SampleRow*> samples;
    for (const SampleRow& s : data.samples) {
      if (advice.GroupOf(s.provider) == sp.provider &&
          KeyCode(s.provider_code, s.status, s.category) == sp.code && !s.diagnostic.empty()) {
        samples.push_back(&s);
      }
    }
    std::stable_sort(samples.begin(), samples.end(), [](const SampleRow* a, const SampleRow* b) {
      return a->count != b->count ? a->count > b->count : a->last_seen > b->last_seen;
    });
    std::set<std::string> seen;
    for (const SampleRow* s : samples) {
      if (sp.samples.size() >= 3) break;
      if (seen.insert(s->diagnostic).second) sp.samples.push_back(s->diagnostic);
    }
    std::map<std::string, int64_t> senders;
    for (const SenderDomainRow& d : data.sender_domains) {
      if (advice.GroupOf(d.provider) == sp.provider &&
          KeyCode(d.provider_code, d.status, d.category) == sp.code) {
        senders[d.sender_domain] += d.count;
      }
    }
    sp.sender_domains = Sorted(senders, 5);
    if (const AdviceEntry* a = advice.Find(p.provider, p.provider_code, sp.status, sp.category)) {
      sp.advice_title = a->title;
      sp.advice_why = a->why;
      sp.advice_steps = a->steps;
    }
    r.sender_problems.push_back(std::move(sp));
  }
  std::stable_sort(
      r.sender_problems.begin(), r.sender_problems.end(),
      [](const SenderProblem& a, const SenderProblem& b) { return a.count > b.count; });
  if (r.sender_problems.size() > top) r.sender_problems.resize(top);

  // Suppression list changes and manual changes.
  std::map<std::string, int64_t> reasons;
  for (const SuppressionChange& c : data.suppression_changes) {
    if (c.action == "add") {
      ++r.new_suppressions;
      ++reasons[c.reason.empty() ? c.source : c.reason];
      r.new_suppression_list.push_back(c);
    } else if (c.action == "remove") {
      ++r.lifted_suppressions;
      r.lifted_list.push_back(c);
    }
  }
  r.new_suppressions_by_reason = Sorted(reasons, top);
  auto newest_first = [](const auto& a, const auto& b) { return a.time > b.time; };
  std::stable_sort(r.new_suppression_list.begin(), r.new_suppression_list.end(), newest_first);
  std::stable_sort(r.lifted_list.begin(), r.lifted_list.end(), newest_first);
  if (r.new_suppression_list.size() > top) r.new_suppression_list.resize(top);
  if (r.lifted_list.size() > top) r.lifted_list.resize(top);
  r.manual_changes = data.manual_changes;
  std::stable_sort(r.manual_changes.begin(), r.manual_changes.end(), newest_first);
  r.incidents = data.incidents;

  // Trends: failed deliveries per day, per provider group and per category.
  const int trend_days = std::clamp(std::max(data.trend_days, r.days), 1, 90);
  for (int i = trend_days - 1; i >= 0; --i) r.trend.days.push_back(AddDays(r.last_day, -i));
  std::map<std::string, size_t> day_index;
  for (size_t i = 0; i < r.trend.days.size(); ++i) day_index[r.trend.days[i]] = i;
  std::map<std::string, std::vector<int64_t>> by_provider, by_category;
  std::map<std::string, int64_t> provider_total, category_total;
  // trend_counters are read for the domain filter already, without the domain column.
  const bool by_domain = !data.domain.empty() && !data.trend_counters;
  for (const CounterRow& c : data.trend_counters ? *data.trend_counters : data.counters) {
    if (by_domain && c.domain != data.domain) continue;
    auto it = day_index.find(c.day);
    if (it == day_index.end() || !IsFailure(c.log_status)) continue;
    const std::string group = advice.GroupOf(c.provider);
    auto& pv = by_provider[group];
    auto& cv = by_category[c.category];
    pv.resize(r.trend.days.size());
    cv.resize(r.trend.days.size());
    pv[it->second] += c.count;
    cv[it->second] += c.count;
    provider_total[group] += c.count;
    category_total[c.category] += c.count;
  }
  constexpr size_t kMaxSeries = 6;  // more lines than this cannot be told apart in a chart
  for (const NamedCount& n : Sorted(provider_total, kMaxSeries)) {
    r.trend.providers.push_back({advice.NameOf(n.name), by_provider[n.name]});
  }
  for (const NamedCount& n : Sorted(category_total, kMaxSeries)) {
    r.trend.categories.push_back({n.name, by_category[n.name]});
  }
  return r;
}

std::string SenderDomains(const SenderProblem& p) {
  std::string line;
  for (const NamedCount& d : p.sender_domains) {
    if (!line.empty()) line += ", ";
    line += (d.name == "<>" ? std::string("null or unknown sender") : d.name) + " " +
            std::to_string(d.count);
  }
  return line;
}

std::string ChangeNote(const SuppressionChange& c) {
  if (c.note.empty()) return "";
  if (c.actor_uid < 0) return c.note;
  return "uid " + std::to_string(c.actor_uid) + ": " + c.note;
}

std::string ProblemCount(const SenderProblem& p, const std::string& count_text) {
  const bool deferral = p.category == "rate_limited";
  return count_text + (deferral ? " deferral" : " rejection") + (p.count == 1 ? "" : "s");
}

}  // namespace bounced
