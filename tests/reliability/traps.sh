#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A CLI that never silently does the wrong thing (issue 26, items 11 and 12):
# bad ring options are refused before the command runs, a command that
# cannot run leaves nothing behind, and no command writes into an earlier
# trace.
set -euo pipefail
bin=$1
work=$2
. "$(dirname "$0")/common.sh"
rel_init traps "$bin" "$work"

# expect STATUS WHAT -- COMMAND...: its exit status and one line on stderr
expect() {
	local want=$1 what=$2 rc=0
	shift 3
	"$@" >out 2>err || rc=$?
	[ "$rc" = "$want" ] || fail "$what: exit $rc, not $want ($(cat err))"
	[ "$(wc -l <err)" = 1 ] || fail "$what: not one line on stderr: $(cat err)"
}

expect 2 "record --packet-size 3K" -- "$strata" record --packet-size 3K -o t1 -- "$burst" 10
grep -q 'power of two' err || fail "packet size: $(cat err)"
[ ! -e t1 ] || fail "record --packet-size 3K left t1 behind"
[ ! -e ran ] || fail "the command ran"
expect 2 "record --packets 3" -- "$strata" record --packets 3 -o t1 -- "$burst" 10
[ ! -e t1 ] || fail "record --packets 3 left t1 behind"

expect 127 "record of a command that does not exist" -- "$strata" record -o t2 -- ./no-such-command
[ ! -e t2 ] || fail "a command that cannot run left t2 behind"

"$strata" record -o t3 -- "$burst" 10 >/dev/null 2>&1 || fail "record t3"
# strata record's state dump is not a process of the trace (issue 26, 15)
"$strata" info t3 >info 2>&1 || fail "info t3: $(cat info)"
grep -q '^Size: .*, 1 process$' info || fail "info counts the state dump as a process: $(head -3 info)"
grep -qE '^ +[0-9]+ +\(state dump by strata\) ' info || fail "info: the state dump's row is not named so"
expect 1 "record into an earlier trace" -- "$strata" record -o t3 -- "$burst" 10
grep -q 'holds an earlier trace' err || fail "record -o t3: $(cat err)"
mkdir empty
"$strata" record -o empty -- "$burst" 10 >/dev/null 2>&1 || fail "record into an empty directory was refused"

# STRATA_OUTPUT into an earlier trace: refused, said once, the program
# unaffected; two programs at once share one recording (its guardian)
STRATA_OUTPUT=$work/e1 "$burst" 100 >/dev/null 2>&1 || fail "embedded e1"
# its guardian ends once it has seen it go (5 s at most): until then a
# program with the same STRATA_OUTPUT would share that recording
for _ in $(seq 250); do [ -e e1/.session ] || break; sleep 0.02; done
rc=0; STRATA_OUTPUT=$work/e1 "$burst" 100 >out 2>err || rc=$?
[ "$rc" = 0 ] || fail "the second program into e1 failed: $(cat err)"
grep -q 'holds an earlier trace' err || fail "STRATA_OUTPUT into an earlier trace: $(cat err)"
[ "$(ls e1/ust | wc -l)" = 1 ] || fail "a second run was merged into e1: $(ls e1/ust)"
STRATA_OUTPUT=$work/e2 "$burst" 300000 >/dev/null 2>&1 &
first=$!
for _ in $(seq 200); do [ -e e2/.session ] && break; sleep 0.02; done
STRATA_OUTPUT=$work/e2 "$burst" 100 >/dev/null 2>err || fail "the second program into e2: $(cat err)"
wait $first
[ "$(ls e2/ust | wc -l)" = 2 ] || fail "two programs at once: $(ls e2/ust) in e2: $(cat err)"

# strata record killed (SIGKILL) leaves its session directory; the next
# one removes it (issue 24, item 9)
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"
"$strata" record -o k1 -- sh -c "\"$burst\" 1000; sleep 2" >/dev/null 2>&1 &
rec=$!
for _ in $(seq 200); do ls "$TMPDIR" | grep -q strata-session && break; sleep 0.01; done
sleep 0.2
kill -KILL "$rec"
wait "$rec" 2>/dev/null || true
ls "$TMPDIR" | grep -q strata-session || fail "no session directory to leave behind"
# ... and a program still running then counts, in that trace, the events
# it could not hand over (issue 24, item 9: before, the trace said nothing)
"$strata" record -o k3 -- env SEQWRITER_LINGER_MS=1500 "$bin/tests/record/seqwriter" k3.side 1000 \
	>/dev/null 2>k3.err &
rec=$!
for _ in $(seq 200); do [ -e k3/ust ] && break; sleep 0.02; done
sleep 0.5 # its 1000 events logged, in its rings
kill -KILL "$rec"
wait "$rec" 2>/dev/null || true
for _ in $(seq 150); do [ -s k3/unrecorded ] && break; sleep 0.02; done
"$strata" info k3 >k3.info 2>&1 || true
ev=$(sed -nE 's/^Events: *([0-9]+).*/\1/p' k3.info)
un=$(sed -nE 's/^Not recorded: ([0-9]+) events of 1 process.*/\1/p' k3.info)
[ -n "$un" ] || fail "a killed recorder's program did not count its events in the trace: $(cat k3.info k3/unrecorded 2>&1 | head -12)"
[ $((${ev:-0} + un)) = 1000 ] || fail "killed recorder: ${ev:-0} recorded + $un not recorded != 1000 logged"
grep -q 'the recorder was gone' k3/unrecorded || fail "k3/unrecorded does not say why: $(cat k3/unrecorded)"
"$strata" record -o k2 -- true >/dev/null 2>&1 || fail "record k2"
left=$(ls "$TMPDIR")
[ -z "$left" ] || fail "left behind after the next record: $left"
unset TMPDIR

if "$strata" help | grep -q ktrace && [ "$(id -u)" = 0 ]; then
	expect 1 "ktrace into an earlier trace" -- "$strata" ktrace -k sched -o t3 -- "$burst" 10
	grep -q 'holds an earlier trace' err || fail "ktrace -o t3: $(cat err)"
fi
echo "traps: bad ring options, a missing command and earlier traces refused, nothing left behind; info names the state dump; STRATA_OUTPUT never merges an earlier run; a killed recorder's leftovers go"
