// log_input.h: the delivery-log input of bounced: a file (LogFollower), journald
// (JournalReader) or standard input, through the LogCorrelator, into the store.
//
// Reads: [input.log] (path, journal_files, limits) and the input's stored position
// (Store::LoadPosition). Writes: batches of events, each with the position after its last line
// (inode + offset, or the journald cursor) in the same transaction, so after kill -9 the input
// resumes exactly where the committed events end: nothing lost, nothing twice.
//
// Batching: a batch is submitted every kBatchLines lines or kBatchEvents events and whenever
// the input reaches its end; commits are pipelined (the writer group-commits queued batches).
// A failed commit makes the input wait, reload its committed position and read again from there.
// Each batch follows the one before it (Batch::follows): the writer refuses the batches queued
// behind a failed one, so none of them moves the stored position past the lines it lacks.
//
// The correlator's memory of a queue id (pending recipients, message-id) starts with each run
// (a restart, a re-sync): an expiry whose recipients' deferrals or message-id it did not see is
// finished from the stored events (expiry_completion.h), once the lines before it are committed.
//
// Thread safety: Run() on one thread; Stop() and Health() from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/config.h"
#include "daemon/services.h"

namespace bounced {

inline constexpr size_t kBatchLines = 20000;
inline constexpr size_t kBatchEvents = 5000;

class LogInput {
 public:
  LogInput(Services& services, LogInputConfig config)
      : services_(services),
        config_(std::move(config)),
        poll_ms_(config_.poll_interval.count()),
        max_line_bytes_(config_.max_line_bytes) {}

  // Reads until Stop() or, with once = true, until the input has nothing more to give; then
  // commits everything read. Never returns early because of a missing file or a storage error.
  void Run(bool once);
  void Stop();
  // A reload's poll_interval and max_line_bytes, taken by the running input at its next read
  // (path and journal_files wait for a restart). Thread-safe.
  void SetTuning(std::chrono::milliseconds poll_interval, size_t max_line_bytes);
  // {"input", "path", "position", "lines", "events", "problem", ...} for `health`.
  nlohmann::json Health() const;
  // Name under which the position is stored ("log:/var/log/mail.log", "journal", "stdin").
  static std::string InputName(const LogInputConfig& config);

 private:
  void RunFile(bool once);
  void RunJournal(bool once);
  void SleepFor(std::chrono::milliseconds d);
  std::shared_ptr<Store> WaitForStore();

  Services& services_;
  LogInputConfig config_;
  std::chrono::milliseconds PollInterval() const {
    return std::chrono::milliseconds(poll_ms_.load());
  }
  // config_'s poll_interval and max_line_bytes as SetTuning changes them.
  std::atomic<int64_t> poll_ms_;
  std::atomic<size_t> max_line_bytes_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  mutable std::mutex health_mu_;
  nlohmann::json health_ = nlohmann::json::object();
};

}  // namespace bounced
