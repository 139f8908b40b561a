#!/bin/sh
# SPDX-License-Identifier: MIT
# libstrata-reader and `strata print` side by side with babeltrace2 on one large trace; prints a markdown table.
#
# usage: bench/reader_bench.sh BUILD_DIR [TRACE]
#   BUILD_DIR  a configured strata tree; the targets strata-cli,
#              strata-reader_static and workers are built there if missing
#   TRACE      trace to read; when absent it is recorded there by the real
#              producer: examples/workers (libstrata, 2 threads, 6 event
#              types) logging READER_EVENTS events (default 50000000)
# Environment knobs [defaults]:
#   READER_EVENTS [50000000]  events of the generated trace (>= 50M for the issue's targets)
#   READER_REPS [5]           runs of each strata measure (median, min, max)
#   READER_BT2_REPS [1]       runs of each babeltrace2 measure (0: skip babeltrace2)
#   READER_BIG_GB [4]         size of the seek trace (0: no seek measure); it is
#                             generated only if twice its size is free on disk
#   READER_SEEKS [1000]       random seeks
#   READER_KEEP [0]           1: keep generated traces
# Progress goes to stderr, the table to stdout.
set -eu
build=$(cd "${1:?usage: reader_bench.sh BUILD_DIR [TRACE]}" && pwd)
tmpd=${TMPDIR:-/tmp}
trace=${2:-$tmpd/strata-reader-bench}
nev=${READER_EVENTS:-50000000}
reps=${READER_REPS:-5}
bt2reps=${READER_BT2_REPS:-1}
biggb=${READER_BIG_GB:-4}
nseek=${READER_SEEKS:-1000}
keep=${READER_KEEP:-0}
src=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/reader_bench
strata=$build/src/cli/strata
workers=$build/examples/workers
work=$(mktemp -d "$tmpd/reader-bench.XXXXXX")
made=""
cleanup() {
	rm -rf "$work"
	[ "$keep" = 1 ] || [ -z "$made" ] || rm -rf $made
}
trap cleanup EXIT
note() { echo "== $*" >&2; }

for t in strata-cli strata-reader_static workers; do
	cmake --build "$build" --target "$t" -j "$(nproc)" > "$work/build.log" 2>&1 ||
		{ cat "$work/build.log" >&2; echo "reader_bench.sh: cannot build $t" >&2; exit 1; }
done
${CC:-cc} -O2 -I"$src/include" "$src/bench/reader_bench.c" \
	"$build/src/reader/libstrata-reader.a" -o "$bin"

# record N events into DIR with the real producer (discards would make the
# count differ from N: every run reports the events it read)
record() {
	jobs=$(( ($2 + 4) / 5 )) # workers logs 5 events per job
	note "recording $(( jobs * 5 )) events with examples/workers into $1"
	STRATA_OUTPUT=$1 STRATA_PACKETS=256 "$workers" 2 "$jobs" > /dev/null 2> "$work/rec.log" ||
		{ cat "$work/rec.log" >&2; exit 1; }
}
gen="given"
if [ ! -d "$trace" ]; then
	record "$trace" "$nev"
	made="$made $trace"
	gen="recorded by examples/workers: libstrata, 2 threads, 2 streams"
