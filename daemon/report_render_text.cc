// report_render_text.cc: the report as plain text, 78 columns (see report_render.h).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "daemon/report_render.h"

namespace bounced {
namespace {

constexpr size_t kWidth = 78;

std::string Fmt(const char* fmt, double x) {
  char buf[64];
  snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

// Words of `text` wrapped at kWidth, every line starting with `indent`.
std::string Wrap(const std::string& text, const std::string& indent,
                 const std::string& first_indent) {
  std::istringstream in(text);
  std::string word, line = first_indent, out;
  bool empty = true;
  while (in >> word) {
    if (!empty && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line = indent;
      empty = true;
    }
    line += (empty ? "" : " ") + word;
    empty = false;
  }
  if (!empty) out += line + "\n";
  return out;
}

// Length of the UTF-8 sequence `lead` starts (1 for ASCII), 0 when it cannot start one.
size_t Utf8Length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Columns `s` takes: one per character (stored texts are UTF-8, result.h).
size_t Columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// `s` in exactly w columns: cut with a '~' (never inside a character), or padded.
std::string Pad(std::string s, size_t w) {
  if (Columns(s) > w) {
    size_t cut = 0, cols = 0;
    while (cut < s.size() && cols < w - 1) {
      cut += std::max<size_t>(1, Utf8Length(static_cast<unsigned char>(s[cut])));
      ++cols;
    }
    s = s.substr(0, cut) + "~";
  }
  return s + std::string(w - Columns(s), ' ');
}
std::string Right(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

std::string Joined(const std::vector<NamedCount>& v, size_t max) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < max; ++i) {
    s += (i ? ", " : "") + v[i].name + " " + std::to_string(v[i].count);
  }
  return s;
}

std::string Change(const SenderProblem& p) {
  if (!p.change_percent) return "new (none in the previous 7 days)";
  return Fmt("%+.0f%%", *p.change_percent) + " vs previous 7 days (" +
         Fmt("%.1f", p.previous_daily_average) + "/day)";
}

void Section(std::string& out, const std::string& title) {
  out += "\n" + title + "\n" + std::string(std::min(title.size(), kWidth), '-') + "\n";
}

void GroupTable(std::string& out, const std::vector<GroupStats>& groups, const char* first_col) {
  out += "  " + Pad(first_col, 22) + Right("sent", 8) + Right("deferred", 9) + Right("bounced", 8) +
         Right("expired", 8) + Right("rate", 7) + "\n";
  for (const auto& g : groups) {
    out += "  " + Pad(g.name, 22) + Right(std::to_string(g.counts.sent), 8) +
           Right(std::to_string(g.counts.deferred), 9) +
           Right(std::to_string(g.counts.bounced), 8) + Right(std::to_string(g.counts.expired), 8) +
           Right(FormatPercent(g.counts.bounce_rate()), 7) + "\n";
    std::string detail = Joined(g.top_categories, 3);
    if (!g.codes.empty()) detail += (detail.empty() ? "codes: " : "; codes: ") + Joined(g.codes, 3);
    if (!detail.empty()) out += Wrap(detail, "      ", "      ");
  }
}

}  // namespace

std::string FormatPercent(double ratio) { return Fmt("%.1f%%", ratio * 100.0); }

std::string Headline(const Report& r) {
  int64_t sender = 0;
  for (const auto& p : r.sender_problems) sender += p.count;
  std::string s = (r.days == 1 ? r.last_day : r.first_day + ".." + r.last_day) + ": " +
                  std::to_string(r.recipients.bounced + r.recipients.expired) + " bounced (" +
                  FormatPercent(r.recipients.bounce_rate()) + "), " + std::to_string(sender) +
                  " sender-side problem" + (sender == 1 ? "" : "s");
  if (!r.incidents.empty()) {
    s +=
        ", " + std::to_string(r.incidents.size()) + " alert" + (r.incidents.size() == 1 ? "" : "s");
  }
  return s;
}

std::string RenderText(const Report& r) {
  std::string out;
  out +=
      "bounced report for " +
      (r.days == 1 ? r.last_day
                   : r.first_day + " to " + r.last_day + " (" + std::to_string(r.days) + " days)") +
      (r.host.empty() ? "" : " on " + r.host) + "\n";
  out += Headline(r) + "\n";
  if (!r.domain.empty()) out += "Only recipient domain " + r.domain + ".\n";
  out += "Days are UTC. Generated " + r.generated_at +
         (r.database.empty() ? "" : " from " + r.database) + ".\n";

  Section(out, "Totals");
  auto line = [&](const char* what, const OutcomeCounts& c) {
    out += std::string("  ") + what + std::to_string(c.sent) + " sent, " +
           std::to_string(c.deferred) + " deferred, " + std::to_string(c.bounced) + " bounced, " +
           std::to_string(c.expired) + " expired\n";
  };
  line("Recipients: ", r.recipients);
  line("Messages:   ", r.messages);
  out += "  Bounce rate: " + FormatPercent(r.recipients.bounce_rate()) +
         " of recipients whose delivery finished";
  if (r.recipients.complaint) out += "; " + std::to_string(r.recipients.complaint) + " complaints";
  if (r.recipients.blocked) {
    out += "; " + std::to_string(r.recipients.blocked) + " refused as suppressed";
  }
  out += "\n";
  std::string supp = "  Suppressions: " + std::to_string(r.new_suppressions) + " new";
  if (!r.new_suppressions_by_reason.empty()) {
    supp += " (" + Joined(r.new_suppressions_by_reason, 5) + ")";
  }
  supp += ", " + std::to_string(r.lifted_suppressions) + " lifted, " +
          std::to_string(r.manual_changes.size()) + " manual changes";
  out += Wrap(supp.substr(2), "    ", "  ");

  if (!r.incidents.empty()) {
    Section(out, "Alerts: sudden jumps in sender-side problems or hard bounces");
    for (const auto& i : r.incidents) {
      std::string s = "! " + i.provider + " " + i.code + " (" + i.category +
                      "): " + std::to_string(i.count_at_open) + " in " +
                      std::to_string(i.window_seconds / 60) + " min, normally " +
                      Fmt("%.1f", i.expected_per_window) + "; " + FormatUtc(i.opened) +
                      (i.open() ? ", still going" : " to " + FormatUtc(i.closed)) + ", " +
                      std::to_string(i.total_events) + " events";
      out += Wrap(s, "    ", "  ");
    }
  }

  Section(out, "Sender-side problems (fix these on the sending side; recipients are fine)");
  if (r.sender_problems.empty()) out += "  None in this period.\n";
  int n = 0;
  for (const auto& p : r.sender_problems) {
    out += Wrap(std::to_string(++n) + ". " + p.provider_name + " " + p.code + " - " +
                    ProblemCount(p, std::to_string(p.count)) + ", " + Change(p) + "; " +
                    p.category + (p.cause.empty() ? "" : " (" + p.cause + ")"),
                "     ", "  ");
    if (!p.advice_title.empty()) out += Wrap(p.advice_title, "     ", "     ");
    for (const auto& s : p.samples) out += Wrap("> " + s, "       ", "     ");
    if (!p.sender_domains.empty()) out += Wrap("From: " + SenderDomains(p), "     ", "     ");
    if (!p.advice_why.empty()) out += Wrap(p.advice_why, "     ", "     ");
    if (!p.advice_steps.empty()) out += "     What to do:\n";
    for (const auto& s : p.advice_steps) out += Wrap(s, "       ", "     - ");
  }

  Section(out, "Providers");
  if (r.providers.empty())
    out += "  No deliveries in this period.\n";
  else
    GroupTable(out, r.providers, "provider");

  Section(out, "Recipient domains (most failures first)");
  if (r.domains.empty())
    out += "  No deliveries in this period.\n";
  else
    GroupTable(out, r.domains, "domain");

  Section(out, "Failed deliveries on " + r.last_day + " by category");
  if (r.day_categories.empty()) out += "  None.\n";
  int64_t max = 1;
  for (const auto& c : r.day_categories) max = std::max(max, c.count);
  for (const auto& c : r.day_categories) {
    out += "  " + Pad(c.name, 22) + Right(std::to_string(c.count), 7) + "  " +
           std::string(static_cast<size_t>(std::max<int64_t>(1, c.count * 40 / max)), '#') + "\n";
  }

  auto changes = [&](const char* title, const std::vector<SuppressionChange>& v, int64_t total) {
    if (v.empty()) return;
    Section(out, std::string(title) + " (" + std::to_string(total) + ", newest " +
                     std::to_string(v.size()) + " shown)");
    for (const auto& c : v) {
      const std::string note = c.action == "remove" ? ChangeNote(c) : "";
      out += Wrap(FormatUtc(c.time) + " " + c.address + ": " + c.reason +
                      (c.category.empty() ? "" : " (" + c.category + ")") + ", " + c.source +
                      (note.empty() ? "" : "; lifted: " + note),
                  "      ", "  ");
    }
  };
  changes("New suppressions", r.new_suppression_list, r.new_suppressions);
  changes("Lifted suppressions", r.lifted_list, r.lifted_suppressions);
  if (!r.manual_changes.empty()) {
    Section(out, "Manual changes");
    for (const auto& m : r.manual_changes) {
      out += Wrap(FormatUtc(m.time) + " uid " + std::to_string(m.actor_uid) + " " + m.action + " " +
                      m.target + ": " + m.reason,
                  "      ", "  ");
    }
  }

  if (!r.trend.days.empty()) {
    Section(out,
            "Failed deliveries per day, " + r.trend.days.front() + " to " + r.trend.days.back());
    auto rows = [&](const std::vector<Series>& v) {
      for (const auto& s : v) {
        std::string vals;
        for (int64_t x : s.values) {
          // Two appends, not " " + to_string(x): GCC 12 at -O3 warns of a bogus overlap
          // (-Wrestrict) in the temporary's insert.
          if (!vals.empty()) vals += ' ';
          vals += std::to_string(x);
        }
        out += Wrap(vals, std::string(22, ' '), "  " + Pad(s.name, 19) + " ");
      }
    };
    rows(r.trend.providers);
    if (!r.trend.categories.empty()) out += "\n";
    rows(r.trend.categories);
  }
  return out;
}

}  // namespace bounced
