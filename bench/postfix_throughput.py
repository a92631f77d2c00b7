#!/usr/bin/python3
"""postfix_throughput.py: Postfix throughput with the bounced milter attached vs without any
milter, in one run, and the milter's per-RCPT check latency histogram.

    sudo /usr/bin/python3 bench/postfix_throughput.py --build build [--messages 2000]
        [--sessions 10] [--reps 2] [--suppressed 100000]

Path measured: smtp-source -> private Postfix smtpd (127.0.0.1) -> qmgr -> smtp -> smtp-sink
(all loopback; smtp-source and smtp-sink ship with Debian's postfix package). The runs alternate
(no milter, milter, no milter, milter, ...) on the same Postfix instance (postfix reload between
them), each after the queue is empty. A run's time is from the first connection of smtp-source
until Postfix has logged N "status=sent" lines for the sink. The milter is hosted by
build/bench/postfix_throughput_bench exactly as bounced hosts it (real Store with --suppressed
suppressions in its in-memory view, default rules); its histogram covers every RCPT of the
milter runs. Uses tests/e2e/testbed.py; reads nothing from ../shared. Needs root.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import testbed  # noqa: E402

PORTS = dict(smtpd_milter=25891, smtpd_map=25892, fake_mx=25894, milter=25893,
             extra_transport={"sink.example": 25895})
SINK_PORT = 25895


def sent_count(tb):
    return len(re.findall(r"relay=127\.0\.0\.1\[127\.0\.0\.1\]:%d, .*status=sent" % SINK_PORT,
                          tb.maillog_text()))


def cpu_seconds(pid=None):
    """CPU time (user + system) of one process, or of the whole machine (all CPUs, idle and
    iowait left out) when pid is None."""
    tick = os.sysconf("SC_CLK_TCK")
    if pid is not None:
        fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick
    cpu = open("/proc/stat").readline().split()[1:]
    busy = sum(int(v) for i, v in enumerate(cpu) if i not in (3, 4))  # idle, iowait
    return busy / tick


def run(tb, label, n, sessions, host_pid=None):
    testbed.wait_for("empty queue", tb.queue_empty, timeout=120, interval=0.2)
    c0 = sent_count(tb)
    machine0, host0 = cpu_seconds(), cpu_seconds(host_pid) if host_pid else 0.0
    t0 = time.time()
    subprocess.run(["/usr/sbin/smtp-source", "-s", str(sessions), "-m", str(n), "-l", "2000",
                    "-f", "bench@e2e.test", "-t", "bench@sink.example", "-M", "client.e2e.test",
                    "127.0.0.1:%d" % PORTS["smtpd_milter"]], check=True)
    t1 = time.time()
    testbed.wait_for("%d deliveries" % n, lambda: sent_count(tb) - c0 >= n, timeout=600,
                     interval=0.1)
    t2 = time.time()
    machine_cpu = cpu_seconds() - machine0
    host_cpu = cpu_seconds(host_pid) - host0 if host_pid else 0.0
    r = {"label": label, "messages": n, "sessions": sessions, "inject_s": t1 - t0,
         "inject_msg_s": n / (t1 - t0), "end2end_s": t2 - t0, "end2end_msg_s": n / (t2 - t0),
         "machine_cpu_us_per_msg": 1e6 * machine_cpu / n,
         "milter_cpu_us_per_msg": 1e6 * host_cpu / n}
    testbed.log("%-10s N=%d inject %.2f s (%.0f msg/s), end-to-end %.2f s (%.0f msg/s)" % (
        label, n, r["inject_s"], r["inject_msg_s"], r["end2end_s"], r["end2end_msg_s"]))
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, help="CMake build directory")
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--suppressed", type=int, default=100000)
    ap.add_argument("--milter-socket", choices=["unix", "inet"], default="unix",
                    help="how Postfix reaches the milter (packaged default: unix)")
    ap.add_argument("--json-out", default="")
    a = ap.parse_args()
    src = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    build = os.path.abspath(a.build)
    host = os.path.join(build, "bench", "postfix_throughput_bench")
    if not os.path.exists(host):
        sys.exit("build %s first (target postfix_throughput_bench)" % host)
    testbed.ensure_postfix(src)
    load_before = open("/proc/loadavg").read().split()[0]
    tb = testbed.Testbed(src, build, PORTS, name="bench")
    try:
        tb.start_proc("smtp_sink", ["/usr/sbin/smtp-sink", "-u", "nobody",
                                    "127.0.0.1:%d" % SINK_PORT, "256"])
        stats_file = os.path.join(tb.work, "milter_stats.json")
        # A unix socket by default, as packaged bounced uses (unix:/run/bounced/milter.sock).
        sock = os.path.join(tb.run_dir, "milter.sock")
        if a.milter_socket == "unix":
            tb.milter_spec = "unix:" + sock
            spec = ["--socket", "unix:" + sock, "--socket-group", "postfix"]
        else:
            spec = ["--socket", "inet:%d@127.0.0.1" % PORTS["milter"]]
        tb.start_proc("milter_host", [host, "--db", os.path.join(tb.bounced_dir, "bench.db")] +
                      spec + ["--suppressed", str(a.suppressed), "--stats-out", stats_file])
        testbed.wait_for("milter host", tb.milter_ready, timeout=120)
        testbed.wait_for("smtp-sink", lambda: testbed.port_open(SINK_PORT))
        tb.start_postfix(milter=False, non_smtpd_milter=False, rcpt_access=False)
        # Warm-up: start Postfix's processes and connections before measuring.
        run(tb, "warm-up", 200, a.sessions)
        results = []
        for _ in range(a.reps):
            tb.reconfigure_postfix(milter=False, non_smtpd_milter=False, rcpt_access=False)
            results.append(run(tb, "no-milter", a.messages, a.sessions))
            tb.reconfigure_postfix(milter=True, non_smtpd_milter=False, rcpt_access=False)
            results.append(run(tb, "milter", a.messages, a.sessions,
                               tb.procs["milter_host"].pid))
        tb.stop_proc("milter_host")
        stats = json.load(open(stats_file))
    finally:
        tb.close()

    def median(label, key):
        return statistics.median(r[key] for r in results if r["label"] == label)
    summary = {
        "messages_per_run": a.messages, "sessions": a.sessions, "reps": a.reps,
        "suppressed_loaded": a.suppressed, "nproc": os.cpu_count(),
        "no_milter_end2end_msg_s": median("no-milter", "end2end_msg_s"),
        "milter_end2end_msg_s": median("milter", "end2end_msg_s"),
        "no_milter_inject_msg_s": median("no-milter", "inject_msg_s"),
        "milter_inject_msg_s": median("milter", "inject_msg_s"),
        "runs": results, "milter": stats,
    }
    summary["ratio_end2end"] = summary["milter_end2end_msg_s"] / summary["no_milter_end2end_msg_s"]
    summary["ratio_inject"] = summary["milter_inject_msg_s"] / summary["no_milter_inject_msg_s"]
    lat = stats["rcpt_latency"]
    print("\n## Postfix throughput with the bounced milter (bench/postfix_throughput.py)\n")
    print("%d messages per run x %d runs per setup, %d concurrent smtp-source sessions (one "
          "message per SMTP session), 1 recipient/message, 2000-byte bodies, %d suppressions "
          "loaded, milter on a %s socket, %d CPUs, load average before: %s.\n" %
          (a.messages, a.reps, a.sessions, a.suppressed, a.milter_socket, os.cpu_count(),
           load_before))
    print("| setup | end-to-end msg/s (median) | smtpd accept msg/s (median) |")
    print("|---|---|---|")
    print("| no milter | %.0f | %.0f |" % (summary["no_milter_end2end_msg_s"],
                                          summary["no_milter_inject_msg_s"]))
    print("| bounced milter | %.0f | %.0f |" % (summary["milter_end2end_msg_s"],
                                               summary["milter_inject_msg_s"]))
    print("| **ratio** | **%.1f%%** | %.1f%% |\n" % (100 * summary["ratio_end2end"],
                                                  100 * summary["ratio_inject"]))
    print("CPU per message (median; the whole machine: Postfix, smtp-source, smtp-sink and the "
          "milter): %.0f us without the milter, %.0f us with it, of which the milter host's "
          "own %.0f us.\n" % (median("no-milter", "machine_cpu_us_per_msg"),
                              median("milter", "machine_cpu_us_per_msg"),
                              median("milter", "milter_cpu_us_per_msg")))
    print("Milter per-RCPT check (lookup + decision + reply, inside the callback), %d checks: "
          "p50 %.2f us, p90 %.2f us, p99 %.2f us, p99.9 %.2f us, max bucket %s us" % (
              stats["rcpt_checked"], lat["p50_ns"] / 1000, lat["p90_ns"] / 1000,
              lat["p99_ns"] / 1000, lat["p999_ns"] / 1000,
              ">200" if lat["max_ns"] > 200000 else "%.2f" % (lat["max_ns"] / 1000)))
    # The host keeps 0.25 us buckets (--json-out has them all); summarised here.
    edges = [0, 1, 2, 5, 10, 20, 50, 100, 200, float("inf")]
    counts = [0] * (len(edges) - 1)
    for b in lat["histogram"]:
        us = b["from_ns"] / 1000
        for i in range(len(counts)):
            if edges[i] <= us < edges[i + 1]:
                counts[i] += b["count"]
    total = sum(counts) or 1
    print("\nHistogram:\n")
    print("| RCPT check | checks | share |")
    print("|---|---|---|")
    for i, c in enumerate(counts):
        hi = "inf" if edges[i + 1] == float("inf") else "%g" % edges[i + 1]
        print("| %g-%s us | %d | %.2f%% |" % (edges[i], hi, c, 100.0 * c / total))
    if a.json_out:
        json.dump(summary, open(a.json_out, "w"), indent=1)
    ok = summary["ratio_end2end"] >= 0.9 and lat["p99_ns"] < 50000
    print("\ntargets (ratio >= 90%%, p99 < 50 us): %s" % ("met" if ok else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
