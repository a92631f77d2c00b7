#!/usr/bin/python3
"""time_run.py FILE LABEL CMD...: runs CMD (stdout to /dev/null) and appends one line to FILE:
"LABEL wall user sys maxrss_kb", times in seconds to the microsecond (wait4's rusage; GNU
time(1) rounds to 10 ms, a tenth of a parse-log run). Exits with CMD's status."""
import os, subprocess, sys, time

out_file, label, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(os.devnull, "wb") as null:
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=null)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
with open(out_file, "a") as f:
    f.write(f"{label} {wall:.6f} {ru.ru_utime:.6f} {ru.ru_stime:.6f} {ru.ru_maxrss}\n")
sys.exit(os.waitstatus_to_exitcode(status))
