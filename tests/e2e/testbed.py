"""testbed.py: a private Postfix instance, a fake remote MX and bounced, all on 127.0.0.1.

Used by tests/e2e/e2e.py (the end-to-end suite) and bench/postfix_throughput.py. Everything lives
in one work directory (config, queue, log, Maildirs, bounced's database and sockets); every
process started is recorded by PID and stopped by PID in close() (also on SIGTERM/SIGINT and at
interpreter exit). Needs root (Postfix's master runs as root and drops to user postfix).
Installs Debian's postfix through scripts/install-deps.sh when it is missing.
"""
import atexit
import json
import os
import re
import shutil
import signal
import smtplib
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"  # Debian's python3, which has aiosmtpd
TRANSPORT_DOMAINS = ["gmail.com", "icloud.com", "me.com", "mac.com", "example.org", "yahoo.com"]


def log(msg):
    print("[e2e %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


class TestbedError(Exception):
    pass


def ensure_postfix(source_dir):
    if os.path.exists("/usr/sbin/postfix") and os.path.exists("/usr/sbin/sendmail"):
        return
    log("postfix missing: running scripts/install-deps.sh")
    subprocess.run([os.path.join(source_dir, "scripts", "install-deps.sh")], check=True)


def port_open(port):
    import socket
    s = socket.socket()
    s.settimeout(0.2)
    try:
        s.connect(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_ports(n):
    """n distinct loopback TCP ports that are free now, from the unusual 20000-29999 range."""
    import random
    import socket
    ports = []
    while len(ports) < n:
        p = random.randint(20000, 29999)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
            if p not in ports:
                ports.append(p)
        except OSError:
            pass
        finally:
            s.close()
    return ports


def wait_for(what, pred, timeout=20.0, interval=0.1):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise TestbedError("timed out after %.0f s waiting for %s" % (timeout, what))


class Testbed:
    def __init__(self, source_dir, binary_dir, ports, keep=False, name="e2e"):
        self.src = source_dir
        self.bin = binary_dir
        self.ports = ports  # dict: smtpd_milter, smtpd_map, fake_mx, milter
        self.keep = keep
        self.work = tempfile.mkdtemp(prefix="bounced-%s-" % name)
        os.chmod(self.work, 0o755)  # Postfix's processes (user postfix) reach the sockets here
        self.etc = os.path.join(self.work, "etc")
        self.maillog = os.path.join(self.work, "log", "postfix.log")
        self.run_dir = os.path.join(self.work, "run")
        self.fake_mx_log = os.path.join(self.work, "log", "fake_mx.jsonl")
        self.bounced_dir = os.path.join(self.work, "bounced")
        self.query_sock = os.path.join(self.run_dir, "query.sock")
        self.socketmap_sock = os.path.join(self.run_dir, "socketmap.sock")
        self.milter_spec = None  # Postfix's spec of the milter; default inet on ports["milter"]
        self.procs = {}  # name -> Popen
        self.postfix_started = False
        self.closed = False
        for d in ("etc", "log", "run", "spool", "data", "mail", "bounced"):
            os.makedirs(os.path.join(self.work, d), exist_ok=True)
        shutil.chown(os.path.join(self.work, "mail"), "nobody", "nogroup")
        shutil.chown(os.path.join(self.work, "data"), "postfix")
        atexit.register(self.close)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, frame):
        self.close()
        sys.exit(128 + signum)

    # ------------------------------------------------------------------ processes
    def start_proc(self, name, argv, **kw):
        out = open(os.path.join(self.work, "log", name + ".out"), "ab")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True, **kw)
        self.procs[name] = p
        log("started %s (pid %d)" % (name, p.pid))
        return p

    def stop_proc(self, name, sig=signal.SIGTERM, timeout=15.0):
        p = self.procs.pop(name, None)
        if p is None or p.poll() is not None:
            return
        p.send_signal(sig)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log("stopped %s (pid %d, rc %s)" % (name, p.pid, p.returncode))

    def start_fake_mx(self):
        self.start_proc("fake_mx", [PY, os.path.join(HERE, "fake_mx.py"), "--port",
                                    str(self.ports["fake_mx"]), "--log", self.fake_mx_log])
        wait_for("fake MX", lambda: port_open(self.ports["fake_mx"]))

    # ------------------------------------------------------------------ postfix
    def render_postfix(self, milter=True, non_smtpd_milter=True, rcpt_access=True,
                       transport_socketmap=False):
        milter_spec = self.milter_spec or "inet:127.0.0.1:%d" % self.ports["milter"]
        sm = "socketmap:unix:%s" % self.socketmap_sock
        transport = "texthash:%s/transport" % self.etc
        values = {
            "WORK": self.work,
            "MILTER": milter_spec if milter else "",
            "NON_SMTPD_MILTER": milter_spec if non_smtpd_milter else "",
            "RCPT_ACCESS": ("check_recipient_access %s:recipient_access," % sm) if rcpt_access else "",
            "TRANSPORT_MAPS": ("%s:transport, %s" % (sm, transport)) if transport_socketmap else transport,
            "SMTPD_MILTER_PORT": str(self.ports["smtpd_milter"]),
            "SMTPD_MAP_PORT": str(self.ports["smtpd_map"]),
        }
        for name in ("main.cf", "master.cf"):
            text = open(os.path.join(HERE, "postfix", name + ".in")).read()
            for k, v in values.items():
                text = text.replace("@%s@" % k, v)
            open(os.path.join(self.etc, name), "w").write(text)
        with open(os.path.join(self.etc, "transport"), "w") as f:
            for d in TRANSPORT_DOMAINS:
                f.write("%s smtp:[127.0.0.1]:%d\n" % (d, self.ports["fake_mx"]))
            for d, port in self.ports.get("extra_transport", {}).items():
                f.write("%s smtp:[127.0.0.1]:%d\n" % (d, port))
        with open(os.path.join(self.etc, "vmailbox"), "w") as f:
            f.write("sender@e2e.test e2e.test/sender/\n@e2e.test e2e.test/catchall/\n")

    def postfix(self, *args, check=True):
        r = subprocess.run(["/usr/sbin/postfix", "-c", self.etc] + list(args),
                           capture_output=True, text=True)
        if check and r.returncode != 0:
            raise TestbedError("postfix %s failed: %s%s" % (" ".join(args), r.stdout, r.stderr))
        return r

    def start_postfix(self, **config):
        self.render_postfix(**config)
        self.postfix("check")
        self.postfix("start")
        self.postfix_started = True
        wait_for("postfix smtpd", lambda: port_open(self.ports["smtpd_milter"]) and
                 port_open(self.ports["smtpd_map"]))
        log("postfix up (config %s)" % self.etc)

    def reconfigure_postfix(self, **config):
        self.render_postfix(**config)
        self.postfix("reload")
        time.sleep(1.0)  # master restarts its children on their next use

    def postqueue(self, *args):
        return subprocess.run(["/usr/sbin/postqueue", "-c", self.etc] + list(args),
                              capture_output=True, text=True)

    def queue_empty(self):
        return "Mail queue is empty" in self.postqueue("-p").stdout

    def master_pid(self):
        try:
            return int(open(os.path.join(self.work, "spool", "pid", "master.pid")).read().strip())
        except (OSError, ValueError):
            return None

    # ------------------------------------------------------------------ bounced
    def bounced_config(self, extra=""):
        return """# bounced config of the e2e suite (generated)
[storage]
path = "{db}"
[input.log]
path = "{maillog}"
poll_interval = "100ms"
[query]
socket = "{query}"
group = ""
[socketmap]
socket = "{sm}"
[rules]
files = ["{rules}"]
[milter]
socket = "{milter}"
socket_group = "postfix"
timeout = "2s"
[policy]
suppress_original_recipient = true
[verp]
enabled = true
prefixes = ["sender"]
domains = ["e2e.test"]
{extra}
""".format(db=os.path.join(self.bounced_dir, "bounced.db"), maillog=self.maillog,
           query=self.query_sock, sm=self.socketmap_sock,
           rules=os.environ.get("E2E_RULES") or os.path.join(self.src, "rules", "default.toml"),
           milter=self.bounced_milter_spec(),
           extra=extra)

    def bounced_milter_spec(self):
        # libmilter's spelling of the socket Postfix's milter_spec names.
        if self.milter_spec and self.milter_spec.startswith("unix:"):
            return self.milter_spec
        return "inet:%d@127.0.0.1" % self.ports["milter"]

    def start_bounced(self, extra_config=""):
        cfg = os.path.join(self.bounced_dir, "bounced.toml")
        open(cfg, "w").write(self.bounced_config(extra_config))
        binary = os.path.join(self.bin, "bounced")
        self.start_proc("bounced", [binary, "--config", cfg, "--foreground"])

        def ready():
            p = self.procs["bounced"]
            if p.poll() is not None:
                raise TestbedError("bounced exited early (rc %s): %s" % (
                    p.returncode, self.bounced_output()[-2000:]))
            return (self.milter_ready() and os.path.exists(self.query_sock) and
                    os.path.exists(self.socketmap_sock))
        wait_for("bounced milter and sockets", ready, timeout=30)

    def milter_ready(self):
        if self.milter_spec and self.milter_spec.startswith("unix:"):
            return os.path.exists(self.milter_spec[5:])
        return port_open(self.ports["milter"])

    def bounced_output(self):
        try:
            return open(os.path.join(self.work, "log", "bounced.out"), errors="replace").read()
        except OSError:
            return ""

    def stop_bounced(self):
        self.stop_proc("bounced")

    def bouncectl(self, *args, check=True):
        r = subprocess.run([os.path.join(self.bin, "bouncectl"), "--socket", self.query_sock] +
                           list(args), capture_output=True, text=True)
        if check and r.returncode != 0:
            raise TestbedError("bouncectl %s failed (rc %d): %s%s" % (
                " ".join(args), r.returncode, r.stdout, r.stderr))
        return r

    def status(self, address):
        r = self.bouncectl("--json", "status", address)
        return json.loads(r.stdout)

    # ------------------------------------------------------------------ mail
    def smtp_send(self, port, sender, rcpts, subject="e2e", headers=None, body="e2e test\r\n",
                  raw=None, mail_options=()):
        """One SMTP transaction (mail_options: MAIL FROM parameters, e.g. XVERP). Returns
        {accepted, refused: {rcpt: (code, text)}, data: (code, text) or None, queue_id}."""
        out = {"accepted": [], "refused": {}, "data": None, "queue_id": None}
        s = smtplib.SMTP("127.0.0.1", port, local_hostname="client.e2e.test", timeout=30)
        try:
            s.ehlo()
            code, text = s.mail(sender, list(mail_options))
            if code != 250:
                out["data"] = (code, text.decode())
                return out
            for r in rcpts:
                code, text = s.rcpt(r)
                if code in (250, 251):
                    out["accepted"].append(r)
                else:
                    out["refused"][r] = (code, text.decode())
            if not out["accepted"]:
                return out
            if raw is None:
                hdrs = "".join("%s: %s\r\n" % kv for kv in (headers or {}).items())
                raw = ("From: <%s>\r\nTo: %s\r\nSubject: %s\r\n%s\r\n%s" %
                       (sender or "MAILER-DAEMON@e2e.test", ", ".join(out["accepted"]), subject,
                        hdrs, body))
            code, text = s.data(raw.encode() if isinstance(raw, str) else raw)
            out["data"] = (code, text.decode())
            m = re.search(r"queued as ([0-9A-F]+)", text.decode())
            out["queue_id"] = m.group(1) if m else None
        finally:
            try:
                s.quit()
            except smtplib.SMTPException:
                pass
        return out

    def sendmail(self, sender, rcpts, subject="e2e sendmail", body="sent with sendmail(1)\n"):
        msg = "From: <%s>\nTo: %s\nSubject: %s\n\n%s" % (sender, ", ".join(rcpts), subject, body)
        r = subprocess.run(["/usr/sbin/sendmail", "-C", self.etc, "-f", sender, "--"] + rcpts,
                           input=msg, capture_output=True, text=True)
        if r.returncode != 0:
            raise TestbedError("sendmail failed: %s%s" % (r.stdout, r.stderr))

    def maillog_text(self):
        try:
            return open(self.maillog, errors="replace").read()
        except OSError:
            return ""

    def wait_log(self, pattern, timeout=30.0, start=0):
        rx = re.compile(pattern)

        def find():
            text = self.maillog_text()[start:]
            m = rx.search(text)
            return m if m else None
        return wait_for("log line /%s/" % pattern, find, timeout=timeout, interval=0.2)

    def log_offset(self):
        return len(self.maillog_text())

    def fake_mx_events(self):
        try:
            return [json.loads(l) for l in open(self.fake_mx_log) if l.strip()]
        except OSError:
            return []

    def delivered_to(self, rcpt):
        return [e for e in self.fake_mx_events() if e["ev"] == "delivered" and rcpt in e["rcpts"]]

    # ------------------------------------------------------------------ teardown
    def close(self):
        if self.closed:
            return
        self.closed = True
        if self.postfix_started:
            self.postfix("stop", check=False)
            pid = self.master_pid()
            if pid:
                for _ in range(50):
                    try:
                        os.kill(pid, 0)
                    except OSError:
                        break
                    time.sleep(0.1)
        for name in list(self.procs):
            self.stop_proc(name)
        if self.keep:
            log("kept work directory %s" % self.work)
        else:
            shutil.rmtree(self.work, ignore_errors=True)
