#!/usr/bin/env bash
# Builds bounced and runs its main job on the embedded defaults: a sample Postfix log is read
# into a fresh SQLite database, hard bounces are suppressed, and the results are shown.
# Installs the Debian packages it needs when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --build-only
cmake -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2
work=$(mktemp -d /tmp/bounced-demo.XXXXXX)
echo "== bouncectl parse-log --summary tests/data/sample/mail.log"
build/bouncectl parse-log --summary tests/data/sample/mail.log
echo
echo "== bounced --sample (embedded config, database in $work)"
build/bounced --sample --state-dir "$work"
