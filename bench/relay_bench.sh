#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Streaming benchmark on loopback (issue 25, docs/relay.md "Benchmark"):
#   strata-local   strata record -o DIR -- bench_oob log RATE MS
#   strata-relay   the same, streamed with --relay to a `strata relay`
#   strata-zstd    the same with --relay-zstd (level 1)
#   strata-fsync   strata-relay's, to a second relay run with --fsync
#   strata-local-flat, strata-relay-flat   the program flat out (as
#                  bench_lttng is), not paced: the throughput ceiling
#   strata-relay-stall   strata-relay's through tests/relay/proxy.py,
#                  which stalls the stream for RB_STALL_S (1) once 8 MB
#                  have passed: the paced program's own loop time beside
#                  strata-relay's says whether the stall slowed it
#   lttng-relayd   bench_lttng (LTTng-UST, same event count) in a session
#                  created with --set-url=net://127.0.0.1 to Debian's
#                  lttng-relayd
# then the live latency through the relay (relay_bench.py latency).
# The modes are interleaved over REPS repetitions so that load from
# others on the machine falls on all of them alike; the summary gives
# medians and ratios of this one run.
#
# usage: bench/relay_bench.sh BIN_DIR OUT   (BIN_DIR: a build directory
#   configured with -DSTRATA_BENCH=ON). Knobs (environment):
#   RB_REPS (3), RB_RATE events/s (2000000), RB_MS (2000), RB_NO_LTTNG=1.
set -u
BIN=${1:?usage: relay_bench.sh BIN_DIR OUT}
OUT=${2:?usage: relay_bench.sh BIN_DIR OUT}
REPS=${RB_REPS:-3} RATE=${RB_RATE:-2000000} MS=${RB_MS:-2000}
HERE=$(cd "$(dirname "$0")" && pwd)
STRATA=$BIN/src/cli/strata OOB=$BIN/bench/bench_oob LTT=$BIN/bench/bench_lttng
RUNSTAT=$HERE/relay_bench.py
N=$((RATE * MS / 1000))
for f in "$STRATA" "$OOB"; do
	[ -x "$f" ] || { echo "relay_bench: $f missing: build with -DSTRATA_BENCH=ON" >&2; exit 1; }
done
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
RAW=$OUT/raw.txt LOG=$OUT/log.txt
: >"$RAW"; : >"$LOG"
RELAY_PID="" FRELAY_PID="" LRELAY_PID="" SESSIOND_PID="" SESSION="" PROXY_PID=""

cleanup() {
	[ -z "$SESSION" ] || lttng destroy "$SESSION" >/dev/null 2>&1
	[ -z "$RELAY_PID" ] || kill "$RELAY_PID" 2>/dev/null
	[ -z "$FRELAY_PID" ] || kill "$FRELAY_PID" 2>/dev/null
	[ -z "$LRELAY_PID" ] || kill "$LRELAY_PID" 2>/dev/null
	[ -z "$SESSIOND_PID" ] || kill "$SESSIOND_PID" 2>/dev/null
	[ -z "$PROXY_PID" ] || kill "$PROXY_PID" 2>/dev/null
	wait 2>/dev/null
}
trap cleanup EXIT

# utime+stime of PIDS in seconds (0 for a pid that is gone)
cpu_s() {
	local p t=0 tck
	tck=$(getconf CLK_TCK)
	for p in "$@"; do
		[ -r "/proc/$p/stat" ] || continue
		t=$((t + $(sed 's/.*) //' "/proc/$p/stat" | awk '{ print $12 + $13 }')))
	done
	awk -v t="$t" -v k="$tck" 'BEGIN { printf "%.2f", t / k }'
}
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
dir_bytes() { du -sb "$1" 2>/dev/null | cut -f1; }
# "recorded lost" from strata info: events, and discarded + packets' events
info_counts() {
	local info rec disc
	info=$("$STRATA" info "$1" 2>>"$LOG") || { echo "0 -"; return; }
	rec=$(sed -n 's/^Events: *\([0-9]*\).*/\1/p' <<<"$info")
	disc=$(sed -n 's/^Lost: *\([0-9]*\) events discarded.*/\1/p' <<<"$info")
	echo "${rec:-0} ${disc:-0}"
}

