-- migrate_6.sql: schema version 5 -> 6 (PRAGMA user_version = 6), run by Store::Open inside
-- the migration's transaction (storage/store.cc); compiled in like schema.sql.
--
-- Why: versions 4 and 5 keyed queue_facts by (input, queue_id). Postfix's queue ids are random, so a
-- batch's new rows landed on about as many leaf pages as it had rows, and every page a
-- transaction changes is a 16 KiB frame in the WAL: on a 1M-line backlog those frames cost nearly
-- as much as the statements (bench/RESULTS.md, "Queue facts"). Rows now take increasing ids, so
-- a batch's new rows fill the table's last page or two. The writer keeps each input's
-- queue id -> id map in memory (read from this table) and updates and deletes by id. There is
-- no index on queue_id: it would scatter its writes the same way. The one writer and its map
-- keep an input to one row per queue id.

CREATE TABLE queue_facts_by_id (
  id INTEGER PRIMARY KEY,           -- increasing: new rows are appended
  input TEXT NOT NULL,              -- input_positions.input ("log:/var/log/mail.log", "journal")
  queue_id TEXT NOT NULL,
  sender TEXT NOT NULL DEFAULT '',  -- qmgr from=<...> ('' for the null sender or not seen)
  sender_known INTEGER NOT NULL DEFAULT 0,  -- 1: a qmgr from= line was seen
  message_id TEXT NOT NULL DEFAULT '',      -- cleanup message-id=
  bounce_queue_id TEXT NOT NULL DEFAULT '', -- queue id of the non-delivery notice
  size INTEGER NOT NULL DEFAULT -1,
  nrcpt INTEGER NOT NULL DEFAULT -1,
  updated INTEGER NOT NULL          -- when written (unix seconds); old rows are dropped at start
);
INSERT INTO queue_facts_by_id (input, queue_id, sender, sender_known, message_id,
                               bounce_queue_id, size, nrcpt, updated)
  SELECT input, queue_id, sender, sender_known, message_id, bounce_queue_id, size, nrcpt, updated
  FROM queue_facts ORDER BY updated, input, queue_id;
DROP TABLE queue_facts;
ALTER TABLE queue_facts_by_id RENAME TO queue_facts;
