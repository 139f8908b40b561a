#!/bin/sh
# SPDX-License-Identifier: MIT
# Round trip: run PROG with STRATA_OUTPUT set, read the trace with babeltrace2, compare every rt:* and pad:* event with EXPECTED.
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
perl -ne 'next unless /\s((?:rt|pad):\w+): (.*)$/;
	my ($n, $r) = ($1, $2);
	$r =~ s/^\{ cpu_id = [^}]*\}(, )?//;
	$r =~ s/(a{100,})/"a<" . length($1) . ">"/ge;
	print $r eq "" ? "$n\n" : "$n: $r\n";' "$tmp/bt.txt" >"$tmp/got.txt"
if ! diff -u "$expected" "$tmp/got.txt"; then
	echo "roundtrip: babeltrace2 output differs from $expected" >&2
	exit 1
fi
# babeltrace2's CTF writer copies the trace (it aborts on an integer of
# 24, 40, 48 or 56 bits, docs/compact.md) and reads the copy as the original.
if ! babeltrace2 "$tmp/trace" --component sink.ctf.fs \
		--params "path=\"$tmp/copy\"" >"$tmp/copy.log" 2>&1; then
	cat "$tmp/copy.log" >&2
	echo "roundtrip: babeltrace2 --component sink.ctf.fs failed" >&2
	exit 1
fi
babeltrace2 "$tmp/copy" >"$tmp/bt-copy.txt"
if ! diff -u "$tmp/bt.txt" "$tmp/bt-copy.txt"; then
	echo "roundtrip: babeltrace2 reads its copy differently from the trace" >&2
	exit 1
fi
if [ -n "$compare" ]; then
	python3 "$compare" "$strata" "$tmp/trace" ||
		{ echo "roundtrip: strata and babeltrace2 read the trace differently" >&2; exit 1; }
fi
