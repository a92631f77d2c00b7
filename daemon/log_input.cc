// log_input.cc: log lines -> correlated delivery events -> batches with positions (see
// log_input.h).
#include "daemon/log_input.h"

#include <spdlog/spdlog.h>

#include <ctime>
#include <deque>
#include <future>

#include "classifier/log_parser.h"
#include "daemon/expiry_completion.h"
#include "daemon/journal_reader.h"
#include "daemon/log_follower.h"

namespace bounced {
namespace {

constexpr std::chrono::milliseconds kRetryDelay{1000};
// Queue facts older than this are not given back at start, and deleted: Postfix gave up on
// their message long ago (maximal_queue_lifetime is 5 days by default), or its "removed" line
// was never read.
constexpr int64_t kQueueFactsMaxAgeSeconds = 30 * 86400;

// This machine's zone now, in seconds east of UTC: classic syslog timestamps (Postfix's own
// maillog_file, rsyslog's traditional format) are local time without a zone or year. The
// correlator is told the zone, and the time the log is read at to infer the year from; the zone
// is asked again as the log is read, so a daemon running across a DST change dates the lines
// written after it in the new offset.
int LocalUtcOffset(time_t now) {
  struct tm local {};
  localtime_r(&now, &local);
  return static_cast<int>(local.tm_gmtoff);
}

// Batches events with the input position after them and keeps commits pipelined.
class Pipeline {
 public:
  Pipeline(Services& services, std::shared_ptr<Store> store)
      : services_(services), store_(std::move(store)) {}

  // Makes every batch from now on follow the one before it (Batch::follows), the first one
  // `stored`: the input's position as loaded. Batches are pipelined, so when one fails those
  // queued behind it are refused instead of committing past its lines; the input then resumes
  // from the position before the failed one and reads them again. (Standard input, which
  // cannot be read again, does not use this: what follows a failed batch still commits.)
  void FollowFrom(InputPosition stored) { follows_ = std::move(stored); }
  // Puts the correlator's queue facts into every batch from now on (Batch::queue_facts), so
  // that they are stored with the position of the lines that gave them; `forget` goes with
  // the next batch. For inputs that resume from a stored position.
  void KeepQueueFacts(LogCorrelator* correlator, std::vector<std::string> forget) {
    facts_ = correlator;
    batch_.queue_facts_forgotten = std::move(forget);
  }

  void Add(Event e) { batch_.events.push_back(std::move(e)); }
  // After each line, with the position after it.
  void SetPosition(InputPosition p) {
    batch_.position = std::move(p);
    ++lines_;
    line_starts_at_ = batch_.events.size();
  }
  bool Full() const { return batch_.events.size() >= kBatchEvents || lines_ >= kBatchLines; }

  // Submits what is pending (events or just a newer position). Nothing after a failure: the
  // input reads it again.
  void Submit() {
    if (failed_ || (batch_.events.empty() && !batch_.position)) return;
    if (facts_ != nullptr) {
      facts_->TakeQueueFacts(&batch_.queue_facts, &batch_.queue_facts_forgotten);
    }
    Pending p;
    if (services_.has_observers()) {
      p.events = batch_.events;
      p.counted = std::make_shared<std::vector<uint8_t>>();
      batch_.counted = p.counted;
    }
    if (batch_.position) p.position = *batch_.position;
    p.count = batch_.events.size();
    if (follows_) {
      batch_.follows = *follows_;
      if (batch_.position) follows_ = *batch_.position;
    }
    p.future = store_->Submit(std::move(batch_));
    pending_.push_back(std::move(p));
    batch_ = Batch();
    lines_ = 0;
    line_starts_at_ = 0;
  }

  // Submits the lines before the one being read (the events it gave so far wait for its
  // position) and waits for every commit: a lookup in the store then sees all of them. False
  // when a commit failed.
  bool CommitEarlierLines() {
    std::vector<Event> current(std::make_move_iterator(batch_.events.begin() + line_starts_at_),
                               std::make_move_iterator(batch_.events.end()));
    batch_.events.resize(line_starts_at_);
    Submit();
    for (Event& e : current) batch_.events.push_back(std::move(e));
    return Reap(true);
  }
  // Makes the input resume from the stored position, as a failed commit does.
  void Fail(std::string error) {
    if (failed_) return;
    failed_ = true;
    error_ = std::move(error);
  }

