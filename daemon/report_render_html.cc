// report_render_html.cc: the report as one self-contained HTML page (see report_render.h).
//
// No scripts, no external fonts, images or style sheets: a mail client shows it as sent and a
// browser fetches nothing (the CSP meta tag forbids it). Charts are inline SVG with a viewBox
// so they scale to the screen; every number in a chart is also in a table next to it, for
// clients that drop SVG. Layout is a single column, max 760px, so it reads on a phone.
#include <algorithm>
#include <cstdio>

#include "daemon/report_render.h"

namespace bounced {
namespace {

constexpr const char* kPalette[] = {"#2563eb", "#dc2626", "#16a34a",
                                    "#d97706", "#7c3aed", "#0891b2"};

std::string Esc(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string Num(int64_t n) { return std::to_string(n); }
std::string Fmt(const char* fmt, double x) {
  char buf[64];
  snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

std::string Joined(const std::vector<NamedCount>& v, size_t max) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < max; ++i) {
    s += (i ? ", " : "") + Esc(v[i].name) + "&nbsp;" + Num(v[i].count);
  }
  return s;
}

// Horizontal bars, one per category.
std::string BarChart(const std::vector<NamedCount>& bars, const std::string& title) {
  const int row = 24, label_w = 170, chart_w = 600, top = 8;
  const int height = top + row * static_cast<int>(bars.size()) + 8;
  int64_t max = 1;
  for (const auto& b : bars) max = std::max(max, b.count);
  std::string s = "<svg class=\"chart\" role=\"img\" viewBox=\"0 0 " + Num(chart_w) + " " +
                  Num(height) + "\" xmlns=\"http://www.w3.org/2000/svg\"><title>" + Esc(title) +
                  "</title>";
  for (size_t i = 0; i < bars.size(); ++i) {
    const int y = top + static_cast<int>(i) * row;
    const int w =
        static_cast<int>(std::max<int64_t>(2, bars[i].count * (chart_w - label_w - 60) / max));
    s += "<text x=\"" + Num(label_w - 6) + "\" y=\"" + Num(y + 16) +
         "\" text-anchor=\"end\" font-size=\"13\" fill=\"#333\">" + Esc(bars[i].name) + "</text>";
    s += "<rect x=\"" + Num(label_w) + "\" y=\"" + Num(y + 4) + "\" width=\"" + Num(w) +
         "\" height=\"16\" rx=\"2\" fill=\"" + kPalette[i % 6] + "\"/>";
    s += "<text x=\"" + Num(label_w + w + 6) + "\" y=\"" + Num(y + 16) +
         "\" font-size=\"13\" fill=\"#333\">" + Num(bars[i].count) + "</text>";
  }
  return s + "</svg>";
}

// One line per series over the trend's days, y from 0 to the largest value.
std::string LineChart(const std::vector<std::string>& days, const std::vector<Series>& series,
                      const std::string& title) {
  const int w = 600, h = 220, left = 44, right = 12, top = 12, bottom = 28;
  int64_t max = 1;
  for (const auto& s : series) {
    for (int64_t v : s.values) max = std::max(max, v);
  }
  const double plot_w = w - left - right, plot_h = h - top - bottom;
  const size_t n = days.size();
  auto x = [&](size_t i) { return left + (n <= 1 ? plot_w / 2 : plot_w * i / (n - 1)); };
  auto y = [&](int64_t v) { return top + plot_h - plot_h * static_cast<double>(v) / max; };
  std::string s = "<svg class=\"chart\" role=\"img\" viewBox=\"0 0 " + Num(w) + " " + Num(h) +
                  "\" xmlns=\"http://www.w3.org/2000/svg\"><title>" + Esc(title) + "</title>";
  // Grid: 0, half, max.
  for (int64_t g : {int64_t{0}, max / 2, max}) {
    const std::string gy = Fmt("%.1f", y(g));
    s += "<line x1=\"" + Num(left) + "\" y1=\"" + gy + "\" x2=\"" + Num(w - right) + "\" y2=\"" +
         gy + "\" stroke=\"#ddd\" stroke-width=\"1\"/>";
    s += "<text x=\"" + Num(left - 6) + "\" y=\"" + Fmt("%.1f", y(g) + 4) +
         "\" text-anchor=\"end\" font-size=\"11\" fill=\"#666\">" + Num(g) + "</text>";
  }
  // Day labels: first, middle, last (MM-DD), enough to read the axis on a phone.
  for (size_t i : {size_t{0}, n / 2, n - 1}) {
    if (n == 0 || i >= n) continue;
    const char* anchor = i == 0 ? "start" : (i == n - 1 ? "end" : "middle");
    s += "<text x=\"" + Fmt("%.1f", x(i)) + "\" y=\"" + Num(h - 8) + "\" text-anchor=\"" + anchor +
         "\" font-size=\"11\" fill=\"#666\">" + Esc(days[i].substr(5)) + "</text>";
  }
  for (size_t k = 0; k < series.size(); ++k) {
    std::string points;
    for (size_t i = 0; i < n; ++i) {
      const int64_t v = i < series[k].values.size() ? series[k].values[i] : 0;
      // Appended piece by piece: `"literal" + std::string&&` here trips GCC 12's -O3
      // -Wrestrict false positive (the README's Release build with -DBOUNCED_WERROR=ON).
      if (i > 0) points += ' ';
      points += Fmt("%.1f", x(i));
      points += ',';
      points += Fmt("%.1f", y(v));
    }
    s += "<polyline fill=\"none\" stroke=\"" + std::string(kPalette[k % 6]) +
         "\" stroke-width=\"2\" points=\"" + points + "\"><title>" + Esc(series[k].name) +
         "</title></polyline>";
  }
  s += "</svg><p class=\"legend\">";
  for (size_t k = 0; k < series.size(); ++k) {
    int64_t total = 0;
    for (int64_t v : series[k].values) total += v;
    s += "<span><i style=\"background:" + std::string(kPalette[k % 6]) + "\"></i>" +
         Esc(series[k].name) + " (" + Num(total) + ")</span> ";
  }
  return s + "</p>";
}

std::string GroupTable(const std::vector<GroupStats>& groups, const char* first) {
  std::string s = "<table><tr><th>" + std::string(first) +
                  "</th><th class=\"n\">sent</th><th class=\"n\">deferred</th><th "
                  "class=\"n\">bounced</th><th class=\"n\">expired</th><th "
                  "class=\"n\">rate</th></tr>";
  for (const auto& g : groups) {
    std::string detail = Joined(g.top_categories, 3);
    if (!g.codes.empty()) detail += (detail.empty() ? "codes: " : "; codes: ") + Joined(g.codes, 3);
    s += "<tr><td><b>" + Esc(g.name) + "</b>" +
         (g.domains.empty() ? "" : "<br><small>" + Esc(g.domains) + "</small>") +
         (detail.empty() ? "" : "<br><small class=\"muted\">" + detail + "</small>") +
         "</td><td class=\"n\">" + Num(g.counts.sent) + "</td><td class=\"n\">" +
         Num(g.counts.deferred) + "</td><td class=\"n\">" + Num(g.counts.bounced) +
         "</td><td class=\"n\">" + Num(g.counts.expired) + "</td><td class=\"n\">" +
         FormatPercent(g.counts.bounce_rate()) + "</td></tr>";
  }
  return s + "</table>";
}

const char* kStyle = R"(
body{margin:0;padding:0;background:#f4f5f7;color:#1f2328;font:15px/1.45 -apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
.page{max-width:760px;margin:0 auto;padding:12px;background:#fff}
h1{font-size:20px;margin:4px 0}
h2{font-size:17px;margin:22px 0 8px;padding-bottom:4px;border-bottom:1px solid #e5e7eb}
h3{font-size:15px;margin:14px 0 4px}
.muted{color:#6b7280}
.kpis{display:flex;flex-wrap:wrap;gap:8px;margin:10px 0}
.kpi{flex:1 1 140px;border:1px solid #e5e7eb;border-radius:6px;padding:8px}
.kpi b{display:block;font-size:20px}
.problem{border-left:4px solid #dc2626;background:#fef2f2;padding:8px 10px;margin:10px 0;border-radius:4px}
.alert{border-left:4px solid #d97706;background:#fffbeb;padding:8px 10px;margin:8px 0;border-radius:4px}
.sample{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;background:#fff;border:1px solid #f1d5d5;padding:4px 6px;margin:4px 0;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;font-size:14px}
th,td{text-align:left;padding:4px 6px;border-bottom:1px solid #eee;vertical-align:top}
.n{text-align:right;white-space:nowrap}
svg.chart{width:100%;height:auto;display:block}
.legend{font-size:13px;margin:4px 0}
.legend span{white-space:nowrap;margin-right:10px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
ul{margin:4px 0;padding-left:20px}
small{font-size:12px}
)";

}  // namespace

std::string RenderHtml(const Report& r) {
  const std::string period =
      r.days == 1 ? r.last_day : r.first_day + " to " + r.last_day + " (" + Num(r.days) + " days)";
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  h += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
       "'unsafe-inline'\">";
  h += "<title>bounced report " + Esc(period) + "</title><style>" + std::string(kStyle) +
       "</style></head><body><div class=\"page\">";
  h += "<h1>bounced report for " + Esc(period) + "</h1>";
  h += "<p class=\"muted\">" + Esc(Headline(r)) + "<br>" +
       (r.host.empty() ? "" : "Host " + Esc(r.host) + ". ") +
       (r.domain.empty() ? "" : "Only recipient domain " + Esc(r.domain) + ". ") +
       "Days are UTC. Generated " + Esc(r.generated_at) + ".</p>";

  // Totals.
  const int64_t sender_total = [&] {
    int64_t n = 0;
    for (const auto& p : r.sender_problems) n += p.count;
    return n;
  }();
  auto kpi = [](const std::string& value, const std::string& label) {
    return "<div class=\"kpi\"><b>" + value + "</b>" + label + "</div>";
  };
  h += "<div class=\"kpis\">" + kpi(Num(r.recipients.sent), "recipients sent") +
       kpi(Num(r.recipients.bounced + r.recipients.expired), "bounced or expired") +
       kpi(FormatPercent(r.recipients.bounce_rate()), "bounce rate") +
       kpi(Num(sender_total), "sender-side problems") + "</div>";
  h += "<table><tr><th></th><th class=\"n\">sent</th><th class=\"n\">deferred</th><th "
       "class=\"n\">bounced</th><th class=\"n\">expired</th></tr>";
  auto row = [&](const char* what, const OutcomeCounts& c) {
    h += std::string("<tr><td>") + what + "</td><td class=\"n\">" + Num(c.sent) +
         "</td><td class=\"n\">" + Num(c.deferred) + "</td><td class=\"n\">" + Num(c.bounced) +
         "</td><td class=\"n\">" + Num(c.expired) + "</td></tr>";
  };
  row("Recipients", r.recipients);
  row("Messages", r.messages);
  h += "</table>";
  h += "<p>Suppressions: <b>" + Num(r.new_suppressions) + "</b> new" +
       (r.new_suppressions_by_reason.empty()
            ? ""
            : " (" + Joined(r.new_suppressions_by_reason, 5) + ")") +
       ", <b>" + Num(r.lifted_suppressions) + "</b> lifted, <b>" + Num(r.manual_changes.size()) +
       "</b> manual changes" +
       (r.recipients.complaint ? ", " + Num(r.recipients.complaint) + " complaints" : "") +
       (r.recipients.blocked ? ", " + Num(r.recipients.blocked) + " refused as suppressed" : "") +
       ".</p>";

  if (!r.incidents.empty()) {
    h += "<h2>Alerts</h2>";
    for (const auto& i : r.incidents) {
      h += "<div class=\"alert\"><b>" + Esc(i.provider) + " " + Esc(i.code) + "</b> (" +
           Esc(i.category) + "): " + Num(i.count_at_open) + " in " + Num(i.window_seconds / 60) +
           " min, normally " + Fmt("%.1f", i.expected_per_window) + ". " +
           Esc(FormatUtc(i.opened)) +
           (i.open() ? ", still going" : " to " + Esc(FormatUtc(i.closed))) + ", " +
           Num(i.total_events) + " events.</div>";
    }
  }

  h += "<h2>Sender-side problems</h2>";
  if (r.sender_problems.empty()) {
    h += "<p>None in this period.</p>";
  } else {
    h += "<p class=\"muted\">Rejections caused by the sending side (reputation, authentication, "
         "content, setup). The recipients are fine and are not suppressed; these are fixed on "
         "your side.</p>";
  }
  for (const auto& p : r.sender_problems) {
    std::string change = p.change_percent
                             ? Fmt("%+.0f%%", *p.change_percent) + " vs previous 7 days (" +
                                   Fmt("%.1f", p.previous_daily_average) + "/day)"
                             : "new: none in the previous 7 days";
    h += "<div class=\"problem\"><h3>" + Esc(p.provider_name) + " " + Esc(p.code) + ": " +
         ProblemCount(p, Num(p.count)) + "</h3>";
    h += "<small class=\"muted\">" + Esc(change) + " &middot; " + Esc(p.category) +
         (p.cause.empty() ? "" : " (" + Esc(p.cause) + ")") +
         (p.status.empty() ? "" : " &middot; " + Esc(p.status)) + "</small>";
    if (!p.advice_title.empty()) h += "<p><b>" + Esc(p.advice_title) + "</b></p>";
    for (const auto& s : p.samples) h += "<div class=\"sample\">" + Esc(s) + "</div>";
    if (!p.sender_domains.empty()) {
      h += "<p><small>From: " + Esc(SenderDomains(p)) + "</small></p>";
    }
    if (!p.advice_why.empty()) h += "<p>" + Esc(p.advice_why) + "</p>";
    if (!p.advice_steps.empty()) {
      h += "<p><b>What to do</b></p><ul>";
      for (const auto& s : p.advice_steps) h += "<li>" + Esc(s) + "</li>";
      h += "</ul>";
    }
    h += "</div>";
  }

  h += "<h2>Failed deliveries on " + Esc(r.last_day) + " by category</h2>";
  if (r.day_categories.empty()) {
    h += "<p>None.</p>";
  } else {
    h += BarChart(r.day_categories, "Failed deliveries on " + r.last_day + " by category");
  }

  if (!r.trend.days.empty()) {
    const std::string span = r.trend.days.front() + " to " + r.trend.days.back();
    h += "<h2>Trend per provider</h2><p class=\"muted\">Failed deliveries (bounced, expired, "
         "deferred) per day, " +
         Esc(span) + ".</p>";
    h += LineChart(r.trend.days, r.trend.providers, "Failed deliveries per provider per day");
    h += "<h2>Trend per category</h2><p class=\"muted\">Failed deliveries per day, " + Esc(span) +
         ".</p>";
    h += LineChart(r.trend.days, r.trend.categories, "Failed deliveries per category per day");
  }

  h += "<h2>Providers</h2>";
  h += r.providers.empty() ? "<p>No deliveries in this period.</p>"
                           : GroupTable(r.providers, "provider");
  h += "<h2>Recipient domains</h2><p class=\"muted\">Most failures first.</p>";
  h += r.domains.empty() ? "<p>No deliveries in this period.</p>" : GroupTable(r.domains, "domain");

  auto changes = [&](const char* title, const std::vector<SuppressionChange>& v, int64_t total) {
    if (v.empty()) return;
    h += std::string("<h2>") + title + "</h2><p class=\"muted\">" + Num(total) +
         " in total, newest " + Num(v.size()) +
         " shown.</p><table><tr><th>when</th><th>address</th><th>why</th></tr>";
    for (const auto& c : v) {
      h += "<tr><td class=\"n\"><small>" + Esc(FormatUtc(c.time)) + "</small></td><td>" +
           Esc(c.address) + "</td><td>" + Esc(c.reason) +
           (c.category.empty() ? "" : " (" + Esc(c.category) + ")") + ", " + Esc(c.source);
      if (const std::string note = c.action == "remove" ? ChangeNote(c) : ""; !note.empty()) {
        h += "; lifted: " + Esc(note);
      }
      h += "</td></tr>";
    }
    h += "</table>";
  };
  changes("New suppressions", r.new_suppression_list, r.new_suppressions);
  changes("Lifted suppressions", r.lifted_list, r.lifted_suppressions);
  if (!r.manual_changes.empty()) {
    h +=
        "<h2>Manual changes</h2><table><tr><th>when</th><th>who</th><th>what</th><th>why</th></tr>";
    for (const auto& m : r.manual_changes) {
      h += "<tr><td class=\"n\"><small>" + Esc(FormatUtc(m.time)) + "</small></td><td>uid " +
           Num(m.actor_uid) + "</td><td>" + Esc(m.action) + " " + Esc(m.target) + "</td><td>" +
           Esc(m.reason) + "</td></tr>";
    }
    h += "</table>";
  }
  h += "<p class=\"muted\"><small>bounced " + Esc(r.database) +
       " &middot; bounce rate = (bounced + expired) / (sent + bounced + expired), per "
       "recipient.</small></p>";
  h += "</div></body></html>\n";
  return h;
}

}  // namespace bounced
