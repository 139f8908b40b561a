#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# strata record end to end: several processes, SIGKILL salvage, a stopped or killed daemon.
set -euo pipefail

what=$1 # pipeline | salvage | daemon | idle
bin=$2  # build directory
work=$3 # scratch directory
rm -rf "$work"; mkdir -p "$work"
fail() { echo "record-$what: FAIL: $*" >&2; exit 1; }
command -v babeltrace2 >/dev/null || { echo "record: babeltrace2 not installed"; exit 77; }
strata=$bin/src/cli/strata
workers=$bin/examples/workers

# Events of one sub-trace (strata's own records excluded), by name.
count() { babeltrace2 "$1" 2>>"$work/bt.err" | grep -v ' strata:' | awk '{print $4}' | sort | uniq -c; }

pipeline() {
	# A shell forks and execs several traced programs, one of which forks
	# a traced child of its own; one more runs in the background.
	"$strata" record -o "$work/t" -- sh -c "
		'$workers' 2 3000 2>'$work/w1.err' &
		'$workers' 3 2000 2>&1 >/dev/null | cat >'$work/w2.err'
		'$bin/tests/integration/forker' >/dev/null
		wait" 2>"$work/record.err" || fail "strata record failed: $(cat "$work/record.err")"
	grep -q '^strata: .*: 4 processes, [0-9]* events, [0-9]* bytes, 0 discarded' "$work/record.err" ||
		fail "summary: $(cat "$work/record.err")"
	: >"$work/bt.err"
	babeltrace2 "$work/t" >"$work/all.txt" 2>"$work/bt.err"
	[ -s "$work/bt.err" ] && fail "babeltrace2 warned: $(head -3 "$work/bt.err")"
	n=0
	for d in "$work"/t/ust/pid-*; do
		pid=${d##*pid-}
		# every event of this sub-trace carries this pid, and tids
		# that are threads of it (the workers have several)
		babeltrace2 "$d" 2>/dev/null | grep -v ' strata:' >"$work/one.txt"
		bad=$(grep -v "pid = $pid, tid = [0-9]*" "$work/one.txt" | head -1 || true)
		[ -z "$bad" ] || fail "pid-$pid holds an event of another process: $bad"
		name=$(sed -nE 's/^\tprocname = "(.*)";$/\1/p' "$d/metadata")
		events=$(wc -l <"$work/one.txt")
		case $name in
		workers) grep -q " $events events logged" "$work/w1.err" "$work/w2.err" ||
				fail "workers pid $pid: $events events, logged: $(cat "$work/w1.err" "$work/w2.err")";;
		forker) [ "$events" = 2000 ] || [ "$events" = 100000 ] || fail "forker pid $pid: $events events";;
		*) fail "pid-$pid: unknown process '$name'";;
		esac
		n=$((n + 1))
	done
	[ $n = 4 ] || fail "$n processes traced, 4 expected"
	# tids of the programs' events: the 2 + 3 worker threads, the forker
	# and its child (strata's own records, logged by its helper threads
	# too, are not the programs')
	tids=$("$strata" print --format json "$work/t" |
		python3 -c 'import json, sys; print(len({json.loads(l)["tid"] for l in sys.stdin}))')
	[ "$tids" = 7 ] || fail "$tids distinct tids, 7 expected"
}

