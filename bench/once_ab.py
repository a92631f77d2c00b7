#!/usr/bin/python3
"""once_ab.py: two bounced builds against each other on `bounced --once` over a log, interleaved.

usage: bench/once_ab.py [--pairs N] LOG A B

A and B are bounced binaries. Each pair runs A and B once, in alternating order, each reading LOG
from its start into a fresh database (a config of its own in a temporary directory: the log
input, the query socket and the socketmap, nothing else), as a catch-up after downtime would.
Prints each run, then each side's median wall, user, sys and CPU (user+sys of the child, from
wait4) and the median and mean (with its standard error) of the per-pair differences B - A,
with how many pairs B was lower in. On a shared machine single runs vary by more than a few
percent: read the per-pair differences.

LOG: e.g. `python3 ../shared/bench/genlog.py --lines 1000000 --seed 42 --out postfix_1M.log`.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--pairs", type=int, default=20)
ap.add_argument("log")
ap.add_argument("a")
ap.add_argument("b")
opt = ap.parse_args()
log = os.path.abspath(opt.log)

FIELDS = ("wall", "user", "sys", "cpu")


def run(binary, work):
    """One `bounced --once` into a fresh database under `work`: (wall, user, sys, cpu)."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    config = os.path.join(work, "bounced.toml")
    with open(config, "w") as f:
        f.write(f'[storage]\npath = "{work}/bounced.db"\n[input.log]\npath = "{log}"\n'
                f'[query]\nsocket = "{work}/query.sock"\ngroup = ""\n'
                f'[socketmap]\nsocket = "{work}/socketmap.sock"\n')
    t0 = time.monotonic()
    p = subprocess.Popen([binary, "--config", config, "--once"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{binary} failed ({os.waitstatus_to_exitcode(status)})")
    return wall, ru.ru_utime, ru.ru_stime, ru.ru_utime + ru.ru_stime


runs = {"a": [], "b": []}
with tempfile.TemporaryDirectory(prefix="once_ab.") as tmp:
    for i in range(opt.pairs):
        for side in ("a", "b") if i % 2 == 0 else ("b", "a"):
            r = run(getattr(opt, side), os.path.join(tmp, side))
            runs[side].append(r)
            print(f"pair {i} {side}: " + " ".join(f"{k} {v:.3f}" for k, v in zip(FIELDS, r)) +
                  f" load {os.getloadavg()[0]:.2f}", flush=True)

for side in ("a", "b"):
    print(f"{side}: {getattr(opt, side)}: " +
          ", ".join(f"{k} median {statistics.median(r[j] for r in runs[side]):.3f} s"
                    for j, k in enumerate(FIELDS)))
for j, k in enumerate(FIELDS):
    d = [b[j] - a[j] for a, b in zip(runs["a"], runs["b"])]
    se = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else 0.0
    base = statistics.median(r[j] for r in runs["a"])
    print(f"b - a {k}: median {statistics.median(d):+.3f} s "
          f"({100 * statistics.median(d) / base:+.1f}% of a's median), "
          f"mean {statistics.mean(d):+.3f} s +- {se:.3f}, b lower in "
          f"{sum(1 for x in d if x < 0)} of {len(d)}")
