#!/usr/bin/python3
"""e2e.py: bounced against a real Postfix, on 127.0.0.1 only (registered with ctest as e2e_postfix).

    sudo /usr/bin/python3 tests/e2e/e2e.py --source . --build build   [--keep]

Starts (tests/e2e/testbed.py) a fake remote MX answering with real provider replies, the real
`bounced` (log input on Postfix's log file, milter on a unix socket, socketmap, query socket)
and a private Postfix with two SMTP listeners: one where only the milter judges recipients, one
where only `check_recipient_access socketmap:...:recipient_access` does. Then proves, through
Postfix itself:
  1. a user-unknown bounce (in the log, and as the DSN through the milter) suppresses the address;
     the next message to it is refused at RCPT by the milter, separately by check_recipient_access
     via socketmap, and a sendmail(1) submission is stopped by transport_maps (map transport) or,
     with the milter on the non-SMTP path, has the recipient removed; a remote DSN arriving over
     SMTP is recorded once even when sent twice; `bouncectl suppress` applies on the next RCPT;
  2. iCloud CS01, CS02 and HM08 are recorded with their codes and do not suppress;
  3. one suppressed + one good recipient: the good one is delivered;
  4. with bounced stopped, mail still flows (milter_default_action = accept) and what Postfix
     logged meanwhile is recorded once bounced is back (log catch-up);
  5. `bouncectl unsuppress` lifts the block on the next message;
  6. a quoted local part is the mailbox Postfix makes of it: with john.doe@example.org suppressed,
     RCPT TO:<"john.doe"@example.org> and <"John.Doe+x"@example.org> are refused by the milter
     as by socketmap, and so is <"jane roe"@example.org> (whose quotes are needed);
  7. VERP return paths (Postfix's XVERP, remote bounces naming no recipient or a forward);
  8. a milter dry run (action = "log") becomes enforcement by a reload, Postfix connected
     throughout: the suppressed recipient gets through, then is refused at the next RCPT.
Exit 0 on success, 1 on a failed check, 77 (skipped) when not root. Everything started is
stopped by PID at the end.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import testbed  # noqa: E402
from testbed import log, wait_for  # noqa: E402

# Loopback ports, picked free at start (several suites may run on one machine at once).
PORTS = {}
A = B = 0  # the milter-only and the socketmap-only SMTP listeners
SENDER = "sender@e2e.test"


class Check(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Check(what)
    log("ok: " + what)


def status(tb, address):
    j = tb.status(address)
    return j.get("result", j) if isinstance(j, dict) else j


def events(st, source=None):
    return [e for e in st.get("events") or [] if source is None or e.get("source") == source]


def wait_status(tb, address, what, pred, timeout=30):
    last = {}

    def probe():
        last["st"] = status(tb, address)
        return pred(last["st"])
    try:
        wait_for(what, probe, timeout=timeout, interval=0.25)
    except testbed.TestbedError:
        raise Check("%s (last status: %s)" % (what, json.dumps(last.get("st"))[:1500]))
    return last["st"]


def remote_dsn(rcpt, message_id):
    """An RFC 3464 DSN as a remote MTA sends it back over SMTP (null sender)."""
    return (
        "From: Mail Delivery System <MAILER-DAEMON@mx.remote.example>\r\n"
        "To: <%s>\r\n"
        "Subject: Undelivered Mail Returned to Sender\r\n"
        "Message-ID: %s\r\n"
        "Auto-Submitted: auto-replied\r\n"
        "MIME-Version: 1.0\r\n"
        "Content-Type: multipart/report; report-type=delivery-status; boundary=\"b1\"\r\n"
        "\r\n"
        "--b1\r\n"
        "Content-Type: text/plain\r\n\r\n"
        "I'm sorry to have to inform you that your message could not be delivered.\r\n"
        "<%s>: host mx.remote.example said: 550 5.1.1 <%s>: Recipient address rejected:\r\n"
        "    User unknown in virtual mailbox table\r\n\r\n"
        "--b1\r\n"
        "Content-Type: message/delivery-status\r\n\r\n"
        "Reporting-MTA: dns; mx.remote.example\r\n"
        "Arrival-Date: Sun, 29 Nov 2026 10:00:00 +0000 (UTC)\r\n\r\n"
        "Final-Recipient: rfc822; %s\r\n"
        "Original-Recipient: rfc822;%s\r\n"
        "Action: failed\r\n"
        "Status: 5.1.1\r\n"
        "Remote-MTA: dns; mx.remote.example\r\n"
        "Diagnostic-Code: smtp; 550 5.1.1 <%s>: Recipient address rejected: User unknown in\r\n"
        "    virtual mailbox table\r\n\r\n"
        "--b1\r\n"
        "Content-Type: text/rfc822-headers\r\n\r\n"
        "From: <%s>\r\nTo: <%s>\r\nSubject: hello\r\nMessage-ID: <orig-1@e2e.test>\r\n\r\n"
        "--b1--\r\n" % (SENDER, message_id, rcpt, rcpt, rcpt, rcpt, rcpt, SENDER, rcpt))


def scenario_1(tb):
    log("--- 1. a user-unknown bounce suppresses; next message refused three ways")
    r = tb.smtp_send(A, SENDER, ["gmail-unknown@gmail.com"], subject="first, will bounce")
    check(r["accepted"] == ["gmail-unknown@gmail.com"], "first message to gmail-unknown accepted")
    st = wait_status(tb, "gmail-unknown@gmail.com", "suppressed from the log and the DSN",
                     lambda s: s.get("suppressed") and events(s, "log") and events(s, "milter"))
    check(st.get("category") == "user_unknown", "category user_unknown")
    log_ev = events(st, "log")[0]
    dsn_ev = events(st, "milter")[0]
    check(log_ev.get("status") == "5.1.1" and log_ev.get("provider") == "gmail",
          "log event: 5.1.1 from gmail")
    check(dsn_ev.get("category") == "user_unknown" and dsn_ev.get("status") == "5.1.1",
          "Postfix's DSN captured by the milter (internal_mail_filter_classes = bounce)")
    tb.wait_log(r"to=<%s>, relay=virtual, .*status=sent" % SENDER)
    log("ok: the DSN itself was delivered to the sender (bounces = keep)")

    # A remote bounce over SMTP, sent twice as a retrying remote MTA would: recorded once.
    dsn = remote_dsn("remote-gone@yahoo.com", "<dsn-remote-1@mx.remote.example>")
    for _ in range(2):
        r = tb.smtp_send(A, "", [SENDER], raw=dsn)
        check(r["data"] and r["data"][0] == 250, "remote DSN accepted (a bounce is never refused)")
    st = wait_status(tb, "remote-gone@yahoo.com", "remote DSN suppresses",
                     lambda s: s.get("suppressed") and events(s, "milter"))
    time.sleep(1.0)
    st = status(tb, "remote-gone@yahoo.com")
    check(len(events(st, "milter")) == 1, "the same DSN delivered twice is recorded once")

    mark = tb.log_offset()
    r = tb.smtp_send(A, SENDER, ["gmail-unknown@gmail.com"])
    refusal = r["refused"].get("gmail-unknown@gmail.com")
    check(refusal and refusal[0] == 550 and "recipient suppressed since" in refusal[1],
          "milter refuses at RCPT: %s" % (refusal,))
    tb.wait_log(r"milter-reject: RCPT from .*550 5\.1\.1 <gmail-unknown@gmail\.com>", start=mark)

    mark = tb.log_offset()
    r = tb.smtp_send(B, SENDER, ["gmail-unknown@gmail.com"])
    refusal = r["refused"].get("gmail-unknown@gmail.com")
    check(refusal and refusal[0] == 550 and "Recipient address rejected" in refusal[1],
          "check_recipient_access via socketmap refuses at RCPT: %s" % (refusal,))
    m = tb.wait_log(r"NOQUEUE: reject: RCPT from .*<gmail-unknown@gmail\.com>.*", start=mark)
    check("milter-reject" not in m.group(0), "socketmap listener has no milter in the way")

    # sendmail(1): transport_maps alone (non_smtpd milter off) ...
    tb.reconfigure_postfix(non_smtpd_milter=False, transport_socketmap=True)
    mark = tb.log_offset()
    tb.sendmail(SENDER, ["gmail-unknown@gmail.com"], subject="sendmail via transport map")
    m = tb.wait_log(r"to=<gmail-unknown@gmail\.com>, relay=none, .*status=bounced \(([^)]*)",
                    start=mark)
    check("suppressed" in m.group(1), "transport_maps socketmap stops sendmail(1) mail: %s"
          % m.group(1)[:120])
    tb.reconfigure_postfix()
    # ... and the milter on the non-SMTP path: suppressed recipient removed, the other delivered.
    mark = tb.log_offset()
    tb.sendmail(SENDER, ["gmail-unknown@gmail.com", "sm-ok@gmail.com"], subject="sendmail mixed")
    d = wait_for("sendmail(1) good recipient delivered", lambda: tb.delivered_to("sm-ok@gmail.com"))
    check("gmail-unknown@gmail.com" not in d[0]["rcpts"], "suppressed recipient removed")
    check("X-Bounced-Suppressed: gmail-unknown@gmail.com" in d[0]["headers"],
          "header names the removed recipient")

    # A manual suppression is enforced on the very next RCPT.
    tb.bouncectl("suppress", "manual-block@gmail.com", "--reason", "e2e manual")
    r = tb.smtp_send(A, SENDER, ["manual-block@gmail.com"])
    check("manual-block@gmail.com" in r["refused"], "bouncectl suppress applies on the next RCPT")


def scenario_2(tb):
    log("--- 2. iCloud CS01 / CS02 / HM08 recorded with their codes, not suppressing")
    cases = [("cs01@icloud.com", "CS01"), ("cs02@me.com", "CS02"), ("hm08@mac.com", "HM08")]
    for rcpt, _ in cases:
        r = tb.smtp_send(A, SENDER, [rcpt], subject="icloud " + rcpt)
        check(r["accepted"] == [rcpt], "message to %s accepted" % rcpt)
    for rcpt, code in cases:
        st = wait_status(tb, rcpt, "%s recorded" % code, lambda s: events(s, "log"))
        ev = events(st, "log")[0]
        check(ev.get("provider_code") == code and ev.get("provider") == "icloud",
              "%s: provider icloud, code %s (category %s)" % (rcpt, code, ev.get("category")))
        check(not st.get("suppressed"), "%s not suppressed" % rcpt)
    r = tb.smtp_send(A, SENDER, ["cs01@icloud.com"])
    check(r["accepted"] == ["cs01@icloud.com"], "next message to cs01@icloud.com still accepted")


def scenario_3(tb):
    log("--- 3. one suppressed + one good recipient")
    r = tb.smtp_send(A, SENDER, ["gmail-unknown@gmail.com", "good-mixed@gmail.com"])
    check("gmail-unknown@gmail.com" in r["refused"] and r["accepted"] == ["good-mixed@gmail.com"],
          "suppressed refused, good accepted in the same transaction")
    check(r["data"] and r["data"][0] == 250, "message queued for the good recipient")
    d = wait_for("delivery to good-mixed", lambda: tb.delivered_to("good-mixed@gmail.com"))
    check(d[0]["rcpts"] == ["good-mixed@gmail.com"], "good recipient delivered")


def scenario_4(tb):
    log("--- 4. bounced stopped: mail flows, nothing lost after restart")
    tb.stop_bounced()
    mark = tb.log_offset()
    r = tb.smtp_send(A, SENDER, ["ok-down@gmail.com"])
    check(r["data"] and r["data"][0] == 250, "accepted while bounced is down "
          "(milter_default_action = accept)")
    wait_for("delivery while down", lambda: tb.delivered_to("ok-down@gmail.com"))
    r = tb.smtp_send(A, SENDER, ["unknown-down@example.org"])
    check(r["data"] and r["data"][0] == 250, "second message accepted while down")
    tb.wait_log(r"to=<unknown-down@example\.org>, .*status=bounced", start=mark)
    log("bounce logged while bounced was down; restarting bounced")
    tb.start_bounced()
    wait_status(tb, "unknown-down@example.org", "bounce during the outage caught up",
                lambda s: s.get("suppressed") and events(s, "log"))
    wait_status(tb, "ok-down@gmail.com", "delivery during the outage caught up",
                lambda s: events(s, "log"))
    r = tb.smtp_send(A, SENDER, ["unknown-down@example.org"])
    check("unknown-down@example.org" in r["refused"], "and it is enforced after the restart")


def scenario_5(tb):
    log("--- 5. bouncectl unsuppress lifts the block on the next message")
    for rcpt in ("manual-block@gmail.com", "remote-gone@yahoo.com"):
        tb.bouncectl("unsuppress", rcpt, "--reason", "e2e: address fixed")
        r = tb.smtp_send(A, SENDER, [rcpt])
        check(r["accepted"] == [rcpt], "%s accepted after unsuppress" % rcpt)
        wait_for("delivery to %s" % rcpt, lambda: tb.delivered_to(rcpt))
        st = status(tb, rcpt)
        check(not st.get("suppressed"), "%s no longer suppressed" % rcpt)


def scenario_6(tb):
    log("--- 6. quoted local parts are the mailboxes Postfix makes of them")
    tb.bouncectl("suppress", "john.doe@example.org", "--reason", "e2e quoted")
    tb.bouncectl("suppress", '"jane roe"@example.org', "--reason", "e2e quoted, quotes needed")
    rcpts = ['"john.doe"@example.org', '"John.Doe+x"@example.org', '"jane roe"@example.org']
    for port, who, text in ((A, "milter", "recipient suppressed since"),
                            (B, "socketmap", "Recipient address rejected")):
        r = tb.smtp_send(port, SENDER, rcpts)
        for rcpt in rcpts:
            refusal = r["refused"].get(rcpt)
            check(refusal and refusal[0] == 550 and text in refusal[1],
                  "%s refuses RCPT TO:<%s>: %s" % (who, rcpt, refusal))


def remote_text_bounce(verp, named="", message_id="<verp-text-1@mx.remote.example>"):
    """A remote MTA's plain-text bounce, sent back to the VERP return path of the message that
    failed: naming no recipient (some do), or `named`, the address the mail was forwarded to."""
    return ("From: Mail Delivery Subsystem <MAILER-DAEMON@mx.remote.example>\r\n"
            "To: <%s>\r\n"
            "Subject: Delivery failure\r\n"
            "Message-ID: %s\r\n"
            "Auto-Submitted: auto-replied\r\n\r\n"
            "Your message could not be delivered%s.\r\n\r\n"
            "The remote server said: 550 5.1.1 User unknown\r\n"
            % (verp, message_id, " to " + named if named else ""))


def scenario_7(tb):
    log("--- 7. VERP: a bounce to a return path sender+rcpt=domain@e2e.test is about rcpt@domain")
    # Postfix's own VERP (XVERP): the message goes out with the return path
    # sender+unknown-verp=example.org@e2e.test, the fake MX refuses it, and Postfix's bounce to
    # that return path passes the milter, whose envelope recipient reads as the same recipient.
    rcpt = "unknown-verp@example.org"
    r = tb.smtp_send(A, SENDER, [rcpt], mail_options=["XVERP"])
    check(r["accepted"] == [rcpt], "message sent with XVERP accepted")
    tb.wait_log(r"to=<sender\+unknown-verp=example\.org@e2e\.test>, relay=virtual")
    st = wait_status(tb, rcpt, "Postfix's bounce to the VERP return path recorded",
                     lambda s: s.get("suppressed") and events(s, "milter"))
    ev = events(st, "milter")[0]
    check(ev.get("recipient") == rcpt and ev.get("original_recipient") in ("", rcpt),
          "the DSN and its return path agree (%s, original %r)"
          % (ev.get("recipient"), ev.get("original_recipient")))
    # A remote bounce that names no recipient, to the return path the recipient had.
    verp = "sender+verp-gone=yahoo.com@e2e.test"
    r = tb.smtp_send(A, "", [verp], raw=remote_text_bounce(verp))
    check(r["data"] and r["data"][0] == 250, "bounce to the VERP return path accepted")
    st = wait_status(tb, "verp-gone@yahoo.com", "the recipient the return path encodes suppressed",
                     lambda s: s.get("suppressed") and events(s, "milter"))
    check(st.get("category") == "user_unknown", "category user_unknown")
    r = tb.smtp_send(A, SENDER, ["verp-gone@yahoo.com"])
    refusal = r["refused"].get("verp-gone@yahoo.com")
    check(refusal and "suppressed" in refusal[1],
          "and the next message to it is refused at RCPT: %s" % (refusal,))
    # A forwarded address: the bounce names where it went; with [policy]
    # suppress_original_recipient the address sent to is suppressed too, and refused both ways.
    verp = "sender+alumni=example.org@e2e.test"
    r = tb.smtp_send(A, "", [verp], raw=remote_text_bounce(
        verp, "gone-fwd@gmail.com", "<verp-text-2@mx.remote.example>"))
    check(r["data"] and r["data"][0] == 250, "bounce for a forwarded address accepted")
    st = wait_status(tb, "gone-fwd@gmail.com", "the forwarded-to address recorded",
                     lambda s: s.get("suppressed") and events(s, "milter"))
    ev = events(st, "milter")[0]
    check(ev.get("original_recipient") == "alumni@example.org",
          "its original recipient is the address sent to (%r)" % ev.get("original_recipient"))
    st = wait_status(tb, "alumni@example.org", "the address sent to suppressed with it",
                     lambda s: s.get("suppressed"))
    for port, who in ((A, "milter"), (B, "socketmap")):
        r = tb.smtp_send(port, SENDER, ["alumni@example.org"])
        refusal = r["refused"].get("alumni@example.org")
        check(refusal and "suppressed" in refusal[1],
              "%s refuses the address sent to: %s" % (who, refusal))


def scenario_8(tb):
    log("--- 8. milter dry run turned into enforcement by a reload, no restart")
    rcpt = "dry-run@gmail.com"
    tb.bouncectl("suppress", rcpt, "--reason", "e2e dry run")
    cfg = os.path.join(tb.bounced_dir, "bounced.toml")
    enforcing = open(cfg).read()
    marker = 'timeout = "2s"\n'
    check(marker in enforcing, "the [milter] table is where the scenario edits it")
    pid = tb.procs["bounced"].pid
    mark = tb.log_offset()

    def reload(text, what):
        with open(cfg + ".new", "w") as f:
            f.write(text)
        os.rename(cfg + ".new", cfg)
        r = json.loads(tb.bouncectl("--json", "reload").stdout)
        check(r.get("restart_needed") == [], what)

    reload(enforcing.replace(marker, marker + 'action = "log"\n'), "reload to action = log")
    health = json.loads(tb.bouncectl("--json", "health").stdout)["milter"]
    check(health.get("action") == "log", "health says the milter only logs")
    logged = health.get("rcpt_logged", 0)
    r = tb.smtp_send(A, SENDER, [rcpt])
    check(r["accepted"] == [rcpt], "dry run: the suppressed recipient is accepted")
    wait_for("delivery in the dry run", lambda: tb.delivered_to(rcpt))
    health = json.loads(tb.bouncectl("--json", "health").stdout)["milter"]
    check(health.get("rcpt_logged") == logged + 1, "and counted as only logged")
    reload(enforcing, "reload back to action = reject")
    r = tb.smtp_send(A, SENDER, [rcpt])
    refusal = r["refused"].get(rcpt)
    check(refusal and refusal[0] == 550 and "suppressed" in refusal[1],
          "enforcing again at the next RCPT: %s" % (refusal,))
    check(tb.procs["bounced"].pid == pid and tb.procs["bounced"].poll() is None,
          "the same bounced process throughout")
    warnings = [line for line in tb.maillog_text()[mark:].splitlines()
                if "warning:" in line and "ilter" in line]
    check(not warnings, "Postfix never found the milter gone (%s)" % warnings[:2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("e2e: needs root (private Postfix instance); skipped")
        return 77
    src, build = os.path.abspath(a.source), os.path.abspath(a.build)
    for exe in ("bounced", "bouncectl"):
        if not os.path.exists(os.path.join(build, exe)):
            print("e2e: %s not built in %s" % (exe, build))
            return 1
    testbed.ensure_postfix(src)
    global A, B
    ports = testbed.free_ports(4)
    PORTS.update(smtpd_milter=ports[0], smtpd_map=ports[1], fake_mx=ports[2], milter=ports[3])
    A, B = PORTS["smtpd_milter"], PORTS["smtpd_map"]
    t0 = time.time()
    tb = testbed.Testbed(src, build, PORTS, keep=a.keep)
    tb.milter_spec = "unix:" + os.path.join(tb.run_dir, "milter.sock")
    failed = None
    try:
        tb.start_fake_mx()
        tb.start_bounced()
        tb.start_postfix()
        for scenario in (scenario_1, scenario_2, scenario_3, scenario_4, scenario_5, scenario_6,
                         scenario_7, scenario_8):
            scenario(tb)
    except (Check, testbed.TestbedError) as e:
        failed = str(e)
    finally:
        if failed:
            log("FAILED: " + failed)
            print("---- postfix log (tail)\n" + tb.maillog_text()[-6000:])
            print("---- bounced output (tail)\n" + tb.bounced_output()[-4000:])
            tb.keep = tb.keep or bool(os.environ.get("E2E_KEEP"))
        tb.close()
    if failed:
        return 1
    log("all end-to-end checks passed in %.0f s" % (time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
