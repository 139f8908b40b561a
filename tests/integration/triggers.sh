#!/bin/sh
# SPDX-License-Identifier: MIT
# Start/stop triggers: the trace holds trig:begin, the events between, trig:end — nothing before or after, in any thread.
set -eu
bin=$1 work=$2
strata=$bin/src/cli/strata
prog=$bin/tests/integration/triggers
rm -rf "$work" && mkdir -p "$work"
fail() { echo "triggers: FAIL: $*" >&2; exit 1; }

check() { # trace, begin, end
	"$strata" print --format csv "$1" | tail -n +2 | cut -d, -f6- >"$work/got" ||
		fail "strata print failed"
	{
		echo "trig:begin,begin at $2"
		i=$2
		while [ "$i" -le "$3" ]; do
			echo "trig:tick,tick $i"
			if [ "$i" = $(($2 + 1)) ]; then
				p=1000
				while [ $p -lt 1100 ]; do echo "other:ping,ping $p"; p=$((p + 1)); done
			fi
			i=$((i + 1))
		done
		echo "trig:end,end at $3"
	} >"$work/want"
	cmp -s "$work/want" "$work/got" ||
		fail "$1: events differ from the expected ones: $(diff "$work/want" "$work/got" | head -5)"
}

# in-process consumer
STRATA_OUTPUT=$work/inproc STRATA_START_ON='trig:begin' STRATA_STOP_ON='trig:end' \
	"$prog" 1000 300 700 || fail "program failed"
check "$work/inproc" 300 700

# strata record, with globs
"$strata" record -o "$work/rec" --start-on 'trig:beg*' --stop-on 'trig:end' -- \
	"$prog" 1000 10 20 2>"$work/rec.err" || fail "strata record failed: $(cat "$work/rec.err")"
check "$work/rec" 10 20

# no stop: everything from the start on
STRATA_OUTPUT=$work/nostop STRATA_START_ON='trig:begin' "$prog" 50 40 1000 || fail "program failed"
n=$("$strata" print "$work/nostop" | grep -c 'trig:tick')
[ "$n" = 10 ] || fail "without a stop trigger: $n ticks, 10 expected"
# -e applies from an event's first call (registration time), not ~10 ms
# later: a program that logs everything within a millisecond
"$strata" record -e 'trig:tick' -o "$work/e" -- "$prog" 1000 2000 3000 2>"$work/e.err" ||
	fail "strata record -e failed: $(cat "$work/e.err")"
n=$("$strata" print "$work/e" | grep -c 'trig:tick' || true)
m=$("$strata" print "$work/e" | wc -l)
[ "$n" = 1000 ] && [ "$m" = 1000 ] || fail "record -e trig:tick: $n ticks of 1000, $m events in all"
if command -v babeltrace2 >/dev/null; then
	babeltrace2 "$work/inproc" >/dev/null 2>"$work/bt.err" && [ ! -s "$work/bt.err" ] ||
		fail "babeltrace2: $(head -2 "$work/bt.err")"
fi
echo "triggers: OK"
