#!/usr/bin/env bash
# report_screenshot.sh [BUILD_DIR] [OUT_PREFIX]: renders the daily report of the test fixture
# database (storage/schema.sql + tests/data/reports/fixture.sql, report date 2026-11-28) as HTML
# with bouncectl and screenshots it in headless Chromium, at phone width (OUT_PREFIX-phone.png,
# 420 px) and desktop width (OUT_PREFIX-desktop.png, 1000 px). Also leaves OUT_PREFIX.html.
# Needs: a built bouncectl, sqlite3, chromium (apt-get install chromium).
# Defaults: BUILD_DIR=build, OUT_PREFIX=report.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=$(realpath -m "${2:-report}")
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || { echo "chromium is not installed (apt-get install chromium)" >&2; exit 1; }
[ -x "$build/bouncectl" ] || { echo "no $build/bouncectl: build first" >&2; exit 1; }
work=$(mktemp -d /tmp/bounced-shot-XXXXXX)
trap 'rm -rf "$work"' EXIT
{ cat storage/schema.sql; echo "PRAGMA user_version = 1;"; cat tests/data/reports/fixture.sql; } |
  sqlite3 "$work/bounced.db"
cat >"$work/bounced.toml" <<TOML
[storage]
path = "$work/bounced.db"
[report]
advice = "$PWD/packaging/advice.toml"
TOML
BOUNCED_REPORT_NOW=1795933200 BOUNCED_REPORT_HOST=mail.example.net \
  "$build/bouncectl" --config "$work/bounced.toml" report --date 2026-11-28 --format html -o "$out.html"
shoot() {  # shoot WIDTH HEIGHT FILE
  "$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --disable-dev-shm-usage \
    --hide-scrollbars --user-data-dir="$work/profile-$1" --window-size="$1,$2" \
    --screenshot="$3" "file://$out.html" >"$work/chromium.log" 2>&1 ||
    { cat "$work/chromium.log" >&2; exit 1; }
  [ -s "$3" ] || { cat "$work/chromium.log" >&2; echo "no screenshot written" >&2; exit 1; }
  echo "$3"
}
shoot 420 5200 "$out-phone.png"
shoot 1000 4200 "$out-desktop.png"
