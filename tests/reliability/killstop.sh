#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Kills at random points of strata_stop() (issue 24, item 10): whatever the
# moment, babeltrace2 reads the trace the kill leaves without an error. The
# program records through its guardian (STRATA_GUARD=1, docs/record.md "The
# embedded mode"), which finishes the trace after the kill: a consumer
# thread killed in the middle of a packet's write leaves that stream one
# cut-short packet that babeltrace2 refuses (docs/record.md, Limits).
set -euo pipefail
runs=$1
bin=$2
work=$3
. "$(dirname "$0")/common.sh"
rel_init killstop "$bin" "$work"
runs=$(rel_runs "$runs")
stopper=$bin/tests/reliability/stopper
command -v babeltrace2 >/dev/null || { echo "babeltrace2 not installed"; exit 77; }
export STRATA_GUARD=1

early=0 late=0
for i in $(seq "$runs"); do
	rm -rf t
	# The delay after "stopping": 0 to 20 ms, spread over the runs.
	delay=$(awk -v i="$i" -v n="$runs" 'BEGIN { printf "%.4f", 0.020 * i / n }')
	coproc P { STRATA_OUTPUT=$work/t exec "$stopper" 100000 2>stopper.err; }
	read -r line <&"${P[0]}" || fail "run $i: the program said nothing"
	[ "$line" = stopping ] || fail "run $i: the program said '$line'"
	sleep "$delay"
	kill -KILL "$P_PID" 2>/dev/null || true
	wait "$P_PID" 2>/dev/null || true
	# what the kill leaves: once the guardian has finished
	for _ in $(seq 200); do
		pgrep -f -- "--guard 3 -o $work/t\$" >/dev/null || break
		sleep 0.05
	done
	if [ -d t ] && find t -name metadata | grep -q .; then
		babeltrace2 t >/dev/null 2>bt.err ||
			fail "run $i (kill ${delay}s into strata_stop): babeltrace2 refused the trace: $(grep -v 'Tracer discarded' bt.err | head -3)"
		early=$((early + 1))
	else
		late=$((late + 1))
	fi
done
echo "killstop: $runs kills 0-20 ms into strata_stop(): babeltrace2 read every trace"
