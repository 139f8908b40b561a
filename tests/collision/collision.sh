#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Same event ids, different vocabularies: never decoded with each other's descriptions.
set -euo pipefail
bin=$1 work=$2 strata=$3
fail() { echo "collision: FAIL: $*" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"

# Two processes recording into one trace at the same time.
STRATA_OUTPUT="$work/two" "$bin/proc_alpha" & a=$!
STRATA_OUTPUT="$work/two" "$bin/proc_beta" & b=$!
wait $a && wait $b || fail "a program failed"
babeltrace2 "$work/two" >"$work/bt2" 2>"$work/bt.err"
[ -s "$work/bt.err" ] && fail "babeltrace2: $(head -2 "$work/bt.err")"
[ "$(grep -c ' alpha:x: .*{ a = ' "$work/bt2")" = 1000 ] || fail "alpha's events not all decoded as alpha:x"
[ "$(grep -c ' beta:y: .*{ b = [0-9]*, s_len = [0-9]*, s = "from beta"' "$work/bt2")" = 1000 ] ||
	fail "beta's events not all decoded as beta:y"
[ "$("$strata" print "$work/two" --event 'beta:*' | grep -c 'b=.* s=from beta')" = 1000 ] ||
	fail "strata print does not decode beta's events as beta:y"

# One process, three libraries.
STRATA_OUTPUT="$work/one" STRATA_VERBOSE=1 "$bin/oneproc" "$bin/libcoll_beta.so" 2>"$work/one.err" || fail "oneproc failed: $(cat "$work/one.err")"
grep -q 'beta:y has the id 5:1 of alpha:x: not recorded' "$work/one.err" || fail "no report of the refused vocabulary: $(cat "$work/one.err")"
babeltrace2 "$work/one" >"$work/bt1" 2>"$work/bt.err"
[ -s "$work/bt.err" ] && fail "babeltrace2: $(head -2 "$work/bt.err")"
[ "$(grep -c ' alpha:x: ' "$work/bt1")" = 202 ] || fail "expected 202 alpha:x events, got $(grep -c ' alpha:x: ' "$work/bt1")"
grep -v ' strata:' "$work/bt1" | grep -q 'beta' && fail "beta's events reached the trace (they would be misread as alpha:x)"
grep -qE '\{ a = (1|2) \}' "$work/bt1" && fail "alpha:x was logged while disabled"
grep -q '{ a = 4000 }' "$work/bt1" || fail "strata_enable did not reach the second copy of alpha:x"
echo "collision: OK"
