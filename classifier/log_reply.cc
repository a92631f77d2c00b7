// log_reply.cc: see log_reply.h.
#include "classifier/log_reply.h"

#include <cstring>

#include "classifier/text.h"

namespace bounced::log_internal {
namespace {

using sv = std::string_view;

bool StartsWith(sv s, sv p) {
  return s.size() >= p.size() && memcmp(s.data(), p.data(), p.size()) == 0;
}

// "H[ip]..." -> "H"; a bare "H" stays.
sv HostOfToken(sv token) {
  size_t b = token.find('[');
  return b == sv::npos ? token : token.substr(0, b);
}

// The token after `prefix` up to the next ' ' (or ':' directly after "]").
sv HostAfter(sv text, size_t from) {
  sv rest = text.substr(from);
  size_t end = rest.find(' ');
  sv token = rest.substr(0, end);
  size_t rb = token.find(']');
  if (rb != sv::npos) token = token.substr(0, rb + 1);
  return HostOfToken(token);
}

}  // namespace

ReasonParts AnalyzeReason(std::string_view reason) {
  ReasonParts out;
  sv r = reason;
  static constexpr sv kSuspended = "delivery temporarily suspended: ";
  if (StartsWith(r, kSuspended)) {
    r.remove_prefix(kSuspended.size());
    out.suspended = true;
  }
  out.reply = r;
  if (StartsWith(r, "host ")) {
    size_t sp = r.find(' ', 5);
    if (sp == sv::npos) return out;
    out.remote_host = HostOfToken(r.substr(5, sp - 5));
    sv after = r.substr(sp + 1);
    static constexpr sv kSaid = "said: ";
    static constexpr sv kRefused = "refused to talk to me: ";
    if (StartsWith(after, kSaid)) {
      sv reply = after.substr(kSaid.size());
      size_t in = reply.rfind(" (in reply to ");
      if (in != sv::npos) {
        sv cmd = reply.substr(in + 14);
        size_t c = cmd.find(" command)");
        if (c != sv::npos) out.stage = NormalizeStage(cmd.substr(0, c));
        reply = reply.substr(0, in);
      }
      out.reply = reply;
    } else if (StartsWith(after, kRefused)) {
      out.reply = after.substr(kRefused.size());
      out.stage = "connect";
    }
    return out;
  }
  if (StartsWith(r, "connect to ")) {
    out.remote_host = HostAfter(r, 11);
    out.stage = "connect";
    return out;
  }
  if (StartsWith(r, "lost connection with ") || StartsWith(r, "conversation with ")) {
    out.remote_host = HostAfter(r, r[0] == 'l' ? 21 : 18);
    if (r.find("initial server greeting") != sv::npos) {
      out.stage = "connect";
    } else {
      out.stage = StageFromText(r);
    }
    return out;
  }
  return out;
}

std::string_view RelayHost(std::string_view relay) {
  size_t b = relay.find('[');
  if (b == sv::npos || b == 0) return {};
  return relay.substr(0, b);
}

void BuildReplyKey(std::string_view provider, std::string_view dsn, std::string_view action,
                   std::string_view reason, std::string* key) {
  key->clear();
  key->append(provider);
  key->push_back('\x1f');
  key->append(dsn);
  key->push_back('\x1f');
  key->append(action);
  key->push_back('\x1f');
  size_t i = 0;
  const size_t n = reason.size();
  while (i < n) {
    if (reason[i] == ' ') {
      key->push_back(' ');
      ++i;
      continue;
    }
    size_t start = i;
    int digits = 0;
    int digit_run = 0, max_digit_run = 0, letters = 0;
    bool at = false, bracket_ip = false;
    while (i < n && reason[i] != ' ') {
      char c = reason[i];
      if (c >= '0' && c <= '9') {
        ++digits;
        if (++digit_run > max_digit_run) max_digit_run = digit_run;
      } else {
        digit_run = 0;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) ++letters;
        if (c == '@') {
          at = true;
        } else if (c == '[' && i + 1 < n && reason[i + 1] >= '0' && reason[i + 1] <= '9') {
          bracket_ip = true;
        }
      }
      ++i;
    }
    size_t len = i - start;
    if (at || bracket_ip || (len >= 16 && digits >= 4) || (letters == 0 && max_digit_run >= 6)) {
      key->push_back('\x01');
    } else {
      key->append(reason.substr(start, len));
    }
  }
}

}  // namespace bounced::log_internal
