-- migrate_5.sql: schema version 4 -> 5 (PRAGMA user_version = 5), run by Store::Open inside
-- the migration's transaction (storage/store.cc); compiled in like schema.sql.
--
-- Why: version 3 noted the delivery of one message after a recipient's last incident (a relay
-- may accept a message and send its DSN later). A delivery of a second message reset the count
-- at once, so a relay that had two of the recipient's messages in hand before the first one's
-- DSN came back (a newsletter and a receipt, or one relay retrying for days) kept the count from
-- ever reaching the threshold. From version 5 every message's delivery waits (storage/policy.h),
-- and the ones older than pending_delivery are kept here. A version-4 row has at most one
-- delivery pending, which is exactly what the new column's default says.

-- The deliveries pending besides pending_delivery's, oldest first: one "TIME MESSAGE-ID" line
-- each (unix seconds; the Message-ID without <>). '' while at most one is pending.
ALTER TABLE recipient_policy ADD COLUMN pending_earlier TEXT NOT NULL DEFAULT '';

-- recipient_state as in version 3 (storage/migrate_3.sql), with the column above at the end.
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
  coalesce(p.pending_message_id, '') AS pending_message_id,
  coalesce(p.pending_earlier, '') AS pending_earlier
FROM (SELECT DISTINCT recipient_key AS address FROM event_rows
       WHERE counted = 1 AND domain <> ''
      UNION ALL
      SELECT address FROM recipient_policy q WHERE NOT EXISTS (SELECT 1 FROM event_rows f
        WHERE f.recipient_key = q.address AND f.counted = 1)) r
LEFT JOIN recipient_policy p ON p.address = r.address;
