#!/usr/bin/python3
"""parselog_accuracy.py: agreement of `bouncectl parse-log` with genlog.py's ground truth.

Reads the truth TSV written by ../shared/bench/genlog.py (one row per delivery status line, one
per pending recipient of a "status=expired" line) and the JSON lines `bouncectl parse-log
--format=jsonl` printed for the same log (stdin or --events FILE). Events are matched to rows by
(queue id, recipient, log status) in log order. The generator's own labels are mapped onto
bounced's taxonomy below; a row is "agreed" when the event's category is one the mapping
accepts. Also reported: hard_bounce agreement (the generator's `hard_bounce` class against ours),
dsn, provider_code (where the truth has one) and events without a truth row.

usage: bouncectl parse-log --format=jsonl LOG | parselog_accuracy.py TRUTH.tsv [--json OUT]
"""
import argparse
import collections
import json
import sys

# Generator reason -> categories accepted for it (first = the expected one).
REASON = {
    'sent': ['delivered'],
    'dsn_delivery': ['delivered'],
    'user_unknown': ['user_unknown'],
    'account_disabled': ['mailbox_disabled'],
    'nxdomain': ['domain_unknown'],
    'mailbox_full': ['mailbox_full'],
    'spam_content': ['spam_content'],
    'blocklisted': ['reputation_block'],
    'policy': ['policy_rejection'],
    'rate_limited': ['rate_limited'],
    'server_busy': ['rate_limited', 'system_error'],
    'suspended': ['network_error'],
    'connect_timeout': ['network_error'],
    'connection_refused': ['network_error'],
    'lost_connection': ['network_error'],
    'dns_tempfail': ['network_error', 'system_error'],
    'greylisted': ['greylisted'],
    'remote_tempfail': ['system_error'],
}
# iCloud's local-policy codes (the taxonomy: CS01/CS02 policy, HM08 authentication).
ICLOUD = {'CS01': ['policy_rejection'], 'CS02': ['policy_rejection'], 'HM08': ['auth_failure']}
TRANSIENT = {'rate_limited', 'greylisted', 'network_error', 'system_error', 'protocol_error',
             'expired'}
HARD = {'user_unknown', 'domain_unknown', 'mailbox_moved', 'not_accept'}


def expected(row):
    reason, code, status = row['reason'], row['provider_code'], row['status']
    if reason == 'local_policy':
        cats = ICLOUD.get(code, ['policy_rejection'])
    else:
        cats = REASON.get(reason, ['?' + reason])
    if status == 'expired':
        # The queue lifetime ran out: a transient cause becomes `expired`; a telling one
        # (mailbox full) stays, as in the DSN Postfix sends.
        return ['expired'] if cats[0] in TRANSIENT else cats
    return cats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('truth')
    ap.add_argument('--events', default='-')
    ap.add_argument('--json', help='write the figures here as JSON')
    a = ap.parse_args()

    events = collections.defaultdict(collections.deque)
    total_events = 0
    src = sys.stdin if a.events == '-' else open(a.events)
    for line in src:
        e = json.loads(line)
        total_events += 1
        events[(e['queue_id'], e['recipient'], e['status'])].append(e)

    rows = agreed = missing = 0
    hard_rows = hard_agreed = 0
    dsn_agreed = 0
    code_rows = code_agreed = 0
    confusion = collections.Counter()
    with open(a.truth) as f:
        header = f.readline().rstrip('\n').split('\t')
        for raw in f:
            row = dict(zip(header, raw.rstrip('\n').split('\t')))
            rows += 1
            q = events.get((row['queue_id'], row['recipient'], row['status']))
            if not q:
                missing += 1
                confusion[(row['reason'], '<no event>')] += 1
                continue
            e = q.popleft()
            cats = expected(row)
            if e['category'] in cats:
                agreed += 1
            else:
                confusion[(row['reason'] + '/' + row['status'], e['category'])] += 1
            truth_hard = row['category'] == 'hard_bounce'
            hard_rows += 1
            hard_agreed += (e['hard_bounce'] == truth_hard)
            dsn_agreed += (e['log_dsn'] == row['dsn'])
            if row['provider_code'] not in ('', '-'):
                code_rows += 1
                code_agreed += (e['provider_code'] == row['provider_code'])
    extra = sum(len(q) for q in events.values())
    out = {
        'truth_rows': rows,
        'events': total_events,
        'rows_without_event': missing,
        'events_without_row': extra,
        'category_agreement_pct': round(100.0 * agreed / rows, 3) if rows else 0,
        'hard_bounce_agreement_pct': round(100.0 * hard_agreed / hard_rows, 3) if hard_rows else 0,
        'dsn_agreement_pct': round(100.0 * dsn_agreed / hard_rows, 3) if hard_rows else 0,
        'provider_code_agreement_pct': round(100.0 * code_agreed / code_rows, 3) if code_rows else 0,
        'disagreements': {'%s -> %s' % k: v for k, v in confusion.most_common(15)},
    }
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(out, f, indent=1)


if __name__ == '__main__':
    main()