  // Collects finished commits (all of them when wait). False when one failed (this time or
  // before): the caller must resume from the stored position. error() says why.
  bool Reap(bool wait) {
    bool ok = !failed_;
    if (!ok) wait = true;
    while (!pending_.empty()) {
      Pending& p = pending_.front();
      if (!wait && p.future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) break;
      Status s = p.future.get();
      if (s.ok()) {
        committed_events_ += p.count;
        if (p.position) committed_ = *p.position;
        if (p.counted) services_.NotifyCommitted(OnlyCounted(std::move(p.events), *p.counted));
      } else if (ok) {
        ok = false;
        Fail(s.message());
        wait = true;  // drain the rest: they were built on top of the failed batch
      }
      pending_.pop_front();
    }
    return ok;
  }
  // Drops what was not submitted (after a failure, it is re-read).
  void Discard() {
    batch_ = Batch();
    lines_ = 0;
    line_starts_at_ = 0;
  }
  uint64_t committed_events() const { return committed_events_; }
  // The input position of the last committed batch.
  const InputPosition& committed() const { return committed_; }
  const std::string& error() const { return error_; }
  // What the database holds when the input starts (health shows it until the next commit).
  void SetCommitted(InputPosition p) { committed_ = std::move(p); }

 private:
  struct Pending {
    std::future<Status> future;
    std::vector<Event> events;                      // kept only when someone observes commits
    std::shared_ptr<std::vector<uint8_t>> counted;  // which of them were (Batch::counted)
    size_t count = 0;
    std::optional<InputPosition> position;
  };
  Services& services_;
  std::shared_ptr<Store> store_;
  LogCorrelator* facts_ = nullptr;
  Batch batch_;
  size_t lines_ = 0;
  size_t line_starts_at_ = 0;  // the first event of batch_ that the line being read gave
  bool failed_ = false;
  std::deque<Pending> pending_;
  // The position the next batch follows (the last one submitted), when batches are chained.
  std::optional<InputPosition> follows_;
  uint64_t committed_events_ = 0;
  InputPosition committed_;
  std::string error_;
};

// Adds an event of the input's correlator. An expiry the correlator could not finish (the
// recipients' deferrals or the message-id were read before it started: a restart, a re-sync)
// is finished from the store (expiry_completion.h) once every line before it is committed.
void AddLogEvent(Pipeline& pipeline, Store& store, const RuleSet& rules, Event e) {
  if (!ExpiryNeedsStore(e)) {
    pipeline.Add(std::move(e));
    return;
  }
  // On failure nothing more is submitted, and the input reads this line again once resumed.
  if (!pipeline.CommitEarlierLines()) return;
  auto events = CompleteExpiry(store, rules, std::move(e));
  if (!events) {
    pipeline.Fail("finishing an expiry from the stored events: " + events.error());
    return;
  }
  for (Event& done : *events) pipeline.Add(std::move(done));
}

// Gives `correlator` the queue facts the input's earlier runs stored and keeps them from now on
// (Pipeline::KeepQueueFacts); facts too old to matter are deleted with the first batch. False
// (and *error) when the store cannot be read.
bool ResumeQueueFacts(Store& store, const std::string& input, int64_t now,
                      LogCorrelator& correlator, Pipeline& pipeline, nlohmann::json* health,
                      std::string* error) {
  auto facts = store.LoadQueueFacts(input);
  if (!facts) {
    *error = facts.error();
    return false;
  }
  // Tracking first: should the stored facts be more than the table holds, the ones it evicts
  // are reported forgotten and deleted with the first batch.
  correlator.set_track_queue_facts(true);
  std::vector<std::string> stale;
  size_t restored = 0;
  for (const QueueFacts& f : *facts) {
    if (f.updated < now - kQueueFactsMaxAgeSeconds) {
      stale.push_back(f.queue_id);
    } else {
      correlator.RestoreQueueFacts(f);
      ++restored;
    }
  }
  if (restored > 0 || !stale.empty()) {
    spdlog::info(
        "{}: resumed with what earlier lines said about {} queue ids ({} too old, dropped)", input,
        restored, stale.size());
  }
  (*health)["restored_queue_ids"] = restored;
  pipeline.KeepQueueFacts(&correlator, std::move(stale));
  return true;
}

std::string PositionText(const LogPosition& p) {
  return "ino=" + std::to_string(p.inode) + " off=" + std::to_string(p.offset);
}

}  // namespace

std::string LogInput::InputName(const LogInputConfig& config) {
  if (config.path == "-") return "stdin";
  if (config.path == "journal") return "journal";
  return "log:" + config.path;
}

void LogInput::Stop() {
  stop_ = true;
  cv_.notify_all();
}

void LogInput::SetTuning(std::chrono::milliseconds poll_interval, size_t max_line_bytes) {
  poll_ms_ = poll_interval.count();
  max_line_bytes_ = max_line_bytes;
}

void LogInput::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [&] { return stop_.load(); });
}

