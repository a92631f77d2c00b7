-- migrate_7.sql: schema version 6 -> 7 (PRAGMA user_version = 7), run by Store::Open inside
-- the migration's transaction (storage/store.cc); compiled in like schema.sql.
--
-- Why: a result can name an original recipient that is another address (a VERP return path's,
-- a DSN's Original-Recipient, Postfix's orig_to=): the address the sender used, which forwarded
-- to the one that failed. Its events are stored under the failed address; `status` of the
-- original one found none. This table keys those events (only those: the usual event, whose
-- original recipient is itself or unknown, has no row and costs nothing) by
-- NormalizeAddress(original_recipient). Rows go with their event when it is pruned. Store::Open
-- fills it for the events stored before (in C++, which normalises).

CREATE TABLE event_originals (
  event_id INTEGER PRIMARY KEY,   -- event_rows.id
  original_key TEXT NOT NULL,
  time INTEGER NOT NULL           -- the event's
);
CREATE INDEX event_originals_by_key ON event_originals(original_key, time);