fi
cat "$trace"/ust/*/cpu* > /dev/null # page cache warm for every reader

# measure TAG CMD...: one "TAG wall user+sys maxrss_kib" line; the output
# of a reader_bench decode must name the trace's event count and the
# checksum of every field that the first decode found (same events, same
# values, whatever the mode); other output is discarded
measure() {
	tag=$1
	shift
	case $tag in dec-*) out=$work/out ;; *) out=/dev/null ;; esac
	/usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" > "$out" 2> "$work/err" ||
		{ echo "reader_bench.sh: failed: $*" >&2; cat "$work/err" >&2; exit 1; }
	if [ "$out" != /dev/null ] && [ -n "${refsum:-}" ]; then
		got=$(sed -n 's/^decode-[a-z]*: \([0-9]*\) events.*checksum \([0-9a-f]*\).*/\1 \2/p' "$out")
		[ "$got" = "$n $refsum" ] || { echo "reader_bench.sh: $*: read '$got'," \
			"expected $n events, checksum $refsum" >&2; exit 1; }
	fi
	awk -v t="$tag" '{ printf "%s %s %.3f %s\n", t, $1, $2 + $3, $4 }' "$work/time" >> "$work/res"
}
# stats TAG N: "median (min-max)" in M events/s by wall time, then by CPU
# time, then the largest peak RSS in MiB
stats() {
	awk -v t="$1" -v n="$2" '$1 == t { w[++k] = $2; c[k] = $3; if ($4 > r) r = $4 }
	function sort(a, m,   i, j, x) { for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x } }
	function med(a, m) { return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
	END {
		if (!k) { print "n/a|n/a|n/a"; exit }
		sort(w, k); sort(c, k)
		if (w[1] < 0.05 || c[1] < 0.05) { print "n/a (under 0.05 s)|n/a|" r / 1024; exit }
		if (k > 1) printf "%.1f (%.1f-%.1f)|", n / med(w, k) / 1e6, n / w[k] / 1e6, n / w[1] / 1e6
		else printf "%.1f|", n / w[1] / 1e6
		printf "%.1f|%.0f\n", n / med(c, k) / 1e6, r / 1024
	}' "$work/res"
}
col() { echo "$1" | cut -d'|' -f"$2"; }

: > "$work/res"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
ref=$("$bin" decode "$trace" next)
n=$(echo "$ref" | sed -n 's/^decode-next: \([0-9]*\) events.*/\1/p')
refsum=$(echo "$ref" | sed -n 's/.*checksum \([0-9a-f]*\).*/\1/p')
[ -n "$n" ] && [ "$n" -gt 0 ] || { echo "reader_bench.sh: no events read from $trace" >&2; exit 1; }
# the listing has one line per event (checked once, untimed)
lines=$("$strata" print "$trace" | wc -l)
[ "$lines" -eq "$n" ] || { echo "reader_bench.sh: strata print wrote $lines lines for $n events" >&2; exit 1; }
size=$(du -sh "$trace" | cut -f1)
note "$n events, $size; strata runs x $reps"
i=0
while [ $i -lt "$reps" ]; do # interleaved, so drift hits all of them alike
	measure dec-batch "$bin" decode "$trace" batch
	measure dec-next "$bin" decode "$trace" next
	measure dec-read "$bin" decode "$trace" read
	measure dec-unord "$bin" decode "$trace" unordered
	measure print "$strata" print "$trace"
	measure stats "$strata" stats "$trace"
	i=$((i + 1))
done
have_bt2=0
if [ "$bt2reps" -gt 0 ] && command -v babeltrace2 > /dev/null; then
	have_bt2=1
	note "babeltrace2 x $bt2reps (slow: minutes)"
	i=0
	while [ $i -lt "$bt2reps" ]; do
		measure bt2-dec babeltrace2 -o dummy "$trace"
		measure bt2-print babeltrace2 "$trace"
		measure bt2-count babeltrace2 "$trace" -c sink.utils.counter
		i=$((i + 1))
	done
fi
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# seek over a big trace, recorded by the same producer, and the peak RSS of
# a full decode of it: memory follows the streams, not the bytes
seekline="skipped: READER_BIG_GB=0"
seekcold=""
bigrss=""
if [ "$biggb" -gt 0 ]; then
	big=$tmpd/strata-reader-bench-${biggb}g
	need_kb=$((biggb * 2 * 1024 * 1024))
	free_kb=$(df -Pk "$tmpd" | awk 'NR == 2 { print $4 }')
	if [ -d "$big" ] || [ "$free_kb" -ge "$need_kb" ]; then
		if [ ! -d "$big" ]; then
			# ~15.2 bytes per event in workers' traces (compact
			# headers, docs/compact.md): 4.3 GiB for 4
			record "$big" $((biggb * 1024 * 1024 * 1024 / 14 + 1))
			made="$made $big"
		fi
		note "seeks over $(du -sh "$big" | cut -f1)"
		# Cold: the trace's pages out of the page cache (the consumer
		# writes with O_DIRECT, so a trace just recorded is not there
		# either; the host may still cache the disk image). Then warm,
		# as every other figure here.
		python3 - "$big" <<'PY'
