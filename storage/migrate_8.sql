-- migrate_8.sql: schema version 7 -> 8 (PRAGMA user_version = 8), run by Store::Open inside
-- the migration's transaction (storage/store.cc); compiled in like schema.sql.
--
-- Why: `status` shows an address's suppression history (added, updated, lifted: when, by whom,
-- why), the newest first, and `changes` feeds the list's changes to other systems.
-- - suppression_log had an index by day only, so one address's history took a scan of the
--   whole log, which an import of a million addresses makes a million rows long. The new index
--   finds one address's changes in id order.
-- - A change kept the entry's reason, not why it was made: an unsuppress's reason was only in
--   the audit trail. `note` keeps it with the change: the operator's reason of a manual change,
--   "expired" for an entry bounced removed once it expired, '' for a bounce's own.
-- The changes logged before are given their note from the audit row of the same transaction
-- (same time, uid and address; the import's for an imported entry), or "expired" for bounced's
-- own removes; several manual changes of one address within one second take the last one's.

ALTER TABLE suppression_log ADD COLUMN note TEXT NOT NULL DEFAULT '';
UPDATE suppression_log SET note = 'expired' WHERE actor_uid < 0 AND action = 'remove';
UPDATE suppression_log SET note = coalesce((
    SELECT a.reason FROM audit a
    WHERE a.time = suppression_log.time AND a.actor_uid = suppression_log.actor_uid
      AND ((a.target = suppression_log.address
            AND a.action = CASE suppression_log.action WHEN 'remove' THEN 'unsuppress'
                                                        ELSE 'suppress' END)
           OR (suppression_log.action <> 'remove' AND suppression_log.source = 'import'
               AND a.action = 'import'))
    ORDER BY a.id DESC LIMIT 1), '')
  WHERE actor_uid >= 0;
CREATE INDEX suppression_log_by_address ON suppression_log(address, id);
