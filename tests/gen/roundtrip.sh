#!/bin/sh
# SPDX-License-Identifier: MIT
# Round trip: run PROG with STRATA_OUTPUT set, read the trace with babeltrace2, compare every rt:* event with EXPECTED.
# usage: roundtrip.sh PROG EXPECTED [STRATA_BIN COMPARE_BT2_PY]
# With the last two, strata's reader must show the same events, field for
# field, as babeltrace2 (tests/reader/compare_bt2.py).
set -eu
prog=$1
expected=$2
strata=${3:-}
compare=${4:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

STRATA_OUTPUT="$tmp/trace" "$prog"
babeltrace2 "$tmp/trace" >"$tmp/bt.txt"
# Keep the event name and its payload: drop the timestamp, the process
# and the packet context ({ cpu_id = ... }); show long runs of 'a' as a<N>.
perl -ne 'next unless /\s(rt:\w+): (.*)$/;
	my ($n, $r) = ($1, $2);
	$r =~ s/^\{ cpu_id = [^}]*\}(, )?//;
	$r =~ s/(a{100,})/"a<" . length($1) . ">"/ge;
	print $r eq "" ? "$n\n" : "$n: $r\n";' "$tmp/bt.txt" >"$tmp/got.txt"
if ! diff -u "$expected" "$tmp/got.txt"; then
	echo "roundtrip: babeltrace2 output differs from $expected" >&2
	exit 1
fi
if [ -n "$compare" ]; then
	python3 "$compare" "$strata" "$tmp/trace" ||
		{ echo "roundtrip: strata and babeltrace2 read the trace differently" >&2; exit 1; }
fi