std::shared_ptr<Store> LogInput::WaitForStore() {
  for (;;) {
    std::shared_ptr<Store> s = services_.store();
    if (s || stop_) return s;
    SleepFor(kRetryDelay);
  }
}

nlohmann::json LogInput::Health() const {
  std::lock_guard lock(health_mu_);
  return health_;
}

void LogInput::Run(bool once) {
  if (config_.path == "journal") {
    RunJournal(once);
  } else {
    RunFile(once);
  }
}

void LogInput::RunFile(bool once) {
  const std::string name = InputName(config_);
  const bool is_stdin = config_.path == "-";
  while (!stop_) {
    std::shared_ptr<Store> store = WaitForStore();
    if (!store) return;
    LogPosition start;
    int64_t committed_at = 0;
    std::string stored_cursor;  // the stored position's cursor text (a file's fingerprint)
    if (!is_stdin) {
      auto stored = store->LoadPosition(name);
      if (!stored) {
        spdlog::error("log input: cannot read the stored position: {}; retrying", stored.error());
        SleepFor(kRetryDelay);
        continue;
      }
      if (*stored) {
        start = {(*stored)->inode, (*stored)->offset, FingerprintFromText((*stored)->cursor)};
        committed_at = (*stored)->updated;
        stored_cursor = (*stored)->cursor;
      }
    }
    Pipeline pipeline(services_, store);
    pipeline.SetCommitted({name, start.inode, start.offset, stored_cursor});
    // The first batch follows the position exactly as stored, fingerprint included.
    if (!is_stdin) pipeline.FollowFrom({name, start.inode, start.offset, stored_cursor});
    std::shared_ptr<const RuleSet> rules = services_.rules();
    std::string ref;
    auto make_correlator = [&] {
      return std::make_unique<LogCorrelator>(rules, [&](const DeliveryEvent& e) {
        AddLogEvent(pipeline, *store, *rules, EventFromLog(e, EventSource::kLog, ref));
      });
    };
    std::unique_ptr<LogCorrelator> correlator = make_correlator();
    const time_t started = time(nullptr);
    nlohmann::json resumed = nlohmann::json::object();  // ResumeQueueFacts says, for health
    if (!is_stdin) {
      std::string error;
      if (!ResumeQueueFacts(*store, name, started, *correlator, pipeline, &resumed, &error)) {
        spdlog::error("log input: cannot read the stored queue facts: {}; retrying", error);
        SleepFor(kRetryDelay);
        continue;
      }
    }
    int utc_offset = LocalUtcOffset(started);
    correlator->set_utc_offset(utc_offset);
    correlator->set_reference_time(started);
    LogFollower::Options follow{config_.path, max_line_bytes_.load(), committed_at};
    if (once) follow.rotation_grace = std::chrono::milliseconds(0);  // read what is there, stop
    // A file's fingerprint is stored in the position's cursor (the journal's is its cursor).
    LogFollower follower(
        std::move(follow), start, [&](std::string_view line, const LogPosition& after) {
          ref = PositionText(after);
          correlator->Feed(line);
          pipeline.SetPosition(
              {name, after.inode, after.offset, FingerprintText(after.fingerprint)});
          if (pipeline.Full()) pipeline.Submit();
        });
    bool failed = false;
    auto update_health = [&] {
      std::lock_guard lock(health_mu_);
      const LogFollowerStats& fs = follower.stats();
      const LogStats& ls = correlator->stats();
      health_ = {{"input", name},
                 {"position",
                  {{"inode", follower.position().inode}, {"offset", follower.position().offset}}},
                 {"committed",
                  {{"inode", pipeline.committed().inode}, {"offset", pipeline.committed().offset}}},
                 {"lines", fs.lines},
                 {"bytes", fs.bytes},
                 {"skipped_too_long", fs.skipped_too_long},
                 {"skipped_garbage", ls.skipped_garbage + ls.skipped_truncated},
                 {"rotations", fs.rotations},
                 {"truncations", fs.truncations},
                 {"unread_rotated", fs.unread_rotated},
                 {"events_committed", pipeline.committed_events()},
                 {"tracked_queue_ids", ls.tracked_queue_ids},
                 {"problem", follower.problem()}};
      health_.update(resumed);
    };
    while (!stop_) {
      if (services_.rules() != rules) {
        rules = services_.rules();
        correlator->set_rules(rules);
        spdlog::info("log input: now classifying with the reloaded rules");
      }
      if (int now_offset = LocalUtcOffset(time(nullptr)); now_offset != utc_offset) {
        utc_offset = now_offset;
        correlator->set_utc_offset(utc_offset);
      }
      if (const size_t cap = max_line_bytes_.load(); cap != follower.max_line_bytes()) {
        follower.set_max_line_bytes(cap);
        spdlog::info("log input: lines up to {} bytes from now on", cap);
      }
      bool progress = follower.Poll();
      pipeline.Submit();
      if (!pipeline.Reap(false)) {
        failed = true;
        break;
      }
      update_health();
      if (once && !progress && (is_stdin ? follower.finished() : follower.problem().empty())) {
        break;
      }
      if (once && !follower.problem().empty()) {
        spdlog::error("log input: {}; nothing to read in --once mode", follower.problem());
        break;
      }
      if (!progress) SleepFor(PollInterval());
      if (is_stdin && follower.finished()) {
        spdlog::info("log input: standard input ended");
        break;
      }
    }
    if (!failed) {
      pipeline.Submit();
      failed = !pipeline.Reap(true);
      update_health();
    }
    if (!failed) return;
    pipeline.Discard();
    spdlog::error(
        "log input: commit failed: {}; resuming from the last committed position in "
        "{} ms",
        pipeline.error(), kRetryDelay.count());
    if (is_stdin) {
      spdlog::error(
          "log input: standard input cannot be re-read; events since the last commit "
          "are lost");
      return;
    }
    SleepFor(kRetryDelay);
  }
}

