#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make bench`: builds the benchmarks, runs strata, the floor, LTTng-UST and FxT side by side, writes BENCHMARKS.md.
#
# usage: bench/run.sh [--smoke] [--no-build] [--bin-dir DIR] [--out-dir DIR] [--threads N]
#                     [--no-reader | --reader-only | --oob-only]
#   --smoke     tiny sizes, a few seconds, no LTTng daemon; writes OUT/BENCHMARKS.md only
#   --no-build  use the programs already in --bin-dir (default build-bench/bench)
#   --out-dir   where traces and raw results go (default build-bench/bench-out, or
#               build-bench/bench-smoke with --smoke; on disk)
#   --threads   threads of the "one per core" runs (default: the CPUs we may use)
#   --no-reader     leave out the Reader section (bench/reader_bench.sh)
#   --reader-only   run only the Reader section and put it in place of the one
#                   in BENCHMARKS.md (the producer figures stay as they were)
#   --oob-only      run only the out-of-the-box rows and put their section and
#                   Targets rows in place of those in BENCHMARKS.md
# Environment knobs (defaults in brackets): BENCH_EVENTS [1000000] events per thread
# per repetition, BENCH_REPS [7], BENCH_PAUSE_MS [300], BENCH_SUST_MS [2000],
# BENCH_WORKERS_RUNS [7], BENCH_WORKERS_ARGS ["2 4000000 1"] (threads, jobs, work per
# job: an event every ~0.1 us), BENCH_WORKERS_COARSE_ARGS ["2 100000 40"] (every ~2 us),
# BENCH_PAIRED_FLOOR [1], and for the out-of-the-box rows BENCH_OOB_MS [1000] per run,
# BENCH_OOB_REPS [5], BENCH_OOB_FRACTIONS ["0.25 0.5 0.75 0.9"] of the disk's bandwidth,
# BENCH_OOB_DISK_MIB [256] per disk measurement, BENCH_STRATA_CLI [BIN/../src/cli/strata].
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build-bench
SMOKE=0
DO_BUILD=1
BIN=""
OUT=""
THREADS=""
READER=1
PRODUCER=1
OOB_ONLY=0

while [ $# -gt 0 ]; do
	case $1 in
	--smoke) SMOKE=1 ;;
	--no-build) DO_BUILD=0 ;;
	--bin-dir) BIN=$2; shift ;;
	--out-dir) OUT=$2; shift ;;
	--threads) THREADS=$2; shift ;;
	--no-reader) READER=0 ;;
	--reader-only) PRODUCER=0 ;;
	--oob-only) OOB_ONLY=1 READER=0 ;;
	-h|--help) sed -n '2,23p' "$0"; exit 0 ;;
	*) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done

BIN=${BIN:-$BUILD/bench}
# absolute: the programs it names run elsewhere (the guardian runs in /)
[ -d "$BIN" ] && BIN=$(cd "$BIN" && pwd)
[ $SMOKE = 1 ] && OUT=${OUT:-$BUILD/bench-smoke}
OUT=${OUT:-$BUILD/bench-out}
THREADS=${THREADS:-$(nproc)}
[ "$THREADS" -ge 2 ] || THREADS=2

if [ $SMOKE = 1 ]; then
	export BENCH_EVENTS=${BENCH_EVENTS:-20000} BENCH_REPS=${BENCH_REPS:-5}
	export BENCH_PAUSE_MS=${BENCH_PAUSE_MS:-20} BENCH_SUST_MS=${BENCH_SUST_MS:-100}
	export BENCH_SUST_STEPS=${BENCH_SUST_STEPS:-2}
	export BENCH_STRATA_PACKETS=${BENCH_STRATA_PACKETS:-16}
	REPORT=$OUT/BENCHMARKS.md
else
	export BENCH_EVENTS=${BENCH_EVENTS:-1000000} BENCH_REPS=${BENCH_REPS:-7}
	export BENCH_PAUSE_MS=${BENCH_PAUSE_MS:-300} BENCH_SUST_MS=${BENCH_SUST_MS:-2000}
	REPORT=$ROOT/BENCHMARKS.md
