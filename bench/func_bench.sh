#!/bin/sh
# SPDX-License-Identifier: MIT
# The cost of a probed call (docs/profile.md, "Function probes"): one loop of calls to an empty function, plain, under gprof's -pg, with libstrata-func's probes off and on, and under callgrind; prints a markdown section.
#
# usage: bench/func_bench.sh BIN_DIR STRATA OUT_DIR [CALLS] [REPS]
#   BIN_DIR  where bench_func_plain, bench_func_pg and bench_func_probed are
#   STRATA   the strata tool (counts of the probes' trace)
set -eu
bin=$1 strata=$2 out=$3 calls=${4:-10000000} reps=${5:-5}
mkdir -p "$out"
cd "$out" # gprof's gmon.out lands here
ns() { sed -n 's/^FUNC .*ns_call=\([0-9.]*\).*/\1/p'; }
# interleaved, the best of 3 rounds of each (each round: the best of REPS loops)
best() { sort -n | head -1; }
: >plain; : >pg; : >off; : >on
i=0
while [ $i -lt 3 ]; do
	"$bin/bench_func_plain" "$calls" "$reps" | ns >>plain
	"$bin/bench_func_pg" "$calls" "$reps" | ns >>pg
	"$bin/bench_func_probed" "$calls" "$reps" | ns >>off
	rm -rf trace
	# 64 MiB rings: most of a run fits (the figure is the producer's;
	# the consumer's is "Out of the box" above); losses are reported
	STRATA_FUNCTIONS=1 STRATA_OUTPUT="$out/trace" STRATA_PACKETS=256 \
		"$bin/bench_func_probed" "$calls" "$reps" 2>/dev/null | ns >>on
	info=$("$strata" info trace)
	i=$((i + 1))
done
logged=$(( (calls * reps + calls / 10) * 2 ))
rec=$(echo "$info" | sed -n 's/^Events: *\([0-9]*\).*/\1/p')
lost=$(echo "$info" | sed -n 's/^Lost: *\([0-9]*\) events.*/\1/p')
cg=n/a
if command -v valgrind >/dev/null; then
	cg=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$bin/bench_func_plain" $((calls / 10)) 1 2>/dev/null | ns)
fi
p=$(best <plain) g=$(best <pg) f=$(best <off) o=$(best <on)
echo "## Function probes (one thread, an empty function called in a loop)"
echo
echo "Best of 3 interleaved rounds, each the best of $reps loops of $calls calls; load average $(cut -d' ' -f1-3 /proc/loadavg)."
echo "The probes' trace: $rec events recorded, $lost discarded, of $logged logged (an entry and an exit per call)."
echo
echo "| build | ns per call | added per call |"
echo "| --- | ---: | ---: |"
awk -v p="$p" -v g="$g" -v f="$f" -v o="$o" -v c="$cg" 'BEGIN {
	printf "| plain | %.2f | - |\n", p
	printf "| gprof, -pg (mcount, profiling on) | %.2f | %.2f |\n", g, g - p
	printf "| -finstrument-functions + libstrata-func, probes off | %.2f | %.2f |\n", f, f - p
	printf "| the same, probes on (strata record --functions), 2 events a call | %.2f | %.2f |\n", o, o - p
	if (c != "n/a") printf "| plain under valgrind --tool=callgrind | %.2f | %.2f |\n", c, c - p
}'
