// store.cc: the SQLite store (see store.h): open, migrate and load the database, and
// Store::Open; the writer is in store_writer.cc, manual changes in store_manual.cc, reads in
// store_reads.cc (store_impl.h holds what they share). Reads and writes the database at
// StoreOptions::path.
#include "storage/store.h"

#include <spdlog/spdlog.h>

#include "storage/store_impl.h"

namespace bounced {

extern const std::string_view kSchemaV1Sql;  // storage/schema.sql, embedded at build time
extern const std::string_view kSchemaV2Sql;  // storage/migrate_2.sql
extern const std::string_view kSchemaV3Sql;  // storage/migrate_3.sql
extern const std::string_view kSchemaV4Sql;  // storage/migrate_4.sql
extern const std::string_view kSchemaV5Sql;  // storage/migrate_5.sql
extern const std::string_view kSchemaV6Sql;  // storage/migrate_6.sql
extern const std::string_view kSchemaV7Sql;  // storage/migrate_7.sql
extern const std::string_view kSchemaV8Sql;  // storage/migrate_8.sql
extern const std::string_view kSchemaV9Sql;  // storage/migrate_9.sql

namespace store_detail {

namespace {

// PRAGMA application_id of a bounced database ("boun"), to refuse someone else's SQLite file.
constexpr int32_t kApplicationId = 0x626f756e;
// Migration N turns schema N-1 into N. Index 0 is version 1 (the whole schema.sql).
const std::string_view* const kMigrations[] = {&kSchemaV1Sql, &kSchemaV2Sql, &kSchemaV3Sql,
                                               &kSchemaV4Sql, &kSchemaV5Sql, &kSchemaV6Sql,
                                               &kSchemaV7Sql, &kSchemaV8Sql, &kSchemaV9Sql};
static_assert(std::size(kMigrations) == kSchemaVersion);

}  // namespace

Status StoreImpl::OpenAll() {
  if (options_.path.empty()) return Status::Error("storage: no database path configured");
  if (Status s = wdb_.Open(options_.path, false, options_.busy_timeout_ms); !s) return s;
  // Reading the header first turns "not a database" and "locked" into clear errors.
  {
    sql::Stmt st;
    if (Status s = st.Prepare(wdb_, "PRAGMA application_id"); !s) return s;
    auto r = st.Step();
    if (!r) return r.status();
    int32_t app = static_cast<int32_t>(st.Int(0));
    if (app != 0 && app != kApplicationId) {
      return Status::Error(options_.path + ": not a bounced database (application_id " +
                           std::to_string(app) + ")");
    }
  }
  // 16 KiB pages for a new file (an existing one keeps its size; the pragma must come before
  // WAL mode): shallower B-trees and fewer page splits for the events and recipient indexes,
  // measured ~2 % fewer instructions and 5-25 % less CPU per ingested event than 4 KiB.
  if (Status s = wdb_.Exec("PRAGMA page_size=16384"); !s) return s;
  {
    sql::Stmt st;
    if (Status s = st.Prepare(wdb_, "PRAGMA journal_mode=WAL"); !s) return s;
    auto r = st.Step();
    if (!r) return r.status();
    if (st.TextView(0) != "wal") {
      return Status::Error(options_.path + ": cannot switch to WAL mode (journal_mode is " +
                           st.Text(0) + ")");
    }
  }
  if (Status s = wdb_.Exec(options_.synchronous_full ? "PRAGMA synchronous=FULL"
                                                     : "PRAGMA synchronous=NORMAL");
      !s) {
    return s;
  }
  // A big page cache keeps the random-key indexes (recipients) in memory across group commits;
  // without it each transaction re-reads pages from the WAL through system calls.
  int64_t page_size = 4096;
  {
    sql::Stmt st;
    if (Status s = st.Prepare(wdb_, "PRAGMA page_size"); !s) return s;
    auto r = st.Step();
    if (!r) return r.status();
    if (*r && st.Int(0) > 0) page_size = st.Int(0);
  }
  if (Status s = wdb_.Exec("PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY"); !s) return s;
  // Checkpoints run on the checkpointer thread, not inside the writer's COMMIT (SQLite's
  // wal_autocheckpoint): the hook replaces it (see CheckpointerLoop). Sizes count pages.
  ckpt_every_frames_ = std::max<int64_t>(1, options_.checkpoint_bytes / page_size);
  ckpt_cap_frames_ = std::max<int64_t>(ckpt_every_frames_, options_.wal_cap_bytes / page_size);
  sqlite3_wal_hook(wdb_.get(), &StoreImpl::WalHook, this);
  if (Status s = Migrate(); !s) return s;
  if (Status s = RekeyQuotedAddresses(); !s) return s;
  // Opened after the migration: the file is a bounced database in WAL mode by now. A read makes
  // the connection open the WAL (a checkpoint on a connection that never read does nothing).
  if (Status s = cdb_.Open(options_.path, false, options_.busy_timeout_ms); !s) return s;
  if (Status s = cdb_.Exec("SELECT count(*) FROM sqlite_master"); !s) return s;
  if (Status s = PrepareWriter(); !s) return s;
  if (Status s = LoadBounceSources(); !s) return s;
  if (Status s = LoadPolicyRows(); !s) return s;
  view_.SetDelimiters(policy_.recipient_delimiters);
  if (Status s = LoadView(); !s) return s;
  reaper_ = std::thread(&StoreImpl::ReaperLoop, this);
  checkpointer_ = std::thread(&StoreImpl::CheckpointerLoop, this);
  // With a retention, the writer prunes at once, before any batch comes.
  prune_soon_ = retention_.event_days > 0 || retention_.counter_days > 0;
  writer_ = std::thread([this] { WriterLoop(); });
  return Status::Ok();
}

Status StoreImpl::Migrate() {
  sql::Stmt st;
  if (Status s = st.Prepare(wdb_, "PRAGMA user_version"); !s) return s;
  auto r = st.Step();
  if (!r) return r.status();
  int version = static_cast<int>(st.Int(0));
  st = sql::Stmt();
  if (version > kSchemaVersion) {
    return Status::Error(options_.path + ": database schema version " + std::to_string(version) +
                         " is newer than this bounced knows (" + std::to_string(kSchemaVersion) +
                         "); upgrade bounced or restore a backup");
  }
  if (version == 0) {
    // A fresh file has no tables; anything else with version 0 belongs to someone else.
    sql::Stmt count;
    if (Status s = count.Prepare(wdb_, "SELECT count(*) FROM sqlite_master"); !s) return s;
    auto c = count.Step();
    if (!c) return c.status();
    if (count.Int(0) != 0) {
      return Status::Error(options_.path +
                           ": not a bounced database (has tables but no schema version)");
    }
  }
  for (int v = version + 1; v <= kSchemaVersion; ++v) {
    if (Status s = wdb_.Exec("BEGIN IMMEDIATE"); !s) return s;
    Status s = wdb_.Exec(*kMigrations[v - 1]);
    if (s && v == 7) s = FillOriginalKeys();
    if (s) s = wdb_.Exec("PRAGMA application_id=" + std::to_string(kApplicationId));
    if (s) s = wdb_.Exec("PRAGMA user_version=" + std::to_string(v));
    if (s) s = wdb_.Exec("COMMIT");
    if (!s) {
      wdb_.Exec("ROLLBACK");
      return Status::Error(options_.path + ": migration to schema version " + std::to_string(v) +
                           " failed: " + s.message());
    }
  }
  return Status::Ok();
}

Status StoreImpl::FillOriginalKeys() {
  // Keyed with the policy's delimiters, as the writer keys what it stores from now on.
  const std::string delimiters = options_.policy.recipient_delimiters;
  struct Row {
    int64_t id, time;
    std::string key;
  };
  std::vector<Row> rows;
  {
    sql::Stmt st;
    if (Status s = st.Prepare(wdb_,
                              "SELECT id, time, original_recipient, recipient_key FROM event_rows "
                              "WHERE original_recipient IS NOT NULL");
        !s) {
      return s;
    }
    std::string key;
    Status walked = st.ForEachRow([&] {
      NormalizeAddressInto(st.TextView(2), delimiters, key);
      if (!key.empty() && key != st.TextView(3)) rows.push_back({st.Int(0), st.Int(1), key});
    });
    if (!walked) return walked;
  }
  sql::Stmt put;
  if (Status s = put.Prepare(wdb_,
                             "INSERT INTO event_originals (event_id, original_key, time) "
                             "VALUES (?1, ?2, ?3)");
      !s) {
    return s;
  }
  for (const Row& r : rows) {
    put.Bind(1, r.id).Bind(2, r.key).Bind(3, r.time);
    if (Status s = put.Run(); !s) return s;
  }
  return Status::Ok();
}

namespace {

// SQL condition: `column` holds a key whose local part starts with a quote (they sort from '"'
// up to '#', so an index on the column finds them in one probe).
std::string QuotedKey(std::string_view column) {
  std::string c(column);
  return c + " >= '\"' AND " + c + " < '#'";
}

// (stored key, key NormalizeAddress makes of it now) for each key `sql` returns that changed.
Expected<std::vector<std::pair<std::string, std::string>>> ChangedKeys(sql::Db& db,
                                                                       std::string_view sql) {
  std::vector<std::pair<std::string, std::string>> out;
  sql::Stmt st;
  if (Status s = st.Prepare(db, sql); !s) return s;
  Status walked = st.ForEachRow([&] {
    // No delimiters: a stored key keeps the extension cut it was written with.
    std::string now = NormalizeAddress(st.TextView(0), "");
    if (!now.empty() && now != st.TextView(0)) out.emplace_back(st.Text(0), std::move(now));
  });
  if (!walked) return walked;
  return out;
}

// How strongly a suppression row holds at `now`: one in force over an expired one, then manual
// and imported entries over automatic ones, then the one that never expires, then the later
// expiry.
std::tuple<bool, bool, bool, int64_t> SuppressionStrength(std::string_view source, int64_t expires,
                                                          int64_t now) {
  return {expires == 0 || expires > now, source == "manual" || source == "import", expires == 0,
          expires};
}

}  // namespace

// Keys written before NormalizeAddress unquoted quoted local parts: `"john.doe"@x` (now
// john.doe@x, as Postfix itself spells it), or `"john.doe@x` (an extension cut inside the
// quotes). Lookups no longer reach them, so they move to their present key, in one transaction,
// at every open: without such keys it costs one index probe per table, and a file written by an
// older bounced in between is put right the same way (which a schema version, run once, would
// not do; nor would an older bounced refuse the file afterwards). Where the present key already
// has a row, one row stays: for suppressions the one that holds more strongly
// (SuppressionStrength; a tie keeps the present key's), for the allowlist the present key's, for
// the policy rows the present key's with the later manual unsuppress of the two. Events only
// change their key (a NULL display, meaning "the key", becomes the old key). suppression_log and
// audit keep what they recorded.
Status StoreImpl::RekeyQuotedAddresses() {
  const std::string changed_suppressions =
      "SELECT address FROM suppressions WHERE " + QuotedKey("address");
  const std::string changed_allowed =
      "SELECT entry FROM allowlist WHERE kind = 'address' AND " + QuotedKey("entry");
  const std::string changed_policy =
      "SELECT address FROM recipient_policy WHERE " + QuotedKey("address");
  const std::string changed_events =
      "SELECT DISTINCT recipient_key FROM event_rows WHERE " + QuotedKey("recipient_key");
  // Read first, outside a transaction: usually there is nothing to move (keys that need their
  // quotes, "jane roe"@x, stay as they are), and then nothing is written.
  bool any = false;
  for (const std::string* sql :
       {&changed_suppressions, &changed_allowed, &changed_policy, &changed_events}) {
    auto changed = ChangedKeys(wdb_, *sql);
    if (!changed) return changed.status();
    any = any || !changed->empty();
  }
  if (!any) return Status::Ok();
  size_t moved = 0;
  auto rekey = [&]() -> Status {
    // Every statement below names the old key ?1 and the present key ?2.
    auto run = [&](std::string_view sql, std::string_view a, std::string_view b) -> Status {
      sql::Stmt st;
      if (Status s = st.Prepare(wdb_, sql); !s) return s;
      st.Bind(1, a).Bind(2, b);
      return st.Run();
    };
    // `table`'s row keyed `old_key` (in `column`) takes `new_key`; when a row has that key
    // already, the old row goes and the other stays.
    auto move_key = [&](std::string_view table, std::string_view column, std::string_view old_key,
                        std::string_view new_key) -> Status {
      const std::string t(table), c(column);
      if (Status s = run("DELETE FROM " + t + " WHERE " + c + " = ?1 AND EXISTS (SELECT 1 FROM " +
                             t + " WHERE " + c + " = ?2)",
                         old_key, new_key);
          !s) {
        return s;
      }
      ++moved;
      return run("UPDATE " + t + " SET " + c + " = ?2 WHERE " + c + " = ?1", old_key, new_key);
    };
    auto suppressions = ChangedKeys(wdb_, changed_suppressions);
    if (!suppressions) return suppressions.status();
    for (const auto& [old_key, new_key] : *suppressions) {
      sql::Stmt both;
      if (Status s = both.Prepare(wdb_,
                                  "SELECT o.source, o.expires, n.source, n.expires FROM "
                                  "suppressions o JOIN suppressions n ON n.address = ?2 "
                                  "WHERE o.address = ?1");
          !s) {
        return s;
      }
      both.Bind(1, old_key).Bind(2, new_key);
      auto collision = both.Step();
      if (!collision) return collision.status();
      const bool old_wins =
          *collision && SuppressionStrength(both.TextView(0), both.Int(1), Now()) >
                            SuppressionStrength(both.TextView(2), both.Int(3), Now());
      both = sql::Stmt();
      // The old row winning, the present key's goes first, and the old one takes its key.
      if (*collision && old_wins) {
        if (Status s = run("DELETE FROM suppressions WHERE address = ?2", old_key, new_key); !s)
          return s;
      }
      if (Status s = move_key("suppressions", "address", old_key, new_key); !s) return s;
    }
    auto allowed = ChangedKeys(wdb_, changed_allowed);
    if (!allowed) return allowed.status();
    for (const auto& [old_key, new_key] : *allowed) {
      if (Status s = move_key("allowlist", "entry", old_key, new_key); !s) return s;
    }
    auto policy = ChangedKeys(wdb_, changed_policy);
    if (!policy) return policy.status();
    for (const auto& [old_key, new_key] : *policy) {
      if (Status s =
              run("UPDATE recipient_policy SET manual_unsuppressed = max(manual_unsuppressed, "
                  "(SELECT manual_unsuppressed FROM recipient_policy WHERE address = ?1)) "
                  "WHERE address = ?2",
                  old_key, new_key);
          !s) {
        return s;
      }
      if (Status s = move_key("recipient_policy", "address", old_key, new_key); !s) return s;
    }
    auto events = ChangedKeys(wdb_, changed_events);
    if (!events) return events.status();
    for (const auto& [old_key, new_key] : *events) {
      if (Status s = run("UPDATE event_rows SET recipient = coalesce(recipient, recipient_key), "
                         "recipient_key = ?2 WHERE recipient_key = ?1",
                         old_key, new_key);
          !s) {
        return s;
      }
      ++moved;
    }
    return Status::Ok();
  };
  if (Status s = wdb_.Exec("BEGIN IMMEDIATE"); !s) return s;
  Status s = rekey();
  if (s) s = wdb_.Exec("COMMIT");
  if (!s) {
    wdb_.Exec("ROLLBACK");
    return Status::Error(
        options_.path +
        ": moving quoted address keys to their unquoted form failed: " + s.message());
  }
  if (moved != 0) {
    spdlog::info(
        "storage: {}: {} address key(s) written in quoted form moved to the form "
        "lookups use now",
        options_.path, moved);
  }
  return Status::Ok();
}

Status StoreImpl::LoadBounceSources() {
  sql::Stmt st;
  if (Status s = st.Prepare(wdb_,
                            "SELECT EXISTS (SELECT 1 FROM event_kinds WHERE log_status IN "
                            "('bounced', 'expired') AND source IN ('log', 'journal')), "
                            "EXISTS (SELECT 1 FROM event_kinds WHERE log_status IN "
                            "('bounced', 'expired') AND source IN ('dsn', 'milter'))");
      !s)
    return s;
  auto row = st.Step();
  if (!row) return row.status();
  if (*row) {
    bounces_from_log_ = st.Int(0) != 0;
    bounces_from_dsn_ = st.Int(1) != 0;
  }
  // Without any DSN bounce stored the empty index is complete (its default).
  return bounces_from_dsn_ ? LoadDsnBounceIndex() : Status::Ok();
}

Status StoreImpl::LoadDsnBounceIndex() {
  // The newest event day (a day in the future from a bad clock counts as tomorrow); the index
  // then covers the lookup's window before it and one day of slack. event_days holds every
  // event's id within its day's range, so the rows of those days are a range of ids, read in
  // one pass without an index on time.
  const int64_t now = Now();
  int64_t newest = now;
  {
    sql::Stmt st;
    if (Status s = st.Prepare(wdb_, "SELECT max(day) FROM event_days WHERE length(day) = 10"); !s) {
      return s;
    }
    auto r = st.Step();
    if (!r) return r.status();
    // NULL (no events) reads as "", which does not parse.
    if (*r) {
      if (auto day = ParseTime(st.TextView(0))) newest = std::min(*day + 86399, newest + 86400);
    }
  }
  // Not before 1970: days of those times may not sort as text.
  const int64_t covered_from =
      std::max<int64_t>(0, newest - kSameBounceWindowSeconds - kSameBounceSlackSeconds);
  dsn_bounces_.Reset(covered_from);
  auto first = FirstEventIdOfDays(wdb_, covered_from);
  if (!first) return first.status();
  const int64_t first_id = *first;
  if (first_id < 0) return Status::Ok();  // no events on those days
  sql::Stmt st;
  if (Status s = st.Prepare(wdb_,
                            // The kind first: it rejects most rows after one column (1.2M
                            // rows: 0.17 s against 0.29 s with it last).
                            "SELECT time, queue_id, recipient_key FROM event_rows WHERE id >= ?1 "
                            "AND kind IN (SELECT id FROM event_kinds WHERE log_status IN "
                            "('bounced', 'expired') AND source IN ('dsn', 'milter')) "
                            "AND time >= ?2 AND counted = 1 AND queue_id IS NOT NULL");
      !s) {
    return s;
  }
  st.Bind(1, first_id).Bind(2, covered_from);
  if (Status walked =
          st.ForEachRow([&] { dsn_bounces_.Add(st.TextView(1), st.TextView(2), st.Int(0), now); });
      !walked) {
    return walked;
  }
  dsn_bounces_.Commit();  // committed rows
  return Status::Ok();
}

Status StoreImpl::PrepareWriter() {
  struct {
    sql::Stmt* st;
    std::string_view sql;
  } all[] = {
      {&w_.insert_event,
       "INSERT INTO event_rows (time, kind, counted, recipient_key, domain, queue_id, source_ref, "
       "recipient, message_id, sender, relay, diagnostic, remote_mta, time_text, "
       "original_recipient, bounce_queue_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
       "?11, ?12, ?13, ?14, ?15, ?16)"},
      {&w_.put_original,
       "INSERT INTO event_originals (event_id, original_key, time) VALUES (?1, ?2, ?3)"},
      // Pruning (PruneW). Days are compared as text, so only those of four-digit years: the
      // rows of a clock past 9999 sort before 2026 and are not old.
      {&w_.prune_range,
       "SELECT min(first_id), max(last_id) FROM event_days WHERE day < ?1 AND length(day) = 10"},
      {&w_.prune_ids,
       "SELECT id FROM event_rows WHERE id >= ?1 AND id <= ?2 AND time < ?3 ORDER BY id "
       "LIMIT ?4"},
      {&w_.prune_rows, "DELETE FROM event_rows WHERE id >= ?1 AND id <= ?2 AND time < ?3"},
      {&w_.prune_originals,
       "DELETE FROM event_originals WHERE event_id >= ?1 AND event_id <= ?2 AND time < ?3"},
      {&w_.prune_days, "DELETE FROM event_days WHERE day < ?1 AND length(day) = 10"},
      {&w_.oldest_counter_day, "SELECT min(day) FROM daily_counters WHERE length(day) = 10"},
      {&w_.prune_counter_day, "DELETE FROM daily_counters WHERE day = ?1"},
      // A DSN is recorded once per (Message-ID, recipient), whichever of dsn/milter saw it.
      // A DSN event's two questions (recorded before? the copy of a counted log bounce?) in one
      // pass over the recipient's rows: only matching rows come back, usually none. ?3 (the
      // queue id) stays NULL when the event cannot repeat a log bounce.
      {&w_.dsn_lookup,
       "SELECT e.source_ref = ?2 AND k.source IN ('dsn', 'milter') FROM event_rows e "
       "JOIN event_kinds k ON k.id = e.kind WHERE e.recipient_key = ?1 AND "
       "((e.source_ref = ?2 AND k.source IN ('dsn', 'milter')) OR (e.queue_id = ?3 AND "
       "e.time BETWEEN ?4 AND ?5 AND e.counted = 1 AND k.log_status IN ('bounced', 'expired') "
       "AND k.source IN ('log', 'journal')))"},
      {&w_.same_bounce,
       "SELECT 1 FROM event_rows e JOIN event_kinds k ON k.id = e.kind "
       "WHERE e.recipient_key = ?2 AND e.time BETWEEN ?5 AND ?6 AND e.queue_id = ?1 "
       "AND e.counted = 1 AND k.log_status IN ('bounced', 'expired') AND k.source IN (?3, ?4) "
       "LIMIT 1"},
      {&w_.get_kind,
       "SELECT id FROM event_kinds WHERE source = ?1 AND log_status = ?2 AND category = ?3 "
       "AND fault = ?4 AND action = ?5 AND hard_bounce = ?6 AND program = ?7 AND provider = ?8 "
       "AND provider_code = ?9 AND status = ?10 AND reply_code = ?11 AND stage = ?12 "
       "AND dsn_action = ?13 AND rule = ?14"},
      {&w_.put_kind,
       "INSERT INTO event_kinds (source, log_status, category, fault, action, hard_bounce, "
       "program, provider, provider_code, status, reply_code, stage, dsn_action, rule) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"},
      {&w_.put_day,
       "INSERT INTO event_days (day, first_id, last_id) VALUES (?1, ?2, ?3) "
       "ON CONFLICT (day) DO UPDATE SET first_id = min(first_id, excluded.first_id), "
       "last_id = max(last_id, excluded.last_id)"},
      {&w_.has_events, "SELECT 1 FROM event_rows WHERE recipient_key = ?1 AND counted = 1 LIMIT 1"},
      {&w_.delivered_since,
       "SELECT coalesce(max(f.time), 0) FROM event_rows f JOIN event_kinds k ON k.id = f.kind "
       "WHERE f.recipient_key = ?1 AND f.counted = 1 AND f.time > ?2 AND k.log_status <> "
       "'blocked' AND (k.log_status = 'sent' OR k.category = 'delivered')"},
      {&w_.put_policy,
       "INSERT OR REPLACE INTO recipient_policy (address, display, first_seen, incidents, "
       "incidents_since, last_incident, manual_unsuppressed, pending_delivery, "
       "pending_message_id, pending_earlier) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"},
      {&w_.delete_policy, "DELETE FROM recipient_policy WHERE address = ?1"},
      {&w_.get_suppression,
       "SELECT address, display, reason, category, source, first_event, last_event, created, "
       "expires, detail, delivered_after FROM suppressions WHERE address = ?1"},
      {&w_.put_suppression,
       "INSERT OR REPLACE INTO suppressions (address, display, domain, reason, category, source, "
       "first_event, last_event, created, expires, detail, delivered_after, updated) VALUES "
       "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"},
      {&w_.delete_suppression, "DELETE FROM suppressions WHERE address = ?1"},
      {&w_.touch_suppression,
       "UPDATE suppressions SET last_event = max(last_event, ?2), updated = ?3 "
       "WHERE address = ?1"},
      {&w_.delivered_after,
       "UPDATE suppressions SET delivered_after = max(delivered_after, ?2), updated = ?3 "
       "WHERE address = ?1 AND created <= ?2"},
      {&w_.log_suppression,
       "INSERT INTO suppression_log (time, day, address, action, source, reason, category, "
       "actor_uid, note) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"},
      {&w_.allowed, "SELECT 1 FROM allowlist WHERE entry = ?1"},
      {&w_.counter,
       "INSERT INTO daily_counters (day, domain, provider, category, provider_code, log_status, "
       "count) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO UPDATE SET "
       "count = count + excluded.count"},
      {&w_.position,
       "INSERT OR REPLACE INTO input_positions (input, inode, offset, cursor, updated) "
       "VALUES (?1, ?2, ?3, ?4, ?5)"},
      {&w_.get_position, "SELECT inode, offset, cursor FROM input_positions WHERE input = ?1"},
      {&w_.queue_fact_ids, "SELECT id, queue_id FROM queue_facts WHERE input = ?1"},
      {&w_.put_queue_fact,
       "INSERT INTO queue_facts (input, queue_id, sender, sender_known, message_id, "
       "bounce_queue_id, size, nrcpt, updated) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"},
      {&w_.update_queue_fact,
       "UPDATE queue_facts SET sender = ?3, sender_known = ?4, message_id = ?5, "
       "bounce_queue_id = ?6, size = ?7, nrcpt = ?8, updated = ?9 WHERE id = ?1 AND queue_id = ?2"},
      {&w_.delete_queue_fact, "DELETE FROM queue_facts WHERE id = ?1"},
      {&w_.audit,
       "INSERT INTO audit (time, actor_uid, action, target, reason, detail) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"},
  };
  for (auto& p : all) {
    if (Status s = p.st->Prepare(wdb_, p.sql); !s) return s;
  }
  // OR FAIL: event_rows has no constraint but NOT NULL, and a failed statement rolls its whole
  // transaction back anyway; with the default ABORT, SQLite would copy every page the statement
  // changes into a statement journal first (it may have to undo part of a multi-row insert).
  std::string multi =
      "INSERT OR FAIL INTO event_rows (" + std::string(kEventRowColumns) + ") VALUES ";
  for (int r = 0; r < kRowsPerInsert; ++r) {
    multi += r ? ", (" : "(";
    for (int i = 1; i <= kEventRowParams; ++i) {
      multi += (i > 1 ? ", ?" : "?") + std::to_string(r * kEventRowParams + i);
    }
    multi += ")";
  }
  pending_rows_.reserve(kRowsPerInsert);
  return w_.insert_events.Prepare(wdb_, multi);
}

Status StoreImpl::LoadView() {
  // A connection of its own, closed after loading, so the writer's page cache does not keep
  // the whole suppression table in memory after start-up.
  sql::Db db;
  if (Status s = db.Open(options_.path, false, options_.busy_timeout_ms); !s) return s;
  sql::Stmt count;
  if (Status s = count.Prepare(db, "SELECT count(*) FROM suppressions"); !s) return s;
  auto c = count.Step();
  if (!c) return c.status();
  view_.Reserve(static_cast<size_t>(count.Int(0)));
  sql::Stmt st;
  if (Status s = st.Prepare(db,
                            "SELECT address, created, expires, category, source "
                            "FROM suppressions");
      !s) {
    return s;
  }
  // The writer purges at the first entry's expiry (at once for one expired already).
  next_purge_ = Now() + kPurgeIntervalSeconds;
  if (Status walked = st.ForEachRow([&] {
        SuppressionHit h;
        h.since = st.Int(1);
        h.expires = st.Int(2);
        if (h.expires != 0) next_purge_ = std::min(next_purge_, h.expires);
        h.category = CategoryFromName(st.TextView(3)).value_or(Category::kUndetermined);
        std::string_view src = st.TextView(4);
        h.manual = src == "manual" || src == "import";
        view_.Put(st.Text(0), h);
      });
      !walked) {
    return walked;
  }
  sql::Stmt allow;
  if (Status s = allow.Prepare(db, "SELECT entry, kind FROM allowlist"); !s) return s;
  return allow.ForEachRow([&] {
    if (allow.TextView(1) == "domain") {
      view_.AllowDomain(allow.Text(0), true);
    } else {
      view_.AllowAddress(allow.Text(0), true);
    }
  });
}

Status StoreImpl::LoadPolicyRows() {
  sql::Stmt st;
  if (Status s = st.Prepare(wdb_,
                            "SELECT address, display, first_seen, incidents, incidents_since, "
                            "last_incident, manual_unsuppressed, pending_delivery, "
                            "pending_message_id, pending_earlier FROM recipient_policy");
      !s) {
    return s;
  }
  return st.ForEachRow([&] {
    PolicyRow p;
    p.display = st.Text(1);
    p.first_seen = st.Int(2);
    p.fields.incidents = st.Int(3);
    p.fields.incidents_since = st.Int(4);
    p.fields.last_incident = st.Int(5);
    p.fields.manual_unsuppressed = st.Int(6);
    p.fields.pending_delivery = st.Int(7);
    p.fields.pending_message_id = st.Text(8);
    p.fields.pending_earlier = st.Text(9);
    policy_rows_.emplace(st.Text(0), std::move(p));
  });
}

StoreImpl::~StoreImpl() {
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  space_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  {
    std::lock_guard lock(reap_mu_);
    reap_stop_ = true;
  }
  reap_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  {
    std::lock_guard lock(ckpt_mu_);
    ckpt_stop_ = true;
  }
  ckpt_cv_.notify_all();
  if (checkpointer_.joinable()) checkpointer_.join();
  // Closing the connections (members) checkpoints what is left and removes the WAL.
}

}  // namespace store_detail

std::string NormalizeDomain(std::string_view d) {
  while (!d.empty() && d.back() == '.') d.remove_suffix(1);
  if (d.empty() || d.size() > 253) return {};
  std::string out;
  for (char c : d) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!((l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '-' || l == '.' || l == '_')) {
      return {};
    }
    out.push_back(l);
  }
  return out;
}

