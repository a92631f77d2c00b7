#!/bin/sh
# ThreadSanitizer run of the suites that start threads (storage, daemon, milter; bounced and
# bouncectl as the tests run them). Builds into ${TSAN_BUILD_DIR:-build-tsan}; each process
# that reports writes ${TSAN_REPORT_DIR:-build-tsan/tsan-reports}/r.PID, and the run fails when
# any does. tests/TSAN.md: what it covers and the suppressions.
set -eu
cd "$(dirname "$0")/.."
build=${TSAN_BUILD_DIR:-build-tsan}
reports=${TSAN_REPORT_DIR:-$build/tsan-reports}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBOUNCED_TSAN=ON -DBOUNCED_BENCH=OFF >/dev/null
cmake --build "$build" -j2 --target bounced bouncectl daemon_tests storage_tests milter_tests
rm -rf "$reports"
mkdir -p "$reports"
reports=$(cd "$reports" && pwd)
supp=$(pwd)/tests/tsan.supp
status=0
(cd "$build" && TSAN_OPTIONS="suppressions=$supp second_deadlock_stack=1 history_size=4 log_path=$reports/r" \
  ctest -j2 -E "e2e|packaging|clang|_NOT_BUILT" --timeout 900) || status=$?
if [ -n "$(ls "$reports")" ]; then
  echo "ThreadSanitizer reports in $reports:" >&2
  grep -h SUMMARY "$reports"/r.* | sort | uniq -c >&2
  status=1
fi
exit $status
