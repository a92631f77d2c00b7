// report_render.h: the daily report as text, HTML and JSON. Pure functions of a Report
// (report_model.h), so the three forms always carry the same numbers.
//
// - Text: 78 columns, for terminals and the text/plain part of the mail.
// - HTML: one self-contained page (inline CSS, inline SVG charts, a Content-Security-Policy that
//   forbids every fetch), readable on a phone and in mail clients; every string from the
//   database (remote replies, addresses) is escaped.
// - JSON: stable field names for dashboards (documented in the README, "report_version": 1).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "daemon/report_model.h"

namespace bounced {

std::string RenderText(const Report& report);
std::string RenderHtml(const Report& report);
nlohmann::json ReportToJson(const Report& report);
// ReportToJson, indented, with a final newline.
std::string RenderJson(const Report& report);

// "12.3%" (one decimal).
std::string FormatPercent(double ratio);
// The one-line headline used as mail subject suffix and page title:
// "2026-11-28: 120 bounced (1.0%), 37 sender-side rejections, 1 alert".
std::string Headline(const Report& report);

}  // namespace bounced
