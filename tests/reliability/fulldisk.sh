#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A full disk is recorded in the trace (issue 26, item 4; issue 24, item 9):
# the events that could not be written count among the discarded ones, so
# that `strata info` and babeltrace2 say recorded + discarded == logged,
# embedded, under strata record and under strata daemon.
set -euo pipefail
bin=$1
work=$2
strata=$bin/src/cli/strata
burst=$bin/tests/reliability/burst
fail() { echo "fulldisk: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "fulldisk: needs root to mount a small tmpfs; skipped"; exit 77; }
command -v babeltrace2 >/dev/null || { echo "babeltrace2 not installed"; exit 77; }
rm -rf "$work" && mkdir -p "$work/small"
mount -t tmpfs -o size=3m tmpfs "$work/small" || { echo "fulldisk: cannot mount a tmpfs; skipped"; exit 77; }
trap '"$strata" daemon --kill >/dev/null 2>&1 || true; umount "$work/small" "$work/tiny" 2>/dev/null || true' EXIT
cd "$work"
export STRATA_RUNTIME_DIR=$work/run BURST_NO_SIGNALS=1
unset STRATA_SESSION STRATA_OUTPUT STRATA_MAJORS STRATA_ENABLE STRATA_MODE

# check TRACE LOGGED WHAT
check() {
	local info ev lost bt
	info=$("$strata" info "$1" 2>info.err) || fail "$3: strata info: $(cat info.err)"
	ev=$(echo "$info" | sed -nE 's/^Events: *([0-9]+).*/\1/p')
	lost=$(echo "$info" | sed -nE 's/^Lost: *([0-9]+) events.*/\1/p')
	[ $((ev + lost)) = "$2" ] || fail "$3: strata info: $ev recorded + $lost discarded != $2 logged"
	[ "$lost" -gt 0 ] || fail "$3: nothing lost: the disk never filled"
	babeltrace2 "$1" >/dev/null 2>bt.err || fail "$3: babeltrace2: $(head -3 bt.err)"
	bt=$({ grep -oE 'Tracer discarded [0-9]+ events?' bt.err || true; } | awk '{s += $3} END {print s + 0}')
	[ "$bt" = "$lost" ] || fail "$3: babeltrace2 says $bt discarded, strata info $lost"
	echo "fulldisk: $3: $ev recorded + $lost discarded = $2 logged"
}

n=$(STRATA_OUTPUT=$work/small/e "$burst" 200000 2>e.err) || fail "the program failed: $(cat e.err)"
grep -q 'trace incomplete: .*No space left on device' e.err || fail "embedded: no clear error line: $(cat e.err)"
check small/e "$n" embedded
rm -rf small/e

n=$("$strata" record -o small/r -- "$burst" 200000 2>r.err) || fail "record failed: $(cat r.err)"
grep -q 'trace incomplete: No space left on device' r.err || fail "record: no clear error line: $(cat r.err)"
check small/r "$n" record
rm -rf small/r

# A disk full before some stream's first packet (700 KiB: one packet of
# one CPU at most): that stream's losses reach babeltrace2 through an
# empty packet counting 0 ahead of its loss trailer (consumer, stream.c).
mkdir -p tiny
mount -t tmpfs -o size=700k tmpfs tiny || fail "cannot mount a second tmpfs"
n=$("$strata" record -o tiny/r -- "$burst" 200000 2>tr.err) || { umount tiny; fail "record failed: $(cat tr.err)"; }
check tiny/r "$n" "record, full from the start"
umount tiny

"$strata" daemon -o "$work/small/d" 2>d.err || fail "daemon: $(cat d.err)"
n=$("$burst" 200000 2>>d.err)
"$strata" daemon --kill 2>>d.err || true
check small/d "$n" daemon

# A trace directory that refuses new entries mid-trace (chattr +i, which
# even root obeys, where the file system has it): the process that joins
# afterwards is counted with the cause (issue 24, item 9).
logn=$bin/tests/reliability/logn
mkdir -p ro
if chattr +i ro 2>/dev/null && chattr -i ro; then
	# A process's sub-trace is made when the recorder takes its
	# connection, which may come after that process has ended: wait for
	# the first one's (10 s at most), so that only the second one meets
	# the immutable directory, and leave it immutable until the recorder
	# is done (it may take the second one's after the command ended).
	trap 'chattr -i ro/t/ust ro/d/ust 2>/dev/null; "$strata" daemon --kill >/dev/null 2>&1 || true; umount "$work/small" "$work/tiny" 2>/dev/null || true' EXIT
	rc=0
	"$strata" record -o ro/t -- sh -c "\"$logn\" 1000
		for i in \$(seq 200); do [ -d ro/t/ust/pid-* ] 2>/dev/null && break; sleep 0.05; done
		chattr +i ro/t/ust || exit 1; \"$logn\" 5000" >/dev/null 2>ro.err || rc=$?
	chattr -i ro/t/ust
	[ "$rc" = 0 ] || fail "record into a directory made immutable: $(cat ro.err)"
	grep -q '1 process not traced (Operation not permitted): 5000 events not recorded' ro.err ||
		fail "the process that could not be traced is not counted: $(cat ro.err)"
	# ... and in the trace, where readers see it
	"$strata" info ro/t >ro.info 2>&1 || true
	grep -q '^Not recorded: 5000 events of 1 process' ro.info ||
		fail "strata info does not count the untraced process: $(head -8 ro.info)"
	grep -q 'its sub-trace could not be made: Operation not permitted' ro/t/unrecorded ||
		fail "TRACE/unrecorded does not say why: $(cat ro/t/unrecorded 2>&1)"
	# the same under strata daemon, whose stop says it too
	"$strata" daemon -o "$work/ro/d" 2>rod.err || fail "daemon: $(cat rod.err)"
	"$logn" 1000
	for i in $(seq 200); do [ -d ro/d/ust/pid-* ] 2>/dev/null && break; sleep 0.05; done
	chattr +i ro/d/ust
	"$logn" 5000
	"$strata" session stop 2>rod.stop || true
	"$strata" daemon --kill 2>/dev/null || true
	chattr -i ro/d/ust
	grep -q '1 process not traced, 5000 events not recorded' rod.stop ||
		fail "daemon: the stop does not count the untraced process: $(cat rod.stop)"
	"$strata" info ro/d >rod.info 2>&1 || true
	grep -q '^Not recorded: 5000 events of 1 process' rod.info ||
		fail "daemon: strata info does not count it: $(head -8 rod.info)"
	echo "fulldisk: a directory made immutable mid-trace: the process after it counted, 5000 events, in the trace too (record and daemon)"
else
	echo "fulldisk: no chattr +i on this file system: the immutable-directory check skipped"
fi