fi
WORKERS_RUNS=${BENCH_WORKERS_RUNS:-7}
WORKERS_ARGS=${BENCH_WORKERS_ARGS:-"2 4000000 1"}
WORKERS_COARSE_ARGS=${BENCH_WORKERS_COARSE_ARGS:-"2 100000 40"}
WORKERS_EMPTY_ARGS="${WORKERS_ARGS%% *} 0 1" # no jobs: the session's start and stop

note() { echo "== $*" >&2; }

# ---- build ------------------------------------------------------------------
if [ $DO_BUILD = 1 ]; then
	note "building in $BUILD (Release, -O2)"
	cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" >"$BUILD.cmake.log" 2>&1 ||
		{ cat "$BUILD.cmake.log" >&2; exit 1; }
	# Target by target, so that one that does not build yet (the library
	# being written, a missing peer) skips its rows instead of all of them.
	for t in bench_floor bench_strata bench_lttng bench_fxt bench_workers_off \
		bench_workers_on bench_oob bench_locks strata-locks strata-cli \
		bench_func_plain bench_func_pg bench_func_probed strata-func; do
		cmake --build "$BUILD" --target "$t" -j "$(nproc)" >"$BUILD/build-$t.log" 2>&1 ||
			note "skip: $t does not build (see $BUILD/build-$t.log)"
	done
fi

mkdir -p "$OUT"
have() { [ -x "$BIN/$1" ]; }
skip() { echo "SKIP what=$1 reason=$2" >>"$RAW"; note "skip: $1: ${2//_/ }"; }

# ---- out of the box: default rings, no pinning, started by the environment -----
# bench_oob logs from one unpinned thread through whatever session its
# environment starts, as a user's program would: STRATA_OUTPUT (the
# in-process consumer thread), STRATA_OUTPUT + STRATA_GUARD=1 (the guardian
# process, docs/record.md "The embedded mode"), `strata record`, and
# STRATA_MODE=block (embedded). Flat out, then paced at fractions of the
# disk's own O_DIRECT bandwidth, measured in the same run on the same file
# system; modes interleaved within each repetition, their order rotated.
# Counts come from the trace (`strata info`), not from the program.
OOB_MS=${BENCH_OOB_MS:-1000}
OOB_REPS=${BENCH_OOB_REPS:-5}
OOB_FRACTIONS=${BENCH_OOB_FRACTIONS:-"0.25 0.5 0.75 0.9"}
OOB_DISK_MIB=${BENCH_OOB_DISK_MIB:-256}
if [ $SMOKE = 1 ]; then
	OOB_MS=${BENCH_OOB_MS:-200} OOB_REPS=${BENCH_OOB_REPS:-2}
	OOB_FRACTIONS=${BENCH_OOB_FRACTIONS:-"0.5"} OOB_DISK_MIB=${BENCH_OOB_DISK_MIB:-32}
fi
STRATA_CLI=${BENCH_STRATA_CLI:-$BIN/../src/cli/strata}
OOB_BPE=12 # bytes on disk of the 1-field event (docs/compact.md): rates from MB/s

oob_disk() { # REP: one DISK line, tagged
	local out
	out=$("$BIN/bench_oob" disk "$OUT/oob-disk.tmp" "$OOB_DISK_MIB" 2>>"$LOG") ||
		{ echo "FAILED tag=oob-disk-$1" >>"$RAW"; return; }
	echo "OOB_DISK rep=$1 ${out#DISK }" >>"$RAW"
}