{
	echo "date=$(date -u +%FT%TZ) host=$(uname -r) cpus=$(nproc)"
	echo "load=$(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared: others build and test meanwhile)"
	echo "reps=$REPS rate=$RATE ms=$MS events=$N"
	echo "lttng=$(lttng --version 2>/dev/null | head -1) babeltrace2=$(babeltrace2 --version 2>/dev/null | head -1)"
} | tee "$OUT/env.txt"

# ---- strata relay ------------------------------------------------------------
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$OUT/token"
chmod 600 "$OUT/token"
# start_relay NAME [OPTIONS]: a strata relay writing to OUT/NAME on a
# free port; its pid and port in R_PID and R_PORT
start_relay() {
	local name=$1
	shift
	rm -rf "${OUT:?}/$name"
	"$STRATA" relay --listen 127.0.0.1:0 -o "$OUT/$name" --token-file "$OUT/token" "$@" \
		2>"$OUT/$name.log" &
	R_PID=$! R_PORT=""
	for _ in $(seq 100); do
		R_PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$OUT/$name.log")
		[ -n "$R_PORT" ] && return
		sleep 0.05
	done
	echo "relay_bench: strata relay did not start: $(cat "$OUT/$name.log")" >&2
	exit 1
}
start_relay relay
RELAY_PID=$R_PID PORT=$R_PORT
# the same, acknowledging only what is on disk (docs/relay.md §3); its
# directory is OUT's file system: fsync costs nothing on a tmpfs
start_relay relay-fsync --fsync
FRELAY_PID=$R_PID FPORT=$R_PORT

# ---- LTTng: sessiond and relayd of our own (LTTNG_HOME under OUT) --------------
LTTNG_OK=0
if [ "${RB_NO_LTTNG:-0}" != 1 ] && [ -x "$LTT" ] && command -v lttng-relayd >/dev/null &&
	command -v babeltrace2 >/dev/null; then
	export LTTNG_HOME=$OUT/lttng-home
	mkdir -p "$LTTNG_HOME"
	# ports of our own: 5344 is both lttng-relayd's live port and strata relay's default
	LP=${RB_LTTNG_PORT:-15342}
	rm -rf "$OUT/lttng-relayd"
	lttng-relayd -o "$OUT/lttng-relayd" -C "tcp://127.0.0.1:$LP" -D "tcp://127.0.0.1:$((LP + 1))" \
		-L "tcp://127.0.0.1:$((LP + 2))" >>"$LOG" 2>&1 &
	LRELAY_PID=$!
	if lttng list >/dev/null 2>&1; then
		echo "relay_bench: an lttng-sessiond already answers for $LTTNG_HOME" >&2
	else
		lttng-sessiond --daemonize --no-kernel >>"$LOG" 2>&1
	fi
	sleep 0.5
	pidf=$LTTNG_HOME/.lttng/lttng-sessiond.pid
	[ "$(id -u)" = 0 ] && pidf=/var/run/lttng/lttng-sessiond.pid
	SESSIOND_PID=$(cat "$pidf" 2>/dev/null)
	if [ -n "$SESSIOND_PID" ] && kill -0 "$LRELAY_PID" 2>/dev/null; then
		LTTNG_OK=1
	else
		echo "relay_bench: LTTng not started (log: $LOG); its mode is skipped" >&2
	fi
else
	echo "relay_bench: LTTng mode skipped (RB_NO_LTTNG, bench_lttng, lttng-relayd or babeltrace2 missing)" >&2
fi

