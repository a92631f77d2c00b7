-- schema.sql: the bounced database, schema version 1 (PRAGMA user_version = 1).
--
-- This file is compiled into bounced (storage/CMakeLists.txt embeds it) and run as migration 1
-- on an empty database; later versions add storage/migrate_<N>.sql steps, never edit this one.
-- Read-only SQL on these tables is supported (reports): open with SQLITE_OPEN_READONLY.
-- Conventions: times are INTEGER seconds since the Unix epoch (UTC), 0 = unknown/never;
-- `day` is 'YYYY-MM-DD' in UTC; addresses in *_key / address columns are normalised (lower-case,
-- +extension dropped, see NormalizeAddress in storage/store.h); category/fault/action names are
-- those of classifier/result.h.

-- One row per recipient result (log line, journald entry, DSN recipient, milter record).
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  time INTEGER NOT NULL,
  day TEXT NOT NULL,
  time_text TEXT NOT NULL DEFAULT '',     -- as the source wrote it
  source TEXT NOT NULL,                   -- log, journal, dsn, milter, manual
  source_ref TEXT NOT NULL DEFAULT '',    -- log position text, or the bounce's Message-ID
  queue_id TEXT NOT NULL DEFAULT '',
  message_id TEXT NOT NULL DEFAULT '',
  sender TEXT NOT NULL DEFAULT '',
  recipient TEXT NOT NULL,                -- as reported (display form)
  recipient_key TEXT NOT NULL,            -- normalised
  domain TEXT NOT NULL,                   -- domain of recipient_key
  original_recipient TEXT NOT NULL DEFAULT '',
  log_status TEXT NOT NULL,               -- sent, deferred, bounced, expired, complaint,
                                          -- auto_reply, blocked (see Event in store.h)
  relay TEXT NOT NULL DEFAULT '',
  program TEXT NOT NULL DEFAULT '',
  bounce_queue_id TEXT NOT NULL DEFAULT '',
  category TEXT NOT NULL,
  fault TEXT NOT NULL,
  action TEXT NOT NULL,
  hard_bounce INTEGER NOT NULL,
  status TEXT NOT NULL DEFAULT '',        -- enhanced status, 5.1.1
  reply_code TEXT NOT NULL DEFAULT '',
  stage TEXT NOT NULL DEFAULT '',
  provider TEXT NOT NULL DEFAULT '',
  provider_code TEXT NOT NULL DEFAULT '',
  diagnostic TEXT NOT NULL DEFAULT '',
  remote_mta TEXT NOT NULL DEFAULT '',
  dsn_action TEXT NOT NULL DEFAULT '',
  rule TEXT NOT NULL DEFAULT '',
  -- 0 when this result repeats one already counted (Postfix logs a bounce and also sends its
  -- DSN through the milter): stored for the record, left out of counters and policy.
  counted INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX events_by_recipient ON events(recipient_key, time);
CREATE INDEX events_by_day ON events(day);
-- A DSN (fed by ingest-dsn or seen by the milter) is recorded once per (Message-ID, recipient).
CREATE UNIQUE INDEX events_dsn_once ON events(source_ref, recipient_key)
  WHERE source IN ('dsn', 'milter') AND source_ref <> '';

-- What the policy knows about each recipient (one row per normalised address).
CREATE TABLE recipient_state (
  address TEXT PRIMARY KEY,
  display TEXT NOT NULL,
  first_seen INTEGER NOT NULL,
  last_event INTEGER NOT NULL,
  last_category TEXT NOT NULL DEFAULT '',
  last_log_status TEXT NOT NULL DEFAULT '',
  last_delivered INTEGER NOT NULL DEFAULT 0,
  last_failure INTEGER NOT NULL DEFAULT 0,
  incidents INTEGER NOT NULL DEFAULT 0,         -- counted incidents since the last delivery
  incidents_since INTEGER NOT NULL DEFAULT 0,   -- start of the first of them
  last_incident INTEGER NOT NULL DEFAULT 0,     -- start of the latest
  manual_unsuppressed INTEGER NOT NULL DEFAULT 0,
  events INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Per-day counts of counted events. Aggregate over the columns you need (per domain, per
-- provider, per category, ...); every combination seen has one row.
CREATE TABLE daily_counters (
  day TEXT NOT NULL,
  domain TEXT NOT NULL,
  provider TEXT NOT NULL,
  category TEXT NOT NULL,
  provider_code TEXT NOT NULL,
  log_status TEXT NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (day, domain, provider, category, provider_code, log_status)
) WITHOUT ROWID;
CREATE INDEX daily_counters_by_provider ON daily_counters(provider, day);

-- The suppression list: one row per normalised address. A row whose expires (<> 0) is in the
-- past no longer suppresses.
CREATE TABLE suppressions (
  address TEXT PRIMARY KEY,
  display TEXT NOT NULL,
  domain TEXT NOT NULL,
  reason TEXT NOT NULL,          -- hard_bounce, repeated_failure, complaint, or operator text
  category TEXT NOT NULL DEFAULT '',
  source TEXT NOT NULL,          -- bounce, complaint, manual, import
  first_event INTEGER NOT NULL DEFAULT 0,
  last_event INTEGER NOT NULL DEFAULT 0,
  created INTEGER NOT NULL,
  expires INTEGER NOT NULL DEFAULT 0,
  detail TEXT NOT NULL DEFAULT '',
  delivered_after INTEGER NOT NULL DEFAULT 0,  -- a delivery seen after created (does not lift)
  updated INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX suppressions_by_domain ON suppressions(domain);
CREATE INDEX suppressions_by_created ON suppressions(created);

-- Every change to the suppression list, automatic or manual (new and lifted suppressions for
-- the daily report). action: add, update (source or reason changed), remove.
CREATE TABLE suppression_log (
  id INTEGER PRIMARY KEY,
  time INTEGER NOT NULL,
  day TEXT NOT NULL,
  address TEXT NOT NULL,
  action TEXT NOT NULL,
  source TEXT NOT NULL,
  reason TEXT NOT NULL,
  category TEXT NOT NULL DEFAULT '',
  actor_uid INTEGER NOT NULL DEFAULT -1     -- -1: bounced itself
);
CREATE INDEX suppression_log_by_day ON suppression_log(day);

-- Addresses and whole domains that are never suppressed.
CREATE TABLE allowlist (
  entry TEXT PRIMARY KEY,        -- normalised address, or a domain
  kind TEXT NOT NULL,            -- address, domain
  reason TEXT NOT NULL,
  created INTEGER NOT NULL,
  actor_uid INTEGER NOT NULL
) WITHOUT ROWID;

-- Manual changes: who (peer uid from SO_PEERCRED), when, why, what.
CREATE TABLE audit (
  id INTEGER PRIMARY KEY,
  time INTEGER NOT NULL,
  actor_uid INTEGER NOT NULL,
  action TEXT NOT NULL,          -- suppress, unsuppress, allow, disallow, import
  target TEXT NOT NULL,          -- address, domain, or "N entries"
  reason TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_by_time ON audit(time);

-- Where each input resumes. Committed in the same transaction as the events read before it.
CREATE TABLE input_positions (
  input TEXT PRIMARY KEY,        -- "log:/var/log/mail.log", "journal", ...
  inode INTEGER NOT NULL DEFAULT 0,
  offset INTEGER NOT NULL DEFAULT 0,
  cursor TEXT NOT NULL DEFAULT '',
  updated INTEGER NOT NULL
) WITHOUT ROWID;
