#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# strata daemon and strata session: joining later, start/stop cycles, status, snapshots (docs/record.md).
set -euo pipefail

what=$1 # join | snapshot | inproc
bin=$2  # build directory
work=$3 # scratch directory
src=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
fail() { echo "daemon-$what: FAIL: $*" >&2; [ -f "$work/run/default/log" ] && sed 's/^/  log: /' "$work/run/default/log" >&2; exit 1; }
command -v babeltrace2 >/dev/null || { echo "daemon: babeltrace2 not installed"; exit 77; }
strata=$bin/src/cli/strata
seqwriter=$bin/tests/record/seqwriter
cd "$work"

# The daemons of this test live here, not in /run/strata (several test
# runs side by side); programs find the default one from the same place.
export STRATA_RUNTIME_DIR=$work/run
unset STRATA_SESSION STRATA_OUTPUT STRATA_MAJORS STRATA_ENABLE STRATA_MODE \
	STRATA_PACKETS STRATA_PACKET_SIZE
daemon_pid=
cleanup() {
	[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null || true
	touch "$work/stop"
	wait 2>/dev/null || true
}
trap cleanup EXIT

side() { od -An -tu8 -j$((8 * $2)) -N8 "$1" | tr -d ' '; } # side FILE INDEX
# wait_for 'shell condition' 'what': bounded (60 s), no timing assertion
wait_for() {
	for _ in $(seq 1200); do eval "$1" && return 0; sleep 0.05; done
	fail "timed out waiting for $2"
}
# The sequence numbers of a trace, in order, one per line.
seqs() {
	: >"$work/bt.err"
	babeltrace2 "$1" 2>"$work/bt.err" | grep -v ' strata:' |
		sed -nE 's/.*w0 = (0x[0-9A-Fa-f]+|[0-9]+).*/\1/p' >"$2" || true
	[ -s "$work/bt.err" ] && fail "$1: babeltrace2 warned: $(head -3 "$work/bt.err")"
	return 0
}

join() {
	"$strata" daemon -o t1 --packets 64 2>daemon.err || fail "strata daemon: $(cat daemon.err)"
	grep -q "listening on $work/run/default/sock; writing to $work/t1" daemon.err ||
		fail "daemon's first line: $(cat daemon.err)"
	daemon_pid=$(sed -nE 's/.*\(pid ([0-9]+)\).*/\1/p' daemon.err)
	# Owner-only: directories 0700, sockets and state file 0600.
	for f in run run/default; do [ "$(stat -c %a $f)" = 700 ] || fail "$f is $(stat -c %a $f)"; done
	for f in sock ctl state; do [ "$(stat -c %a run/default/$f)" = 600 ] || fail "$f is $(stat -c %a run/default/$f)"; done

	# A program started later, with no STRATA_* variable: it finds the
	# default daemon by itself.
	"$seqwriter" side 100000000000 stop 2>w.err &
	w=$!
	wait_for '[ -s side ] && [ "$(side side 1)" -gt 200000 ]' "the writer to log"
	[ "$(side side 2)" != 0 ] || fail "the writer's mask is 0 while the trace runs"

	# status: a table that lines up
	"$strata" session status >status.txt 2>&1 || fail "status: $(cat status.txt)"
	grep -q '^state: *running$' status.txt || fail "status: $(cat status.txt)"
	grep -q "^trace: *$work/t1\$" status.txt || fail "status: $(cat status.txt)"
	grep -q '^processes: *1 connected' status.txt || fail "status: $(cat status.txt)"
	hdr=$(grep -E '^ +PID +NAME +RINGS +EVENTS +BYTES +DISCARDED$' status.txt) || fail "status header: $(cat status.txt)"
	row=$(grep -E "^ +$w +seqwriter +[0-9]+ +[0-9]+ +[0-9]+ +0\$" status.txt) || fail "status row: $(cat status.txt)"
	[ ${#hdr} = ${#row} ] || fail "status columns do not line up:
$hdr
$row"

	# stop: the trace is finished, the process stays connected and logs
	# nothing from the moment stop returns
	"$strata" session stop 2>stop.err || fail "stop: $(cat stop.err)"
	s1=$(side side 1)
	grep -q "^strata: $work/t1: 1 process, [0-9]* events, [0-9]* bytes, 0 discarded" stop.err ||
		fail "stop said: $(cat stop.err)"
	kill -0 $w 2>/dev/null || fail "the writer did not survive the stop"
	wait_for '[ "$(side side 2)" = 0 ]' "the writer's mask to be cleared"
	"$strata" session status >status2.txt 2>&1
	grep -q '^state: *stopped$' status2.txt || fail "status when stopped: $(cat status2.txt)"
	grep -qE "^ +$w +seqwriter +[0-9]+ +0 +0 +0\$" status2.txt || fail "status when stopped: $(cat status2.txt)"
	"$strata" session stop 2>stop2.err && fail "a second stop succeeded"
	grep -q 'not running' stop2.err || fail "second stop said: $(cat stop2.err)"
	sleep 0.3 # the writer goes on logging into nothing meanwhile
	s2=$(side side 1)
	[ "$s2" -gt "$s1" ] || fail "the writer did not run while stopped"

	# start again, into another directory; then the writer ends
	"$strata" session start -o t2 2>start.err || fail "start: $(cat start.err)"
	grep -q "started: writing to $work/t2" start.err || fail "start said: $(cat start.err)"
	"$strata" session start -o t3 2>start2.err && fail "a second start succeeded"
	wait_for '[ "$(side side 1)" -gt $((s2 + 200000)) ]' "the writer to log again"
	touch stop
	wait $w || fail "the writer failed: $(cat w.err)"
	last=$(side side 1)
	"$strata" session stop 2>stop3.err || fail "stop: $(cat stop3.err)"
	"$strata" daemon --kill 2>kill.err || fail "--kill: $(cat kill.err)"
	for _ in $(seq 200); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.05; done
	kill -0 "$daemon_pid" 2>/dev/null && fail "the daemon still runs after --kill"
	daemon_pid=
	[ ! -e run/default/sock ] || fail "the socket is left behind"
	grep -q "the daemon is gone" w.err && fail "the writer lost its daemon: $(cat w.err)"

	# every event before the stop in t1, every one after the start in t2,
	# none logged while stopped in either
	seqs t1 t1.seq
	seqs t2 t2.seq
	python3 - t1.seq t2.seq "$s1" "$s2" "$last" <<'PY' || fail "sequence numbers"
import sys
t1 = [int(x, 0) for x in open(sys.argv[1]).read().split()]
t2 = [int(x, 0) for x in open(sys.argv[2]).read().split()]
s1, s2, last = map(int, sys.argv[3:])
def run(s):
    return s == list(range(s[0], s[0] + len(s))) if s else False
ok = True
if not (run(t1) and t1[0] == 0 and t1[-1] < s1):
    print(f"t1: {len(t1)} events, {t1[:1]}..{t1[-1:]}: not every event from 0 up to the stop ({s1})", file=sys.stderr); ok = False
if not (run(t2) and t2[0] >= s2 and t2[-1] == last - 1):
    print(f"t2: {len(t2)} events, {t2[:1]}..{t2[-1:]}: not every event from the start (>= {s2}) to the end ({last})", file=sys.stderr); ok = False
print(f"t1: 0..{t1[-1]} (stop at {s1}); stopped until {s2}; t2: {t2[0]}..{t2[-1]}")
sys.exit(0 if ok else 1)
PY
	# a process that opted out joins nothing
	STRATA_SESSION=none "$seqwriter" side3 1000 2>none.err || fail "opted-out writer failed"
	[ ! -s none.err ] || fail "opted-out writer said: $(cat none.err)"
}

snapshot() {
	# Overwrite mode, small rings that wrap every few milliseconds, two
	# writers each pinned to one CPU; snapshots as fast as they come.
	"$strata" daemon -o t --mode overwrite --packet-size 16K --packets 8 2>daemon.err ||
		fail "strata daemon: $(cat daemon.err)"
	daemon_pid=$(sed -nE 's/.*\(pid ([0-9]+)\).*/\1/p' daemon.err)
	ncpu=$(nproc)
	taskset -c 0 "$seqwriter" sideA 100000000000 stop fast 2>wa.err &
	taskset -c $((ncpu > 1 ? 1 : 0)) "$seqwriter" sideB 100000000000 stop fast 2>wb.err &
	wait_for '[ -s sideA ] && [ -s sideB ] && [ "$(side sideA 1)" -gt 100000 ] && [ "$(side sideB 1)" -gt 100000 ]' "the writers to log"
	snaps=()
	for i in $(seq 1 "${SNAPSHOTS:-40}"); do
		"$strata" session snapshot -o "s$i" 2>"s$i.err" || fail "snapshot $i: $(cat "s$i.err")"
		grep -q "snapshot $work/s$i: 2 processes, [1-9][0-9]* packets" "s$i.err" || fail "snapshot $i said: $(cat "s$i.err")"
		snaps+=("s$i")
	done
	# A process that joined while the daemon could not read: its connect
	# returned, it logs, so a snapshot asked for now holds it (the daemon
	# takes the backlog and reads every socket before it snapshots).
	kill -STOP "$daemon_pid"
	taskset -c 0 "$seqwriter" sideC 100000000000 stop fast 2>wc.err &
	wait_for '[ -s sideC ] && [ "$(side sideC 1)" -gt 1000 ]' "the third writer to log"
	"$strata" session snapshot -o sC 2>sC.err &
	snap=$!
	sleep 0.2 # its request in the control socket's backlog too
	kill -CONT "$daemon_pid"
	wait $snap || fail "snapshot C: $(cat sC.err)"
	grep -q "snapshot $work/sC: 3 processes, " sC.err ||
		fail "a process that joined while the daemon was busy is not in the snapshot: $(cat sC.err)"
	snaps+=(sC)
	cat s*.err | sed -nE 's/.*; ([0-9]+) packets overwritten while copied.*/\1/p' |
		awk '{n += $1} END {print "packets overwritten before or while copied (left out, not torn):", n + 0}'
	# SIGUSR1: a dated snapshot, said in the log
	kill -USR1 "$daemon_pid"
	wait_for 'grep -q "snapshot .*strata-snapshot-" run/default/log' "the SIGUSR1 snapshot"
	usr1=$(sed -nE 's/.*snapshot ([^:]*strata-snapshot-[^:]*): .*/\1/p' run/default/log | head -1)
	snaps+=("$usr1")
	python3 "$src/snapcheck.py" "${snaps[@]}" || fail "snapshots"
	touch stop
	wait || true
	"$strata" daemon --kill 2>kill.err || fail "--kill: $(cat kill.err)"
	daemon_pid=
	# the daemon's own trace (overwrite: the newest packets at stop) is valid too
	: >bt.err
	babeltrace2 t >/dev/null 2>bt.err || fail "t: babeltrace2 failed"
	[ -s bt.err ] && fail "t: babeltrace2 warned: $(head -3 bt.err)"

	# strata record: SIGUSR1 snapshots DIR-snapshot-N
	rm -f stop
	STRATA_SESSION= "$strata" record -o r --mode overwrite --packet-size 16K --packets 8 -- \
		taskset -c 0 "$seqwriter" sideR 100000000000 stop fast 2>r.err &
	rec=$!
	wait_for '[ -s sideR ] && [ "$(side sideR 1)" -gt 100000 ]' "the recorded writer"
	for i in 1 2 3; do
		kill -USR1 $rec
		wait_for "grep -q 'snapshot $work/r-snapshot-$i: 1 process' r.err" "record's snapshot $i"
	done
	touch stop
	wait $rec || fail "strata record: $(cat r.err)"
	python3 "$src/snapcheck.py" r-snapshot-1 r-snapshot-2 r-snapshot-3 || fail "record's snapshots"
}

inproc() {
	# strata_snapshot() with the in-process consumer (overwrite mode).
	"$bin/tests/record/snapinproc" "$work/inproc" "${SNAPSHOTS:-200}" >inproc.out 2>&1 ||
		fail "snapinproc: $(cat inproc.out)"
	cat inproc.out
	python3 "$src/snapcheck.py" $(for i in $(seq 1 "${SNAPSHOTS:-200}"); do echo "inproc/snap-$i"; done) ||
		fail "snapshots"
	# a snapshot taken while every event is in the open packet holds them
	n=$("$bin/src/cli/strata" print "$work/inproc/snap-open" | grep -c ' 5:2 ' || true)
	[ "$n" = 10 ] || fail "snapshot of an open packet: $n of its 10 events"
	babeltrace2 "$work/inproc/snap-open" >/dev/null 2>bt.err && [ ! -s bt.err ] ||
		fail "snap-open: babeltrace2: $(head -3 bt.err)"
	: >bt.err
	babeltrace2 "$work/inproc/trace" >/dev/null 2>bt.err || fail "the trace: babeltrace2 failed"
	[ -s bt.err ] && fail "the trace: babeltrace2 warned: $(head -3 bt.err)"
	return 0
}

"$what"
# The daemon's own messages (background: its log) carry sanitizer reports.
if grep -qiE 'sanitizer|runtime error' run/default/log *.err 2>/dev/null; then
	fail "sanitizer report: $(grep -hiE -m3 'sanitizer|runtime error' run/default/log *.err)"
fi
echo "daemon-$what: OK"