# ---- one run of strata record -------------------------------------------------
strata_run() {
	local mode=$1 rep=$2 dir=$OUT/t-$1-$2 copy r0 st logged rec disc crec
	local rpid=$RELAY_PID rdir=$OUT/relay
	local -a extra=()
	case $mode in
	strata-relay) extra=(--relay "127.0.0.1:$PORT" --token-file "$OUT/token") ;;
	strata-zstd) extra=(--relay "127.0.0.1:$PORT" --token-file "$OUT/token" --relay-zstd) ;;
	strata-fsync)
		extra=(--relay "127.0.0.1:$FPORT" --token-file "$OUT/token")
		rpid=$FRELAY_PID rdir=$OUT/relay-fsync
		;;
	strata-relay-flat) extra=(--relay "127.0.0.1:$PORT" --token-file "$OUT/token") ;;
	strata-relay-stall)
		python3 "$RUNSTAT" stall "$PORT" $((8 << 20)) "${RB_STALL_S:-1}" >"$OUT/proxy.out" &
		PROXY_PID=$!
		local pport=""
		for _ in $(seq 100); do
			pport=$(sed -n 's/^port=//p' "$OUT/proxy.out")
			[ -n "$pport" ] && break
			sleep 0.05
		done
		extra=(--relay "127.0.0.1:$pport" --token-file "$OUT/token")
		;;
	esac
	local rate=$RATE
	case $mode in *-flat) rate=flat ;; esac
	rm -rf "$dir"
	r0=$(cpu_s "$rpid")
	st=$(python3 "$RUNSTAT" run -- "$STRATA" record -o "$dir" "${extra[@]}" -- \
		"$OOB" log "$rate" "$MS" 2>"$OUT/last.err" | tee "$OUT/last.out" | grep '^self_s=')
	cat "$OUT/last.err" >>"$LOG"
	logged=$(sed -n 's/^OOB_LOOP .*logged=\([0-9]*\).*/\1/p' "$OUT/last.out")
	# the program's own time in its logging loop (paced: MS when unhurt)
	local loop_ms
	loop_ms=$(sed -n 's/^OOB_LOOP .*loop_ns=\([0-9]*\).*/\1/p' "$OUT/last.out")
	loop_ms=$(awk -v n="${loop_ms:-0}" 'BEGIN { printf "%.0f", n / 1e6 }')
	read -r rec disc <<<"$(info_counts "$dir")"
	local extra_kv=""
	if [ "${mode#strata-local}" = "$mode" ]; then
		# the copy is complete when the relay has removed its session marker
		copy=$(find "$rdir" -maxdepth 2 -name "t-$mode-$rep" -type d | head -1)
		for _ in $(seq 200); do
			[ -n "$copy" ] && [ ! -e "$copy/.relay-session" ] && break
			sleep 0.05
			copy=$(find "$rdir" -maxdepth 2 -name "t-$mode-$rep" -type d | head -1)
		done
		read -r crec _ <<<"$(info_counts "$copy")"
		# the sender's own count of what it wrote to the socket, and of packets lost
		extra_kv="relay_s=$(sub "$(cpu_s "$rpid")" "$r0")"
		extra_kv+=" wire_b=$(sed -n 's/.*(\([0-9]*\) on the wire).*/\1/p' "$OUT/last.err")"
		extra_kv+=" pkts_lost=$(sed -n 's/.*packets sent, \([0-9]*\) lost.*/\1/p' "$OUT/last.err")"
		extra_kv+=" copy_rec=$crec copy_lost=$((${logged:-0} - crec))"
		rm -rf "$copy"
	fi
	if [ -n "$PROXY_PID" ]; then
		# the proxy says how often it stalled the stream (SIGTERM)
		kill "$PROXY_PID" 2>/dev/null
		wait "$PROXY_PID" 2>/dev/null
		PROXY_PID=""
		extra_kv+=" $(sed -n 's/^stalls=/stalls=/p' "$OUT/proxy.out" | tr '\n' ' ')"
	fi
	local wall sender program
	wall=${st##*wall_s=} sender=${st%% child_s=*} sender=${sender#self_s=}
	program=${st#*child_s=} program=${program%% *}
	echo "ROW mode=$mode rep=$rep logged=${logged:-0} recorded=$rec discarded=$disc" \
		"lost=$((${logged:-0} - rec)) wall_s=$wall sender_s=$sender" \
		"evps=$(awk -v n="$rec" -v w="$wall" 'BEGIN { printf "%.0f", n / w }')" \
		"mbps=$(awk -v b="$(dir_bytes "$dir")" -v w="$wall" 'BEGIN { printf "%.1f", b / w / 1e6 }')" \
		"$extra_kv program_s=$program loop_ms=$loop_ms" | tee -a "$RAW"
	rm -rf "$dir"
}

# ---- one run of LTTng streamed to lttng-relayd -----------------------------------
lttng_run() {
	local rep=$1 r0 s0 t0 t1 out stop logged disc rec copy bytes wall
	SESSION=rb-$rep-$$
	{
		lttng create "$SESSION" --set-url="net://127.0.0.1:$LP:$((LP + 1))" &&
			lttng enable-channel -u -s "$SESSION" --subbuf-size=1M --num-subbuf=4 ch &&
			lttng enable-event -u -s "$SESSION" -c ch strata_bench:ev &&
			lttng start "$SESSION"
	} >>"$LOG" 2>&1 || { echo "relay_bench: lttng session setup failed (see $LOG)" >&2; return; }
	# the consumer daemons are the sessiond's children, started with the first session
	local -a pids
	read -ra pids <<<"$SESSIOND_PID $(pgrep -P "$SESSIOND_PID" | tr '\n' ' ')"
	echo "lttng rep $rep: sessiond and consumerd pids: ${pids[*]}" >>"$LOG"
	r0=$(cpu_s "$LRELAY_PID") s0=$(cpu_s "${pids[@]}")
	t0=$(date +%s.%N)
	# bench_lttng logs a tenth more as warm-up: N events in all
	out=$(BENCH_EVENTS=$((N * 10 / 11)) BENCH_REPS=1 "$LTT" enabled 1 2>>"$LOG")
	stop=$(lttng stop "$SESSION" 2>&1)
	echo "$stop" >>"$LOG"
	lttng destroy "$SESSION" >>"$LOG" 2>&1
	t1=$(date +%s.%N)
	SESSION=""
	logged=$(sed -n 's/^LOGGED .*logged=\([0-9]*\).*/\1/p' <<<"$out")
	disc=$(sed -n 's/.*Warning: \([0-9]*\) events were discarded.*/\1/p' <<<"$stop")
	copy=$(find "$OUT/lttng-relayd" -maxdepth 2 -type d -name "rb-$rep-$$*" | head -1)
	rec=$(babeltrace2 "$copy" --component=sink.utils.counter 2>>"$LOG" |
		awk '/Event messages/ { n = $1 } END { print n + 0 }')
	bytes=$(dir_bytes "$copy")
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	echo "ROW mode=lttng-relayd rep=$rep logged=${logged:-0} recorded=$rec discarded=${disc:-0}" \
		"lost=$((${logged:-0} - rec)) wall_s=$wall sender_s=$(sub "$(cpu_s "${pids[@]}")" "$s0")" \
		"evps=$(awk -v n="$rec" -v w="$wall" 'BEGIN { printf "%.0f", n / w }')" \
		"mbps=$(awk -v b="$bytes" -v w="$wall" 'BEGIN { printf "%.1f", b / w / 1e6 }')" \
		"relay_s=$(sub "$(cpu_s "$LRELAY_PID")" "$r0")" \
		"copy_rec=$rec copy_lost=$((${logged:-0} - rec))" | tee -a "$RAW"
	rm -rf "$copy"
}

for rep in $(seq 0 $((REPS - 1))); do
	strata_run strata-local "$rep"
	strata_run strata-relay "$rep"
	strata_run strata-zstd "$rep"
	strata_run strata-fsync "$rep"
	strata_run strata-local-flat "$rep"
	strata_run strata-relay-flat "$rep"
	strata_run strata-relay-stall "$rep"
	[ $LTTNG_OK = 1 ] && lttng_run "$rep"
done
# live latency through the relay: slowlog's ticks, followed on the relay's copy
SLOWLOG=$BIN/tests/reader/slowlog
if [ -x "$SLOWLOG" ]; then
	# at --live=25, and at the default period (100 ms) a user gets
	for rep in $(seq 0 $((REPS - 1))); do
		for live in 25 default; do
			RB_LIVE=$live python3 "$RUNSTAT" latency "$STRATA" "$SLOWLOG" "$PORT" \
				"$OUT/token" "$OUT/relay" "$OUT" | tee -a "$RAW"
		done
	done
else
	echo "relay_bench: $SLOWLOG missing (a build with tests): live latency not measured" >&2
fi
python3 "$RUNSTAT" summary "$RAW" | tee "$OUT/summary.txt"