salvage() {
	# SIGKILL during heavy tracing, many times: every event the process
	# committed before the kill is in the salvaged trace.
	for i in $(seq 1 "${RECORD_KILLS:-20}"); do
		rm -rf "$work/k$i" "$work/side"
		STRATA_PACKETS=64 "$strata" record -o "$work/k$i" -- "$bin/tests/record/seqwriter" "$work/side" \
			2>"$work/k$i.err" &
		rec=$!
		# wait for the writer's pid, then kill it at a random point
		for _ in $(seq 100); do
			[ -s "$work/side" ] && [ "$(od -An -tu8 -N8 "$work/side" | tr -d ' ')" != 0 ] && break
			sleep 0.02
		done
		pid=$(od -An -tu8 -N8 "$work/side" | tr -d ' ')
		sleep "0.$(printf %03d $((RANDOM % 150 + 10)))"
		kill -9 "$pid"
		rc=0; wait $rec || rc=$?
		[ $rc = 137 ] || fail "kill $i: strata record exited $rc, not 137: $(cat "$work/k$i.err")"
		last=$(od -An -tu8 -j8 -N8 "$work/side" | tr -d ' ')
		: >"$work/bt.err"
		babeltrace2 "$work/k$i" >"$work/k.txt" 2>"$work/bt.err" || fail "kill $i: babeltrace2 failed: $(head -3 "$work/bt.err")"
		[ -s "$work/bt.err" ] && fail "kill $i: babeltrace2 warned: $(head -3 "$work/bt.err")"
		# sequence numbers 0..last-1 must all be there, in order
		grep -v ' strata:' "$work/k.txt" | sed -nE 's/.*w0 = (0x[0-9A-Fa-f]+|[0-9]+).*/\1/p' >"$work/seq.txt"
		python3 - "$work/seq.txt" "$last" <<'PY' || fail "kill $i: events committed before the kill are missing ($(cat "$work/k$i.err"))"
import sys
seq = [int(x, 0) for x in open(sys.argv[1]).read().split()]
last = int(sys.argv[2])
# at most one event more than published (committed, not yet published)
ok = seq[:last] == list(range(last)) and len(seq) <= last + 1
if not ok:
    print(f"published {last}, trace holds {len(seq)}, first gap at "
          f"{next((i for i, v in enumerate(seq) if v != i), None)}", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
		echo "kill $i: $last events committed, all salvaged"
	done
}

# Wait (10 s at most) until the traced program has joined the session of
# trace $1 (its sub-trace directory exists): before that, stopping or
# killing `strata record` keeps the program from starting at all, which is
# not what the cases below test.
started() {
	for _ in $(seq 200); do
		compgen -G "$1/ust/pid-*" >/dev/null && return 0
		sleep 0.05
	done
	fail "the program did not join the session of $1"
}

daemon() {
	# 1. The daemon stopped (SIGSTOP) while the program runs: the program
	# finishes; once resumed, the daemon writes what the buffers held and
	# counts the rest: recorded + discarded == logged.
	# (WORK 40: about half a second of jobs, so the program is still
	# running when the daemon is stopped or killed; with WORK 1 its
	# million events took 30 ms and sometimes ended first)
	"$strata" record -o "$work/s" -- "$workers" 4 200000 40 2>"$work/s.err" &
	rec=$!
	started "$work/s"
	kill -STOP $rec
	for _ in $(seq 600); do grep -q 'events logged' "$work/s.err" && break; sleep 0.05; done
	grep -q 'events logged' "$work/s.err" || { kill -CONT $rec; fail "the program did not finish while the daemon was stopped"; }
	kill -CONT $rec
	wait $rec || fail "strata record failed after SIGCONT: $(cat "$work/s.err")"
	logged=$(sed -nE 's/.* ([0-9]+) events logged.*/\1/p' "$work/s.err")
	events=$(sed -nE 's/^strata: .*, ([0-9]+) events, .*/\1/p' "$work/s.err")
	disc=$(sed -nE 's/^strata: .* ([0-9]+) discarded.*/\1/p' "$work/s.err" | head -1)
	[ $((events + disc)) = "$logged" ] || fail "stopped daemon: $events recorded + $disc discarded != $logged logged"
	n=$(babeltrace2 "$work/s" 2>/dev/null | grep -vc ' strata:' || true)
	[ "$n" = "$events" ] || fail "stopped daemon: babeltrace2 read $n events, the summary says $events"
	if [ "$disc" != 0 ]; then
		grep -q 'warning: .* discarded.*raise --packets' "$work/s.err" || fail "no warning about the loss"
	fi

	# 2. The daemon killed: the program finishes normally and says in one
	# line that events were not recorded.
	"$strata" record -o "$work/k" -- "$workers" 4 300000 40 2>"$work/k.err" &
	rec=$!
	started "$work/k"
	kill -9 $rec
	wait $rec || true
	for _ in $(seq 600); do grep -q 'events logged' "$work/k.err" && break; sleep 0.05; done
	grep -q 'events logged' "$work/k.err" || fail "the program did not finish after the daemon was killed: $(cat "$work/k.err")"
	for _ in $(seq 100); do grep -q '^strata: session' "$work/k.err" && break; sleep 0.05; done
	grep -q '^strata: session .*: the daemon is gone or stalled' "$work/k.err" ||
		fail "no line about the lost daemon: $(cat "$work/k.err")"
	if grep -qiE 'sanitizer|segmentation|abort' "$work/k.err"; then fail "$(cat "$work/k.err")"; fi
}

idle() {
	# A process that has rings but logs nothing more: the daemon sleeps on
	# its doorbell (ring.md §8, "The session daemon") instead of polling
	# every 5 ms, about 200 wake-ups a second; and then drains a burst
	# whole, woken by its closers.
	SEQWRITER_LINGER_MS=3000 "$strata" record -o "$work/t" -- \
		"$bin/tests/record/seqwriter" "$work/side" 200000 2>"$work/record.err" &
	rec=$!
	for _ in $(seq 200); do
		[ -s "$work/side" ] && [ "$(od -An -tu8 -j24 -N8 "$work/side" | tr -d ' ')" = 1 ] && break
		sleep 0.02
	done
	sleep 0.3
	sw() { awk '/ctxt_switches/ {n += $2} END {print n}' "/proc/$rec/task/$rec/status"; }
	a=$(sw); sleep 1; b=$(sw)
	wait $rec || fail "strata record failed: $(cat "$work/record.err")"
	echo "record-idle: the daemon woke $((b - a)) times in 1 s of an idle process"
	[ $((b - a)) -lt 60 ] || fail "the daemon woke $((b - a)) times in 1 s: it polls"
	grep -q '^strata: .*: 1 process, 200000 events, [0-9]* bytes, 0 discarded' "$work/record.err" ||
		fail "summary: $(cat "$work/record.err")"
}

"$what"
echo "record-$what: OK"
