// store_writer.cc: the store's writer thread (store_impl.h): batches committed in groups, each
// event recorded with its policy, the view updated after each commit, expired suppressions
// purged, old events pruned, the WAL checkpointed.
#include <spdlog/spdlog.h>

#include <chrono>
#include <future>

#include "storage/store_impl.h"

namespace bounced::store_detail {

namespace {

// The fields of an event that make its event_kinds row, in the table's column order (hard_bounce
// as "0"/"1").
using KindFields = std::array<std::string_view, 14>;
KindFields KindFieldsOf(const Event& ev, const CategoryInfo& info) {
  const Result& r = ev.result;
  return {ToString(ev.source),
          ev.log_status,
          info.name,
          ToString(info.fault),
          ToString(r.action()),
          info.hard_bounce ? "1" : "0",
          ev.program,
          r.provider,
          r.provider_code,
          r.status,
          r.reply_code,
          r.stage,
          r.dsn_action,
          r.rule};
}

// The writer's cache key of a kind: each field with a two-byte length, appended to `out` with
// plain copies (a std::string built by appends costs about twice as much). Fields are cut at
// 64 KiB in the key; the table keeps them whole. No classifier field comes near that.
void AppendKindKey(const KindFields& fields, std::string& out) {
  constexpr size_t kMaxField = 0xffff;
  size_t need = 0;
  for (std::string_view f : fields) need += 2 + std::min(f.size(), kMaxField);
  const size_t at = out.size();
  out.resize(at + need);
  char* p = out.data() + at;
  for (std::string_view f : fields) {
    const size_t n = std::min(f.size(), kMaxField);
    *p++ = static_cast<char>(n & 0xff);
    *p++ = static_cast<char>(n >> 8);
    if (n != 0) std::memcpy(p, f.data(), n);
    p += n;
  }
}

// A 64-bit hash of a kind key, 8 bytes at a time.
uint64_t KindKeyHash(std::string_view key) {
  const size_t need = key.size();
  uint64_t h = 0x243f6a8885a308d3ULL ^ need;
  size_t i = 0;
  for (; i + 8 <= need; i += 8) {
    uint64_t v;
    std::memcpy(&v, key.data() + i, 8);
    h = (h ^ v) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
  }
  if (i < need) {
    uint64_t v = 0;
    std::memcpy(&v, key.data() + i, need - i);
    h = (h ^ v) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
  }
  return h;
}

// Fills job.prepared and job.prepared_text for job.batch.events with `delimiters`.
void PrepareEvents(Job& job, const std::string& delimiters) {
  job.delimiters = delimiters;
  job.prepared.clear();
  job.prepared_text.clear();
  job.prepared.resize(job.batch.events.size());
  std::string key;
  for (size_t i = 0; i < job.batch.events.size(); ++i) {
    const Event& ev = job.batch.events[i];
    PreparedEvent& pe = job.prepared[i];
    NormalizeAddressInto(ev.result.recipient, delimiters, key);
    pe.key_at = job.prepared_text.size();
    pe.key_size = key.size();
    pe.domain_at = key.empty() ? 0 : key.size() - DomainOfKey(key).size();
    pe.key_hash = KeyHash{}(key);
    job.prepared_text += key;
    pe.kind_at = job.prepared_text.size();
    AppendKindKey(KindFieldsOf(ev, Describe(ev.result.category)), job.prepared_text);
    pe.kind_size = job.prepared_text.size() - pe.kind_at;
    pe.kind_hash =
        KindKeyHash(std::string_view(job.prepared_text).substr(pe.kind_at, pe.kind_size));
    if (!ev.result.original_recipient.empty() && !key.empty()) {
      NormalizeAddressInto(ev.result.original_recipient, delimiters, key);
      if (!key.empty() &&
          std::string_view(job.prepared_text).substr(pe.key_at, pe.key_size) != key) {
        pe.original_at = job.prepared_text.size();
        pe.original_size = key.size();
        pe.original_hash = KeyHash{}(key);
        job.prepared_text += key;
      }
    }
    pe.permanent = IsPermanentFailure(ev);
    pe.delivery = IsDelivery(ev);
    pe.failure = pe.permanent || ev.log_status == "deferred";
  }
}

}  // namespace

std::future<Status> StoreImpl::Submit(Batch batch) {
  auto job = std::make_unique<Job>();
  job->events = batch.events.size();
  job->batch = std::move(batch);
  if (job->events != 0) PrepareEvents(*job, Delimiters());  // on the caller's thread
  std::future<Status> f = job->done.get_future();
  std::unique_lock lock(queue_mu_);
  space_cv_.wait(lock, [&] {
    return stopping_ || queued_events_ == 0 ||
           queued_events_ + job->events <= options_.max_queued_events;
  });
  if (stopping_) {
    job->done.set_value(Status::Error("storage: store is closing"));
    return f;
  }
  queued_events_ += job->events;
  queue_.push_back(std::move(job));
  lock.unlock();
  queue_cv_.notify_one();
  return f;
}

Status StoreImpl::Flush() { return Submit(Batch{}).get(); }

void StoreImpl::SetRetention(const RetentionPolicy& retention) {
  {
    std::lock_guard lock(policy_mu_);
    if (retention_ == retention) return;
    retention_ = retention;
  }
  {
    std::lock_guard lock(queue_mu_);  // so the writer cannot miss the wake-up
    prune_soon_ = true;
  }
  queue_cv_.notify_one();
}

Expected<PruneResult> StoreImpl::Prune() {
  PruneResult total;
  for (bool more = true; more;) {
    PruneResult step;
    Status s = RunOnWriter([&](StoreImpl& self) {
      Status st = self.PruneW();
      more = self.prune_more_;
      step = self.txn_pruned_;
      return st;
    });
    if (!s) return s;
    total.events += step.events;
    total.counter_rows += step.counter_rows;
  }
  return total;
}

void StoreImpl::SetPolicy(const SuppressionPolicy& policy) {
  std::lock_guard lock(policy_mu_);
  policy_ = policy;
  view_.SetDelimiters(policy.recipient_delimiters);
}

std::string StoreImpl::Delimiters() {
  std::lock_guard lock(policy_mu_);
  return policy_.recipient_delimiters;
}

Status StoreImpl::RunOnWriter(std::function<Status(StoreImpl&)> fn) {
  auto job = std::make_unique<Job>();
  job->call = std::move(fn);
  std::future<Status> f = job->done.get_future();
  {
    std::lock_guard lock(queue_mu_);
    if (stopping_) return Status::Error("storage: store is closing");
    queue_.push_back(std::move(job));
  }
  queue_cv_.notify_one();
  return f.get();
}

void StoreImpl::WriterLoop() {
  for (;;) {
    std::vector<std::unique_ptr<Job>> group;
    // A clock set back does not put the next purge or prune further off than their interval.
    next_purge_ = std::min(next_purge_, Now() + kPurgeIntervalSeconds);
    next_prune_ = std::min(next_prune_, Now() + kPruneIntervalSeconds);
    bool retention_on;
    {
      std::lock_guard lock(policy_mu_);
      retention_on = retention_.event_days > 0 || retention_.counter_days > 0;
    }
    {
      std::unique_lock lock(queue_mu_);
      // A pruning backlog goes on between batches, and without them; so do the purge, at the
      // next entry's expiry, and with a retention the hourly prune, on a writer that no batch
      // wakes. Without either due the writer sleeps until a batch comes.
      const auto due = std::chrono::system_clock::from_time_t(static_cast<std::time_t>(
          retention_on ? std::min(next_purge_, next_prune_) : next_purge_));
      queue_cv_.wait_until(
          lock, due, [&] { return stopping_ || !queue_.empty() || prune_more_ || prune_soon_; });
      if (queue_.empty() && stopping_) return;  // everything queued is committed
      size_t events = 0;
      while (!queue_.empty() &&
             (group.empty() || events + queue_.front()->events <= options_.max_batch_events)) {
        events += queue_.front()->events;
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    if (group.empty() && !prune_more_ && !prune_soon_ && Now() < next_purge_ &&
        (!retention_on || Now() < next_prune_)) {
      continue;  // woken before anything was due
    }
    std::future<Status> purged;
    if (Now() >= next_purge_) {
      // First in the group, so the group's own new entries are never the ones it removes.
      // PurgeExpiredW brings next_purge_ forward to the next entry's expiry.
      next_purge_ = Now() + kPurgeIntervalSeconds;
      auto purge = std::make_unique<Job>();
      purge->call = [](StoreImpl& self) { return self.PurgeExpiredW(); };
      purged = purge->done.get_future();
      group.insert(group.begin(), std::move(purge));
    }
    if (prune_more_ || prune_soon_.exchange(false) || Now() >= next_prune_) {
      if (!prune_more_) next_prune_ = Now() + kPruneIntervalSeconds;
      std::vector<std::unique_ptr<Job>> step;
      step.push_back(std::make_unique<Job>());
      step.back()->call = [](StoreImpl& self) { return self.PruneW(); };
      if (wal_frames_ >= ckpt_cap_frames_) WaitForCheckpointW();
      CommitGroup(step);
      if (group.empty()) continue;  // woken for pruning alone
    }
    if (wal_frames_ >= ckpt_cap_frames_) WaitForCheckpointW();
    CommitGroup(group);
    if (purged.valid() && !purged.get()) {
      // Rolled back (a full disk): the next expiry it found is not known, and a purge that
      // fails again is not retried in a loop.
      next_purge_ = Now() + kPurgeRetrySeconds;
    }
    size_t events = 0;
    {
      std::lock_guard lock(queue_mu_);
      for (auto& j : group) queued_events_ -= j->events;
      for (auto& j : group) events += j->events;
    }
    space_cv_.notify_all();
    {
      std::lock_guard lock(reap_mu_);
      if (reap_events_ + events <= options_.max_queued_events) {
        for (auto& j : group) reap_.push_back(std::move(j));
        reap_events_ += events;
      }
    }
    reap_cv_.notify_one();
    group.clear();  // what the reaper did not take
  }
}

int StoreImpl::WalHook(void* self_ptr, sqlite3*, const char*, int frames) {
  auto* self = static_cast<StoreImpl*>(self_ptr);
  self->wal_frames_ = frames;
  if (frames < self->ckpt_asked_frames_) self->ckpt_asked_frames_ = 0;  // the WAL started over
  if (frames - self->ckpt_asked_frames_ >= self->ckpt_every_frames_) {
    self->ckpt_asked_frames_ = frames;
    self->RequestCheckpoint();
  }
  return SQLITE_OK;
}

uint64_t StoreImpl::RequestCheckpoint() {
  uint64_t ticket;
  {
    std::lock_guard lock(ckpt_mu_);
    ticket = ++ckpt_wanted_;
  }
  ckpt_cv_.notify_one();
  return ticket;
}

void StoreImpl::WaitForCheckpointW() {
  const uint64_t ticket = RequestCheckpoint();
  std::unique_lock lock(ckpt_mu_);
  ckpt_done_cv_.wait(lock, [&] { return ckpt_stop_ || ckpt_done_ >= ticket; });
}

void StoreImpl::CheckpointerLoop() {
  for (;;) {
    uint64_t ticket;
    {
      std::unique_lock lock(ckpt_mu_);
      ckpt_cv_.wait(lock, [&] { return ckpt_stop_ || ckpt_wanted_ > ckpt_done_; });
      if (ckpt_stop_) return;
      ticket = ckpt_wanted_;  // this run covers every commit made before these requests
    }
    // BUSY: another connection (a bouncectl report closing its file) is checkpointing; the next
    // request or the close does it. Other errors leave the frames in the WAL, where they are
    // durable; the next request tries again.
    int rc =
        sqlite3_wal_checkpoint_v2(cdb_.get(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
      spdlog::warn("storage: {}: WAL checkpoint failed: {}", options_.path,
                   sqlite3_errmsg(cdb_.get()));
    }
    {
      std::lock_guard lock(ckpt_mu_);
      ckpt_done_ = ticket;
    }
    ckpt_done_cv_.notify_all();
  }
}

void StoreImpl::ReaperLoop() {
  std::vector<std::unique_ptr<Job>> done;
  for (;;) {
    {
      std::unique_lock lock(reap_mu_);
      reap_cv_.wait(lock, [&] { return reap_stop_ || !reap_.empty(); });
      if (reap_.empty()) return;  // stopping, everything freed
      done.swap(reap_);
      reap_events_ = 0;
    }
    done.clear();
  }
}

Status StoreImpl::RunTransaction(std::vector<std::unique_ptr<Job>>& group,
                                 const std::vector<size_t>& jobs, size_t* failed_job) {
  *failed_job = kNoJob;
  auto discard = [&] {
    if (!sqlite3_get_autocommit(wdb_.get())) wdb_.Exec("ROLLBACK");
    // A failed pruning step waits for the next hourly one (no retry loop on a full disk).
    prune_more_ = false;
    prune_cursor_ = 0;
    pending_rows_.clear();
    for (size_t i : jobs) group[i]->changes.clear();
    DiscardPendingW();
  };
  for (size_t i : jobs) group[i]->changes.clear();
  txn_suppressed_.clear();
  txn_allowlist_changed_ = false;
  policy_before_.clear();
  txn_new_kinds_.clear();
  txn_new_kind_ids_.clear();
  txn_days_.clear();
  txn_counters_.clear();
  txn_day_texts_.clear();
  txn_pruned_ = PruneResult{};
  txn_too_old_ = 0;
  if (kind_ids_.size() >= kKindCacheSize || kind_counter_fields_.size() >= kKindCacheSize) {
    // Together: every cached kind has its counter fields.
    kind_ids_.clear();
    kind_counter_fields_.clear();
  }
  if (Status s = wdb_.Exec("BEGIN IMMEDIATE"); !s) return s;
  for (size_t i : jobs) {
    Job& job = *group[i];
    pending_ = &job.changes;
    Status s = job.call ? job.call(*this) : ApplyBatch(job);
    pending_ = nullptr;
    if (!s) {
      discard();
      *failed_job = i;
      return s;
    }
  }
  if (Status s = WritePendingW(); !s) {
    discard();
    // These rows belong to every job of the transaction: the failure is not one job's.
    return s;
  }
  if (Status s = wdb_.Exec("COMMIT"); !s) {
    discard();
    return s;
  }
  dsn_bounces_.Commit();
  events_pruned_ += txn_pruned_.events;
  counter_rows_pruned_ += txn_pruned_.counter_rows;
  events_too_old_ += txn_too_old_;
  return Status::Ok();
}

void StoreImpl::CommitGroup(std::vector<std::unique_ptr<Job>>& group) {
  {
    std::lock_guard lock(policy_mu_);
    txn_policy_ = policy_;
    txn_retention_ = retention_;
  }
  txn_now_ = Now();
  txn_now_day_ = DayOf(txn_now_);
  txn_event_horizon_ = RetentionHorizon(txn_retention_.event_days, txn_now_);
  std::vector<Status> results(group.size());
  std::vector<size_t> all(group.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::string write_error;
  size_t failed = kNoJob;
  Status txn = RunTransaction(group, all, &failed);
  if (!txn && failed != kNoJob && group.size() > 1) {
    // One job failed (bad input, or trouble that may be its alone): rerun each job in its own
    // transaction so the others still commit. Jobs are functions of the database state, so a
    // rerun gives what the first run would have. Rare, so its cost does not matter.
    for (size_t i = 0; i < group.size(); ++i) {
      Status s = RunTransaction(group, {i}, &failed);
      if (!s && failed == kNoJob) {
        write_error = s.message();
        s = Status::Error("storage: commit failed: " + s.message());
      }
      results[i] = s;
    }
  } else if (!txn) {
    if (failed == kNoJob) {
      write_error = txn.message();
      txn = Status::Error("storage: commit failed: " + txn.message());
    }
    for (auto& r : results) r = txn;
  }
  for (size_t i = 0; i < group.size(); ++i) {
    for (const ViewChange& c : group[i]->changes) {
      switch (c.kind) {
        case ViewChange::kPut:
          view_.Put(c.key, c.hit);
          if (c.added) {
            std::lock_guard lock(added_mu_);
            ++added_[{c.source, c.category}];
          }
          break;
        case ViewChange::kErase:
          view_.Erase(c.key);
          break;
        case ViewChange::kAllowAddress:
          view_.AllowAddress(c.key, true);
          break;
        case ViewChange::kDisallowAddress:
          view_.AllowAddress(c.key, false);
          break;
        case ViewChange::kAllowDomain:
          view_.AllowDomain(c.key, true);
          break;
        case ViewChange::kDisallowDomain:
          view_.AllowDomain(c.key, false);
          break;
      }
    }
  }
  {
    std::lock_guard lock(queue_mu_);
    last_write_error_ = write_error;
  }
  for (size_t i = 0; i < group.size(); ++i) group[i]->done.set_value(results[i]);
}

Status StoreImpl::ApplyBatch(Job& job) {
  // A policy reload between Submit and now changed the delimiters: the keys follow the policy
  // of the transaction, as they would have without the preparation.
  if (job.delimiters != txn_policy_.recipient_delimiters) {
    PrepareEvents(job, txn_policy_.recipient_delimiters);
  }
  pending_rows_.clear();
  if (const auto& f = job.batch.follows) {
    // Checked first, so a refused batch costs one lookup and writes nothing.
    if (Status s = CheckFollowsW(*f); !s) return s;
  }
  if (job.batch.counted) job.batch.counted->assign(job.batch.events.size(), 0);
  for (size_t i = 0; i < job.batch.events.size(); ++i) {
    // Older than the retention keeps: not recorded, as if pruned already (it would be within
    // the hour, and a second feed of it would then count it again).
    if (const int64_t t = job.batch.events[i].unix_time;
        txn_event_horizon_ != 0 && t != 0 && t < txn_event_horizon_) {
      ++txn_too_old_;
      continue;
    }
    if (Status s =
            ApplyEvent(job.batch.events[i], job.prepared[i], job.prepared_text, txn_counters_);
        !s) {
      return s;
    }
    if (job.batch.counted) (*job.batch.counted)[i] = last_event_counted_;
  }
  if (Status s = FlushRowsW(); !s) return s;
  if (Status s = ApplyQueueFactsW(job.batch); !s) return s;
  if (const auto& p = job.batch.position) {
    if (p->input.empty()) return Status::Error("storage: input position without an input name");
    w_.position.Bind(1, p->input)
        .Bind(2, static_cast<int64_t>(p->inode))
        .Bind(3, static_cast<int64_t>(p->offset))
        .Bind(4, p->cursor)
        .Bind(5, txn_now_);
    if (Status s = w_.position.Run(); !s) return s;
  }
  return Status::Ok();
}

Status StoreImpl::ApplyQueueFactsW(const Batch& b) {
  if (b.queue_facts.empty() && b.queue_facts_forgotten.empty()) return Status::Ok();
  if (!b.position || b.position->input.empty()) {
    return Status::Error("storage: queue facts without an input position");
  }
  const std::string& input = b.position->input;
  auto ids = QueueFactIdsW(input);
  if (!ids) return ids.status();
  std::unordered_map<std::string, int64_t>& id_of = **ids;
  // Every parameter is bound before each run, so the bindings need not be cleared, and the
  // texts, the batch's, need not be copied.
  for (const std::string& queue_id : b.queue_facts_forgotten) {
    auto it = id_of.find(queue_id);
    if (it == id_of.end()) continue;  // never stored
    w_.delete_queue_fact.Bind(1, it->second);
    if (Status s = w_.delete_queue_fact.RunKeepBindings(); !s) return s;
    id_of.erase(it);
  }
  for (const QueueFacts& f : b.queue_facts) {
    auto it = id_of.find(f.queue_id);
    sql::Stmt& st = it == id_of.end() ? w_.put_queue_fact : w_.update_queue_fact;
    if (it == id_of.end()) {
      st.BindRef(1, input);
    } else {
      st.Bind(1, it->second);
    }
    st.BindRef(2, f.queue_id)
        .BindRef(3, f.sender)
        .Bind(4, static_cast<int64_t>(f.sender_known))
        .BindRef(5, f.message_id)
        .BindRef(6, f.bounce_queue_id)
        .Bind(7, f.size)
        .Bind(8, static_cast<int64_t>(f.nrcpt))
        .Bind(9, txn_now_);
    if (Status s = st.RunKeepBindings(); !s) return s;
    if (it == id_of.end()) {
      id_of.emplace(f.queue_id, sqlite3_last_insert_rowid(wdb_.get()));
    } else if (wdb_.changes() != 1) {
      // The map is wrong (someone else changed the table): failing the transaction drops it,
      // and the input's next try reads it again.
      return Status::Error("storage: the queue facts of " + f.queue_id + " in " + input +
                           " are not where the writer left them");
    }
  }
  return Status::Ok();
}

Expected<std::unordered_map<std::string, int64_t>*> StoreImpl::QueueFactIdsW(
    const std::string& input) {
  auto it = queue_fact_ids_.find(input);
  if (it != queue_fact_ids_.end()) return &it->second;
  std::unordered_map<std::string, int64_t> id_of;
  sql::Stmt& st = w_.queue_fact_ids;
  st.Bind(1, input);
  Status read = st.ForEachRow([&] { id_of.emplace(st.Text(1), st.Int(0)); });
  st.Reset();
  if (!read) return read;
  return &queue_fact_ids_.emplace(input, std::move(id_of)).first->second;
}

Status StoreImpl::CheckFollowsW(const InputPosition& want) {
  InputPosition stored;
  sql::Stmt& st = w_.get_position;
  st.Bind(1, want.input);
  auto row = st.Step();
  if (row && *row) {
    stored.inode = static_cast<uint64_t>(st.Int(0));
    stored.offset = static_cast<uint64_t>(st.Int(1));
    stored.cursor = st.Text(2);
  }
  st.Reset();
  if (!row) return row.status();
  if (stored.inode == want.inode && stored.offset == want.offset && stored.cursor == want.cursor) {
    return Status::Ok();
  }
  auto text = [](const InputPosition& p) {
    return p.cursor.empty()
               ? "inode " + std::to_string(p.inode) + " offset " + std::to_string(p.offset)
               : "cursor " + p.cursor;
  };
  return Status::Error("storage: batch of input " + want.input + " refused: it follows " +
                       text(want) + " but the stored position is " + text(stored) +
                       " (a batch before it was not committed)");
}

Status StoreImpl::ApplyEvent(const Event& ev, const PreparedEvent& pe,
                             std::string_view prepared_text, Counters& counters) {
  last_event_counted_ = false;
  const int64_t t = ev.unix_time ? ev.unix_time : txn_now_;
  const Result& r = ev.result;
  const HashedKey hkey{prepared_text.substr(pe.key_at, pe.key_size), pe.key_hash};
  const std::string_view key = hkey.key;
  // Something that is not an address is still recorded (nothing is lost), under its own text.
  std::string_view stored_key = key.empty() ? std::string_view(r.recipient) : key;
  std::string_view domain = key.substr(pe.domain_at);
  const std::string& day = DayCached(t);
  const int64_t day_number = cached_day_number_;

  const bool log = IsLogFamily(ev.source);
  const bool dsn = ev.source == EventSource::kDsn || ev.source == EventSource::kMilter;
  // Whether this permanent failure may repeat one of the other family (Postfix logs a bounce and
  // also sends its DSN, which the milter sees: one incident). A log bounce asks the index of
  // DSN bounces first: most have no DSN copy (yet).
  // An exact hit of that index is the answer; only its kMaybe runs the SELECT.
  using Match = SameBounceIndex::Match;
  Match copy = Match::kNo;
  if (!ev.queue_id.empty() && pe.permanent && !key.empty()) {
    if (log) {
      if (bounces_from_dsn_) copy = dsn_bounces_.Lookup(ev.queue_id, key, t);
    } else if (bounces_from_log_) {
      copy = Match::kMaybe;
    }
  }
  const bool may_repeat = copy != Match::kNo;
  bool counted = true;
  if (dsn && !ev.source_ref.empty()) {
    // Recorded before (Postfix retrying the milter, the DSN fed twice), or the copy of a log
    // bounce: one SELECT for both. BindRef: the texts outlive the statement's use (reset below).
    if (Status s = FlushRowsW(); !s) return s;  // the SELECT must see the batch's rows
    sql::Stmt& q = w_.dsn_lookup;
    q.BindRef(1, stored_key).BindRef(2, ev.source_ref);
    if (may_repeat) {
      q.BindRef(3, ev.queue_id)
          .Bind(4, t - kSameBounceWindowSeconds)
          .Bind(5, t + kSameBounceWindowSeconds);
    }
    bool seen = false, dup = false;
    Expected<bool> row = true;
    while (!seen && (row = q.Step()) && *row) {
      (q.Int(0) != 0 ? seen : dup) = true;
    }
    q.Reset();
    if (!row) return row.status();
    if (seen) return Status::Ok();
    counted = !dup;
  } else if (copy == Match::kYes) {
    counted = false;
  } else if (may_repeat) {
    if (Status s = FlushRowsW(); !s) return s;
    w_.same_bounce.BindRef(1, ev.queue_id)
        .BindRef(2, key)
        .BindRef(3, log ? "dsn" : "log")
        .BindRef(4, log ? "milter" : "journal")
        .Bind(5, t - kSameBounceWindowSeconds)
        .Bind(6, t + kSameBounceWindowSeconds);
    auto found = w_.same_bounce.Step();
    bool dup = found && *found;
    w_.same_bounce.Reset();
    if (!found) return found.status();
    counted = !dup;
  }
  last_event_counted_ = counted;

  const CategoryInfo& info = Describe(r.category);
  auto kind = KindW(ev, info, prepared_text.substr(pe.kind_at, pe.kind_size), pe.kind_hash);
  if (!kind) return kind.status();
  if (pe.permanent) {
    (log ? bounces_from_log_ : bounces_from_dsn_) = true;
    // What a later log bounce's SELECT would find (any key: the stored one is what it matches).
    if (counted && !ev.queue_id.empty() &&
        (ev.source == EventSource::kDsn || ev.source == EventSource::kMilter)) {
      dsn_bounces_.Add(ev.queue_id, stored_key, t, txn_now_);
    }
  }
  pending_rows_.push_back(PendingRow{&ev, t, *kind, day_number, counted, stored_key, domain,
                                     prepared_text.substr(pe.original_at, pe.original_size)});
  if (pending_rows_.size() == kRowsPerInsert) {
    if (Status s = FlushRowsW(); !s) return s;
  }

  if (!counted) return Status::Ok();
  // A reused key: the map copies the domain only for a combination new in this transaction.
  CounterKey& ck = counter_key_;
  ck.day = day_number;
  ck.kind = *kind;
  ck.domain.assign(domain);
  if (auto it = counters.find(ck); it != counters.end()) {
    ++it->second;
  } else {
    counters.emplace(ck, 1);
    txn_day_texts_.try_emplace(day_number, day);  // DayOf(t) as the counter row's day
  }
  if (key.empty()) return Status::Ok();
  if (Status s = ApplyPolicyW(hkey, r.recipient, ev, pe, info, t); !s) return s;
  // The address as the sender gave it (a VERP return path's, a DSN's Original-Recipient,
  // Postfix's orig_to=), when it is another one: it is the one mailed again.
  if (pe.original_size != 0 && txn_policy_.suppress_original_recipient) {
    const HashedKey original{prepared_text.substr(pe.original_at, pe.original_size),
                             pe.original_hash};
    return ApplyPolicyW(original, r.original_recipient, ev, pe, info, t);
  }
  return Status::Ok();
}

Status StoreImpl::ApplyPolicyW(const HashedKey& hkey, std::string_view display, const Event& ev,
                               const PreparedEvent& pe, const CategoryInfo& info, int64_t t) {
  const std::string_view key = hkey.key;
  // The policy reads and folds only the recipient_policy fields; the rest of RecipientState
  // (first_seen, last_event, counts, ...) is derived from the events when read. An event the
  // policy ignores (a deferral for rate limiting, a sender-fault bounce, ...) skips the row.
  PolicyDecision d;
  if (PolicyConcerns(txn_policy_, ev)) {
    // Only a failure the count takes (a hard bounce suppresses whatever the count says) looks
    // for an expired count entry: other failures of a suppressed address skip the SELECT.
    if (pe.failure && info.action == Action::kCount && MayHaveSuppressionW(hkey)) {
      if (Status s = EndExpiredRepeatedFailureW(hkey); !s) return s;
    }
    // Most events (deliveries to recipients without incidents) have no row: their fields are
    // the defaults, and stay so.
    auto row = policy_rows_.find(hkey);
    const bool had_row = row != policy_rows_.end();
    PolicyFields fields = had_row ? row->second.fields : PolicyFields{};
    d = ApplyPolicy(txn_policy_, fields, ev, t);
    if (had_row ? !(fields == row->second.fields) : !(fields == PolicyFields{})) {
      PolicyRowW(hkey).fields = std::move(fields);
    }
  }
  if (pe.delivery && MayHaveSuppressionW(hkey)) {
    w_.delivered_after.BindRef(1, key).Bind(2, t).Bind(3, txn_now_);
    if (Status s = w_.delivered_after.Run(); !s) return s;
  }
  if (d.suppress) return ApplyDecision(hkey, display, ev, d, t);
  if (pe.failure && MayHaveSuppressionW(hkey)) {
    w_.touch_suppression.BindRef(1, key).Bind(2, t).Bind(3, txn_now_);
    if (Status s = w_.touch_suppression.Run(); !s) return s;
  }
  return Status::Ok();
}

void StoreImpl::BindEventRow(sql::Stmt& in, int base, const PendingRow& row, RowBindings& b) {
  const Event& ev = *row.ev;
  const Result& r = ev.result;
  in.Bind(base + 1, row.time);
  if (row.kind != b.kind) in.Bind(base + 2, row.kind);
  if (int64_t{row.counted} != b.counted) in.Bind(base + 3, int64_t{row.counted});
  b.kind = row.kind;
  b.counted = row.counted;
  in.BindRef(base + 4, row.key);
  // Empty texts are NULL (the domain, NOT NULL, is always bound).
  struct Text {
    int i;
    std::string_view text;
    bool repeats;  // bound from a copy, skipped when equal to it
  };
  const Text texts[] = {
      {5, row.domain, true},
      {6, ev.queue_id, false},
      {7, ev.source_ref, false},
      // NULL in the usual case, where the display form is the key.
      {8, r.recipient != row.key ? std::string_view(r.recipient) : std::string_view(), false},
      {9, ev.message_id, true},
      {10, ev.sender, true},
      {11, ev.relay, true},
      {12, r.diagnostic, false},
      {13, r.remote_mta, true},
      {14, ev.time_text, false},
      {15, r.original_recipient, false},
      {16, ev.bounce_queue_id, false}};
  for (const Text& t : texts) {
    const uint32_t bit = uint32_t{1} << t.i;
    if (t.text.empty() && t.i != 5) {
      if (b.texts & bit) in.BindNull(base + t.i);
      b.texts &= ~bit;
      b.copies &= ~bit;
    } else if (!t.repeats) {
      in.BindRef(base + t.i, t.text);
      b.texts |= bit;
      b.copies &= ~bit;
    } else if (!(b.copies & bit) || b.copy[t.i] != t.text) {
      b.copy[t.i].assign(t.text);
      in.BindRef(base + t.i, b.copy[t.i]);
      b.texts |= bit;
      b.copies |= bit;
    }
  }
}

Status StoreImpl::FlushRowsW() {
  const size_t n = pending_rows_.size();
  if (n == 0) return Status::Ok();
  int64_t last_id = 0;
  if (n == kRowsPerInsert) {
    for (size_t r = 0; r < n; ++r) {
      BindEventRow(w_.insert_events, static_cast<int>(r) * kEventRowParams, pending_rows_[r],
                   multi_bindings_[r]);
    }
    Status s = w_.insert_events.RunKeepBindings();
    if (!s) {
      for (RowBindings& b : multi_bindings_) b.Reset();  // an error clears the bindings
      pending_rows_.clear();
      return s;
    }
    last_id = sqlite3_last_insert_rowid(wdb_.get());
  } else {
    for (const PendingRow& row : pending_rows_) {
      BindEventRow(w_.insert_event, 0, row, insert_bindings_);
      if (Status s = w_.insert_event.RunKeepBindings(); !s) {
        insert_bindings_.Reset();
        pending_rows_.clear();
        return s;
      }
    }
    last_id = sqlite3_last_insert_rowid(wdb_.get());
  }
  // The rows took consecutive ids ending at last_id: each is appended after the largest.
  int64_t id = last_id - static_cast<int64_t>(n);
  for (const PendingRow& row : pending_rows_) {
    ++id;
    if (!row.original_key.empty()) {
      w_.put_original.Bind(1, id).BindRef(2, row.original_key).Bind(3, row.time);
      if (Status s = w_.put_original.Run(); !s) {
        pending_rows_.clear();
        return s;
      }
    }
    if (txn_days_.empty() || txn_days_.back().day != row.day) {
      auto it = std::find_if(txn_days_.begin(), txn_days_.end(),
                             [&](const DayRange& d) { return d.day == row.day; });
      if (it == txn_days_.end()) {
        txn_days_.push_back(DayRange{row.day, id, id});
      } else {
        std::rotate(it, it + 1, txn_days_.end());  // the day seen last goes to the back
      }
    }
    txn_days_.back().last_id = id;  // ids only grow within a transaction
  }
  pending_rows_.clear();
  return Status::Ok();
}

Status StoreImpl::ApplyDecision(const HashedKey& hkey, std::string_view display, const Event& ev,
                                const PolicyDecision& d, int64_t t) {
  const std::string_view key = hkey.key;
  auto allowed = AllowedW(key);
  if (!allowed) return allowed.status();
  if (*allowed) return Status::Ok();  // the allowlist always wins
  // No row can exist when neither the view nor this transaction has the key: skip the SELECT.
  auto existing = MayHaveSuppressionW(hkey) ? GetSuppressionW(key)
                                            : Expected<std::optional<Suppression>>(std::nullopt);
  if (!existing) return existing.status();
  if (*existing && ((*existing)->expires == 0 || (*existing)->expires > txn_now_)) {
    // Already suppressed (automatic or manual): only note the newer failure.
    w_.touch_suppression.Bind(1, key).Bind(2, t).Bind(3, txn_now_);
    return w_.touch_suppression.Run();
  }
  Suppression s;
  s.address = std::string(key);
  s.display = std::string(display);
  s.reason = std::string(d.reason);
  s.category = std::string(ToString(ev.result.category));
  s.source = std::string(d.source);
  s.first_event = d.first_event;
  s.last_event = t;
  s.created = t;
  s.expires = d.expires;
  s.detail = ev.result.diagnostic;
  // An event read late (an older log, a DSN that took days) may suppress after a delivery to
  // the address that is already stored: the entry notes it from the start, as it would have had
  // the events come in order (delivered_after).
  if (Status f = FlushRowsW(); !f) return f;
  w_.delivered_since.Bind(1, key).Bind(2, t);
  auto row = w_.delivered_since.Step();
  if (row && *row) s.delivered_after = w_.delivered_since.Int(0);
  w_.delivered_since.Reset();
  if (!row) return row.status();
  return PutSuppressionW(s, "add", kBouncedItself);
}

Expected<std::optional<Suppression>> StoreImpl::GetSuppressionW(std::string_view key) {
  w_.get_suppression.Bind(1, key);
  auto r = w_.get_suppression.Step();
  std::optional<Suppression> out;
  if (r && *r) out = ReadSuppression(w_.get_suppression);
  w_.get_suppression.Reset();
  if (!r) return r.status();
  return out;
}

Status StoreImpl::PutSuppressionW(const Suppression& s, std::string_view log_action,
                                  const Actor& who) {
  // BindRef: `s` outlives the statement's run (Run resets it).
  w_.put_suppression.BindRef(1, s.address)
      .BindRef(2, s.display)
      .BindRef(3, DomainOfKey(s.address))
      .BindRef(4, s.reason)
      .BindRef(5, s.category)
      .BindRef(6, s.source)
      .Bind(7, s.first_event)
      .Bind(8, s.last_event)
      .Bind(9, s.created)
      .Bind(10, s.expires)
      .BindRef(11, s.detail)
      .Bind(12, s.delivered_after)
      .Bind(13, txn_now_);
  if (Status st = w_.put_suppression.Run(); !st) return st;
  if (Status st = LogSuppressionW(s, log_action, who); !st) return st;
  // Purged at its expiry (a rollback leaves a purge that finds nothing and looks again).
  if (s.expires != 0 && s.expires < next_purge_) next_purge_ = s.expires;
  txn_suppressed_.insert(s.address);
  pending_->push_back(ViewChange{ViewChange::kPut, s.address, HitFor(s), log_action == "add",
                                 s.source, s.category});
  return Status::Ok();
}

Status StoreImpl::LogSuppressionW(const Suppression& s, std::string_view action, const Actor& who) {
  w_.log_suppression.Bind(1, txn_now_)
      .BindRef(2, txn_now_day_)
      .BindRef(3, s.address)
      .BindRef(4, action)
      .BindRef(5, s.source)
      .BindRef(6, s.reason)
      .BindRef(7, s.category)
      .Bind(8, who.uid)
      .BindRef(9, who.reason);
  return w_.log_suppression.Run();
}

Expected<bool> StoreImpl::AllowedW(std::string_view key) {
  // The view holds the committed allowlist: it answers unless this transaction changed it.
  if (!txn_allowlist_changed_) return view_.Allowed(key);
  for (const std::string& c : AllowCandidates(key)) {
    w_.allowed.Bind(1, c);
    auto r = w_.allowed.Step();
    w_.allowed.Reset();
    if (!r) return r.status();
    if (*r) return true;
  }
  return false;
}

Status StoreImpl::PurgeExpiredW() {
  sql::Stmt del;
  if (Status s = del.Prepare(wdb_,
                             "DELETE FROM suppressions WHERE address IN (SELECT address FROM "
                             "suppressions WHERE expires <> 0 AND expires <= ?1 LIMIT ?2) "
                             "RETURNING address, reason, category, source");
      !s) {
    return s;
  }
  del.Bind(1, txn_now_).Bind(2, kPurgeLimit);
  std::vector<Suppression> gone;
  if (Status walked = del.ForEachRow([&] {
        Suppression s;
        s.address = del.Text(0);
        s.reason = del.Text(1);
        s.category = del.Text(2);
        s.source = del.Text(3);
        gone.push_back(std::move(s));
      });
      !walked) {
    return walked;
  }
  del.Reset();
  for (const Suppression& s : gone) {
    if (Status st = LogSuppressionW(s, "remove", kExpired); !st) return st;
    pending_->push_back(ViewChange{ViewChange::kErase, s.address, {}});
    if (s.reason == kReasonRepeatedFailure) ForgetIncidentsW(s.address);
  }
  if (gone.size() == static_cast<size_t>(kPurgeLimit)) {
    next_purge_ = 0;  // more are waiting
    return Status::Ok();
  }
  // The next entry to expire is purged at its expiry (its remove is in the change feed then),
  // not at the next hourly sweep.
  return ReadFirstRow(wdb_,
                      "SELECT min(expires) FROM suppressions WHERE expires <> 0 AND expires > ?1",
                      txn_now_, [this](const sql::Stmt& next) {
                        if (!next.IsNull(0)) next_purge_ = std::min(next_purge_, next.Int(0));
                      });
}

Status StoreImpl::PruneW() {
  prune_more_ = false;
  if (txn_retention_.event_days > 0) {
    const int64_t horizon = txn_event_horizon_;
    const std::string horizon_day = DayOf(horizon);
    // Every row of a day lies within that day's id range (event_days), so the rows before the
    // horizon are within the ranges of the days before it: walked by id, without an index on
    // time. A late event (an old mailbox fed yesterday) widens its day's range over newer rows,
    // which the time test keeps; the cursor saves walking them again in the next step.
    sql::Stmt& range = w_.prune_range;
    range.Bind(1, horizon_day);
    auto r = range.Step();
    const bool any = r && *r && !range.IsNull(0);
    const int64_t first = any ? std::max(range.Int(0), prune_cursor_) : 0;
    const int64_t last = any ? range.Int(1) : 0;
    range.Reset();
    if (!r) return r.status();
    if (any) {
      // The step's rows: up to kPruneLimit old ones from `first` on, up to the id of the last.
      sql::Stmt& ids = w_.prune_ids;
      ids.Bind(1, first).Bind(2, last).Bind(3, horizon).Bind(4, kPruneLimit);
      int64_t n = 0, end = 0;
      Status walked = ids.ForEachRow([&] {
        ++n;
        end = ids.Int(0);
      });
      ids.Reset();
      if (!walked) return walked;
      if (n != 0) {
        for (sql::Stmt* del : {&w_.prune_rows, &w_.prune_originals}) {
          del->Bind(1, first).Bind(2, end).Bind(3, horizon);
          if (Status s = del->Run(); !s) return s;
        }
        txn_pruned_.events += n;
        // The same-bounce index must not answer "stored" for a row pruned here.
        dsn_bounces_.Forget(horizon);
      }
      if (n == kPruneLimit) {
        prune_cursor_ = end + 1;
        prune_more_ = true;
        return Status::Ok();
      }
      w_.prune_days.Bind(1, horizon_day);
      if (Status s = w_.prune_days.Run(); !s) return s;
    }
    prune_cursor_ = 0;
  }
  if (txn_retention_.counter_days > 0) {
    // One day a step (its rows are adjacent: the key starts with the day).
    const std::string horizon_day = DayOf(RetentionHorizon(txn_retention_.counter_days, txn_now_));
    sql::Stmt& oldest = w_.oldest_counter_day;
    auto r = oldest.Step();
    const std::string day = r && *r && !oldest.IsNull(0) ? oldest.Text(0) : std::string();
    oldest.Reset();
    if (!r) return r.status();
    if (!day.empty() && day < horizon_day) {
      w_.prune_counter_day.Bind(1, day);
      if (Status s = w_.prune_counter_day.Run(); !s) return s;
      txn_pruned_.counter_rows += wdb_.changes();
      prune_more_ = true;  // the next day may be old too
    }
  }
  return Status::Ok();
}

Status StoreImpl::EndExpiredRepeatedFailureW(const HashedKey& hkey) {
  auto existing = GetSuppressionW(hkey.key);
  if (!existing) return existing.status();
  if (!*existing) return Status::Ok();
  const Suppression& s = **existing;
  if (s.expires == 0 || s.expires > txn_now_ || s.reason != kReasonRepeatedFailure)
    return Status::Ok();
  w_.delete_suppression.Bind(1, hkey.key);
  if (Status r = w_.delete_suppression.Run(); !r) return r;
  if (Status r = LogSuppressionW(s, "remove", kExpired); !r) return r;
  pending_->push_back(ViewChange{ViewChange::kErase, s.address, {}});
  ForgetIncidentsW(s.address);
  return Status::Ok();
}

void StoreImpl::ForgetIncidentsW(std::string_view address) {
  HashedKey key = HashedKey::Of(address);
  auto it = policy_rows_.find(key);
  if (it == policy_rows_.end() || it->second.fields.incidents == 0) return;
  PolicyFields& f = PolicyRowW(key).fields;
  const int64_t unsuppressed = f.manual_unsuppressed;
  f = PolicyFields{};
  f.manual_unsuppressed = unsuppressed;
}

Status StoreImpl::AuditW(const Actor& who, std::string_view action, std::string_view target,
                         std::string_view detail) {
  w_.audit.Bind(1, txn_now_)
      .Bind(2, who.uid)
      .Bind(3, action)
      .Bind(4, target)
      .Bind(5, who.reason)
      .Bind(6, detail);
  return w_.audit.Run();
}

Expected<int64_t> StoreImpl::KindW(const Event& ev, const CategoryInfo& info, std::string_view key,
                                   uint64_t h) {
  const Result& r = ev.result;
  auto cached = kind_ids_.find(h);
  if (cached != kind_ids_.end() && cached->second.key == key) return cached->second.id;
  const KindFields fields = KindFieldsOf(ev, info);
  // The SELECT and the INSERT take the fields as ?1..?14 (hard_bounce as a number).
  auto bind_fields = [&](sql::Stmt& st) {
    for (int i = 0; i < 14; ++i) {
      if (i == 5) {
        st.Bind(6, int64_t{info.hard_bounce});
      } else {
        st.BindRef(i + 1, fields[i]);
      }
    }
  };
  sql::Stmt& get = w_.get_kind;
  bind_fields(get);
  auto found = get.Step();
  int64_t id = found && *found ? get.Int(0) : 0;
  get.Reset();
  if (!found) return found.status();
  bool inserted = false;
  if (id == 0) {
    sql::Stmt& put = w_.put_kind;
    bind_fields(put);
    if (Status s = put.Run(); !s) return s;
    id = sqlite3_last_insert_rowid(wdb_.get());
    inserted = true;
    txn_new_kind_ids_.push_back(id);
  }
  kind_counter_fields_.try_emplace(
      id, KindCounterFields{std::string(r.provider), std::string(info.name),
                            std::string(r.provider_code), std::string(ev.log_status)});
  if (cached == kind_ids_.end()) {  // else another kind holds the hash: this one asks SQL
    kind_ids_.emplace(h, CachedKind{std::string(key), id});
    if (inserted) txn_new_kinds_.push_back(h);
  }
  return id;
}

PolicyRow& StoreImpl::PolicyRowW(const HashedKey& key) {
  auto it = policy_rows_.find(key);
  if (policy_before_.find(key) == policy_before_.end()) {
    policy_before_.emplace(key.key, it == policy_rows_.end()
                                        ? std::optional<PolicyRow>()
                                        : std::optional<PolicyRow>(it->second));
  }
  if (it == policy_rows_.end()) it = policy_rows_.emplace(key.key, PolicyRow{}).first;
  return it->second;
}

Status StoreImpl::WritePendingW() {
  for (const DayRange& d : txn_days_) {
    const std::string day = DayOf(d.day * 86400);
    w_.put_day.BindRef(1, day).Bind(2, d.first_id).Bind(3, d.last_id);
    if (Status s = w_.put_day.Run(); !s) return s;
  }
  for (const auto& [k, n] : txn_counters_) {
    auto day = txn_day_texts_.find(k.day);
    auto fields = kind_counter_fields_.find(k.kind);
    if (fields == kind_counter_fields_.end() || day == txn_day_texts_.end()) {
      return Status::Error("storage: daily counter of event kind " + std::to_string(k.kind) +
                           " without its fields or day");
    }
    const KindCounterFields& f = fields->second;
    w_.counter.BindRef(1, day->second)
        .BindRef(2, k.domain)
        .BindRef(3, f.provider)
        .BindRef(4, f.category)
        .BindRef(5, f.provider_code)
        .BindRef(6, f.log_status)
        .Bind(7, n);
    if (Status s = w_.counter.Run(); !s) return s;
  }
  std::vector<const std::string*> keys;
  keys.reserve(policy_before_.size());
  for (const auto& [key, before] : policy_before_) keys.push_back(&key);
  // Key order: the B-tree pages are visited once, in order.
  std::sort(keys.begin(), keys.end(), [](const auto* a, const auto* b) { return *a < *b; });
  for (const std::string* key : keys) {
    auto it = policy_rows_.find(*key);
    if (it == policy_rows_.end() || it->second.Empty()) {
      if (!policy_before_[*key]) continue;  // never written
      w_.delete_policy.BindRef(1, *key);
      if (Status s = w_.delete_policy.Run(); !s) return s;
      continue;
    }
    const PolicyRow& p = it->second;
    const PolicyFields& f = p.fields;
    w_.put_policy.BindRef(1, *key)
        .BindRef(2, p.display)
        .Bind(3, p.first_seen)
        .Bind(4, f.incidents)
        .Bind(5, f.incidents_since)
        .Bind(6, f.last_incident)
        .Bind(7, f.manual_unsuppressed)
        .Bind(8, f.pending_delivery)
        .BindRef(9, f.pending_message_id)
        .BindRef(10, f.pending_earlier);
    if (Status s = w_.put_policy.Run(); !s) return s;
  }
  // The memory now matches what COMMIT will hold; an empty row is no row.
  for (const std::string* key : keys) {
    auto it = policy_rows_.find(*key);
    if (it != policy_rows_.end() && it->second.Empty()) policy_rows_.erase(it);
  }
  return Status::Ok();
}

void StoreImpl::DiscardPendingW() {
  queue_fact_ids_.clear();
  for (auto& [key, before] : policy_before_) {
    if (before) {
      policy_rows_[key] = *before;
    } else {
      policy_rows_.erase(key);
    }
  }
  policy_before_.clear();
  for (uint64_t h : txn_new_kinds_) kind_ids_.erase(h);
  txn_new_kinds_.clear();
  // A later transaction may give these ids to other kinds.
  for (int64_t id : txn_new_kind_ids_) kind_counter_fields_.erase(id);
  txn_new_kind_ids_.clear();
  txn_days_.clear();
  txn_counters_.clear();
  txn_day_texts_.clear();
  dsn_bounces_.Rollback();
}

}  // namespace bounced::store_detail
