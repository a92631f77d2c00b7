// session.cc: the milter's pure decisions (see session.h): path detection, RCPT decision, reply
// templates, bounce sniffing, message capture with a cap, removal header, quarantine file.
#include "milter/session.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/file_write.h"

namespace bounced::milter_internal {
namespace {

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

bool IContains(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    if (IEquals(hay.substr(i, needle.size()), needle)) return true;
  }
  return false;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Printable ASCII only: a reply text or header value must never carry CR/LF or controls.
std::string Printable(std::string_view s, size_t max) {
  std::string out;
  out.reserve(std::min(s.size(), max));
  for (char c : s) {
    if (out.size() >= max) break;
    unsigned char u = static_cast<unsigned char>(c);
    out.push_back(u >= 0x20 && u < 0x7f ? c : '?');
  }
  return out;
}

std::string FormatDate(int64_t unix_seconds) {
  if (unix_seconds <= 0) return "unknown date";
  time_t t = static_cast<time_t>(unix_seconds);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

constexpr std::string_view kPlaceholders[] = {"{addr}", "{since}", "{category}", "{reason}"};

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

MailPath ClassifyPath(std::string_view hostname, int family, std::string_view address, int port) {
  if (family == AF_INET && port == 0 && address == "127.0.0.1" && hostname == "localhost")
    return MailPath::kNonSmtpd;
  return MailPath::kSmtpd;
}

std::string_view StripAngles(std::string_view address) {
  address = Trim(address);
  if (address.size() >= 2 && address.front() == '<' && address.back() == '>') {
    address = address.substr(1, address.size() - 2);
  }
  return Trim(address);
}

Status CheckReplyTemplate(std::string_view tmpl, char code_class) {
  if (tmpl.size() < 4 || !std::isdigit(static_cast<unsigned char>(tmpl[0])) ||
      !std::isdigit(static_cast<unsigned char>(tmpl[1])) ||
      !std::isdigit(static_cast<unsigned char>(tmpl[2])) || tmpl[3] != ' ') {
    return Status::Error("must start with a 3-digit reply code and a space");
  }
  if (tmpl[0] != code_class) {
    return Status::Error(std::string("reply code must be ") + code_class + "xx");
  }
  std::string_view rest = tmpl.substr(4);
  size_t sp = rest.find(' ');
  std::string_view xcode = rest.substr(0, sp);
  int dots = 0;
  for (char c : xcode) {
    if (c == '.') {
      ++dots;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return Status::Error("second word must be an enhanced status code like " +
                           std::string(1, code_class) + ".1.1");
    }
  }
  if (dots != 2 || xcode.empty() || xcode[0] != code_class) {
    return Status::Error("enhanced status code must be " + std::string(1, code_class) + ".X.Y");
  }
  for (char c : tmpl) {
    if (c == '\r' || c == '\n') return Status::Error("must be one line");
  }
  for (size_t pos = tmpl.find('{'); pos != std::string_view::npos; pos = tmpl.find('{', pos + 1)) {
    bool known = false;
    for (auto p : kPlaceholders) known = known || tmpl.substr(pos, p.size()) == p;
    if (!known) {
      return Status::Error("unknown placeholder at '" + std::string(tmpl.substr(pos, 12)) +
                           "' (known: {addr} {since} {category} {reason})");
    }
  }
  return Status::Ok();
}

Reply RenderReply(std::string_view tmpl, std::string_view address, const MilterSuppression& s) {
  Reply r;
  r.code = std::string(tmpl.substr(0, 3));
  std::string_view rest = tmpl.size() > 4 ? tmpl.substr(4) : std::string_view();
  size_t sp = rest.find(' ');
  r.xcode = std::string(rest.substr(0, sp));
  std::string_view body = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
  std::string text;
  text.reserve(body.size() + address.size() + 16);
  while (!body.empty()) {
    size_t open = body.find('{');
    text.append(body.substr(0, open));
    if (open == std::string_view::npos) break;
    body.remove_prefix(open);
    if (body.starts_with("{addr}")) {
      text.append(Printable(address, 320));
      body.remove_prefix(6);
    } else if (body.starts_with("{since}")) {
      text.append(FormatDate(s.since_unix));
      body.remove_prefix(7);
    } else if (body.starts_with("{category}")) {
      // A manual entry without a category reads better as its reason.
      text.append(s.category == Category::kUndetermined ? Printable(s.reason, 32)
                                                        : std::string(ToString(s.category)));
      body.remove_prefix(10);
    } else if (body.starts_with("{reason}")) {
      text.append(Printable(s.reason, 32));
      body.remove_prefix(8);
    } else {
      text.push_back('{');
      body.remove_prefix(1);
    }
  }
  // libmilter hands the text to a printf-style formatter on some paths: double every '%'.
  std::string escaped;
  escaped.reserve(text.size());
  for (char c : Printable(text, 900)) {
    escaped.push_back(c);
    if (c == '%') escaped.push_back('%');
  }
  r.text = std::move(escaped);
  return r;
}

Reply StorageTempfailReply() {
  return Reply{"451", "4.3.0", "bounced: suppression list unavailable, try again later"};
}

RcptDecision DecideRcpt(const MilterConfig& config, MailPath path, bool null_sender,
                        std::string_view address,
                        const Expected<std::optional<MilterSuppression>>& lookup) {
  RcptDecision d;
  if (!lookup.ok()) {
    d.storage_error = true;
    if (config.on_storage_error == StorageErrorPolicy::kTempfail && path == MailPath::kSmtpd &&
        !null_sender) {
      d.kind = RcptDecision::Kind::kTempfail;
      d.reply = StorageTempfailReply();
    }
    return d;
  }
  if (!lookup.value()) return d;
  d.hit = *lookup.value();
  // A bounce (null sender) is never refused: its recipient is one of our own senders.
  if (null_sender) return d;
  RcptAction action = config.ActionFor(d.hit->category);
  if (path == MailPath::kNonSmtpd) {
    // Postfix forbids refusing recipients of non-SMTP mail; only "reject" removes them (at end
    // of message). "tempfail" would lose the recipient for good here, so it only records.
    if (action == RcptAction::kReject) {
      d.remove_at_eom = true;
    } else {
      d.record = EnforcementKind::kLogged;
    }
    return d;
  }
  switch (action) {
    case RcptAction::kReject:
      d.kind = RcptDecision::Kind::kReject;
      d.reply = RenderReply(config.reject_reply, address, *d.hit);
      d.record = EnforcementKind::kRejected;
      break;
    case RcptAction::kTempfail:
      d.kind = RcptDecision::Kind::kTempfail;
      d.reply = RenderReply(config.tempfail_reply, address, *d.hit);
      d.record = EnforcementKind::kTempfailed;
      break;
    case RcptAction::kLog:
      d.record = EnforcementKind::kLogged;
      break;
  }
  return d;
}

void BounceSniffer::Header(std::string_view name, std::string_view value) {
  if (candidate_) return;
  value = Trim(value);
  if (IEquals(name, "Content-Type")) {
    candidate_ = IContains(value, "multipart/report");
  } else if (IEquals(name, "Auto-Submitted")) {
    candidate_ = !value.empty() && !IEquals(value.substr(0, 2), "no");
  } else if (IEquals(name, "X-Autoreply") || IEquals(name, "X-Autorespond") ||
             IEquals(name, "X-Autoresponse")) {
    candidate_ = true;
  } else if (IEquals(name, "Precedence")) {
    candidate_ = IEquals(value, "auto_reply");
  }
}

void MessageBuffer::Append(std::string_view s) {
  if (truncated_) return;
  if (bytes_.size() + s.size() > cap_) {
    bytes_.append(s.substr(0, cap_ - bytes_.size()));
    truncated_ = true;
    return;
  }
  bytes_.append(s);
}

void MessageBuffer::Header(std::string_view name, std::string_view value) {
  // Postfix gives folded values with their line breaks (LF or CRLF); keep them as they are.
  Append(name);
  Append(": ");
  Append(value);
  Append("\r\n");
}

void MessageBuffer::EndOfHeaders() { Append("\r\n"); }

void MessageBuffer::Body(std::string_view chunk) { Append(chunk); }

std::string RemovalHeaderValue(const std::vector<PendingRemoval>& removed) {
  std::string v;
  for (const auto& r : removed) {
    if (!v.empty()) v.append(", ");
    v.append(Printable(r.address, 320));
    v.append(" (");
    v.append(r.suppression.category == Category::kUndetermined
                 ? Printable(r.suppression.reason, 32)
                 : std::string(ToString(r.suppression.category)));
    v.append(")");
    if (v.size() > 900) {
      v.append(", ...");
      break;
    }
  }
  return v;
}

Expected<std::string> WriteQuarantine(const std::string& dir, std::string_view dedup_key,
                                      std::string_view message) {
  char name[96];
  snprintf(name, sizeof name, "%lld-%016llx", static_cast<long long>(time(nullptr)),
           static_cast<unsigned long long>(Fnv1a(dedup_key)));
  std::string final_path = dir + "/" + name + ".eml";
  std::string tmp_path = dir + "/." + name + ".tmp";
  int fd = open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Error("quarantine: open " + tmp_path + ": " + strerror(errno));
  if (Status s = WriteAndRename(fd, tmp_path, final_path, message, true); !s.ok()) {
    return Status::Error("quarantine: " + s.message());
  }
  return final_path;
}

}  // namespace bounced::milter_internal
