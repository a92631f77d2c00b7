#!/usr/bin/python3
"""fake_mx.py: the "remote" MX of the end-to-end suite, on 127.0.0.1 only.

Answers per recipient with real provider replies (texts as Gmail, iCloud, Yahoo and Microsoft
send them), chosen by the recipient's local part (before any '+'); the domain is ignored.
Replies at RCPT TO, or after end of DATA for the provider verdicts that are given there (iCloud
CS01/CS02/HM08). Everything else is accepted. Writes one JSON line per transaction outcome to
--log (what was accepted, with the message's headers) so the suite can see what was delivered.

Run: /usr/bin/python3 fake_mx.py --port PORT --log FILE   (Debian's python3-aiosmtpd)
"""
import argparse
import asyncio
import json
import sys
import time

from aiosmtpd.smtp import SMTP

GMAIL_NOSUCHUSER = (
    "550-5.1.1 The email account that you tried to reach does not exist. Please try\r\n"
    "550-5.1.1 double-checking the recipient's email address for typos or\r\n"
    "550-5.1.1 unnecessary spaces. For more information, go to\r\n"
    "550 5.1.1  https://support.google.com/mail/?p=NoSuchUser a1b2c3d4e5-21c9f1b2a3bsi123456ad.12 - gsmtp")
APPLE = " Message rejected due to local policy. Please visit https://support.apple.com/en-us/HT204137"

# local part prefix -> (stage, reply)
REPLIES = [
    ("gmail-unknown", ("rcpt", GMAIL_NOSUCHUSER)),
    ("icloud-unknown", ("rcpt", "550 5.1.1 <{rcpt}>: user does not exist")),
    ("unknown", ("rcpt", "550 5.1.1 <{rcpt}>: Recipient address rejected: User unknown in virtual mailbox table")),
    ("cs01", ("data", "554 5.7.1 [CS01]" + APPLE)),
    ("cs02", ("data", "554 5.7.1 [CS02]" + APPLE)),
    ("hm08", ("data", "554 5.7.1 [HM08]" + APPLE)),
]


def reply_for(address):
    local = address.split("@", 1)[0].lower().split("+", 1)[0]
    for prefix, reply in REPLIES:
        if local.startswith(prefix):
            return reply
    return None


class Handler:
    def __init__(self, log):
        self.log_file = log

    def log(self, **kw):
        kw["t"] = round(time.time(), 3)
        self.log_file.write(json.dumps(kw) + "\n")
        self.log_file.flush()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        r = reply_for(address)
        if r and r[0] == "rcpt":
            text = r[1].replace("{rcpt}", address)
            self.log(ev="rcpt_refused", rcpt=address, reply=text.splitlines()[-1])
            return text
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server, session, envelope):
        for rcpt in envelope.rcpt_tos:
            r = reply_for(rcpt)
            if r and r[0] == "data":
                self.log(ev="data_refused", rcpts=envelope.rcpt_tos, reply=r[1])
                return r[1]
        content = envelope.content.decode("utf-8", "replace") if isinstance(
            envelope.content, bytes) else envelope.content
        headers = content.split("\r\n\r\n", 1)[0].split("\n\n", 1)[0]
        self.log(ev="delivered", sender=envelope.mail_from, rcpts=envelope.rcpt_tos,
                 headers=headers)
        return "250 2.0.0 OK queued as fake%06d" % (int(time.time() * 1000) % 1000000)


async def main(args):
    handler = Handler(open(args.log, "a"))
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: SMTP(handler, hostname="mx.fake.test", ident="fake-mx"), host="127.0.0.1",
        port=args.port)
    print("fake_mx listening on 127.0.0.1:%d" % args.port, flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", required=True)
    try:
        asyncio.run(main(ap.parse_args()))
    except KeyboardInterrupt:
        sys.exit(0)
