#!/usr/bin/env bash
# Builds every libFuzzer target with clang-14 (ASan + UBSan) and runs each for SECONDS
# (default 600) on a copy of its seed corpus, in parallel. Crashes land in fuzz/artifacts/.
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}; shift || true
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
CC=clang-14 CXX=clang++-14 cmake -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DBOUNCED_FUZZ=ON -DBOUNCED_TESTS=OFF -DBOUNCED_BENCH=OFF >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/*_fuzz.cc; do targets+=("$(basename "$f" .cc)"); done
fi
cmake --build "$BUILD" -j2 --target "${targets[@]}"
mkdir -p fuzz/artifacts
declare -A maxlen=([pattern_fuzz]=512 [dsn_fuzz]=262144 [log_fuzz]=131072 [rules_fuzz]=16384 [socketmap_fuzz]=16384 [config_fuzz]=16384 [import_fuzz]=65536 [query_fuzz]=65536 [mbox_fuzz]=262144 [advice_fuzz]=65536)
pids=()
for t in "${targets[@]}"; do
  work=$(mktemp -d "/tmp/$t.XXXXXX")
  cp -r "fuzz/corpus/$t/." "$work/" 2>/dev/null || true
  "$BUILD/fuzz/$t" -max_total_time="$secs" -max_len="${maxlen[$t]:-65536}" -timeout=10 \
    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$t-" "$work" \
    >"fuzz/artifacts/$t.log" 2>&1 &
  pids+=($!)
done
rc=0
# UBSan's reports do not stop the fuzzer (they are recoverable), so a run whose log holds a
# "runtime error:" line is a finding too, even when the fuzzer itself exited 0.
for i in "${!pids[@]}"; do
  log="fuzz/artifacts/${targets[$i]}.log"
  if wait "${pids[$i]}" && ! grep -q 'runtime error:' "$log"; then
    echo "${targets[$i]}: clean for ${secs}s ($(grep -E 'stat::number_of_executed_units' "$log" | awk '{print $2}') runs)"
  else echo "${targets[$i]}: FAILED (crash or sanitizer report), see $log"; rc=1; fi
done
exit $rc