int64_t RetentionHorizon(int days, int64_t now) {
  if (days <= 0) return 0;
  const int64_t t = now - int64_t{days} * 86400;
  const int64_t day = t >= 0 ? t / 86400 : (t - 86399) / 86400;
  return day * 86400;
}

std::optional<ExportFormat> ExportFormatFromName(std::string_view name) {
  if (name == "csv") return ExportFormat::kCsv;
  if (name == "jsonl" || name == "json") return ExportFormat::kJsonl;
  if (name == "text" || name == "txt") return ExportFormat::kText;
  return std::nullopt;
}

const char* ExportFormatName(ExportFormat format) {
  switch (format) {
    case ExportFormat::kCsv:
      return "csv";
    case ExportFormat::kJsonl:
      return "jsonl";
    case ExportFormat::kText:
      return "text";
  }
  return "csv";
}

Expected<std::unique_ptr<Store>> Store::Open(const StoreOptions& options) {
  // SQLite's memory statistics (sqlite3_memory_used, unused by bounced) take a global mutex on
  // every allocation; the writer allocates and frees a few cursors and records per statement.
  // Only possible before SQLite initialises; if something used it first, it stays on.
  static std::once_flag memstatus_off;
  std::call_once(memstatus_off, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
  auto store = std::make_unique<store_detail::StoreImpl>(options);
  if (Status s = store->OpenAll(); !s) return s;
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace bounced
