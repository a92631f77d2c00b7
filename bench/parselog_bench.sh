#!/usr/bin/env bash
# parselog_bench.sh: `bouncectl parse-log --summary` (its default threads, and --jobs 1) against
# pflogsumm and a raw line scanner, in one run, on logs from the shared generator; plus memory at
# two log sizes and accuracy against the generator's ground truth. See bench/README.md ("Postfix log parsing").
#
# Reads (outside the repository, as bench inputs): ../shared/bench/genlog.py (log generator) and
# ../shared/bench/scan.cpp (the raw scanner, compiled here with g++ -O2).
# Writes: bench/data/ (generated logs, git-ignored), bench/out/parselog_*.{txt,json} (results).
# Installs Debian's pflogsumm when missing.
#
# usage: bench/parselog_bench.sh [BOUNCECTL]   (default build/bouncectl)
#   RUNS=3 (timed runs per tool, the median is reported)
set -euo pipefail
cd "$(dirname "$0")/.."
BOUNCECTL=${1:-build/bouncectl}
SHARED=${SHARED:-../shared/bench}
[ -d "$SHARED" ] || SHARED=/work/shared/bench
RUNS=${RUNS:-3}
PY=/usr/bin/python3
DATA=bench/data
OUT=bench/out
mkdir -p "$DATA" "$OUT"

if ! command -v pflogsumm >/dev/null; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q pflogsumm >/dev/null
fi
[ -x "$BOUNCECTL" ] || { echo "no $BOUNCECTL: build it first (cmake --build build --target bouncectl)" >&2; exit 2; }
[ -x "$OUT/scan" ] || g++ -O2 -std=c++17 -o "$OUT/scan" "$SHARED/scan.cpp"

LOG1=$DATA/postfix_1M.log
LOG4=$DATA/postfix_4M.log
[ -s "$LOG1" ] || $PY "$SHARED/genlog.py" --lines 1000000 --seed 42 --out "$LOG1" --truth "$DATA/postfix_1M.truth.tsv"
[ -s "$LOG4" ] || $PY "$SHARED/genlog.py" --lines 4000000 --seed 43 --out "$LOG4" --truth "$DATA/postfix_4M.truth.tsv"
# The generator's logs say "postfix/..."; pflogsumm counts nothing unless told the syslog name.
NAME=$(awk '{ split($5, p, "/"); if (p[2] != "") { print p[1]; exit } }' "$LOG1")

# time_run LABEL CMD...: appends "LABEL wall user sys maxrss_kb" to $OUT/parselog_times.txt
# (bench/time_run.py: to the microsecond; GNU time's 10 ms steps were a tenth of a run).
time_run() {
  local label=$1; shift
  $PY bench/time_run.py "$OUT/parselog_times.txt" "$label" "$@"
}

: >"$OUT/parselog_times.txt"
cat "$LOG1" >/dev/null  # page cache: every tool reads from memory
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >"$OUT/parselog_env.txt"
for i in $(seq "$RUNS"); do
  time_run scan "$OUT/scan" "$LOG1"
  time_run parselog "$BOUNCECTL" parse-log --summary "$LOG1"
  # The same on one thread (the default runs two when there are two CPUs).
  time_run parselog_1t "$BOUNCECTL" parse-log --summary --jobs 1 "$LOG1"
  time_run pflogsumm pflogsumm --syslog-name="$NAME" "$LOG1"
done
cat "$LOG4" >/dev/null
time_run parselog_big "$BOUNCECTL" parse-log --summary "$LOG4"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/parselog_env.txt"
"$BOUNCECTL" parse-log --summary "$LOG1" >"$OUT/parselog_summary_1M.txt"
pflogsumm --syslog-name="$NAME" "$LOG1" >"$OUT/pflogsumm_1M.txt"

"$BOUNCECTL" parse-log --format=jsonl "$LOG1" |
  $PY bench/parselog_accuracy.py "$DATA/postfix_1M.truth.tsv" --json "$OUT/parselog_accuracy.json" >/dev/null

$PY - "$OUT" "$LOG1" "$LOG4" <<'EOF'
import json, os, statistics, sys
out, log1, log4 = sys.argv[1:]
rows = {}
for line in open(os.path.join(out, 'parselog_times.txt')):
    label, wall, user, sys_, rss = line.split()
    rows.setdefault(label, []).append((float(wall), float(user) + float(sys_), int(rss)))
def med(label, i):
    return statistics.median(r[i] for r in rows[label])
mb = os.path.getsize(log1) / 1e6
per_round = [f[0] / p[0] for f, p in zip(rows['pflogsumm'], rows['parselog'])]
pw, pc = med('parselog', 0), med('parselog', 1)
res = {
    'log_1M_mb': round(mb, 1),
    'runs': len(rows['parselog']),
    'cpus': os.cpu_count(),
    'wall_s': {k: round(med(k, 0), 3) for k in ('scan', 'parselog', 'parselog_1t', 'pflogsumm')},
    'cpu_s': {k: round(med(k, 1), 3) for k in ('scan', 'parselog', 'parselog_1t', 'pflogsumm')},
    'parselog_lines_per_s': round(1e6 / pw),
    'parselog_mb_per_s': round(mb / pw, 1),
    'speedup_vs_pflogsumm_wall': round(med('pflogsumm', 0) / pw, 1),
    'speedup_vs_pflogsumm_cpu': round(med('pflogsumm', 1) / pc, 1),
    'speedup_vs_pflogsumm_wall_1t': round(med('pflogsumm', 0) / med('parselog_1t', 0), 1),
    # Each round runs every tool once, in turn: a slow spell of the machine falls on all of them,
    # so the ratio within each round is steadier than the ratio of medians.
    'speedup_vs_pflogsumm_wall_per_round': {
        'median': round(statistics.median(per_round), 1),
        'min': round(min(per_round), 1), 'max': round(max(per_round), 1)},
    'fraction_of_scan_speed_wall': round(med('scan', 0) / pw, 3),
    'fraction_of_scan_speed_cpu': round(med('scan', 1) / pc, 3),
    'max_rss_kb': {'parselog_1M': max(r[2] for r in rows['parselog']),
                   'parselog_1t_1M': max(r[2] for r in rows['parselog_1t']),
                   'parselog_big': rows['parselog_big'][0][2],
                   'pflogsumm_1M': max(r[2] for r in rows['pflogsumm'])},
    'big_log_lines': sum(1 for _ in open(log4, 'rb')),
    'big_log_wall_s': rows['parselog_big'][0][0],
    'accuracy': json.load(open(os.path.join(out, 'parselog_accuracy.json'))),
    'env': open(os.path.join(out, 'parselog_env.txt')).read().strip().split('\n'),
}
json.dump(res, open(os.path.join(out, 'parselog_results.json'), 'w'), indent=1)
print(json.dumps(res, indent=1))
EOF