# oob_one MODE RATE FRAC REP: one run of bench_oob in MODE, one OOB line
oob_one() {
	local mode=$1 rate=$2 frac=$3 rep=$4 dir=$OUT/oob-trace out info t0 t1 rc=0
	local -a cmd=(env -u STRATA_SESSION -u STRATA_GUARD -u STRATA_GUARDED -u STRATA_MODE
		-u STRATA_PACKETS -u STRATA_PACKET_SIZE -u STRATA_MAJORS -u STRATA_ENABLE
		-u STRATA_OUTPUT -u STRATA_FLUSH_MS -u STRATA_BLOCK_TIMEOUT_MS
		STRATA_TOOL="$STRATA_CLI" BENCH_OOB_DISK_DIR="$OUT")
	local -a prog=("$BIN/bench_oob" log "$rate" "$OOB_MS")
	case $mode in
	embedded) cmd+=(STRATA_OUTPUT="$dir" STRATA_GUARD=0 "${prog[@]}") ;;
	guarded) cmd+=(STRATA_OUTPUT="$dir" STRATA_GUARD=1 "${prog[@]}") ;;
	record) cmd+=("$STRATA_CLI" record -o "$dir" -- "${prog[@]}") ;;
	block) cmd+=(STRATA_OUTPUT="$dir" STRATA_GUARD=0 STRATA_MODE=block "${prog[@]}") ;;
	esac
	rm -rf "$dir"
	echo "== oob $mode rate=$rate rep=$rep" >>"$LOG"
	t0=$(date +%s%N)
	out=$("${cmd[@]}" 2>>"$LOG") || rc=$?
	t1=$(date +%s%N)
	out=$(grep '^OOB_LOOP ' <<<"$out" || true)
	if [ -z "$out" ] || ! info=$("$STRATA_CLI" info "$dir" 2>>"$LOG"); then
		echo "FAILED tag=oob-$mode-$frac-$rep" >>"$RAW"
		note "failed: oob $mode at $rate (see $LOG)"
		rm -rf "$dir"
		return
	fi
	local rec disc plost bytes
	rec=$(sed -n 's/^Events: *\([0-9]*\).*/\1/p' <<<"$info")
	disc=$(sed -n 's/^Lost: *\([0-9]*\) events discarded.*/\1/p' <<<"$info")
	plost=$(sed -n 's/^Lost:.*, \([0-9]*\) packets lost.*/\1/p' <<<"$info")
	bytes=$(find "$dir/ust" -type f ! -name metadata ! -path '*/index/*' -printf '%s\n' |
		awk '{ s += $1 } END { print s + 0 }')
	echo "OOB mode=$mode frac=$frac rep=$rep ${out#OOB_LOOP } recorded=${rec:-0}" \
		"discarded=${disc:-0} packets_lost=${plost:-0} stream_bytes=$bytes" \
		"wall_ns=$((t1 - t0)) rc=$rc" >>"$RAW"
	rm -rf "$dir"
}

