#!/bin/sh
# SPDX-License-Identifier: MIT
# The mask fallback (STRATA_PATCH=0) records the same events as patched sites: each program is traced in both modes, printed, and compared.
# usage: fallback.sh STRATA_CLI WORK PROG...
set -eu
strata=$1
work=$2
shift 2
fail() { echo "fallback: FAIL: $*" >&2; exit 1; }
mkdir -p "$work"
for prog in "$@"; do
	name=$(basename "$prog")
	for mode in 1 0; do
		rm -rf "$work/$name-$mode"
		STRATA_PATCH=$mode STRATA_VERBOSE=1 STRATA_OUTPUT="$work/$name-$mode" "$prog" \
			>/dev/null 2>"$work/$name-$mode.err" || fail "$name (STRATA_PATCH=$mode) failed: $(tail -3 "$work/$name-$mode.err")"
		# the mode the process says it used
		want=patched; [ $mode = 0 ] && want=mask
		grep -q "tracepoints $want" "$work/$name-$mode.err" ||
			fail "$name (STRATA_PATCH=$mode): no 'tracepoints $want' line: $(grep tracepoints "$work/$name-$mode.err")"
		# events, their names and fields, in order: no time, cpu, pid
		"$strata" print "$work/$name-$mode" 2>/dev/null |
			sed -E 's/^[0-9.]+ \[[0-9]+\] U [0-9]+\/[0-9]+ //' >"$work/$name-$mode.txt"
	done
	[ -s "$work/$name-1.txt" ] || fail "$name: no event recorded"
	diff -u "$work/$name-1.txt" "$work/$name-0.txt" >"$work/$name.diff" ||
		fail "$name: the traces differ: $(head -20 "$work/$name.diff")"
	echo "fallback: $name: $(wc -l <"$work/$name-1.txt") events, the same in both modes"
done
