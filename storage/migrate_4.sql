-- migrate_4.sql: schema version 3 -> 4 (PRAGMA user_version = 4), run by Store::Open inside
-- the migration's transaction (storage/store.cc); compiled in like schema.sql.
--
-- Why: a message's log lines are spread over minutes or days (qmgr from=, cleanup message-id=
-- first, deliveries and retries later). The log correlator kept what the first lines said only
-- in memory, so after a restart of bounced the later events of messages still in Postfix's
-- queue had no sender and no message-id. Each log batch now stores, in the transaction that
-- stores its position, what changed about the queue ids it read, and deletes the ones Postfix
-- removed; an input gives them back to its correlator when it starts.

CREATE TABLE queue_facts (
  input TEXT NOT NULL,              -- input_positions.input ("log:/var/log/mail.log", "journal")
  queue_id TEXT NOT NULL,
  sender TEXT NOT NULL DEFAULT '',  -- qmgr from=<...> ('' for the null sender or not seen)
  sender_known INTEGER NOT NULL DEFAULT 0,  -- 1: a qmgr from= line was seen
  message_id TEXT NOT NULL DEFAULT '',      -- cleanup message-id=
  bounce_queue_id TEXT NOT NULL DEFAULT '', -- queue id of the non-delivery notice
  size INTEGER NOT NULL DEFAULT -1,
  nrcpt INTEGER NOT NULL DEFAULT -1,
  updated INTEGER NOT NULL,         -- when written (unix seconds); old rows are dropped at start
  PRIMARY KEY (input, queue_id)
) WITHOUT ROWID;
