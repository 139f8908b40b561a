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
# one_run I [PACKETS]: one burst (rings of PACKETS packets per CPU, the
# default without), checked; counts the runs that lost
one_run() {
	local i=$1 pk=${2:-} ev lost bt n
	rm -rf t
	case $mode in
	embedded) n=$(env STRATA_OUTPUT="$work/t" ${pk:+STRATA_PACKETS=$pk} "$burst" 200000 2>run.err) ;;
	record) n=$("$strata" record ${pk:+--packets $pk} -o t -- "$burst" 200000 2>run.err) ;;
	daemon)
		"$strata" daemon ${pk:+--packets $pk} -o t 2>run.err || fail "daemon: $(cat run.err)"
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
	# each discarded event with its cause (issue 24, item 9)
	causes=$(echo "$info" | sed -nE 's/^Lost: *[0-9]+ events discarded \((.*)\), [0-9]+ packets lost$/\1/p')
	sum=$(echo "$causes" | tr ',' '\n' | { grep -oE '[0-9]+$' || true; } | awk '{s += $1} END {print s + 0}')
	if [ "$sum" != "$lost" ] || echo "$causes" | grep -q 'no cause'; then
		fail "run $i: the causes ($causes) do not account for the $lost discarded"
	fi
	babeltrace2 t >/dev/null 2>bt.err || fail "run $i: babeltrace2: $(head -3 bt.err)"
	bt=$({ grep -oE 'Tracer discarded [0-9]+ events?' bt.err || true; } | awk '{s += $3} END {print s + 0}')
	[ "$bt" = "$lost" ] ||
		fail "run $i: babeltrace2 reports $bt discarded, strata info $lost (of $n logged)"
	if grep -v 'Tracer discarded' bt.err | grep -q .; then
		fail "run $i: babeltrace2 warned: $(grep -v 'Tracer discarded' bt.err | head -3)"
	fi
	[ "$lost" -gt 0 ] && lossy=$((lossy + 1))
	total_lost=$((total_lost + lost))
	return 0
}
for i in $(seq "$runs"); do one_run "$i"; done
# The test proves something only if the rings overflowed. A slow
# producer (ASan's, a loaded machine) may never fill the default rings:
# then rings of 2 packets, which it does.
if [ "$lossy" = 0 ]; then
	echo "accounting-$mode: the default rings never overflowed in $runs runs; 3 more with 2 packets per CPU"
	for i in 1 2 3; do one_run "small-$i" 2; done
fi
[ "$lossy" -gt 0 ] || fail "no run lost anything: the rings never overflowed"
echo "accounting-$mode: $runs runs ($lossy with losses, $total_lost events discarded in all): recorded + discarded == logged in strata info and babeltrace2, every run"
