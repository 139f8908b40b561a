#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Exact loss accounting (issue 26, item 1): a burst into the default rings,
# RUNS times; every run, `strata info`'s recorded + discarded and the sum
# of babeltrace2's "Tracer discarded" warnings equal what was logged.
set -euo pipefail

mode=$1 # embedded | record | daemon
runs=$2
bin=$3
work=$4
. "$(dirname "$0")/common.sh"
rel_init "accounting-$mode" "$bin" "$work"
runs=$(rel_runs "$runs")
command -v babeltrace2 >/dev/null || { echo "babeltrace2 not installed"; exit 77; }

export STRATA_RUNTIME_DIR=$work/run
trap '"$strata" daemon --kill >/dev/null 2>&1 || true' EXIT

lossy=0 total_lost=0
for i in $(seq "$runs"); do
	rm -rf t
	case $mode in
	embedded) n=$(STRATA_OUTPUT=$work/t "$burst" 200000 2>run.err) ;;
	record) n=$("$strata" record -o t -- "$burst" 200000 2>run.err) ;;
	daemon)
		"$strata" daemon -o t 2>run.err || fail "daemon: $(cat run.err)"
		n=$("$burst" 200000 2>>run.err)
		"$strata" daemon --kill 2>>run.err || fail "daemon --kill: $(cat run.err)"
		;;
	esac
	info=$("$strata" info t 2>info.err) || fail "run $i: strata info: $(cat info.err)"
	ev=$(echo "$info" | sed -nE 's/^Events: *([0-9]+).*/\1/p')
	lost=$(echo "$info" | sed -nE 's/^Lost: *([0-9]+) events discarded.*/\1/p')
	[ -n "$ev" ] && [ -n "$lost" ] || fail "run $i: strata info said: $info"
	[ $((ev + lost)) = "$n" ] ||
		fail "run $i: strata info: $ev recorded + $lost discarded != $n logged"
	babeltrace2 t >/dev/null 2>bt.err || fail "run $i: babeltrace2: $(head -3 bt.err)"
	bt=$({ grep -oE 'Tracer discarded [0-9]+ events?' bt.err || true; } | awk '{s += $3} END {print s + 0}')
	[ "$bt" = "$lost" ] ||
		fail "run $i: babeltrace2 reports $bt discarded, strata info $lost (of $n logged)"
	if grep -v 'Tracer discarded' bt.err | grep -q .; then
		fail "run $i: babeltrace2 warned: $(grep -v 'Tracer discarded' bt.err | head -3)"
	fi
	[ "$lost" -gt 0 ] && lossy=$((lossy + 1))
	total_lost=$((total_lost + lost))
done
# The test proves something only if the rings overflowed.
[ "$lossy" -gt 0 ] || fail "no run lost anything: the rings never overflowed"
echo "accounting-$mode: $runs runs ($lossy with losses, $total_lost events discarded in all): recorded + discarded == logged in strata info and babeltrace2, every run"
