-- migrate_7.sql: schema version 6 -> 7 (PRAGMA user_version = 7), run by Store::Open inside
-- the migration's transaction (storage/store.cc); compiled in like schema.sql.
--
-- Why: a result can name an original recipient that is another address (a VERP return path's,
-- a DSN's Original-Recipient, Postfix's orig_to=): the address the sender used, which forwarded
-- to the one that failed. Its events are stored under the failed address; `status` of the
-- original one found none. original_key is NormalizeAddress(original_recipient) when that key
-- is not recipient_key, else NULL, and the partial index holds only those rows: nothing for the
-- usual event. Store::Open fills it for the rows stored before (in C++, which normalises).

ALTER TABLE event_rows ADD COLUMN original_key TEXT;
CREATE INDEX event_rows_by_original ON event_rows(original_key, time)
  WHERE original_key IS NOT NULL;
