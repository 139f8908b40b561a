#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The embedded mode records fork children (one ending with _exit, one
# crashing) and an exec'd child in the same trace, every event (issue 26,
# item 3); RUNS times.
set -euo pipefail
runs=$1
bin=$2
work=$3
. "$(dirname "$0")/common.sh"
rel_init forkemb "$bin" "$work"
forkemb=$bin/tests/reliability/forkemb
command -v babeltrace2 >/dev/null || { echo "babeltrace2 not installed"; exit 77; }
export STRATA_GUARD=1
ulimit -c 0

for i in $(seq "$runs"); do
	rm -rf t
	STRATA_OUTPUT=$work/t "$forkemb" 2>f.err || fail "run $i: $(cat f.err)"
	# the crashed child is salvaged by the guardian, which ends on its own
	for _ in $(seq 200); do
		pgrep -f -- "--guard 3 -o $work/t\$" >/dev/null || break
		sleep 0.05
	done
	"$strata" print t >p 2>p.err || fail "run $i: strata print: $(cat p.err)"
	for m in 1:2000 2:50000 3:50000 4:50000; do
		n=$(grep -c " 5:${m%%:*} " p || true)
		[ "$n" = "${m#*:}" ] || fail "run $i: 5:${m%%:*}: $n events, ${m#*:} logged"
	done
	procs=$(find t/ust -name metadata | wc -l)
	[ "$procs" = 4 ] || fail "run $i: $procs sub-traces, not 4"
	babeltrace2 t >/dev/null 2>bt.err || fail "run $i: babeltrace2: $(head -3 bt.err)"
done
echo "forkemb: $runs runs: the parent, a child ending with _exit, a crashing child and an exec'd child, 152,000 events each time, all recorded"
