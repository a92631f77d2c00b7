// report_render_json.cc: the report as JSON (see report_render.h). Field names are a contract.
#include <cmath>

#include "daemon/report_render.h"

namespace bounced {
namespace {

using nlohmann::json;

double Round4(double x) { return std::round(x * 10000.0) / 10000.0; }

json Counts(const OutcomeCounts& c) {
  return {{"sent", c.sent},
          {"deferred", c.deferred},
          {"bounced", c.bounced},
          {"expired", c.expired},
          {"complaint", c.complaint},
          {"blocked", c.blocked},
          {"bounce_rate", Round4(c.bounce_rate())}};
}

json Named(const std::vector<NamedCount>& v) {
  json a = json::array();
  for (const auto& n : v) a.push_back({{"name", n.name}, {"count", n.count}});
  return a;
}

json Group(const GroupStats& g) {
  json j = {{"id", g.id}, {"name", g.name}};
  if (!g.domains.empty()) j["domains"] = g.domains;
  j["counts"] = Counts(g.counts);
  j["top_categories"] = Named(g.top_categories);
  j["codes"] = Named(g.codes);
  return j;
}

json Change(const SuppressionChange& c) {
  return {{"time", FormatUtc(c.time)}, {"address", c.address}, {"action", c.action},
          {"source", c.source},        {"reason", c.reason},   {"category", c.category},
          {"actor_uid", c.actor_uid},  {"note", c.note}};
}

}  // namespace

json ReportToJson(const Report& r) {
  json j;
  j["report_version"] = 1;
  j["generated_at"] = r.generated_at;
  j["host"] = r.host;
  j["database"] = r.database;
  j["period"] = {{"first_day", r.first_day}, {"last_day", r.last_day}, {"days", r.days}};
  j["domain"] = r.domain.empty() ? json(nullptr) : json(r.domain);
  json by_reason = json::object();
  for (const auto& n : r.new_suppressions_by_reason) by_reason[n.name] = n.count;
  j["totals"] = {{"recipients", Counts(r.recipients)},
                 {"messages", Counts(r.messages)},
                 {"suppressions",
                  {{"new", r.new_suppressions},
                   {"lifted", r.lifted_suppressions},
                   {"manual_changes", static_cast<int64_t>(r.manual_changes.size())},
                   {"new_by_reason", std::move(by_reason)}}}};
  json problems = json::array();
  for (const auto& p : r.sender_problems) {
    problems.push_back(
        {{"provider", p.provider},
         {"provider_name", p.provider_name},
         {"code", p.code},
         {"status", p.status},
         {"category", p.category},
         {"cause", p.cause},
         {"count", p.count},
         {"daily_average", Round4(p.daily_average)},
         {"previous_daily_average", Round4(p.previous_daily_average)},
         {"change_percent", p.change_percent ? json(*p.change_percent) : json(nullptr)},
         {"samples", p.samples},
         {"sender_domains", Named(p.sender_domains)},
         {"advice",
          {{"title", p.advice_title}, {"why", p.advice_why}, {"steps", p.advice_steps}}}});
  }
  j["sender_problems"] = std::move(problems);
  j["providers"] = json::array();
  for (const auto& g : r.providers) j["providers"].push_back(Group(g));
  j["domains"] = json::array();
  for (const auto& g : r.domains) j["domains"].push_back(Group(g));
  j["day_categories"] = Named(r.day_categories);
  j["new_suppressions"] = json::array();
  for (const auto& c : r.new_suppression_list) j["new_suppressions"].push_back(Change(c));
  j["lifted_suppressions"] = json::array();
  for (const auto& c : r.lifted_list) j["lifted_suppressions"].push_back(Change(c));
  j["manual_changes"] = json::array();
  for (const auto& m : r.manual_changes) {
    j["manual_changes"].push_back({{"time", FormatUtc(m.time)},
                                   {"actor_uid", m.actor_uid},
                                   {"action", m.action},
                                   {"target", m.target},
                                   {"reason", m.reason}});
  }
  j["alerts"] = json::array();
  for (const auto& i : r.incidents) j["alerts"].push_back(ToJson(i));
  auto series = [](const std::vector<Series>& v) {
    json a = json::array();
    for (const auto& s : v) a.push_back({{"name", s.name}, {"values", s.values}});
    return a;
  };
  j["trend"] = {{"days", r.trend.days},
                {"providers", series(r.trend.providers)},
                {"categories", series(r.trend.categories)}};
  return j;
}

// Replace, not throw: a stored reply with broken UTF-8 must not cost the whole report.
std::string RenderJson(const Report& r) {
  return ReportToJson(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace bounced
