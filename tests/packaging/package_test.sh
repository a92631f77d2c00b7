#!/usr/bin/env bash
# package_test.sh BUILD_DIR SOURCE_DIR: builds bounced's .deb with cpack into a temporary
# directory and checks it: control fields (shlibdeps found the libraries, postfix dependency,
# conffile, maintainer scripts), the files it installs, the default config passes
# `bounced --check-config`, the man pages format cleanly, and the systemd units pass
# `systemd-analyze verify` (ExecStart pointed at the unpacked binaries) and bounced.service
# rates at most 3.0 in `systemd-analyze security`. Exit 77 (skipped) only when a needed tool
# is missing.
set -euo pipefail
build=$1
src=$2
for tool in cpack dpkg-deb systemd-analyze; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
work=$(mktemp -d /tmp/bounced-pkg-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
check() {  # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@" >"$work/check.out" 2>&1; then echo "ok   $what"; else
    echo "FAIL $what"; sed 's/^/     /' "$work/check.out" | tail -5; fail=1; fi
}

(cd "$work" && cpack -G DEB -B "$work/out" --config "$build/CPackConfig.cmake" >"$work/cpack.log" 2>&1) || {
  cat "$work/cpack.log"; echo "FAIL cpack"; exit 1; }
deb=$(ls "$work"/out/bounced_*.deb)
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

dpkg-deb -I "$deb" >"$work/info"
dpkg-deb -c "$deb" >"$work/contents"
dpkg-deb -e "$deb" "$work/control"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
check "depends on postfix" grep -q 'postfix' <<<"$depends"
for lib in libsqlite3 libre2 libgmime-3.0 libsystemd libmilter libc6 libstdc++6; do
  check "shlibdeps: $lib" grep -q "$lib" <<<"$depends"
done
check "section mail" grep -q '^ Section: mail' "$work/info"
check "conffile /etc/bounced/bounced.toml" grep -qx '/etc/bounced/bounced.toml' "$work/control/conffiles"
for s in postinst prerm postrm; do
  check "maintainer script $s is executable" test -x "$work/control/$s"
  check "maintainer script $s parses" sh -n "$work/control/$s"
done

for f in ./usr/sbin/bounced ./usr/bin/bouncectl ./etc/bounced/bounced.toml ./etc/bounced/rules.d/ \
         ./usr/share/bounced/rules/default.toml ./usr/share/bounced/advice.toml \
         ./usr/share/man/man8/bounced.8 ./usr/share/man/man1/bouncectl.1 \
         ./usr/share/man/man5/bounced.toml.5 ./usr/lib/sysusers.d/bounced.conf \
         ./usr/lib/tmpfiles.d/bounced.conf ./lib/systemd/system/bounced.service \
         ./lib/systemd/system/bounced-report.service ./lib/systemd/system/bounced-report.timer \
         ./lib/systemd/system/bounced-metrics.service ./lib/systemd/system/bounced-metrics.timer; do
  check "contains $f" grep -q " $f\$" "$work/contents"
done

root="$work/root"
dpkg-deb -x "$deb" "$root"
check "binaries are stripped" bash -c "! readelf -S '$root/usr/sbin/bounced' '$root/usr/bin/bouncectl' | grep -q debug_info"
# The packaged config, with its absolute paths moved into the unpacked tree.
sed -e "s|/usr/share/bounced|$root/usr/share/bounced|g" -e "s|/etc/bounced/rules.d|$root/etc/bounced/rules.d|g" \
  "$root/etc/bounced/bounced.toml" >"$work/bounced.toml"
check "packaged config passes bounced --check-config" "$root/usr/sbin/bounced" --check-config --config "$work/bounced.toml"
check "bouncectl runs" "$root/usr/bin/bouncectl" --version
command -v man >/dev/null || echo "skip man page checks: man is not installed"
for page in $(command -v man >/dev/null && echo man8/bounced.8 man1/bouncectl.1 man5/bounced.toml.5); do
  check "man page $page formats without warnings" bash -c \
    "[ -z \"\$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l '$root/usr/share/man/$page' 2>&1 >/dev/null)\" ]"
done

# systemd-analyze verify needs the ExecStart binaries where the units say: point them at the tree
# (--man=no: the Documentation= pages are in the tree, not in the host's man path).
units="$work/units"
mkdir -p "$units"
for u in bounced.service bounced-report.service bounced-report.timer bounced-metrics.service \
         bounced-metrics.timer; do
  sed -e "s|/usr/sbin/bounced|$root/usr/sbin/bounced|g" -e "s|/usr/bin/bouncectl|$root/usr/bin/bouncectl|g" \
    "$root/lib/systemd/system/$u" >"$units/$u"
done
if SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$units"/bounced.service "$units"/bounced-report.service \
     "$units"/bounced-report.timer "$units"/bounced-metrics.service "$units"/bounced-metrics.timer \
     >"$work/verify" 2>&1 && ! grep -q "$units" "$work/verify"; then
  echo "ok   systemd-analyze verify"
else
  cat "$work/verify"; echo "FAIL systemd-analyze verify"; fail=1
fi
# The system calls bounced makes to set its sockets' mode and group ([milter] socket_group =
# "postfix": without it Postfix cannot connect to the milter) must pass the unit's filter. Worked
# out as systemd applies SystemCallFilter= lines: the first one decides allow or deny list, each
# later one adds (same kind) or removes (the other kind) its system calls.
expand_syscalls() {  # NAME or @GROUP ...: the system calls, groups expanded recursively
  local n
  for n in "$@"; do
    case $n in
      @*) expand_syscalls $(systemd-analyze syscall-filter --no-pager "$n" | sed -n 's/^    \([^# ].*\)$/\1/p') ;;
      *) echo "$n" ;;
    esac
  done
}
syscall_allowed() {  # UNIT SYSCALL: exit 0 when the unit's SystemCallFilter lets SYSCALL through
  local mode="" allowed=no line deny names
  while IFS= read -r line; do
    line=${line#SystemCallFilter=}
    deny=no
    [[ $line == "~"* ]] && { deny=yes; line=${line#\~}; }
    [[ -z $mode ]] && { mode=$deny; [[ $deny == yes ]] && allowed=yes; }
    names=$(expand_syscalls $line)
    if grep -qx "$2" <<<"$names"; then
      if [[ $deny == yes ]]; then allowed=no; else allowed=yes; fi
    fi
  done < <(grep '^SystemCallFilter=' "$1")
  [[ $allowed == yes ]]
}
for call in chown fchownat chmod fchmodat; do
  check "bounced.service lets $call through (socket group and mode)" syscall_allowed "$units/bounced.service" "$call"
done
systemd-analyze security --offline=yes "$units/bounced.service" >"$work/security" 2>&1 || true
score=$(sed -n 's/.*Overall exposure level for bounced.service: \([0-9.]*\).*/\1/p' "$work/security")
echo "systemd-analyze security: exposure ${score:-?}"
check "exposure <= 3.0" awk -v s="${score:-99}" 'BEGIN { exit !(s <= 3.0) }'

exit $fail
