#!/bin/sh
# SPDX-License-Identifier: MIT
# The trace clock option: CLOCK_MONOTONIC traces (in-process and under strata record) are on the wall clock, and the TSC default still is.
set -eu
bin=$1 work=$2
strata=$bin/src/cli/strata
workers=$bin/examples/workers
rm -rf "$work" && mkdir -p "$work"
fail() { echo "clock: FAIL: $*" >&2; exit 1; }

# The trace's first and last times as epoch seconds, and its clock rate.
span() { "$strata" info "$1" | python3 -c '
import sys, datetime
for l in sys.stdin:
    if l.startswith("Clock:"):
        hz = l.split(",")[1].split()[0]
    if l.startswith("Time span:"):
        a, b = l.split()[2], l.split()[4]
        t = lambda s: datetime.datetime.strptime(s[:26], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
        print(hz, int(t(a)), int(t(b)))'; }

check() { # trace, clock: mono|tsc
	now=$(date +%s)
	set -- "$1" "$2" $(span "$1")
	[ "$2" != mono ] || [ "$3" = 1000000000 ] || fail "$1: clock at $3 Hz, not CLOCK_MONOTONIC's"
	# the metadata says which clock, and why (format.md §5); info shows it
	desc=$("$strata" info "$1" | sed -n 's/^Clock: .* Hz; //p')
	case "$2:$desc" in
	"mono:CLOCK_MONOTONIC (STRATA_CLOCK=mono)") ;;
	"default:x86 TSC, invariant ("*")" | "default:CLOCK_MONOTONIC ("*")") ;;
	*) fail "$1: clock description '$desc' for the $2 clock" ;;
	esac
	[ $((now - $4)) -lt 30 ] && [ $(($4 - now)) -lt 30 ] && [ $(($5 - $4)) -lt 30 ] ||
		fail "$1: time span $4 .. $5 is not around now ($now)"
	if command -v babeltrace2 >/dev/null; then
		babeltrace2 "$1" >/dev/null 2>"$work/bt.err" && [ ! -s "$work/bt.err" ] ||
			fail "$1: babeltrace2: $(head -2 "$work/bt.err")"
	fi
}

STRATA_CLOCK=mono STRATA_OUTPUT=$work/inproc "$workers" 2 2000 >/dev/null 2>&1 || fail "workers failed"
check "$work/inproc" mono
"$strata" record --clock mono -o "$work/rec" -- "$workers" 2 2000 >/dev/null 2>&1 || fail "record failed"
check "$work/rec" mono
"$strata" record -o "$work/default" -- "$workers" 2 2000 >/dev/null 2>&1 || fail "record failed"
check "$work/default" default
if "$strata" record --clock sundial -- true 2>"$work/err"; then fail "--clock sundial accepted"; fi
[ "$(wc -l <"$work/err")" = 1 ] && grep -q 'use tsc or mono' "$work/err" || fail "no clear error: $(cat "$work/err")"
echo "clock: OK"
