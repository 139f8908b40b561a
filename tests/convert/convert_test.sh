#!/bin/sh
# SPDX-License-Identifier: MIT
# strata convert on two synthetic traces, whole and windowed: Chrome JSON that the Trace Event Format accepts, Paje that pajeng reads in strict mode.
# usage: convert_test.sh STRATA PYTHON WORKDIR [PJ_DUMP]
set -u
strata=$1
py=$2
work=$3/convert-work
pj=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
failed=0
fail() { echo "convert: FAIL: $*" >&2; failed=1; }

# user events of every field type with begin/end pairs (tests/reader), and
# kernel scheduling with named threads and intervals crossing 0.015..0.055
"$py" "$here/../reader/gen_trace.py" "$work/mixed" --events 3000 >/dev/null ||
	fail "gen_trace.py"
"$py" "$here/gen_sched.py" "$work/sched" || fail "gen_sched.py"

chrome() { # NAME TRACE CHECK-OPTIONS... : convert whole and windowed, check both
	name=$1 trace=$2
	shift 2
	for w in "" "--from 0.015 --to 0.055"; do
		out="$work/$name${w:+-window}.json"
		# shellcheck disable=SC2086
		"$strata" convert "$trace" $w --format chrome -o "$out" 2>"$work/err" ||
			{ cat "$work/err" >&2; fail "$name $w: convert -F chrome"; continue; }
		"$py" "$here/check_chrome.py" "$out" "$@" || fail "$name $w: chrome JSON"
	done
}
paje() { # NAME TRACE
	for w in "" "--from 0.015 --to 0.055"; do
		out="$work/$1${w:+-window}.paje"
		# shellcheck disable=SC2086
		"$strata" convert "$2" $w -F paje -o "$out" 2>"$work/err" ||
			{ cat "$work/err" >&2; fail "$1 $w: convert -F paje"; continue; }
		[ -n "$pj" ] || continue
		# strict mode: the field names of today's pajeng, time order,
		# every pop after its push
		"$pj" "$out" >"$out.dump" 2>"$work/pj.err" && ! [ -s "$work/pj.err" ] ||
			{ cat "$work/pj.err" >&2; fail "$1 $w: pj_dump (strict) refuses it"; }
	done
}

chrome mixed "$work/mixed" --hex-field addr --no-sched
chrome sched "$work/sched" --sched --thread-name 300=server --thread-name 301=worker-a \
	--thread-name 302=worker-b --hex-field where
paje mixed "$work/mixed"
paje sched "$work/sched"
if [ -n "$pj" ] && [ -s "$work/sched-window.paje.dump" ]; then
	d="$work/sched-window.paje.dump"
	# the interval of worker-b that spans the whole window, cut at both edges
	grep -q '^State, tid 302 worker-b, State, 0.015000, 0.055000' "$d" ||
		fail "paje: an interval open across the window is not shown"
	grep -q '^State, tid 301 worker-a, Scheduling, 0.040000, 0.045000, .*Uninterruptible' "$d" ||
		fail "paje: thread states"
	grep -q '^State, CPU 0, Running thread, 0.046000, 0.055000, .*worker-a 301' "$d" ||
		fail "paje: CPU tracks"
fi

# --to is the window's end only; the format has its own option
"$strata" convert "$work/sched" --from 0.01 --to 0.02 --to chrome -o "$work/x.json" \
	2>"$work/err" && fail "--to chrome accepted as a format"
grep -q -- '--format chrome' "$work/err" || fail "--to chrome: no hint at --format"
"$strata" convert "$work/sched" --to 0.02 --to 0.03 -F chrome -o "$work/x.json" \
	2>/dev/null && fail "--to given twice accepted"
"$strata" convert "$work/sched" -F svg -o "$work/x.json" 2>/dev/null && fail "-F svg accepted"
"$strata" convert --help | grep -q '%%' && fail "convert --help prints '%%'"

[ $failed = 0 ] && echo "convert: all checks passed"
exit $failed
