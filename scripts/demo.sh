#!/usr/bin/env bash
# Builds bounced and runs its main job on the embedded defaults: a sample Postfix log
# (tests/data/sample/mail.log) is read into a fresh SQLite database with `bounced --once`, hard
# bounces are suppressed, then bounced is started on temp sockets and asked what it knows
# (bouncectl health / list / status / stats / events / metrics, and a Postfix socketmap
# lookup).
# Installs the Debian packages it needs when they are missing. Leaves nothing running.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --build-only
build=${BUILD_DIR:-build}
cmake -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target bounced bouncectl

sample=tests/data/sample/mail.log
if [ ! -f "$sample" ]; then
  # Until the sample exists: every captured Postfix scenario, one after another.
  sample=$(mktemp /tmp/bounced-demo-log.XXXXXX)
  grep -hv '^#' tests/data/postfix/*.log >"$sample"
fi
work=$(mktemp -d /tmp/bounced-demo.XXXXXX)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

# Only the paths differ from the embedded defaults (bounced --print-default-config shows them).
cat >"$work/bounced.toml" <<EOF
[storage]
path = "$work/bounced.db"
[input.log]
path = "$(realpath "$sample")"
[query]
socket = "$work/query.sock"
group = ""
[socketmap]
socket = "$work/socketmap.sock"
EOF
ctl() { echo "\$ bouncectl $*"; "$build"/bouncectl --socket "$work/query.sock" "$@"; echo; }

echo "== bouncectl parse-log --summary $sample"
"$build"/bouncectl parse-log --summary "$sample" || true
echo
echo "== bounced --once: read the log into $work/bounced.db"
"$build"/bounced --config "$work/bounced.toml" --once
echo
echo "== bounced on temp sockets in $work"
"$build"/bounced --config "$work/bounced.toml" 2>"$work/bounced.log" &
pid=$!
for _ in $(seq 100); do
  "$build"/bouncectl --socket "$work/query.sock" health >/dev/null 2>&1 && break
  sleep 0.1
done
ctl health
ctl list --limit 10
first=$("$build"/bouncectl --socket "$work/query.sock" --json list --limit 1 |
  /usr/bin/python3 -c 'import json,sys; l=json.load(sys.stdin); print(l[0]["address"] if l else "nobody@example.com")')
ctl status "$first"
ctl status -v "$first"
ctl stats --provider
ctl stats --domain --days 30
ctl stats --sender-domain --days 3660
# The sample's times may be long past: a window that reaches back to them.
ctl events --since 2000-01-01 --status bounced --limit 10
echo "\$ bouncectl metrics | grep -v '^#'   (Prometheus text; the HELP and TYPE lines left out)"
"$build"/bouncectl --socket "$work/query.sock" metrics | grep -v '^#'
echo
echo "\$ postmap -q '$first' socketmap:unix:$work/socketmap.sock:recipient_access   (what Postfix asks)"
/usr/bin/python3 - "$work/socketmap.sock" "$first" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
for name in ("recipient_access", "transport"):
    req = f"{name} {sys.argv[2]}".encode()
    s.sendall(str(len(req)).encode() + b":" + req + b",")
    data = b""
    while not data.endswith(b","):
        data += s.recv(4096)
    print(f"{name}: {data.split(b':', 1)[1][:-1].decode()}")
EOF
