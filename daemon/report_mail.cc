// report_mail.cc: MIME building and sendmail hand-over for the daily report (report_mail.h).
#include "daemon/report_mail.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "daemon/base64.h"

extern char** environ;

namespace bounced {
namespace {

// `in` in base64, 76 characters a line, each line ended by "\n".
std::string Base64Lines(const std::string& in) {
  const std::string encoded = Base64Encode(in);
  std::string out;
  out.reserve(encoded.size() + encoded.size() / 76 + 1);
  for (size_t i = 0; i < encoded.size(); i += 76) {
    out.append(encoded, i, 76);
    out += '\n';
  }
  return out;
}

bool Ascii(const std::string& s) {
  for (unsigned char c : s) {
    if (c >= 0x80) return false;
  }
  return true;
}

// Headers carry configuration and database text: drop anything that could end a header line.
std::string HeaderSafe(const std::string& s) {
  std::string o;
  for (unsigned char c : s) o += (c < 0x20 || c == 0x7f) ? ' ' : static_cast<char>(c);
  return o;
}

// RFC 2047 section 2: a header line that holds encoded-words is at most 76 characters. 39 bytes
// of text are 52 base64 characters, a 64-character "=?UTF-8?B?...?=" word: 73 with "Subject: ".
constexpr size_t kEncodedWordBytes = 39;

// Non-ASCII text as encoded-words, one per folded header line. A
// word never ends inside a UTF-8 character (each must decode on its own, RFC 2047 section 5).
std::string EncodeSubject(const std::string& s) {
  std::string clean = HeaderSafe(s);
  if (Ascii(clean)) return clean;
  std::string out;
  size_t i = 0;
  while (i < clean.size()) {
    size_t end = std::min(clean.size(), i + kEncodedWordBytes);
    // Back up over continuation bytes to the start of the character the cut would split.
    if (end < clean.size()) {
      size_t cut = end;
      while (cut > i && (static_cast<unsigned char>(clean[cut]) & 0xC0) == 0x80) --cut;
      if (cut > i) end = cut;
    }
    std::string b64 = Base64Lines(clean.substr(i, end - i));
    std::erase(b64, '\n');
    out += (out.empty() ? "" : "\n ") + ("=?UTF-8?B?" + b64 + "?=");
    i = end;
  }
  return out;
}

}  // namespace

std::string BuildReportMail(const ReportMail& m) {
  char date[64];
  time_t t = static_cast<time_t>(m.date);
  struct tm tm {};
  gmtime_r(&t, &tm);
  strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S +0000", &tm);
  const std::string boundary = "=_bounced_report_" + HeaderSafe(m.boundary_seed);
  std::string to;
  for (const auto& a : m.to) to += (to.empty() ? "" : ", ") + HeaderSafe(a);
  std::string msg;
  if (!m.from.empty()) msg += "From: " + HeaderSafe(m.from) + "\n";
  msg += "To: " + to + "\n";
  msg += "Subject: " + EncodeSubject(m.subject) + "\n";
  msg += std::string("Date: ") + date + "\n";
  msg += "MIME-Version: 1.0\n";
  msg += "Auto-Submitted: auto-generated\n";  // RFC 3834: no vacation replies to a robot
  msg += "X-Mailer: bounced report\n";
  msg += "Content-Type: multipart/alternative; boundary=\"" + boundary + "\"\n\n";
  msg += "This is the bounced daily report in text and HTML.\n\n";
  msg += "--" + boundary + "\n";
  msg += "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n";
  msg += Base64Lines(m.text);
  msg += "--" + boundary + "\n";
  msg += "Content-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: base64\n\n";
  msg += Base64Lines(m.html);
  msg += "--" + boundary + "--\n";
  return msg;
}

Status CheckMailAddress(std::string_view address) {
  if (address.empty()) return Status::Error("empty address");
  for (unsigned char c : address) {
    if (c < 0x20 || c == 0x7f) return Status::Error("control character in the address");
    if (c >= 0x80) return Status::Error("not ASCII");
    if (c == ' ' || c == '\t') return Status::Error("a blank in the address");
    if (c == ',') return Status::Error("a comma in the address (one address per entry)");
  }
  if (address[0] == '-') return Status::Error("starts with '-' (a sendmail option)");
  const size_t at = address.rfind('@');
  if (at == std::string_view::npos) return Status::Error("no @domain");
  const std::string_view local = address.substr(0, at);
  const std::string_view domain = address.substr(at + 1);
  if (local.empty()) return Status::Error("empty local part");
  if (domain.empty()) return Status::Error("empty domain");
  constexpr std::string_view kAtextSpecials = "!#$%&'*+-/=?^_`{|}~";
  for (char c : local) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' &&
        kAtextSpecials.find(c) == std::string_view::npos) {
      return Status::Error(std::string("'") + c + "' in the local part");
    }
  }
  if (local.front() == '.' || local.back() == '.' || local.find("..") != std::string_view::npos) {
    return Status::Error("a dot at the start or end of the local part, or two in a row");
  }
  if (domain.front() == '[') {
    // An address literal: "[192.0.2.1]", "[IPv6:2001:db8::1]".
    bool ok = domain.size() > 2 && domain.back() == ']';
    for (char c : domain.substr(1, domain.size() - 2)) {
      ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == ':');
    }
    return ok ? Status::Ok() : Status::Error("bad address literal in the domain");
  }
  size_t label = 0;
  for (char c : domain) {
    if (c == '.') {
      if (label == 0) break;
      label = 0;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-') {
      ++label;
    } else {
      return Status::Error(std::string("'") + c + "' in the domain");
    }
  }
  if (label == 0) return Status::Error("an empty label in the domain");
  return Status::Ok();
}

