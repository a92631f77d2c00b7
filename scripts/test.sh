#!/usr/bin/env bash
# Builds bounced and runs every test suite (unit, process, socket and the real-Postfix
# end-to-end suite). Installs the Debian packages it needs when they are missing.
# Usage: scripts/test.sh            (build dir: build-test, warnings are errors)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
BUILD=${BUILD_DIR:-build-test}
cmake -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBOUNCED_WERROR=ON >/dev/null
cmake --build "$BUILD" -j2
cd "$BUILD"
ctest --output-on-failure --timeout 900 -j2 "$@"
