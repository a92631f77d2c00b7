// journal_reader.h: Postfix's entries from journald (sd_journal), as syslog-style lines.
//
// Reads the local system journal, or the given journal files (tests; journals copied from
// elsewhere). Only entries whose SYSLOG_IDENTIFIER is Postfix's ("postfix/smtp",
// "postfix-tb/qmgr", ...: a name starting with "postfix") are handed out, each rebuilt as
// "2026-11-29T17:09:53.123456+00:00 HOST IDENT[PID]: MESSAGE" (what the log parser reads), with
// the entry's cursor: committing that cursor with the events makes the journal input resume
// exactly after the last committed entry. Thread safety: one thread uses a JournalReader.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

struct sd_journal;

namespace bounced {

class JournalReader {
 public:
  using LineSink = std::function<void(std::string_view line, const std::string& cursor)>;

  // `files` empty: the local system journal. `cursor` "": from the oldest entry.
  static Expected<std::unique_ptr<JournalReader>> Open(const std::vector<std::string>& files,
                                                       const std::string& cursor);
  ~JournalReader();

  // Hands out Postfix entries available now (at most max_entries). Returns how many entries
  // (of any identifier) were read; 0 at the end of the journal.
  size_t Poll(const LineSink& sink, size_t max_entries = 10000);
  // Waits up to timeout_ms for the journal to change.
  void Wait(int timeout_ms);
  const std::string& cursor() const { return cursor_; }

 private:
  explicit JournalReader(sd_journal* j) : j_(j) {}
  // Hands out the entry the journal is positioned on (if it is Postfix's).
  void Emit(const LineSink& sink, std::string& line);
  sd_journal* j_;
  std::string cursor_;
  // Open found the stored cursor gone and is positioned on the first entry after it, which was
  // never handed out: the next Poll starts with it instead of stepping past it.
  bool on_unread_entry_ = false;
};

}  // namespace bounced
