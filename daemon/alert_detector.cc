// alert_detector.cc: the sliding-window spike detector (see alert_detector.h).
#include "daemon/alert_detector.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <utility>

namespace bounced {
namespace {

constexpr int64_t kMinute = 60;
// Recipient domains remembered per key for the incident's details (the window's events).
constexpr size_t kMaxRecentDomains = 10000;

int64_t Minutes(int64_t seconds) { return std::max<int64_t>(1, (seconds + kMinute - 1) / kMinute); }

std::string KeyCode(const RejectionEvent& e) {
  if (!e.provider_code.empty()) return e.provider_code;
  if (!e.status.empty()) return e.status;
  return e.category;
}

// Counts one event's sender domain in the incident ("" = not known: not counted), past
// kMaxIncidentSenderDomains ones as "other".
void CountSenderDomain(Incident* i, const std::string& domain) {
  if (domain.empty()) return;
  auto it = i->sender_domains.find(domain);
  if (it == i->sender_domains.end()) {
    const bool full = i->sender_domains.size() >= kMaxIncidentSenderDomains;
    it = i->sender_domains.try_emplace(full ? "other" : domain, 0).first;
  }
  ++it->second;
}

}  // namespace

std::string FormatUtc(int64_t unix_time) {
  time_t t = static_cast<time_t>(unix_time);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

// What lifts a hard-bounce incident's suppressions if the domain failed rather than its
// addresses: from a window before it opened (the burst's first bounces), as a dry run first.
std::string HardBounceRemedy(const Incident& i) {
  return "bouncectl unsuppress --domain " + i.provider + " --since " +
         FormatUtc(i.opened - i.window_seconds) + " --dry-run";
}

}  // namespace

nlohmann::json ToJson(const Incident& i) {
  nlohmann::json domains = nlohmann::json::object();
  for (const auto& [d, n] : i.domains) domains[d] = n;
  nlohmann::json sender_domains = nlohmann::json::object();
  for (const auto& [d, n] : i.sender_domains) sender_domains[d] = n;
  nlohmann::json j = {
      {"id", i.id},
      {"kind", i.kind},
      {"provider", i.provider},
      {"code", i.code},
      {"category", i.category},
      {"opened", FormatUtc(i.opened)},
      {"last_event", FormatUtc(i.last_event)},
      {"closed", i.open() ? nlohmann::json(nullptr) : nlohmann::json(FormatUtc(i.closed))},
      {"open", i.open()},
      {"window_seconds", i.window_seconds},
      {"count_at_open", i.count_at_open},
      {"peak_count", i.peak_count},
      {"total_events", i.total_events},
      {"expected_per_window", std::round(i.expected_per_window * 100) / 100},
      {"threshold", std::round(i.threshold * 100) / 100},
      {"sample", i.sample},
      {"domains", std::move(domains)},
      {"sender_domains", std::move(sender_domains)}};
  if (i.kind == kIncidentHardBounces) j["remedy"] = HardBounceRemedy(i);
  return j;
}

std::string DescribeIncident(const Incident& i) {
  char expected[32];
  snprintf(expected, sizeof expected, "%.1f", i.expected_per_window);
  if (i.kind == kIncidentHardBounces) {
    std::string s = "hard-bounce spike at " + i.provider + ": " + std::to_string(i.count_at_open) +
                    " in the last " + std::to_string(i.window_seconds / 60) + " min (" +
                    i.category + " first), normally " + expected + "; since " +
                    FormatUtc(i.opened) +
                    ". A list gone stale, or the domain's own failure read as unknown users; if "
                    "the domain failed, once it works again: " +
                    HardBounceRemedy(i) + ", then with --reason";
    if (!i.sample.empty()) s += "; sample: " + i.sample;
    return s;
  }
  std::string s = "sender-side rejection spike: " + i.provider + " " + i.code + " (" + i.category +
                  "): " + std::to_string(i.count_at_open) + " in the last " +
                  std::to_string(i.window_seconds / 60) + " min, normally " + expected +
                  "; since " + FormatUtc(i.opened);
  if (!i.sample.empty()) s += "; sample: " + i.sample;
  return s;
}

SpikeDetector::SpikeDetector(AlertThresholds thresholds) : thresholds_(thresholds) {
  thresholds_.window_seconds = std::max<int64_t>(kMinute, thresholds_.window_seconds);
  thresholds_.baseline_seconds = std::max<int64_t>(0, thresholds_.baseline_seconds);
  thresholds_.min_count = std::max<int64_t>(1, thresholds_.min_count);
  thresholds_.hard_bounce_min_count = std::max<int64_t>(0, thresholds_.hard_bounce_min_count);
  if (!(thresholds_.factor >= 1.0)) thresholds_.factor = 1.0;
}

int64_t SpikeDetector::WindowCount(const KeyState& s, int64_t now) const {
  const int64_t last = now / kMinute;
  const int64_t first = last - Minutes(thresholds_.window_seconds) + 1;
  int64_t n = 0;
  for (auto it = s.minutes.lower_bound(first); it != s.minutes.end() && it->first <= last; ++it) {
    n += it->second;
  }
  return n;
}

double SpikeDetector::ExpectedPerWindow(const KeyState& s, int64_t now) const {
  const int64_t w = Minutes(thresholds_.window_seconds);
  const int64_t baseline_last = now / kMinute - w;  // the minute just before the window
  // Only the part of the baseline period the detector has actually seen counts: right after a
  // start the history is short, and pretending it was silent would inflate nothing but would
  // make the average meaningless.
  const int64_t span =
      std::min(thresholds_.baseline_seconds / kMinute, baseline_last - first_seen_ / kMinute + 1);
  if (span <= 0) return 0;
  const int64_t baseline_first = baseline_last - span + 1;
  int64_t n = 0;
  for (auto it = s.minutes.lower_bound(baseline_first);
       it != s.minutes.end() && it->first <= baseline_last; ++it) {
    n += it->second;
  }
  return static_cast<double>(n) * static_cast<double>(w) / static_cast<double>(std::max(span, w));
}

void SpikeDetector::Prune(KeyState& s, int64_t now) {
  const int64_t horizon =
      now / kMinute - Minutes(thresholds_.window_seconds) - thresholds_.baseline_seconds / kMinute;
  s.minutes.erase(s.minutes.begin(), s.minutes.lower_bound(horizon));
}

std::optional<Incident> SpikeDetector::MaybeClose(KeyState& s, int64_t now) {
  if (!s.incident) return std::nullopt;
  // Over when the window falls below half of today's threshold: the burst has stopped, or a
  // lasting change has become the new normal as the baseline caught up with it. The half is
  // hysteresis, so a rate hovering at the threshold does not open and close incidents.
  const double now_threshold =
      std::max(static_cast<double>(MinCount(s)), thresholds_.factor * ExpectedPerWindow(s, now));
  if (static_cast<double>(WindowCount(s, now)) >= now_threshold / 2) return std::nullopt;
  Incident done = std::move(*s.incident);
  s.incident.reset();
  // Noticed at `now` (the next event or tick), but over by the time its last event left the
  // window at the latest.
  done.closed =
      std::max(done.last_event, std::min(now, done.last_event + thresholds_.window_seconds));
  closed_.push_back(done);
  while (closed_.size() > thresholds_.max_recent) closed_.pop_front();
  return done;
}

std::optional<Incident> SpikeDetector::Observe(const RejectionEvent& e) {
  if (e.hard_bounce && thresholds_.hard_bounce_min_count == 0) return std::nullopt;
  if (first_seen_ == 0 || e.unix_time < first_seen_) first_seen_ = e.unix_time;
  newest_ = std::max(newest_, e.unix_time);
  const int64_t now = newest_;
  // Hard bounces are counted per recipient domain, under a code no provider uses.
  const std::string& named = e.hard_bounce ? e.recipient_domain : e.provider;
  const std::string provider = named.empty() ? "other" : named;
  const std::string code = e.hard_bounce ? kHardBounceCode : KeyCode(e);
  KeyState& s = keys_[provider + '\x1f' + code];
  s.hard_bounce = e.hard_bounce;

  Prune(s, now);
  MaybeClose(s, now);
  const int64_t horizon =
      now / kMinute - Minutes(thresholds_.window_seconds) - thresholds_.baseline_seconds / kMinute;
  if (e.unix_time / kMinute < horizon) return std::nullopt;  // too old to matter
  s.minutes[e.unix_time / kMinute] += 1;
  s.recent.push_back({e.unix_time, e.recipient_domain, e.sender_domain});
  const int64_t window_start = now - thresholds_.window_seconds;
  while (!s.recent.empty() &&
         (s.recent.front().time <= window_start || s.recent.size() > kMaxRecentDomains)) {
    s.recent.pop_front();
  }

  const int64_t in_window = WindowCount(s, now);
  if (s.incident) {
    Incident& i = *s.incident;
    i.last_event = std::max(i.last_event, e.unix_time);
    i.peak_count = std::max(i.peak_count, in_window);
    i.total_events += 1;
    if (!e.recipient_domain.empty()) i.domains[e.recipient_domain] += 1;
    CountSenderDomain(&i, e.sender_domain);
    return std::nullopt;
  }
  const double expected = ExpectedPerWindow(s, now);
  const double threshold =
      std::max(static_cast<double>(MinCount(s)), thresholds_.factor * expected);
  if (static_cast<double>(in_window) < threshold) return std::nullopt;

  Incident i;
  i.id = next_id_++;
  i.kind = e.hard_bounce ? kIncidentHardBounces : kIncidentSenderSide;
  i.provider = provider;
  i.code = code;
  i.category = e.category;
  i.opened = e.unix_time;
  i.last_event = e.unix_time;
  i.window_seconds = thresholds_.window_seconds;
  i.count_at_open = in_window;
  i.peak_count = in_window;
  i.total_events = in_window;
  i.expected_per_window = expected;
  i.threshold = threshold;
  i.sample = e.diagnostic;
  for (const KeyState::Recent& r : s.recent) {
    if (!r.domain.empty()) i.domains[r.domain] += 1;
    CountSenderDomain(&i, r.sender_domain);
  }
  s.incident = i;
  return i;
}

std::vector<Incident> SpikeDetector::Advance(int64_t now) {
  newest_ = std::max(newest_, now);
  std::vector<Incident> done;
  for (auto it = keys_.begin(); it != keys_.end();) {
    Prune(it->second, newest_);
    if (auto c = MaybeClose(it->second, newest_)) done.push_back(std::move(*c));
    if (it->second.minutes.empty() && !it->second.incident) {
      it = keys_.erase(it);  // keeps memory bounded by the keys seen in the baseline period
    } else {
      ++it;
    }
  }
  return done;
}

std::vector<Incident> SpikeDetector::Open() const {
  std::vector<Incident> out;
  for (const auto& [key, s] : keys_) {
    if (s.incident) out.push_back(*s.incident);
  }
  std::sort(out.begin(), out.end(),
            [](const Incident& a, const Incident& b) { return a.id < b.id; });
  return out;
}

}  // namespace bounced
