-- migrate_9.sql: schema version 8 -> 9 (PRAGMA user_version = 9), run by Store::Open inside
-- the migration's transaction (storage/store.cc); compiled in like schema.sql.
--
-- Why: an entry with an expiry is removed (and its `remove` logged for the change feed) when
-- it expires, and the writer asks for the next expiry after each purge. Without an index
-- both the purge and that question read the whole list: ~170 ms of the writer's time per
-- million entries each time (the sqlite3 shell on this schema, a million typical rows; with
-- the index, microseconds). Only entries that expire are in the index (most have none), so
-- it costs an ordinary suppression nothing.

CREATE INDEX suppressions_by_expiry ON suppressions(expires) WHERE expires <> 0;
