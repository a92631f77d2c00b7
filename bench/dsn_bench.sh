#!/usr/bin/env bash
# dsn_bench.sh: DSN parsing speed of `bouncectl parse` against Debian's Sisimai 4.25
# (libsisimai-perl), on the same real bounce files, one process each, as a ratio in one run.
#
# Reads: the 372 real bounces of ../shared/corpus/eml (Sisimai's BSD-licensed set-of-emails;
#        benchmarks may read /work/shared, tests never do), or CORPUS=DIR.
# Writes: a summary to stdout (paste it into bench/RESULTS.md, "DSN parsing").
# Knobs: BOUNCECTL (default build/bouncectl), REPEAT (times the file set is repeated on one
#        command line, default 10), ROUNDS (runs per tool, best kept, default 3),
#        READ_FLOOR (the read_floor_bench program, default next to BOUNCECTL in bench/).
#
# Both tools get the same argument list (the corpus repeated REPEAT times) and parse it in one
# process: `bouncectl parse --format=jsonl FILE...` (once with --jobs 1, once with its default
# of one thread per CPU; the two outputs must be identical) and bench/sisimai_parse.pl FILE...
# (Sisimai->make per file, single-threaded). Wall time and CPU time (user+sys of the child) are
# both reported; on a shared machine CPU time is the steadier figure.
# Rounds are interleaved (each round runs every program once, in turn), so that a slow spell of
# the machine falls on both tools alike, and the ratio is also given per round (median).
# Every program's standard output goes to a file, as `bouncectl parse ... > out.jsonl` would:
# a pipe to this script would put a reader process on the CPUs the threads use. The same argument list is
# also given to read_floor_bench, which only opens, reads (to the end) and closes each file as
# bouncectl does (no parsing): the kernel's and the process's share that no parser can remove.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
BOUNCECTL=${BOUNCECTL:-$root/build/bouncectl}
CORPUS=${CORPUS:-$root/../shared/corpus/eml}
REPEAT=${REPEAT:-10}
ROUNDS=${ROUNDS:-3}
READ_FLOOR=${READ_FLOOR:-$(dirname "$BOUNCECTL")/bench/read_floor_bench}

# Bench-only dependency (not a test dependency): Debian's Sisimai.
if ! perl -MSisimai -e 1 2>/dev/null; then
  echo "installing libsisimai-perl (bench only)" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get install -y -q libsisimai-perl >&2
fi
[ -x "$BOUNCECTL" ] || { echo "no bouncectl at $BOUNCECTL (build it first)" >&2; exit 2; }
[ -d "$CORPUS" ] || { echo "no corpus at $CORPUS" >&2; exit 2; }

[ -x "$READ_FLOOR" ] || { echo "no read_floor_bench at $READ_FLOOR (build the read_floor_bench target)" >&2; exit 2; }

exec /usr/bin/python3 - "$BOUNCECTL" "$CORPUS" "$REPEAT" "$ROUNDS" "$here/sisimai_parse.pl" "$READ_FLOOR" <<'PY'
import glob, os, statistics, subprocess, sys, tempfile, time

bouncectl, corpus, repeat, rounds, sisimai = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
read_floor = sys.argv[6]
files = sorted(glob.glob(os.path.join(corpus, "*.eml")))
args = files * repeat
n = len(args)

def run(cmd):
    """Runs cmd once, its stdout into a file; returns (wall seconds, child CPU seconds, stdout)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        out.seek(0)
        return wall, ru.ru_utime + ru.ru_stime, out.read()

# One thread (--jobs 1) and the default (one thread per CPU); Sisimai is single-threaded.
programs = {
    "single": [bouncectl, "parse", "--jobs", "1", "--format=jsonl"] + args,
    "threaded": [bouncectl, "parse", "--format=jsonl"] + args,
    "sisimai": ["perl", sisimai] + args,
    "floor": [read_floor] + args,
}
runs = {name: [] for name in programs}
for _ in range(rounds):
    for name, cmd in programs.items():
        runs[name].append(run(cmd))

def best(name):
    """(best wall, best CPU, stdout of the first run, median wall)."""
    walls = sorted(r[0] for r in runs[name])
    return walls[0], min(r[1] for r in runs[name]), runs[name][0][2], statistics.median(walls)

w1, c1, out1, _ = best("single")
wt, ct, outt, mt = best("threaded")
sw, sc, sout, ms = best("sisimai")
fw, fc, fout, _ = best("floor")
if out1 != outt:
    sys.exit("--jobs 1 and the threaded run printed different output")
lines = out1.count(b"\n")
per_round = sorted(s[0] / t[0] for s, t in zip(runs["sisimai"], runs["threaded"]))
print(f"files={len(files)} repeat={repeat} messages={n} rounds={rounds} (best of, interleaved) cpus={os.cpu_count()}")
print(f"bouncectl parse --jobs 1: wall={w1:.3f}s cpu={c1:.3f}s  {n / w1:,.0f} msgs/s wall  {n / c1:,.0f} msgs/s cpu  (output lines={lines})")
print(f"bouncectl parse (threads): wall={wt:.3f}s cpu={ct:.3f}s  {n / wt:,.0f} msgs/s wall  {n / ct:,.0f} msgs/s cpu")
print(f"sisimai 4.25   : wall={sw:.3f}s cpu={sc:.3f}s  {n / sw:,.0f} msgs/s wall  {n / sc:,.0f} msgs/s cpu  ({sout.decode().strip()})")
print(f"read floor     : wall={fw:.3f}s cpu={fc:.3f}s  (open/read/close of the same files, no parsing: {fout.decode().strip()})")
print(f"100x sisimai allows {sc / 100:.3f}s cpu / {sw / 100:.3f}s wall; the read floor alone takes {100 * fc / (sc / 100):.0f}% / {100 * fw / (sw / 100):.0f}% of that")
print(f"ratio, one thread : {sw / w1:.1f}x wall, {sc / c1:.1f}x cpu")
print(f"ratio, threads    : {sw / wt:.1f}x wall, {sc / ct:.1f}x cpu")
# How much the machine's noise moves the ratio, in the same run: the median rounds' ratio, and
# the ratio within each round (the two programs run back to back).
print(f"ratio of the median rounds, threads: {ms / mt:.1f}x wall (sisimai {ms:.3f}s, bouncectl {mt:.3f}s)")
print(f"ratio within each round, threads: median {statistics.median(per_round):.1f}x wall, range {per_round[0]:.1f}x-{per_round[-1]:.1f}x")
PY