Expected<std::vector<std::string>> ParseRecipients(const std::string& list) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < list.size()) {
    const size_t end = list.find_first_of(", \t", i);
    const std::string entry = list.substr(i, end == std::string::npos ? end : end - i);
    i = end == std::string::npos ? list.size() : end + 1;
    if (entry.empty()) continue;
    if (Status s = CheckMailAddress(entry); !s) {
      // A control character is not echoed: it could break the line the error is printed on.
      const bool printable = s.message().find("control") == std::string::npos;
      return Status::Error("not a mail address" +
                           (printable ? ": '" + entry + "'" : std::string()) + ": " + s.message());
    }
    out.push_back(entry);
  }
  if (out.empty()) return Status::Error("no mail address given");
  return out;
}

Status SendReportMail(const std::string& sendmail_path, const ReportMail& mail) {
  if (mail.to.empty()) return Status::Error("mail: no recipients");
  const std::string message = BuildReportMail(mail);
  std::vector<std::string> args = {sendmail_path, "-oi"};
  if (!mail.from.empty()) {
    args.push_back("-f");
    args.push_back(mail.from);
  }
  args.push_back("--");
  for (const auto& a : mail.to) args.push_back(a);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return Status::Error(std::string("mail: pipe: ") + strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[0], STDIN_FILENO);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, sendmail_path.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[0]);
  if (rc != 0) {
    close(fds[1]);
    return Status::Error("mail: cannot run " + sendmail_path + ": " + strerror(rc));
  }
  // sendmail reads everything before it exits; a broken pipe means it failed, which its exit
  // status reports better than SIGPIPE would.
  struct sigaction ign {
  }, old{};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old);
  size_t off = 0;
  while (off < message.size()) {
    ssize_t n = write(fds[1], message.data() + off, message.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  close(fds[1]);
  sigaction(SIGPIPE, &old, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (off < message.size()) return Status::Error("mail: " + sendmail_path + " stopped reading");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::Error("mail: " + sendmail_path + " failed (exit status " +
                         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
  }
  return Status::Ok();
}

}  // namespace bounced
