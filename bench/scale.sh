#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Scaling with the number of producer threads, one pinned per CPU: the
# floor (rdtsc + store), strata (rseq, CAS, overwrite) and LTTng-UST, each
# at 1, 2, 4, ... threads up to the CPUs (bench/SCALING.md has a run on 16).
#
# usage: bench/scale.sh BIN_DIR [OUT_FILE]
#   BIN_DIR: a Release build's bench/ (bench_floor, bench_strata, and
#   bench_lttng if LTTng-UST was found); lttng-sessiond and lttng from PATH
#   (LTTNG_SESSIOND_ARGS for its options, e.g. a carried consumerd's path)
# BENCH_EVENTS (2000000) per thread and repetition, BENCH_REPS (5),
# THREADS ("1 2 4 ... nproc"). Raw RESULT/COUNT lines, as bench/run.sh's.
set -uo pipefail
bin=$1
out=${2:-/dev/stdout}
export BENCH_EVENTS=${BENCH_EVENTS:-2000000} BENCH_REPS=${BENCH_REPS:-5}
n=$(nproc)
threads=${THREADS:-}
if [ -z "$threads" ]; then
	t=1
	while [ $t -lt "$n" ]; do threads="$threads $t"; t=$((t * 2)); done
	threads="$threads $n"
fi
work=${TMPDIR:-/tmp}/strata-scale.$$
mkdir -p "$work"
trap 'rm -rf "$work"; [ -z "${sd:-}" ] || pkill -f "lttng-sessiond.*$work" || true' EXIT
exec >"$out"
echo "INFO nproc=$n kernel=$(uname -r) cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
lttng_ok=0
if [ -x "$bin/bench_lttng" ] && command -v lttng-sessiond >/dev/null; then
	export LTTNG_HOME=$work/lttng-home
	mkdir -p "$LTTNG_HOME"
	# shellcheck disable=SC2086 # a word list
	lttng-sessiond --daemonize --no-kernel ${LTTNG_SESSIOND_ARGS:-} \
		--pidfile="$work/sessiond.pid" && sd=1 && lttng_ok=1
fi
for t in $threads; do
	"$bin/bench_floor" "$t" 2>&1
	for m in ev1 cas overwrite; do
		"$bin/bench_strata" "$m" "$t" "$work/strata" 2>&1
		rm -rf "$work/strata"
	done
	[ $lttng_ok = 1 ] || continue
	s=scale-$$-$t
	lttng create "$s" --output="$work/lttng" >/dev/null &&
		lttng enable-channel -u -s "$s" --subbuf-size=1M --num-subbuf=128 ch >/dev/null &&
		lttng enable-event -u -s "$s" -c ch strata_bench:ev >/dev/null &&
		lttng start "$s" >/dev/null || { echo "FAILED tag=lttng-t$t"; continue; }
	"$bin/bench_lttng" enabled "$t" 2>&1
	echo "STOP suite=lttng threads=$t $(lttng stop "$s" 2>&1 | tr '\n' ' ')"
	lttng destroy "$s" >/dev/null 2>&1
	rm -rf "$work/lttng"
done