import os, sys
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        fd = os.open(os.path.join(root, f), os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
PY
		seekcold=$("$bin" seek "$big" "$nseek" | sed 's/^seek: //')
		cat "$big"/ust/*/cpu* "$big"/ust/*/index/* >/dev/null
		seekline=$("$bin" seek "$big" "$nseek" | sed 's/^seek: //')
		nbig=$("$bin" decode "$big" read | sed -n 's/^decode-read: \([0-9]*\) events.*/\1/p')
		refsum="" # another trace: its own count and checksum
		measure dec-big "$bin" decode "$big" read
		bigrss="$(col "$(stats dec-big "$nbig")" 3) MiB for $(du -sh "$big" | cut -f1) ($nbig events)"
	else
		seekline="skipped: ${biggb} GB twice does not fit in $tmpd ($((free_kb / 1024 / 1024)) GB free)"
	fi
fi

s_batch=$(stats dec-batch "$n")
s_next=$(stats dec-next "$n"); s_read=$(stats dec-read "$n"); s_unord=$(stats dec-unord "$n")
s_print=$(stats print "$n"); s_stats=$(stats stats "$n")
if [ $have_bt2 = 1 ]; then
	b_dec=$(stats bt2-dec "$n"); b_print=$(stats bt2-print "$n"); b_count=$(stats bt2-count "$n")
	ratio() { awk -v a="$(col "$1" 1 | cut -d' ' -f1)" -v b="$(col "$2" 1)" 'BEGIN { printf "%.1f x", a / b }'; }
	r_dec=$(ratio "$s_batch" "$b_dec"); r_read=$(ratio "$s_read" "$b_dec")
	r_print=$(ratio "$s_print" "$b_print"); r_stats=$(ratio "$s_stats" "$b_count")
else
	b_dec="n/a|n/a|n/a"; b_print="n/a|n/a|n/a"; b_count="n/a|n/a|n/a"
	r_dec=n/a; r_read=n/a; r_print=n/a; r_stats=n/a
fi

echo "Trace: $trace, $n events ($gen), $size;" \
	"$(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1);" \
	"$(babeltrace2 --version 2>/dev/null | head -1 || echo 'no babeltrace2')."
echo "strata: median (min-max) of $reps runs, babeltrace2: $bt2reps run(s); wall time, page cache warm;" \
	"load average $load0 before, $load1 after (other work on the machine skews every figure)."
echo
echo "| measure | strata | by CPU time | peak RSS | babeltrace2 | by CPU time | peak RSS | strata / babeltrace2 |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
echo "| full decode, merged by time, strata_iter_decode batches (M events/s) | $(col "$s_batch" 1) | $(col "$s_batch" 2) | $(col "$s_batch" 3) MiB | $(col "$b_dec" 1) | $(col "$b_dec" 2) | $(col "$b_dec" 3) MiB | $r_dec |"
echo "| full decode, merged by time, strata_iter_read + strata_event_fields per event (M events/s) | $(col "$s_read" 1) | $(col "$s_read" 2) | $(col "$s_read" 3) MiB | | | | $r_read |"
echo "| full decode, merged, strata_iter_next per event (M events/s) | $(col "$s_next" 1) | $(col "$s_next" 2) | $(col "$s_next" 3) MiB | | | | |"
echo "| full decode, stream after stream (STRATA_ITER_UNORDERED), strata_iter_decode batches (M events/s) | $(col "$s_unord" 1) | $(col "$s_unord" 2) | $(col "$s_unord" 3) MiB | | | | |"
echo "| text listing to /dev/null, \`strata print\` (M events/s) | $(col "$s_print" 1) | $(col "$s_print" 2) | $(col "$s_print" 3) MiB | $(col "$b_print" 1) | $(col "$b_print" 2) | $(col "$b_print" 3) MiB | $r_print |"
echo "| counts per event, CPU and thread, \`strata stats\` against babeltrace2's \`sink.utils.counter\` (whole command, M events/s) | $(col "$s_stats" 1) | $(col "$s_stats" 2) | $(col "$s_stats" 3) MiB | $(col "$b_count" 1) | $(col "$b_count" 2) | $(col "$b_count" 3) MiB | $r_stats |"
echo "| seek to a random time, then read the event (page cache warm) | $seekline | | | n/a | | | |"
if [ -n "$seekcold" ]; then
	echo "| the same, the trace's pages dropped from the page cache first | $seekcold | | | n/a | | | |"
fi
if [ -n "$bigrss" ]; then
	echo "| peak RSS of a full decode of the seek trace | $bigrss | | | | | | |"
fi
