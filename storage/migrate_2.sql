-- migrate_2.sql: schema version 1 -> 2 (PRAGMA user_version = 2), run by Store::Open inside
-- the migration's transaction (storage/store.cc); compiled in like schema.sql.
--
-- Why: version 1 wrote one 30-column events row with three indexes (recipient, day, DSN
-- de-duplication) and one recipient_state row per event's recipient; that was ~56,000 SQLite
-- instructions per ingested event. Version 2 keeps the same information in narrower tables:
--   event_rows        the per-event values (times, ids, addresses, texts that vary per event);
--   event_kinds       the classification of an event, stored once per distinct combination
--                     (source, log_status, category, fault, action, hard_bounce, program,
--                     provider, provider_code, status, reply_code, stage, dsn_action, rule);
--   event_days        the first and last event id of each UTC day, replacing the per-row day
--                     text and its index (readers bound their scan with `id BETWEEN`);
--   recipient_policy  only what the suppression policy must remember (incidents, manual
--                     unsuppress); the rest of a recipient's state is derived from its events.
-- The version-1 names stay as views with the same columns, so read-only SQL (reports, tests,
-- sqlite3 sessions) keeps working: `events` (insertable: an INSTEAD OF trigger stores the row
-- in the new tables) and `recipient_state`.

CREATE TABLE event_kinds (
  id INTEGER PRIMARY KEY,
  source TEXT NOT NULL,
  log_status TEXT NOT NULL,
  category TEXT NOT NULL,
  fault TEXT NOT NULL,
  action TEXT NOT NULL,
  hard_bounce INTEGER NOT NULL,
  program TEXT NOT NULL,
  provider TEXT NOT NULL,
  provider_code TEXT NOT NULL,
  status TEXT NOT NULL,
  reply_code TEXT NOT NULL,
  stage TEXT NOT NULL,
  dsn_action TEXT NOT NULL,
  rule TEXT NOT NULL,
  UNIQUE (source, log_status, category, fault, action, hard_bounce, program, provider,
          provider_code, status, reply_code, stage, dsn_action, rule)
);

-- One row per recipient result. Columns read most come first (SQLite walks the record header).
-- Texts are NULL when empty (the writer binds only what an event has; `events` shows '').
CREATE TABLE event_rows (
  id INTEGER PRIMARY KEY,
  time INTEGER NOT NULL,
  kind INTEGER NOT NULL,                  -- event_kinds.id
  counted INTEGER NOT NULL,               -- as events.counted
  recipient_key TEXT NOT NULL,
  domain TEXT NOT NULL,
  queue_id TEXT,
  source_ref TEXT,
  recipient TEXT,                         -- NULL when it is recipient_key
  message_id TEXT,
  sender TEXT,
  relay TEXT,
  diagnostic TEXT,
  remote_mta TEXT,
  time_text TEXT,
  original_recipient TEXT,
  bounce_queue_id TEXT
);

-- Per UTC day (of event_rows.time), the smallest and largest id of its events. Events arrive
-- mostly in time order, so a day's ids form one short range; out-of-order events (log
-- catch-up) only widen it, and readers still filter on the day itself.
CREATE TABLE event_days (
  day TEXT PRIMARY KEY,
  first_id INTEGER NOT NULL,
  last_id INTEGER NOT NULL
) WITHOUT ROWID;

