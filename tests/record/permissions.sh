#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Another user can neither join a session nor read a traced process's ring memory.
set -euo pipefail
build=$1 work=$2
fail() { echo "permissions: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "permissions: needs root to switch to a second uid; skipped"; exit 77; }
command -v setpriv >/dev/null || { echo "permissions: setpriv missing (util-linux); skipped"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "permissions: /usr/bin/python3 missing; skipped"; exit 77; }
other=nobody
id "$other" >/dev/null 2>&1 || { echo "permissions: no user '$other'; skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work"

# A session with a traced process that lives a while.
"$build/src/cli/strata" record -o "$work/t" -- "$build/examples/workers" 1 20000000 2>"$work/rec.err" &
rec=$!
trap 'kill $rec 2>/dev/null || true; wait $rec 2>/dev/null || true' EXIT
pid=
for _ in $(seq 100); do
	pid=$(pgrep -P $rec -f examples/workers || true)
	[ -n "$pid" ] && grep -qz STRATA_SESSION= /proc/$pid/environ 2>/dev/null && break
	sleep 0.05
done
[ -n "$pid" ] || fail "the traced program did not start"
sock=$(tr '\0' '\n' </proc/$pid/environ | sed -n 's/^STRATA_SESSION=//p')
[ -S "$sock" ] || fail "no session socket at '$sock'"

# Owner-only: the directory 0700, the socket 0600.
[ "$(stat -c %a "$(dirname "$sock")")" = 700 ] || fail "session directory is $(stat -c %a "$(dirname "$sock")"), not 700"
[ "$(stat -c %a "$sock")" = 600 ] || fail "session socket is $(stat -c %a "$sock"), not 600"

as_other() { setpriv --reuid="$other" --regid="$(id -g "$other")" --clear-groups "$@"; }
# Positive control: the second uid can run things and read what anyone may.
as_other sh -c 'exec 3</etc/passwd' || fail "cannot run commands as $other: the checks below would prove nothing"
# Joining: connect(2) must fail with EACCES (exit 3 says exactly that; any
# other status means the check itself did not run).
rc=0
as_other /usr/bin/python3 -c '
import errno, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    s.connect(sys.argv[1])
except OSError as e:
    sys.exit(3 if e.errno == errno.EACCES else 4)
sys.exit(0)' "$sock" || rc=$?
[ $rc = 0 ] && fail "user $other connected to the session socket"
[ $rc = 3 ] || fail "the connect check did not run as expected (status $rc)"
# Reading the rings: the memfds are reachable only through /proc/PID/fd,
# which the kernel guards with ptrace access.
ring=$(ls -l /proc/$pid/fd 2>/dev/null | sed -n 's/.* -> \(\/memfd:strata-ring.*\)/\1/p' | head -1)
[ -n "$ring" ] || fail "no ring memfd in /proc/$pid/fd"
for fd in /proc/$pid/fd/*; do
	if as_other sh -c "exec 3<'$fd'" 2>/dev/null; then
		case $(readlink "$fd") in /memfd:strata-ring*) fail "user $other opened a ring ($fd)" ;; esac
	fi
done
kill -INT $rec 2>/dev/null || true
wait $rec || true
trap - EXIT
echo "permissions: OK"
