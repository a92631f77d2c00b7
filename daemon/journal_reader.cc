// journal_reader.cc: sd_journal iteration (see journal_reader.h).
#include "daemon/journal_reader.h"

#include <spdlog/spdlog.h>
#include <systemd/sd-journal.h>

#include <cstring>
#include <ctime>

namespace bounced {
namespace {

std::string_view Field(sd_journal* j, const char* name) {
  const void* data = nullptr;
  size_t len = 0;
  if (sd_journal_get_data(j, name, &data, &len) < 0) return {};
  std::string_view v(static_cast<const char*>(data), len);
  size_t eq = v.find('=');
  return eq == std::string_view::npos ? std::string_view() : v.substr(eq + 1);
}

std::string Rfc3339(uint64_t usec) {
  std::time_t t = static_cast<std::time_t>(usec / 1000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[64];
  std::snprintf(out, sizeof(out), "%s.%06u+00:00", buf, static_cast<unsigned>(usec % 1000000));
  return out;
}

}  // namespace

Expected<std::unique_ptr<JournalReader>> JournalReader::Open(const std::vector<std::string>& files,
                                                             const std::string& cursor) {
  sd_journal* j = nullptr;
  int r;
  if (files.empty()) {
    r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY | SD_JOURNAL_SYSTEM);
  } else {
    std::vector<const char*> paths;
    for (const auto& f : files) paths.push_back(f.c_str());
    paths.push_back(nullptr);
    r = sd_journal_open_files(&j, paths.data(), 0);
  }
  if (r < 0) return Status::Error(std::string("cannot open the journal: ") + std::strerror(-r));
  std::unique_ptr<JournalReader> reader(new JournalReader(j));
  if (!cursor.empty() && sd_journal_seek_cursor(j, cursor.c_str()) >= 0) {
    // Seeking lands on the entry of the cursor (or, when it is gone, the first one after it);
    // the committed entry itself was already recorded, so step over it when it is there. When
    // it is gone, the entry landed on is new: stepping back to read it again by sd_journal_next
    // does not work when nothing older is left (previous finds nothing and leaves the position
    // where it is, so the next sd_journal_next would skip it).
    if (sd_journal_next(j) > 0 && sd_journal_test_cursor(j, cursor.c_str()) <= 0) {
      reader->on_unread_entry_ = true;
      spdlog::warn(
          "journal input: the stored cursor is gone (journal rotated or vacuumed); "
          "resuming at the first entry after it");
    }
    reader->cursor_ = cursor;
  } else {
    sd_journal_seek_head(j);
  }
  return reader;
}

JournalReader::~JournalReader() { sd_journal_close(j_); }

size_t JournalReader::Poll(const LineSink& sink, size_t max_entries) {
  size_t n = 0;
  std::string line;
  while (n < max_entries) {
    if (on_unread_entry_) {
      on_unread_entry_ = false;
    } else {
      int r = sd_journal_next(j_);
      if (r < 0) {
        spdlog::warn("journal input: read error: {}", std::strerror(-r));
        break;
      }
      if (r == 0) break;
    }
    ++n;
    Emit(sink, line);
  }
  return n;
}

void JournalReader::Emit(const LineSink& sink, std::string& line) {
  char* c = nullptr;
  if (sd_journal_get_cursor(j_, &c) >= 0) {
    cursor_ = c;
    free(c);
  }
  std::string_view ident = Field(j_, "SYSLOG_IDENTIFIER");
  if (ident.substr(0, 7) != "postfix") return;
  uint64_t usec = 0;
  sd_journal_get_realtime_usec(j_, &usec);
  std::string_view host = Field(j_, "_HOSTNAME");
  std::string_view pid = Field(j_, "SYSLOG_PID");
  if (pid.empty()) pid = Field(j_, "_PID");
  std::string_view message = Field(j_, "MESSAGE");
  line = Rfc3339(usec);
  line += ' ';
  line.append(host.empty() ? std::string_view("localhost") : host);
  line += ' ';
  line.append(ident);
  if (!pid.empty()) {
    line += '[';
    line.append(pid);
    line += ']';
  }
  line += ": ";
  line.append(message);
  sink(line, cursor_);
}

void JournalReader::Wait(int timeout_ms) {
  sd_journal_wait(j_, static_cast<uint64_t>(timeout_ms) * 1000);
}

}  // namespace bounced