-- What the policy remembers about a recipient; a row exists only while one of these is set.
-- first_seen/display: set only when the row was made by an unsuppress before any event.
CREATE TABLE recipient_policy (
  address TEXT PRIMARY KEY,
  display TEXT NOT NULL DEFAULT '',
  first_seen INTEGER NOT NULL DEFAULT 0,
  incidents INTEGER NOT NULL DEFAULT 0,
  incidents_since INTEGER NOT NULL DEFAULT 0,
  last_incident INTEGER NOT NULL DEFAULT 0,
  manual_unsuppressed INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Version-1 data.
INSERT OR IGNORE INTO event_kinds (source, log_status, category, fault, action, hard_bounce,
  program, provider, provider_code, status, reply_code, stage, dsn_action, rule)
SELECT DISTINCT source, log_status, category, fault, action, hard_bounce, program, provider,
  provider_code, status, reply_code, stage, dsn_action, rule FROM events;
INSERT INTO event_rows (id, time, kind, counted, recipient_key, domain, queue_id, source_ref,
  recipient, message_id, sender, relay, diagnostic, remote_mta, time_text, original_recipient,
  bounce_queue_id)
SELECT e.id, e.time, k.id, e.counted, e.recipient_key, e.domain, nullif(e.queue_id, ''),
  nullif(e.source_ref, ''), nullif(e.recipient, e.recipient_key), nullif(e.message_id, ''),
  nullif(e.sender, ''), nullif(e.relay, ''), nullif(e.diagnostic, ''), nullif(e.remote_mta, ''),
  nullif(e.time_text, ''), nullif(e.original_recipient, ''), nullif(e.bounce_queue_id, '')
FROM events e JOIN event_kinds k ON k.source = e.source AND k.log_status = e.log_status
  AND k.category = e.category AND k.fault = e.fault AND k.action = e.action
  AND k.hard_bounce = e.hard_bounce AND k.program = e.program AND k.provider = e.provider
  AND k.provider_code = e.provider_code AND k.status = e.status AND k.reply_code = e.reply_code
  AND k.stage = e.stage AND k.dsn_action = e.dsn_action AND k.rule = e.rule
ORDER BY e.id;
INSERT INTO event_days (day, first_id, last_id)
SELECT strftime('%Y-%m-%d', time, 'unixepoch'), min(id), max(id) FROM event_rows GROUP BY 1;
-- Rows made by an unsuppress before any event keep first_seen (events = 0 marks them).
INSERT INTO recipient_policy (address, display, first_seen, incidents, incidents_since,
  last_incident, manual_unsuppressed)
SELECT address, CASE WHEN events = 0 THEN display ELSE '' END, first_seen, incidents,
  incidents_since, last_incident, manual_unsuppressed
FROM recipient_state
WHERE incidents <> 0 OR incidents_since <> 0 OR last_incident <> 0 OR manual_unsuppressed <> 0;

DROP TABLE events;
DROP TABLE recipient_state;
-- No query can use these (list filters by domain/category/source with "?x = '' OR", in
-- address order) and each cost every new suppression two more B-tree inserts.
DROP INDEX suppressions_by_domain;
DROP INDEX suppressions_by_created;

CREATE INDEX event_rows_by_recipient ON event_rows(recipient_key, time);

-- The version-1 events table, column for column.
CREATE VIEW events AS
SELECT e.id AS id, e.time AS time, strftime('%Y-%m-%d', e.time, 'unixepoch') AS day,
  coalesce(e.time_text, '') AS time_text, k.source AS source,
  coalesce(e.source_ref, '') AS source_ref, coalesce(e.queue_id, '') AS queue_id,
  coalesce(e.message_id, '') AS message_id, coalesce(e.sender, '') AS sender,
  coalesce(e.recipient, e.recipient_key) AS recipient, e.recipient_key AS recipient_key,
  e.domain AS domain, coalesce(e.original_recipient, '') AS original_recipient,
  k.log_status AS log_status, coalesce(e.relay, '') AS relay, k.program AS program,
  coalesce(e.bounce_queue_id, '') AS bounce_queue_id, k.category AS category, k.fault AS fault,
  k.action AS action, k.hard_bounce AS hard_bounce, k.status AS status,
  k.reply_code AS reply_code, k.stage AS stage, k.provider AS provider,
  k.provider_code AS provider_code, coalesce(e.diagnostic, '') AS diagnostic,
  coalesce(e.remote_mta, '') AS remote_mta, k.dsn_action AS dsn_action, k.rule AS rule,
  e.counted AS counted
FROM event_rows e JOIN event_kinds k ON k.id = e.kind;

-- INSERT INTO events (...) as in version 1 (fixtures, hand repairs); `day` is ignored (it is
-- the UTC day of `time`), omitted texts are ''. bounced itself writes event_rows directly.
CREATE TRIGGER events_insert INSTEAD OF INSERT ON events
BEGIN
  INSERT OR IGNORE INTO event_kinds (source, log_status, category, fault, action, hard_bounce,
    program, provider, provider_code, status, reply_code, stage, dsn_action, rule)
  VALUES (NEW.source, NEW.log_status, NEW.category, NEW.fault, NEW.action, NEW.hard_bounce,
    coalesce(NEW.program, ''), coalesce(NEW.provider, ''), coalesce(NEW.provider_code, ''),
    coalesce(NEW.status, ''), coalesce(NEW.reply_code, ''), coalesce(NEW.stage, ''),
    coalesce(NEW.dsn_action, ''), coalesce(NEW.rule, ''));
  INSERT INTO event_rows (id, time, kind, counted, recipient_key, domain, queue_id, source_ref,
    recipient, message_id, sender, relay, diagnostic, remote_mta, time_text, original_recipient,
    bounce_queue_id)
  VALUES (NEW.id, NEW.time,
    (SELECT id FROM event_kinds WHERE source = NEW.source AND log_status = NEW.log_status
       AND category = NEW.category AND fault = NEW.fault AND action = NEW.action
       AND hard_bounce = NEW.hard_bounce AND program = coalesce(NEW.program, '')
       AND provider = coalesce(NEW.provider, '')
       AND provider_code = coalesce(NEW.provider_code, '')
       AND status = coalesce(NEW.status, '') AND reply_code = coalesce(NEW.reply_code, '')
       AND stage = coalesce(NEW.stage, '') AND dsn_action = coalesce(NEW.dsn_action, '')
       AND rule = coalesce(NEW.rule, '')),
    coalesce(NEW.counted, 1), NEW.recipient_key, NEW.domain, nullif(NEW.queue_id, ''),
    nullif(NEW.source_ref, ''), nullif(NEW.recipient, NEW.recipient_key),
    nullif(NEW.message_id, ''), nullif(NEW.sender, ''), nullif(NEW.relay, ''),
    nullif(NEW.diagnostic, ''), nullif(NEW.remote_mta, ''), nullif(NEW.time_text, ''),
    nullif(NEW.original_recipient, ''), nullif(NEW.bounce_queue_id, ''));
  INSERT INTO event_days (day, first_id, last_id)
  VALUES (strftime('%Y-%m-%d', NEW.time, 'unixepoch'), last_insert_rowid(), last_insert_rowid())
  ON CONFLICT (day) DO UPDATE SET first_id = min(first_id, excluded.first_id),
    last_id = max(last_id, excluded.last_id);
END;

-- The version-1 recipient_state, derived: one row per recipient (normalised key, so domain
-- <> '') with counted events or a policy row. Times and last_* as the writer's policy folds
-- them (storage/policy.cc): last_* from the latest event by (time, id); last_delivered over
-- deliveries, last_failure over bounced/expired/deferred results that are not deliveries;
-- "blocked" results count as events but neither as delivery nor failure.
CREATE VIEW recipient_state AS
SELECT r.address AS address,
  coalesce((SELECT coalesce(f.recipient, f.recipient_key) FROM event_rows f
             WHERE f.recipient_key = r.address AND f.counted = 1 ORDER BY f.id LIMIT 1),
           p.display, r.address) AS display,
  (SELECT CASE WHEN min(f.time) IS NULL THEN coalesce(p.first_seen, 0)
               WHEN coalesce(p.first_seen, 0) = 0 THEN min(f.time)
               ELSE min(min(f.time), p.first_seen) END
     FROM event_rows f WHERE f.recipient_key = r.address AND f.counted = 1) AS first_seen,
  (SELECT coalesce(max(f.time), 0) FROM event_rows f
    WHERE f.recipient_key = r.address AND f.counted = 1) AS last_event,
  coalesce((SELECT k.category FROM event_rows f JOIN event_kinds k ON k.id = f.kind
             WHERE f.recipient_key = r.address AND f.counted = 1
             ORDER BY f.time DESC, f.id DESC LIMIT 1), '') AS last_category,
  coalesce((SELECT k.log_status FROM event_rows f JOIN event_kinds k ON k.id = f.kind
             WHERE f.recipient_key = r.address AND f.counted = 1
             ORDER BY f.time DESC, f.id DESC LIMIT 1), '') AS last_log_status,
  (SELECT coalesce(max(f.time), 0) FROM event_rows f JOIN event_kinds k ON k.id = f.kind
    WHERE f.recipient_key = r.address AND f.counted = 1 AND k.log_status <> 'blocked'
      AND (k.log_status = 'sent' OR k.category = 'delivered')) AS last_delivered,
  (SELECT coalesce(max(f.time), 0) FROM event_rows f JOIN event_kinds k ON k.id = f.kind
    WHERE f.recipient_key = r.address AND f.counted = 1
      AND k.log_status IN ('bounced', 'expired', 'deferred')
      AND k.category <> 'delivered') AS last_failure,
  coalesce(p.incidents, 0) AS incidents,
  coalesce(p.incidents_since, 0) AS incidents_since,
  coalesce(p.last_incident, 0) AS last_incident,
  coalesce(p.manual_unsuppressed, 0) AS manual_unsuppressed,
  (SELECT count(*) FROM event_rows f
    WHERE f.recipient_key = r.address AND f.counted = 1) AS events
FROM (SELECT DISTINCT recipient_key AS address FROM event_rows
       WHERE counted = 1 AND domain <> ''
      UNION ALL
      SELECT address FROM recipient_policy q WHERE NOT EXISTS (SELECT 1 FROM event_rows f
        WHERE f.recipient_key = q.address AND f.counted = 1)) r
LEFT JOIN recipient_policy p ON p.address = r.address;
