// log_source.cc: see log_source.h.
#include "daemon/ctl/log_source.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <utility>

namespace bounced::ctl {

LogSource::LogSource(std::vector<std::string> files) : files_(std::move(files)) {
  if (files_.empty()) files_.push_back("-");
}

LogSource::~LogSource() { Close(false); }

void LogSource::Fail(const std::string& what) {
  std::cerr << "bouncectl parse-log: " << what << '\n';
  failed_ = true;
}

bool LogSource::OpenNext() {
  while (next_ < files_.size()) {
    std::string error;
    input_.emplace(files_[next_++], &error);
    if (error.empty()) {
      check_first_ = true;
      return true;
    }
    input_.reset();
    Fail(error);
  }
  return false;
}

void LogSource::Close(bool read_to_end) {
  if (!input_) return;
  if (const std::string failure = input_->Finish(read_to_end); !failure.empty())
    Fail(failure + "; its lines up to there were read");
  input_.reset();
}

size_t LogSource::Read(char* buf, size_t n) {
  for (;;) {
    if (!input_) {
      if (next_ >= files_.size()) return 0;
      const bool between = any_;
      if (!OpenNext()) return 0;
      // The previous file left its last line open: end it, so that lines never join.
      if (between && last_ != '\n') {
        last_ = '\n';
        buf[0] = '\n';
        return 1;
      }
    }
    const ssize_t got = ::read(input_->fd(), buf, n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int saved = errno;
      Fail("cannot read " + input_->name() + ": " + std::strerror(saved));
      Close(false);
      continue;
    }
    if (got == 0) {
      Close(true);
      continue;
    }
    if (check_first_) {
      check_first_ = false;
      if (std::string refused = input_->Refused(buf, static_cast<size_t>(got)); !refused.empty()) {
        Fail(refused);
        Close(false);
        continue;
      }
    }
    any_ = true;
    last_ = buf[got - 1];
    return static_cast<size_t>(got);
  }
}

namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Where a file stands in its rotated log: the log's name, and a key that sorts oldest first.
struct Rotation {
  std::string log;
  int kind = 2;         // 0 numbered (log.N), 1 dated (log-YYYYMMDD), 2 the log itself
  uint64_t number = 0;  // N
  std::string date;
};

Rotation RotationOf(std::string_view name) {
  for (std::string_view z : {".gz", ".bz2", ".xz", ".zst"}) {
    if (name.size() > z.size() && name.ends_with(z)) {
      name.remove_suffix(z.size());
      break;
    }
  }
  Rotation r;
  r.log = std::string(name);
  // The suffix after the file name's last '.' or '-' (not a folder's).
  const size_t slash = name.rfind('/');
  const size_t start = slash == std::string_view::npos ? 0 : slash + 1;
  auto suffix_after = [&](char sep) -> std::string_view {
    const size_t at = name.rfind(sep);
    if (at == std::string_view::npos || at <= start) return {};
    return name.substr(at + 1);
  };
  if (std::string_view n = suffix_after('.'); AllDigits(n) && n.size() <= 9) {
    r.log = std::string(name.substr(0, name.size() - n.size() - 1));
    r.kind = 0;
    r.number = std::stoull(std::string(n));
  } else if (std::string_view d = suffix_after('-');
             AllDigits(d) && (d.size() == 8 || d.size() == 10)) {
    r.log = std::string(name.substr(0, name.size() - d.size() - 1));
    r.kind = 1;
    r.date = std::string(d);
  }
  return r;
}

}  // namespace

std::vector<std::string> OldestFirst(std::vector<std::string> files) {
  struct Item {
    size_t log_order;  // when its log first appears
    Rotation rotation;
    std::string file;
  };
  std::vector<Item> items;
  std::vector<std::string> logs;
  for (std::string& f : files) {
    Rotation r;
    if (f == "-") {
      r.log = "-" + std::to_string(items.size());  // stdin is a log of its own, where it stands
    } else {
      r = RotationOf(f);
    }
    size_t order = std::find(logs.begin(), logs.end(), r.log) - logs.begin();
    if (order == logs.size()) logs.push_back(r.log);
    items.push_back(Item{order, std::move(r), std::move(f)});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.log_order != b.log_order) return a.log_order < b.log_order;
    if (a.rotation.kind != b.rotation.kind) return a.rotation.kind < b.rotation.kind;
    if (a.rotation.kind == 0) return a.rotation.number > b.rotation.number;  // .2 before .1
    return a.rotation.date < b.rotation.date;
  });
  std::vector<std::string> out;
  out.reserve(items.size());
  for (Item& i : items) out.push_back(std::move(i.file));
  return out;
}

}  // namespace bounced::ctl
