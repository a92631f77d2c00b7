// log_source.cc: see log_source.h.
#include "daemon/ctl/log_source.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <utility>

#include "daemon/log_rotation.h"

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
    return RotatedBefore(a.rotation, b.rotation);
  });
  std::vector<std::string> out;
  out.reserve(items.size());
  for (Item& i : items) out.push_back(std::move(i.file));
  return out;
}

}  // namespace bounced::ctl
