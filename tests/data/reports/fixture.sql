-- fixture.sql: a fixed bounced database for the report golden tests (tests/daemon/report_db_test.cc).
-- Applied after storage/schema.sql. Fourteen days of delivery events, 2026-11-15 to 2026-11-28,
-- generated from the `plan` below (made-up addresses, reply texts as real providers write them),
-- per-day counters computed from those events as the daemon would, and a day of suppression list
-- and manual changes. The story of 2026-11-28: iCloud CS01 jumps from 2 a day to 35 (30 of
-- them in one burst at 09:00, an alert), Gmail 5.7.26 appears, Yahoo defers with TSS04,
-- Microsoft blocks with S3150; gmail.com hard bounces are suppressed. The CS01 burst was sent
-- from deals.example, everything else from shop.example.
CREATE TEMP TABLE plan (
  id INTEGER PRIMARY KEY, first_d INTEGER, last_d INTEGER, per_day INTEGER, start_s INTEGER,
  spacing_s INTEGER, domain TEXT, provider TEXT, log_status TEXT, category TEXT, fault TEXT,
  action TEXT, hard INTEGER, status TEXT, reply_code TEXT, provider_code TEXT, diagnostic TEXT);
INSERT INTO temp.plan VALUES
 (1, 0, 13, 300, 21600, 60, 'icloud.com', 'icloud', 'sent', 'delivered', 'none', 'none', 0, '2.0.0', '250', '', '250 2.0.0 Ok: queued as 4Xyz'),
 (2, 0, 13, 100, 21630, 120, 'me.com', 'icloud', 'sent', 'delivered', 'none', 'none', 0, '2.0.0', '250', '', '250 2.0.0 Ok: queued as 4Xyz'),
 (3, 0, 13, 800, 21610, 30, 'gmail.com', 'gmail', 'sent', 'delivered', 'none', 'none', 0, '2.0.0', '250', '', '250 2.0.0 OK 1732780800 a1-20020a05'),
 (4, 0, 13, 250, 21620, 90, 'yahoo.com', 'yahoo', 'sent', 'delivered', 'none', 'none', 0, '2.0.0', '250', '', '250 ok dirdel'),
 (5, 0, 13, 50, 21640, 400, 'aol.com', 'aol', 'sent', 'delivered', 'none', 'none', 0, '2.0.0', '250', '', '250 ok dirdel'),
 (6, 0, 13, 200, 21650, 100, 'outlook.com', 'microsoft', 'sent', 'delivered', 'none', 'none', 0, '2.0.0', '250', '', '250 2.6.0 <id@example.net> Queued mail for delivery'),
 (7, 0, 13, 20, 21660, 1000, 'example.org', '', 'sent', 'delivered', 'none', 'none', 0, '2.0.0', '250', '', '250 2.0.0 Ok'),
 (8, 0, 13, 5, 30000, 3000, 'gmail.com', 'gmail', 'bounced', 'user_unknown', 'recipient', 'suppress', 1, '5.1.1', '550', 'NoSuchUser', '550-5.1.1 The email account that you tried to reach does not exist. Please try double-checking the recipient''s email address for typos or unnecessary spaces.'),
 (9, 0, 12, 2, 36000, 10800, 'icloud.com', 'icloud', 'bounced', 'policy_rejection', 'sender', 'none', 0, '5.7.1', '554', 'CS01', '554 5.7.1 [CS01] Message rejected due to local policy. Please visit https://support.apple.com/en-us/HT204137'),
 (10, 13, 13, 30, 32400, 90, 'icloud.com', 'icloud', 'bounced', 'policy_rejection', 'sender', 'none', 0, '5.7.1', '554', 'CS01', '554 5.7.1 [CS01] Message rejected due to local policy. Please visit https://support.apple.com/en-us/HT204137'),
 (11, 13, 13, 5, 50400, 600, 'me.com', 'icloud', 'bounced', 'policy_rejection', 'sender', 'none', 0, '5.7.1', '554', 'CS01', '554 5.7.1 [CS01] Message rejected due to local policy. Please visit https://support.apple.com/en-us/HT204137'),
 (12, 13, 13, 3, 54000, 900, 'icloud.com', 'icloud', 'bounced', 'auth_failure', 'sender', 'none', 0, '5.7.1', '554', 'HM08', '554 5.7.1 [HM08] Message rejected due to local policy. Please visit https://support.apple.com/en-us/HT204137'),
 (13, 12, 12, 3, 40000, 1200, 'gmail.com', 'gmail', 'bounced', 'auth_failure', 'sender', 'none', 0, '5.7.26', '550', '', '550-5.7.26 This mail is unauthenticated, which poses a security risk to the sender and Gmail users, and has been blocked. The sender must authenticate with at least one of SPF or DKIM.'),
 (14, 13, 13, 8, 40000, 1200, 'gmail.com', 'gmail', 'bounced', 'auth_failure', 'sender', 'none', 0, '5.7.26', '550', '', '550-5.7.26 This mail is unauthenticated, which poses a security risk to the sender and Gmail users, and has been blocked. The sender must authenticate with at least one of SPF or DKIM.'),
 (15, 13, 13, 10, 43200, 300, 'yahoo.com', 'yahoo', 'deferred', 'rate_limited', 'transient', 'none', 0, '4.7.0', '421', 'TSS04', '421 4.7.0 [TSS04] Messages from 192.0.2.10 temporarily deferred due to unexpected volume or user complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes'),
 (16, 13, 13, 2, 46800, 600, 'aol.com', 'aol', 'bounced', 'policy_rejection', 'sender', 'none', 0, '5.7.9', '554', '', '554 5.7.9 Message not accepted for policy reasons.  See https://postmaster.yahooinc.com/error-codes'),
 (17, 13, 13, 4, 39600, 1800, 'outlook.com', 'microsoft', 'bounced', 'reputation_block', 'sender', 'none', 0, '5.7.1', '550', 'S3150', '550 5.7.1 Unfortunately, messages from [192.0.2.10] weren''t sent. Please contact your Internet service provider since part of their network is on our block list (S3150).'),
 (18, 11, 13, 3, 44000, 2000, 'outlook.com', 'microsoft', 'deferred', 'mailbox_full', 'recipient', 'count', 0, '4.2.2', '452', '', '452 4.2.2 The recipient''s mailbox is full and can''t accept messages now.'),
 (19, 13, 13, 1, 45000, 1, 'example.org', '', 'bounced', 'domain_unknown', 'recipient', 'suppress', 1, '5.1.2', '', '', 'Host or domain name not found. Name service error for name=example.org type=MX: Host not found, try again'),
 (20, 13, 13, 1, 46000, 1, 'example.org', '', 'expired', 'network_error', 'transient', 'none', 0, '4.4.1', '', '', 'connect to mx.example.org[198.51.100.7]:25: Connection timed out'),
 (21, 13, 13, 1, 47000, 1, 'yahoo.com', 'yahoo', 'complaint', 'complaint', 'recipient', 'suppress', 0, '', '', '', 'ARF feedback report (abuse)');

WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 799),
d(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM d WHERE k < 13)
INSERT INTO events (time, day, time_text, source, source_ref, queue_id, sender, recipient,
  recipient_key, domain, log_status, program, category, fault, action, hard_bounce, status,
  reply_code, provider, provider_code, diagnostic, counted)
SELECT CAST(strftime('%s', date('2026-11-15', '+' || d.k || ' days')) AS INTEGER) + p.start_s + n.i * p.spacing_s,
       date('2026-11-15', '+' || d.k || ' days'),
       '', 'log', 'ino=1 off=' || (d.k * 1000000 + p.id * 1000 + n.i),
       printf('%02X%03X%05X', d.k, p.id, n.i / 2),
       -- The CS01 burst came from the offers brand; everything else from the newsletter.
       CASE WHEN p.id = 10 THEN 'offers@Deals.example' ELSE 'news@shop.example' END,
       'user' || n.i || '.' || p.id || '@' || p.domain,
       'user' || n.i || '.' || p.id || '@' || p.domain,
       p.domain, p.log_status, 'postfix/smtp', p.category, p.fault, p.action, p.hard, p.status,
       p.reply_code, p.provider, p.provider_code, p.diagnostic, 1
FROM temp.plan p JOIN d ON d.k BETWEEN p.first_d AND p.last_d JOIN n ON n.i < p.per_day
ORDER BY 1;

