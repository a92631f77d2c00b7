#!/usr/bin/env bash
# Installs the Debian 12 packages bounced needs to build, test and benchmark.
# Idempotent: does nothing when everything is already there. Needs root (or sudo).
set -euo pipefail
BUILD_PKGS=(build-essential cmake pkg-config git
  libmilter-dev libboost-dev libboost-system-dev libspdlog-dev libfmt-dev libsqlite3-dev sqlite3
  libgtest-dev libgmock-dev libre2-dev libgmime-3.0-dev libtomlplusplus-dev
  libcli11-dev nlohmann-json3-dev libsystemd-dev libbenchmark-dev libmimalloc-dev)
TEST_PKGS=(postfix swaks python3 python3-aiosmtpd systemd-journal-remote
  clang-14 libclang-rt-14-dev chromium fonts-dejavu-core)
want=("${BUILD_PKGS[@]}")
if [ "${1:-}" != "--build-only" ]; then want+=("${TEST_PKGS[@]}"); fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
# Postfix asks a debconf question at install time; answer it so no prompt blocks.
echo "postfix postfix/main_mailer_type select Local only" | $SUDO debconf-set-selections
echo "postfix postfix/mailname string localhost" | $SUDO debconf-set-selections
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The package starts its own system instance where it can; the tests run a private one.
if command -v postfix >/dev/null 2>&1; then $SUDO postfix stop >/dev/null 2>&1 || true; fi