void LogInput::RunJournal(bool once) {
  const std::string name = InputName(config_);
  while (!stop_) {
    std::shared_ptr<Store> store = WaitForStore();
    if (!store) return;
    auto stored = store->LoadPosition(name);
    if (!stored) {
      spdlog::error("journal input: cannot read the stored cursor: {}; retrying", stored.error());
      SleepFor(kRetryDelay);
      continue;
    }
    std::string cursor = *stored ? (*stored)->cursor : "";
    auto reader = JournalReader::Open(config_.journal_files, cursor);
    if (!reader) {
      spdlog::error("journal input: {}; retrying", reader.error());
      if (once) return;
      SleepFor(kRetryDelay * 5);
      continue;
    }
    Pipeline pipeline(services_, store);
    pipeline.SetCommitted({name, 0, 0, cursor});
    pipeline.FollowFrom({name, 0, 0, cursor});
    std::shared_ptr<const RuleSet> rules = services_.rules();
    std::string ref;
    LogCorrelator correlator(rules, [&](const DeliveryEvent& e) {
      AddLogEvent(pipeline, *store, *rules, EventFromLog(e, EventSource::kJournal, ref));
    });
    nlohmann::json resumed = nlohmann::json::object();
    if (std::string error;
        !ResumeQueueFacts(*store, name, time(nullptr), correlator, pipeline, &resumed, &error)) {
      spdlog::error("journal input: cannot read the stored queue facts: {}; retrying", error);
      SleepFor(kRetryDelay);
      continue;
    }
    uint64_t lines = 0;
    bool failed = false;
    auto update_health = [&] {
      std::lock_guard lock(health_mu_);
      health_ = {{"input", name},
                 {"cursor", (*reader)->cursor()},
                 {"committed_cursor", pipeline.committed().cursor},
                 {"lines", lines},
                 {"skipped_garbage", correlator.stats().skipped_garbage},
                 {"events_committed", pipeline.committed_events()},
                 {"tracked_queue_ids", correlator.stats().tracked_queue_ids}};
      health_.update(resumed);
    };
    while (!stop_) {
      if (services_.rules() != rules) {
        rules = services_.rules();
        correlator.set_rules(rules);
      }
      size_t n = (*reader)->Poll([&](std::string_view line, const std::string& c) {
        ref = c;
        ++lines;
        correlator.Feed(line);
        pipeline.SetPosition({name, 0, 0, c});
        if (pipeline.Full()) pipeline.Submit();
      });
      if (n > 0) pipeline.SetPosition({name, 0, 0, (*reader)->cursor()});
      pipeline.Submit();
      if (!pipeline.Reap(false)) {
        failed = true;
        break;
      }
      update_health();
      if (n == 0) {
        if (once) break;
        (*reader)->Wait(static_cast<int>(PollInterval().count()));
      }
    }
    if (!failed) {
      pipeline.Submit();
      failed = !pipeline.Reap(true);
      update_health();  // what --once reports: the last batch's events included
    }
    if (!failed) return;
    pipeline.Discard();
    spdlog::error("journal input: commit failed: {}; resuming from the last committed cursor",
                  pipeline.error());
    SleepFor(kRetryDelay);
  }
}

}  // namespace bounced