-- A DSN copy of one CS01 bounce, recorded but not counted (the log already counted it).
INSERT INTO events (time, day, source, source_ref, recipient, recipient_key, domain, log_status,
  category, fault, action, hard_bounce, status, provider, provider_code, diagnostic, counted)
VALUES (CAST(strftime('%s', '2026-11-28 09:00:30') AS INTEGER), '2026-11-28', 'milter', '<dsn1@example.net>',
  'user0.10@icloud.com', 'user0.10@icloud.com', 'icloud.com', 'bounced', 'policy_rejection', 'sender',
  'none', 0, '5.7.1', 'icloud', 'CS01', '554 5.7.1 [CS01] Message rejected due to local policy.', 0);

INSERT INTO daily_counters (day, domain, provider, category, provider_code, log_status, count)
SELECT day, domain, provider, category, provider_code, log_status, COUNT(*)
FROM events WHERE counted = 1 GROUP BY 1, 2, 3, 4, 5, 6;

-- Suppression list changes on 2026-11-28 (and one the day before, outside the report).
INSERT INTO suppression_log (time, day, address, action, source, reason, category, actor_uid)
SELECT time, day, recipient_key, 'add', 'bounce', 'hard_bounce', category, -1
FROM events WHERE day = '2026-11-28' AND hard_bounce = 1 AND counted = 1 ORDER BY time;
INSERT INTO suppression_log (time, day, address, action, source, reason, category, actor_uid, note) VALUES
 (CAST(strftime('%s', '2026-11-28 13:03:20') AS INTEGER), '2026-11-28', 'user0.21@yahoo.com', 'add', 'complaint', 'complaint', 'complaint', -1, ''),
 (CAST(strftime('%s', '2026-11-28 15:00:00') AS INTEGER), '2026-11-28', 'former.customer@example.com', 'add', 'manual', 'asked to be removed (ticket 4711)', '', 1000, 'asked to be removed (ticket 4711)'),
 (CAST(strftime('%s', '2026-11-28 16:30:00') AS INTEGER), '2026-11-28', 'user3.8@gmail.com', 'remove', 'bounce', 'hard_bounce', 'user_unknown', 0, 'mailbox exists again, confirmed by phone'),
 (CAST(strftime('%s', '2026-11-28 17:00:00') AS INTEGER), '2026-11-28', 'paused.reader@example.com', 'remove', 'manual', 'on leave until November', '', -1, 'expired'),
 (CAST(strftime('%s', '2026-11-27 11:00:00') AS INTEGER), '2026-11-27', 'user1.8@gmail.com', 'add', 'bounce', 'hard_bounce', 'user_unknown', -1, '');
INSERT INTO audit (time, actor_uid, action, target, reason) VALUES
 (CAST(strftime('%s', '2026-11-27 10:00:00') AS INTEGER), 1000, 'allow', 'partner.example', 'our partner'),
 (CAST(strftime('%s', '2026-11-28 15:00:00') AS INTEGER), 1000, 'suppress', 'former.customer@example.com', 'asked to be removed (ticket 4711)'),
 (CAST(strftime('%s', '2026-11-28 16:30:00') AS INTEGER), 0, 'unsuppress', 'user3.8@gmail.com', 'mailbox exists again, confirmed by phone');
