#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Forking programs under `strata daemon`, RUNS times each: none may hang,
# and every event logged, children's included, is in the trace.
set -euo pipefail

mode=$1 # first | loop | thread
runs=${STRATA_FORK_RUNS:-$2} # the sanitizer builds run fewer (scripts/sanitize.sh)
bin=$3  # build directory
work=$4 # scratch directory
rm -rf "$work"; mkdir -p "$work"
strata=$bin/src/cli/strata
# A copy of its own: the cleanup kills this test's programs by path, never
# those of the fork tests running beside it.
cp "$bin/tests/reliability/forks" "$work/forks-$mode"
forks=$work/forks-$mode
cd "$work"
fail() { echo "fork-$mode: FAIL: $*" >&2; exit 1; }

export STRATA_RUNTIME_DIR=$work/run
unset STRATA_SESSION STRATA_OUTPUT STRATA_MAJORS STRATA_ENABLE STRATA_MODE \
	STRATA_PACKETS STRATA_PACKET_SIZE
# Children of a multi-threaded parent start the session's helper thread:
# ThreadSanitizer allows that when told to.
export TSAN_OPTIONS="${TSAN_OPTIONS:-}:die_after_fork=0"
cleanup() {
	pkill -KILL -f "^$forks " 2>/dev/null || true
	"$strata" daemon --kill >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$strata" daemon -o trace --packets 64 2>daemon.err || fail "strata daemon: $(cat daemon.err)"
case $mode in
first) args=(first); procs=2 ;;
loop) args=(loop 10); procs=11 ;;
thread) args=(thread 5); procs=6 ;;
*) fail "unknown mode" ;;
esac

logged=0 hangs=0 bad=0
for i in $(seq "$runs"); do
	rc=0
	n=$(timeout -s KILL 15 "$forks" "${args[@]}" 2>>forks.err) || rc=$?
	if [ "$rc" = 137 ]; then
		hangs=$((hangs + 1))
		pkill -KILL -f "^$forks " 2>/dev/null || true
	elif [ "$rc" != 0 ]; then
		bad=$((bad + 1))
	else
		logged=$((logged + n))
	fi
done
[ "$hangs" = 0 ] || fail "$hangs of $runs runs hung (a child did not exit)"
[ "$bad" = 0 ] || fail "$bad of $runs runs failed: $(head -3 forks.err)"
[ -s forks.err ] && fail "the programs said: $(head -3 forks.err)"

"$strata" session stop 2>stop.err || fail "session stop: $(cat stop.err)"
line=$(grep -E '^strata: .*: [0-9]+ process(es)?, [0-9]+ events, [0-9]+ bytes, [0-9]+ discarded' stop.err) ||
	fail "stop said: $(cat stop.err)"
read -r p e d < <(echo "$line" | sed -E 's/.*: ([0-9]+) process(es)?, ([0-9]+) events, [0-9]+ bytes, ([0-9]+) discarded.*/\1 \3 \4/')
[ "$p" = $((runs * procs)) ] || fail "$p processes in the trace, $((runs * procs)) ran"
[ $((e + d)) = "$logged" ] || fail "$e recorded + $d discarded != $logged logged"
echo "fork-$mode: $runs runs, 0 hangs; $p processes, $e events recorded + $d discarded = $logged logged"
