-- migrate_3.sql: schema version 2 -> 3 (PRAGMA user_version = 3), run by Store::Open inside
-- the migration's transaction (storage/store.cc); compiled in like schema.sql.
--
-- Why: a relay or smarthost may accept a message (Postfix logs status=sent) and bounce it later
-- with a DSN. Version 2 reset a recipient's mailbox_full/mailbox_disabled count at every
-- delivery, so such a mailbox, whose every message is "delivered" before it bounces, never
-- reached the threshold. From version 3 a delivery after the last incident is noted in the
-- policy row, and the next counted failure resets the count only when it is of another message
-- (storage/policy.h). A version-2 row has no delivery pending: version 2 reset the count at the
-- delivery itself, so the defaults are exactly its state.

-- The latest delivery after the last incident that has not reset the count yet (0: none), and
-- the Message-ID of the one message it and the other pending deliveries were of, without <>.
-- Set only while incidents <> 0.
ALTER TABLE recipient_policy ADD COLUMN pending_delivery INTEGER NOT NULL DEFAULT 0;
ALTER TABLE recipient_policy ADD COLUMN pending_message_id TEXT NOT NULL DEFAULT '';

-- recipient_state as in version 2 (storage/migrate_2.sql), with the two columns above at the
-- end; the version-1 columns keep their names and order. `incidents` (and incidents_since,
-- last_incident) are the incidents not reset yet: while pending_delivery is set they still
-- count, unless the next counted failure is of another message than pending_message_id.
DROP VIEW recipient_state;
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
    WHERE f.recipient_key = r.address AND f.counted = 1) AS events,
  coalesce(p.pending_delivery, 0) AS pending_delivery,
  coalesce(p.pending_message_id, '') AS pending_message_id
FROM (SELECT DISTINCT recipient_key AS address FROM event_rows
       WHERE counted = 1 AND domain <> ''
      UNION ALL
      SELECT address FROM recipient_policy q WHERE NOT EXISTS (SELECT 1 FROM event_rows f
        WHERE f.recipient_key = q.address AND f.counted = 1)) r
LEFT JOIN recipient_policy p ON p.address = r.address;
