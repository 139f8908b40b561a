#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Blocking mode (issue 26, item 5): the burst of accounting.sh (without
# its signal handler: stress-block-* checks those) loses nothing, embedded
# and under strata record; with the consumer stopped,
# writers wait one timeout and then drop (counted): the program ends.
set -euo pipefail
runs=$1
bin=$2
work=$3
. "$(dirname "$0")/common.sh"
rel_init block "$bin" "$work"
export BURST_NO_SIGNALS=1
export STRATA_RUNTIME_DIR=$work/run

# recorded + discarded of trace $1, as "R D"
counts() {
	local info
	info=$("$strata" info "$1") || fail "strata info $1"
	echo "$(echo "$info" | sed -nE 's/^Events: *([0-9]+).*/\1/p') $(echo "$info" | sed -nE 's/^Lost: *([0-9]+) events.*/\1/p')"
}

for i in $(seq "$runs"); do
	rm -rf e r
	n=$(STRATA_MODE=block STRATA_OUTPUT=$work/e "$burst" 200000 2>e.err)
	read -r rec disc < <(counts e)
	[ "$disc" = 0 ] && [ "$rec" = "$n" ] || fail "embedded run $i: $rec recorded, $disc discarded of $n: $(cat e.err)"
	n=$("$strata" record --mode block -o r -- "$burst" 200000 2>r.err)
	read -r rec disc < <(counts r)
	[ "$disc" = 0 ] && [ "$rec" = "$n" ] || fail "record run $i: $rec recorded, $disc discarded of $n: $(cat r.err)"
done

# The consumer stopped (SIGSTOP of strata record) as soon as the command
# has started, before the burst (about 0.1 s of logging here since the
# consumer stopped walking events: a fixed 0.3 s came after its end): each
# ring waits 100 ms once, then drops until it moves.
rm -rf s started
"$strata" record --mode block -o s -- sh -c \
	': >started; STRATA_BLOCK_TIMEOUT_MS=100 "$0" 3000000 >n.out; echo done >done' "$burst" 2>s.err &
rec=$!
for _ in $(seq 400); do [ -e started ] && break; sleep 0.025; done # 10 s
[ -e started ] || fail "the command did not start under strata record: $(cat s.err)"
kill -STOP "$rec"
for _ in $(seq 600); do [ -e done ] && break; sleep 0.05; done # hang guard: 30 s
kill -CONT "$rec"
wait "$rec" || fail "strata record: $(cat s.err)"
[ -e done ] || fail "the program did not end while its consumer was stopped"
read -r rec disc < <(counts s)
n=$(cat n.out)
[ $((rec + disc)) = "$n" ] || fail "stalled: $rec recorded + $disc discarded != $n logged"
[ "$disc" -gt 0 ] || fail "stalled: nothing discarded: the consumer was never stopped long enough"
echo "block: $runs runs embedded and under strata record lost nothing; with the consumer stopped the program ended ($rec recorded + $disc discarded = $n logged)"