oob_runs() {
	if ! have bench_oob; then
		skip oob "bench_oob_not_built"
	elif [ ! -x "$STRATA_CLI" ]; then
		skip oob "the_strata_tool_not_found_($STRATA_CLI)"
	else
		note "out of the box: disk bandwidth, then $OOB_REPS x (flat out + $OOB_FRACTIONS of it) x 4 modes, ${OOB_MS} ms each"
		echo "RUN tag=oob" >>"$RAW"
		rm -rf "$OUT/oob-trace" "$OUT/oob-disk.tmp"
		for i in 1 2 3; do oob_disk "0.$i"; done
		bw=$(sed -n 's/^OOB_DISK rep=0\.[0-9]* .*mbps=\([0-9.]*\).*/\1/p' "$RAW" | sort -n | sed -n 2p)
		if [ -z "$bw" ]; then
			skip oob "disk_bandwidth_not_measured"
		else
			echo "OOB_SETUP disk_mbps=$bw bytes_per_event=$OOB_BPE ms=$OOB_MS reps=$OOB_REPS" \
				"fractions=${OOB_FRACTIONS// /,}" >>"$RAW"
			modes=(embedded guarded record block)
			for rep in $(seq "$OOB_REPS"); do
				oob_disk "$rep"
				# the modes' order rotated, so that drift does not favour one
				k=$(( (rep - 1) % ${#modes[@]} ))
				order=("${modes[@]:k}" "${modes[@]:0:k}")
				for m in "${order[@]}"; do oob_one "$m" flat 0 "$rep"; done
				for f in $OOB_FRACTIONS; do
					r=$(awk -v b="$bw" -v f="$f" -v e=$OOB_BPE 'BEGIN { printf "%.0f", f * b * 1e6 / e }')
					for m in "${order[@]}"; do oob_one "$m" "$r" "$f" "$rep"; done
				done
			done
		fi
		rm -f "$OUT/oob-disk.tmp"
	fi
}

# --oob-only: those rows alone, spliced into the report
if [ $OOB_ONLY = 1 ]; then
	[ -f "$REPORT" ] || { echo "run.sh: --oob-only needs $REPORT" >&2; exit 1; }
	RAW=$OUT/raw-oob.txt
	LOG=$OUT/stderr-oob.log
	: >"$RAW"
	: >"$LOG"
	oob_runs
	python3 "$ROOT/bench/report.py" --raw "$RAW" --splice-oob "$REPORT" \
		--note "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%F)"
	note "replaced the out-of-the-box section and rows of $REPORT (raw results: $RAW)"
	exit 0
fi
# ---- producer runs, up to the report (all skipped by --reader-only) ----------------
if [ $PRODUCER = 1 ]; then
# only what an earlier run left here: --out-dir may name a shared folder
rm -rf "$OUT"/raw.txt "$OUT"/env.txt "$OUT"/stderr.log "$OUT"/strata-* "$OUT"/lttng-* \
	"$OUT"/fxt-* "$OUT"/cg-* "$OUT"/callgrind.* "$OUT"/workers-trace "$OUT"/oob-*
RAW=$OUT/raw.txt
ENVF=$OUT/env.txt
LOG=$OUT/stderr.log
: >"$RAW"
: >"$LOG"
if [ "$(stat -f -c %T "$OUT")" = tmpfs ]; then
	note "warning: $OUT is on tmpfs; traces are not going to disk"
fi

# run SUITE-TAG CMD...: its stdout is appended to the raw results
run() {
	local tag=$1; shift
	note "$tag"
	echo "RUN tag=$tag" >>"$RAW"
	if ! "$@" >>"$RAW" 2>>"$LOG"; then
		echo "FAILED tag=$tag" >>"$RAW"
		note "failed: $tag (see $LOG)"
	fi
}

# ---- LTTng session daemon: ours unless one runs; cleaned up on any exit ------
SESSIOND_PID=""
SESSION=""
LTTNG_OK=0
cleanup() {
	set +e
	if [ -n "$SESSION" ]; then
		lttng destroy "$SESSION" >/dev/null 2>&1
		SESSION=""
	fi
	if [ -n "$SESSIOND_PID" ]; then
		kill "$SESSIOND_PID" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$SESSIOND_PID" 2>/dev/null || break; sleep 0.1; done
		SESSIOND_PID=""
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

lttng_setup() {
	if [ $SMOKE = 1 ]; then
		skip lttng-enabled "smoke_mode:_no_LTTng_daemon"
		return
	fi
	if ! have bench_lttng; then
		skip lttng-enabled "bench_lttng_not_built_(liblttng-ust-dev_missing?)"
		return
	fi
	if ! command -v lttng >/dev/null || ! command -v lttng-sessiond >/dev/null; then
		skip lttng-enabled "lttng-tools_not_installed"
		return
	fi
	if ! command -v babeltrace2 >/dev/null; then
		skip lttng-enabled "babeltrace2_not_installed_(needed_to_count_events)"
		return
	fi
	export LTTNG_HOME=$OUT/lttng-home
	mkdir -p "$LTTNG_HOME"
	if lttng list >/dev/null 2>&1; then
		note "using the LTTng session daemon already running"
	else
		lttng-sessiond --daemonize --no-kernel >>"$LOG" 2>&1 || {
			skip lttng-enabled "lttng-sessiond_failed_to_start"; return; }
		local pidf=$LTTNG_HOME/.lttng/lttng-sessiond.pid
		[ "$(id -u)" = 0 ] && pidf=/var/run/lttng/lttng-sessiond.pid
		SESSIOND_PID=$(cat "$pidf")
		note "started lttng-sessiond (pid $SESSIOND_PID)"
	fi
	LTTNG_OK=1
}

# LTTng-UST enabled, THREADS threads: a session writing to a directory with
# buffers as big as strata's (per CPU), started before the program registers.
lttng_enabled() {
	local t=$1 dir=$OUT/lttng-t$1 out logged recorded discarded
	SESSION=strata-bench-$$-t$t
	rm -rf "$dir"
	{
		lttng create "$SESSION" --output="$dir" &&
		lttng enable-channel -u -s "$SESSION" --subbuf-size=1M \
			--num-subbuf="${BENCH_LTTNG_SUBBUFS:-128}" ch &&
		lttng enable-event -u -s "$SESSION" -c ch strata_bench:ev &&
		lttng start "$SESSION"
	} >>"$LOG" 2>&1 || { skip "lttng-t$t" "session_setup_failed"; cleanup_session; return; }
	echo "RUN tag=lttng-t$t" >>"$RAW"
	note "lttng-t$t"
	out=$("$BIN/bench_lttng" enabled "$t" 2>>"$LOG") || echo "FAILED tag=lttng-t$t" >>"$RAW"
	echo "$out" >>"$RAW"
	local stop
	stop=$(lttng stop "$SESSION" 2>&1) || true
	echo "$stop" >>"$LOG"
	lttng destroy "$SESSION" >>"$LOG" 2>&1 || true
	SESSION=""
	logged=$(sed -n 's/^LOGGED .*logged=\([0-9]*\).*/\1/p' <<<"$out")
	discarded=$(sed -n 's/.*Warning: \([0-9]*\) events were discarded.*/\1/p' <<<"$stop")
	recorded=$(babeltrace2 "$dir" --component=sink.utils.counter 2>>"$LOG" |
		awk '/Event messages/ { n = $1 } END { print n + 0 }')
	local bytes
	bytes=$(find "$dir" -type f ! -name metadata ! -path '*/index/*' -printf '%s\n' |
		awk '{ s += $1 } END { print s + 0 }')
	echo "COUNT suite=lttng threads=$t logged=${logged:-0} recorded=$recorded" \
		"lost=${discarded:-0} stream_bytes=$bytes" >>"$RAW"
	rm -rf "$dir"
}
cleanup_session() { [ -z "$SESSION" ] || lttng destroy "$SESSION" >/dev/null 2>&1 || true; SESSION=""; }

fxt_enabled() {
	local t=$1 f=$OUT/fxt-t$1.trace out logged recorded
	echo "RUN tag=fxt-t$t" >>"$RAW"
	note "fxt-t$t"
	out=$("$BIN/bench_fxt" enabled "$t" "$f" 2>>"$LOG") || echo "FAILED tag=fxt-t$t" >>"$RAW"
	echo "$out" >>"$RAW"
	logged=$(sed -n 's/^LOGGED .*logged=\([0-9]*\).*/\1/p' <<<"$out")
	if command -v fxt_print >/dev/null; then
		recorded=$(fxt_print -f "$f" 2>>"$LOG" | grep -c 'unknown code 1234' || true)
	else
		# no fxt_print (Debian fxt-tools): every record of a 1-word probe is
		# 32 bytes; the setup and calibration records are a few hundred
		recorded=$(( ($(stat -c %s "$f") - 4096) / 32 ))
		note "fxt_print missing: FxT events estimated from the file size"
	fi
	echo "COUNT suite=fxt threads=$t logged=${logged:-0} recorded=$recorded" \
		"lost=$(( ${logged:-0} > recorded ? ${logged:-0} - recorded : 0 ))" \
		"stream_bytes=$(stat -c %s "$f" 2>/dev/null || echo 0)" >>"$RAW"
	rm -f "$f"
}

# ---- environment ----------------------------------------------------------------
{
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "cpus=$(nproc)"
	echo "mhz=$(sed -n 's/^cpu MHz[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "hypervisor=$(lscpu 2>/dev/null | sed -n 's/^Hypervisor vendor: *//p' | grep . ||
		(grep -q hypervisor /proc/cpuinfo && echo yes) || echo none)"
	echo "kernel=$(uname -sr)"
	echo "compiler=$(${CC:-cc} --version | head -1)"
	echo "cflags=-O2 -DNDEBUG (CMake Release, build-bench/)"
	echo "lttng_ust=$(pkg-config --modversion lttng-ust 2>/dev/null || echo none)"
	echo "lttng_tools=$(lttng --version 2>/dev/null | head -1 | sed 's/^lttng (LTTng Trace Control) //' || echo none)"
	echo "fxt=$(pkg-config --modversion fxt 2>/dev/null || echo none)"
	echo "babeltrace2=$(babeltrace2 --version 2>/dev/null | head -1 | sed 's/^Babeltrace //' || echo none)"
	echo "outfs=$(stat -f -c %T "$OUT") ($(df --output=source "$OUT" | tail -1))"
	echo "loadavg=$(cut -d' ' -f1-3 /proc/loadavg) (at start; other work on the machine skews every figure)"
	echo "smoke=$SMOKE"
	echo "events=$BENCH_EVENTS reps=$BENCH_REPS pause_ms=$BENCH_PAUSE_MS threads_n=$THREADS"
	echo "sust_ms=$BENCH_SUST_MS"
	echo "workers_args=$WORKERS_ARGS"
	echo "workers_coarse_args=$WORKERS_COARSE_ARGS"
	echo "workers_empty_args=$WORKERS_EMPTY_ARGS"
	echo "clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"
	if command -v perf >/dev/null && perf stat -x, -e instructions true 2>&1 |
		grep -q '^[0-9]'; then
		echo "perf_hw=yes"
	else
		echo "perf_hw=no"
	fi
} >"$ENVF"

# ---- the runs ---------------------------------------------------------------------
lttng_setup
for t in 1 "$THREADS"; do
	if have bench_floor; then run "floor-t$t" "$BIN/bench_floor" "$t"; else skip floor "not_built"; fi
	if have bench_strata; then
		for m in ev1 gen1 ev2 ev8 str cas mono overwrite; do
			run "strata-$m-t$t" "$BIN/bench_strata" "$m" "$t" "$OUT/strata-$m-t$t"
			# which clock strata chose, and why (docs/format.md §5)
			if [ "$m$t" = ev11 ]; then
				sed -n 's/^[[:space:]]*description = "\(.*\)";$/strata_clock=\1/p' \
					"$OUT/strata-$m-t$t"/ust/*/metadata >>"$ENVF" 2>/dev/null || true
			fi
			rm -rf "$OUT/strata-$m-t$t"
		done
	else
		skip "strata-t$t" "bench_strata_not_built_(library_does_not_link_yet?)"
	fi
	if [ $LTTNG_OK = 1 ]; then lttng_enabled "$t"; fi
	if have bench_fxt; then fxt_enabled "$t"; else skip "fxt-t$t" "bench_fxt_not_built_(libfxt-dev_missing?)"; fi
done

# where the time goes: the parts of a CAS-reserve tracer, one at a time
have bench_floor && run parts "$BIN/bench_floor" parts

# disabled tracepoints, hot and cold (no session for the peers: nothing enabled)
have bench_strata && run strata-disabled "$BIN/bench_strata" disabled 1 "$OUT/strata-disabled"
# static branches (docs/patch.md): today's inline mask test and the
# fallback (every site a jump to it) beside the patched site, the time to
# patch 10,000 sites, the code per site
if have bench_strata; then
	run strata-disabled-inline "$BIN/bench_strata" disabled-inline 1 "$OUT/strata-disabled"
	run strata-disabled-fallback env STRATA_PATCH=0 "$BIN/bench_strata" disabled 1 "$OUT/strata-disabled"
	run strata-toggle "$BIN/bench_strata" toggle 1 "$OUT/strata-disabled"
fi
rm -rf "$OUT/strata-disabled"
have bench_lttng && run lttng-disabled env LTTNG_UST_REGISTER_TIMEOUT=0 "$BIN/bench_lttng" disabled
have bench_fxt && run fxt-disabled "$BIN/bench_fxt" disabled

# sustained throughput to disk
if have bench_strata; then
	run strata-sustained "$BIN/bench_strata" sustained 1 "$OUT/strata-sustained"
	# The same with 4 times the default ring (64 x 256 KiB per CPU): a
	# ring absorbs a stall of the disk of about its size / bandwidth.
	run strata-sustained-big env BENCH_SUST_PACKETS=64 \
		"$BIN/bench_strata" sustained 1 "$OUT/strata-sustained"
	rm -rf "$OUT/strata-sustained"
fi

oob_runs

# ---- real-program overhead: examples/workers.c built three ways -------------------
workers_time() { # DENSITY TAG RUN ENV... -- CMD...: prints one WORKERS line
	local density=$1 tag=$2 run=$3 t0 t1; shift 3
	t0=$(date +%s%N)
	"$@" >/dev/null 2>>"$LOG" || { echo "FAILED tag=workers-$density-$tag" >>"$RAW"; return; }
	t1=$(date +%s%N)
	echo "WORKERS density=$density variant=$tag run=$run seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", (b - a) / 1e9 }')" >>"$RAW"
}
if [ $SMOKE = 1 ]; then
	skip workers "smoke_mode"
elif have bench_workers_off && have bench_workers_on; then
	wdir=$OUT/workers-trace
	for density in empty dense coarse; do
		args=$WORKERS_ARGS
		[ $density = coarse ] && args=$WORKERS_COARSE_ARGS
		[ $density = empty ] && args=$WORKERS_EMPTY_ARGS
		note "workers ($density: $args) x3 variants x $WORKERS_RUNS runs"
		# shellcheck disable=SC2086 # args is a word list
		for i in $(seq "$WORKERS_RUNS"); do # interleaved, so drift hits all three
			workers_time $density compiled_out "$i" env -u STRATA_OUTPUT \
				"$BIN/bench_workers_off" $args
			rm -rf "$wdir"
			workers_time $density majors_off "$i" env STRATA_OUTPUT="$wdir" \
				STRATA_MAJORS=none "$BIN/bench_workers_on" $args
			rm -rf "$wdir"
			workers_time $density recording "$i" env STRATA_OUTPUT="$wdir" \
				STRATA_MAJORS=all "$BIN/bench_workers_on" $args
		done
		echo "WORKERS_TRACE density=$density bytes=$(du -sb "$wdir" 2>/dev/null | cut -f1)" >>"$RAW"
		rm -rf "$wdir"
	done
else
	skip workers "examples/workers.c_not_built"
fi

# ---- instruction counts: callgrind, noise-free ---------------------------------
callgrind_one() { # NAME FUNCTION CMD...: Ir per call of FUNCTION (inclusive)
	local name=$1 fn=$2; shift 2
	local f=$OUT/callgrind.$name out ir calls
	out=$(BENCH_EVENTS=20000 BENCH_REPS=1 BENCH_PAUSE_MS=0 BENCH_STRATA_PACKETS=16 \
		valgrind --tool=callgrind --callgrind-out-file="$f" --toggle-collect="$fn" \
		"$@" 2>>"$LOG") || { echo "FAILED tag=callgrind-$name" >>"$RAW"; return; }
	ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$f" | head -1)
	[ -n "$ir" ] || ir=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$f" | head -1)
	# calls = every event the program logged, warm-ups and first laps included
	calls=$(grep -E '^(COUNT|LOGGED) ' <<<"$out" | sed -n 's/.* logged=\([0-9]*\).*/\1/p' |
		awk '{ s += $1 } END { print s + 0 }')
	echo "CALLGRIND name=$name function=$fn ir=${ir:-0} calls=$calls" >>"$RAW"
	rm -f "$f"
}
if [ $SMOKE = 1 ]; then
	skip callgrind "smoke_mode"
elif command -v valgrind >/dev/null; then
	note "callgrind instruction counts"
	have bench_floor && callgrind_one floor bench_floor_event "$BIN/bench_floor" 1
	have bench_strata && callgrind_one strata-ev1 ev1 "$BIN/bench_strata" ev1 1 "$OUT/cg-strata"
	rm -rf "$OUT/cg-strata"
	have bench_fxt && callgrind_one fxt ev_fxt "$BIN/bench_fxt" enabled 1 "$OUT/cg-fxt.trace"
	rm -f "$OUT/cg-fxt.trace"
	if [ $LTTNG_OK = 1 ]; then # inside a session, or only the disabled check runs
		SESSION=strata-bench-$$-cg
		if { lttng create "$SESSION" --output="$OUT/cg-lttng" &&
			lttng enable-event -u -s "$SESSION" strata_bench:ev &&
			lttng start "$SESSION"; } >>"$LOG" 2>&1; then
			callgrind_one lttng ev_lttng "$BIN/bench_lttng" enabled 1
		fi
		cleanup_session
		rm -rf "$OUT/cg-lttng"
	fi
else
	skip callgrind "valgrind_not_installed"
fi

# ---- the report ----------------------------------------------------------------------
cleanup
python3 "$ROOT/bench/report.py" --raw "$RAW" --env "$ENVF" --out "$REPORT" \
	$([ $SMOKE = 1 ] && echo --smoke)
note "wrote $REPORT (raw results: $RAW)"
# ---- locks: libstrata-locks.so against LTTng-UST's pthread wrapper ------------------
# (its own LTTng session daemon: the one above is gone with cleanup)
LOCKS_LIB=$BIN/../src/locks/libstrata-locks.so
if have bench_locks && [ -f "$LOCKS_LIB" ]; then
	LOCKS_ARGS=""
	[ $SMOKE = 1 ] && LOCKS_ARGS="--pairs 200000 --reps 1 --no-xz --no-lttng"
	note "locks (bench/locks_bench.py)"
	# shellcheck disable=SC2086 # LOCKS_ARGS is a word list
	if locks_table=$(python3 "$ROOT/bench/locks_bench.py" "$BIN/bench_locks" "$LOCKS_LIB" \
		"$OUT/locks" --strata "$STRATA_CLI" $LOCKS_ARGS 2>>"$LOG"); then
		printf '\n%s\n' "$locks_table" >>"$REPORT"
		note "appended the Locks section to $REPORT"
	else
		note "failed: locks (see $LOG)"
	fi
	rm -rf "$OUT/locks"
else
	skip locks "bench_locks_or_libstrata-locks.so_not_built"
fi
# append_section TITLE DIR COMMAND...: run a bench script whose stdout is a
# markdown section, append it to the report, remove its scratch folder DIR
append_section() {
	local title=$1 dir=$2 table
	shift 2
	if table=$("$@" 2>>"$LOG"); then
		printf '\n%s\n' "$table" >>"$REPORT"
		note "appended the $title section to $REPORT"
	else
		note "failed or skipped: $title (see $LOG)"
	fi
	rm -rf "$dir"
}
# ---- function probes: libstrata-func against gprof's -pg and callgrind -------------
if have bench_func_plain && have bench_func_pg && have bench_func_probed; then
	note "function probes (bench/func_bench.sh)"
	FUNC_ARGS=""
	[ $SMOKE = 1 ] && FUNC_ARGS="1000000 1"
	# shellcheck disable=SC2086 # FUNC_ARGS is a word list
	append_section "Function probes" "$OUT/func" \
		sh "$ROOT/bench/func_bench.sh" "$BIN" "$STRATA_CLI" "$OUT/func" $FUNC_ARGS
else
	skip func "bench_func_not_built"
fi
# ---- sampling: a real program (xz) under strata record --sample, and perf --------
if [ -x "$STRATA_CLI" ]; then
	note "sampling (bench/sample_bench.py)"
	SAMPLE_ARGS=""
	[ $SMOKE = 1 ] && SAMPLE_ARGS="--runs 1 --mib 1 --level 1"
	# shellcheck disable=SC2086 # SAMPLE_ARGS is a word list
	append_section "Sampling" "$OUT/sample" \
		python3 "$ROOT/bench/sample_bench.py" "$STRATA_CLI" "$OUT/sample" $SAMPLE_ARGS
else
	skip sample "strata_tool_not_built"
fi
else
	LOG=$OUT/stderr-reader.log
	: >"$LOG"
	# the Reader section is the report's last: cut it, a new one follows
	[ -f "$REPORT" ] || { echo "run.sh: --reader-only needs $REPORT" >&2; exit 1; }
	python3 - "$REPORT" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
i = s.find("\n## Reader\n")
open(p, "w").write(s if i < 0 else s[:i] + "\n")
PY
fi
[ $READER = 1 ] || exit 0

# ---- reader: libstrata-reader and `strata print` against babeltrace2 -----------
# bench/reader_bench.sh records its own trace (examples/workers) under $OUT and
# removes it; its table is appended to the report as the "Reader" section.
READER_ENV=""
[ $SMOKE = 1 ] && READER_ENV="READER_EVENTS=2000000 READER_REPS=1 READER_BT2_REPS=1 READER_BIG_GB=0"
if [ -f "$BUILD/CMakeCache.txt" ]; then
	note "reader (bench/reader_bench.sh; babeltrace2 takes minutes)"
	# shellcheck disable=SC2086 # READER_ENV is a word list
	if reader_table=$(env $READER_ENV TMPDIR="$OUT" sh "$ROOT/bench/reader_bench.sh" \
		"$BUILD" 2>>"$LOG"); then
		printf '\n## Reader\n\n%s\n' "$reader_table" >>"$REPORT"
		note "appended the Reader table to $REPORT"
	else
		note "failed: reader (see $LOG)"
	fi
else
	note "skip: reader: $BUILD is not a configured build tree"
fi
