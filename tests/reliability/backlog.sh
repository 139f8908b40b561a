#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Processes that could not join at once (issue 24, item 7): strata record is
# stopped (SIGSTOP) for 2 s while 200 children start and connect; its
# backlog (128) fills, and those that find it full keep tracing into
# their rings and connect when it takes them: every event recorded. With
# the recorder stopped past their patience, what they lose is counted in
# the trace (unrecorded) and said at the end.
set -euo pipefail
bin=$1
work=$2
. "$(dirname "$0")/common.sh"
rel_init backlog "$bin" "$work"
logn=$bin/tests/reliability/logn

# run NKIDS STOP_SECONDS TRACE: the children start while strata record is stopped
run() {
	"$strata" record -o "$3" -- sh -c '
		while [ ! -e go ]; do sleep 0.01; done
		i=0
		while [ $i -lt '"$1"' ]; do "'"$logn"'" 1000 & i=$((i + 1)); done
		wait' 2>"$3.err" &
	rec=$!
	sleep 0.3
	kill -STOP "$rec"
	touch go
	sleep "$2"
	kill -CONT "$rec"
	wait "$rec" || fail "strata record: $(cat "$3.err")"
	rm -f go
}

run 200 2 t1
line=$(grep -E '^strata: t1: [0-9]+ process' t1.err) || fail "record said: $(cat t1.err)"
case $line in
*" 200 processes, 200000 events"*) ;;
*) fail "200 children stopped out for 2 s: $line ($(grep -c 'not recorded' t1.err) said something)" ;;
esac

# Stopped 6 s: longer than a process waits at exit (3 s). Those that
# joined are recorded; the others' events are counted in the trace.
run 200 6 t2
line=$(grep -E '^strata: t2: [0-9]+ process' t2.err) || fail "record said: $(cat t2.err)"
ev=$(echo "$line" | sed -nE 's/.* ([0-9]+) events, .*/\1/p')
un=$(sed -nE 's/.*could not join the session: ([0-9]+) events not recorded.*/\1/p' t2.err)
[ -n "$un" ] || fail "stopped 6 s: no process said it could not join: $(cat t2.err)"
[ $((ev + un)) = 200000 ] || fail "stopped 6 s: $ev recorded + $un not recorded != 200000 logged"
"$strata" info t2 >info 2>&1 || true
grep -q "^Not recorded: $un events of" info || fail "strata info does not count them: $(head -8 info)"
echo "backlog: 200 children started while the recorder was stopped 2 s: all 200,000 events recorded; stopped 6 s: $ev recorded + $un counted as not recorded"
