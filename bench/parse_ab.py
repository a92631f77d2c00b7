#!/usr/bin/python3
"""parse_ab.py: two bouncectl builds (or settings) against each other on `parse`, interleaved.

usage: bench/parse_ab.py [--pairs N] [--pause SECONDS] [--set x10|x10-one-thread|x1|one]
                         [--corpus DIR] A B

A and B are bouncectl binaries; `NAME=VALUE:PATH` runs PATH with NAME=VALUE in its environment
(MIMALLOC_LARGE_OS_PAGES=1:build/bouncectl). Each pair runs A and B once, in alternating order,
with the output to a file, as `bouncectl parse ... > out.jsonl` would; --pause sleeps before every
run. Prints each side's median and best wall time, median CPU time (user+sys of the child) and
median page faults, and the median of the per-pair differences B - A.

Why --pause: on a virtual machine the time of a short process depends on how fresh its memory
is. Back to back, a run gets the pages the previous one freed; after a pause of a few seconds
(as most runs of a command-line tool follow), free memory may have gone back to the host and
each first touch costs a fault there too (bench/RESULTS.md, "Fourteenth session"). Run both.

Reads the 372 real bounces of ../shared/corpus/eml (benchmarks may read /work/shared, tests
never do), or --corpus DIR.
"""
import argparse
import glob
import os
import statistics
import subprocess
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--pairs", type=int, default=20)
ap.add_argument("--pause", type=float, default=0.0)
ap.add_argument("--set", default="x10", choices=["x10", "x10-one-thread", "x1", "one"])
ap.add_argument("--corpus", default=os.path.join(here, "..", "..", "shared", "corpus", "eml"))
ap.add_argument("a")
ap.add_argument("b")
opt = ap.parse_args()

corpus = sorted(glob.glob(os.path.join(opt.corpus, "*.eml")))
if not corpus:
    raise SystemExit(f"no .eml files in {opt.corpus}")
args = {
    "x10": corpus * 10,
    "x10-one-thread": ["--jobs", "1"] + corpus * 10,
    "x1": corpus,
    "one": corpus[:1],
}[opt.set]


def command(spec):
    """(argv, env) for a side: PATH or NAME=VALUE:PATH."""
    env = dict(os.environ)
    path = spec
    if ":" in spec and "=" in spec.split(":", 1)[0]:
        setting, path = spec.split(":", 1)
        name, value = setting.split("=", 1)
        env[name] = value
    return [path, "parse", "--format=jsonl"] + args, env


runs = {side: [] for side in ("a", "b")}
for i in range(opt.pairs):
    for side in ("a", "b") if i % 2 == 0 else ("b", "a"):
        argv, env = command(getattr(opt, side))
        if opt.pause > 0:
            time.sleep(opt.pause)
        with tempfile.TemporaryFile() as out:
            t0 = time.monotonic()
            p = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env)
            _, status, ru = os.wait4(p.pid, 0)
            wall = time.monotonic() - t0
        if status != 0 and os.waitstatus_to_exitcode(status) not in (0, 1):
            raise SystemExit(f"{argv[0]} failed ({os.waitstatus_to_exitcode(status)})")
        runs[side].append((wall, ru.ru_utime + ru.ru_stime, ru.ru_minflt))

print(f"set={opt.set} files={len(args)} pairs={opt.pairs} pause={opt.pause}s")
for side in ("a", "b"):
    walls = [r[0] for r in runs[side]]
    print(f"{side}: {getattr(opt, side)}: wall median {statistics.median(walls) * 1e3:.1f} ms "
          f"(best {min(walls) * 1e3:.1f}), cpu median "
          f"{statistics.median(r[1] for r in runs[side]) * 1e3:.1f} ms, page faults median "
          f"{statistics.median(r[2] for r in runs[side]):.0f}")
diffs = [b[0] - a[0] for a, b in zip(runs["a"], runs["b"])]
print(f"b - a wall: median {statistics.median(diffs) * 1e3:+.2f} ms")
