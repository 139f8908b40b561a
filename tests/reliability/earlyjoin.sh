#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Early join (issue 24, item 8): a program started as soon as the daemon's
# socket appears, while the daemon dumps the system's state, loses nothing:
# RUNS times, every event it logged is recorded.
set -euo pipefail
runs=$1
bin=$2
work=$3
. "$(dirname "$0")/common.sh"
rel_init earlyjoin "$bin" "$work"
export STRATA_RUNTIME_DIR=$work/run BURST_NO_SIGNALS=1
trap '"$strata" daemon --kill >/dev/null 2>&1 || true' EXIT

for i in $(seq "$runs"); do
	rm -rf t run
	"$strata" daemon -f -o t 2>d.err &
	for _ in $(seq 2000); do [ -S run/default/sock ] && break; sleep 0.001; done
	[ -S run/default/sock ] || fail "run $i: no socket: $(cat d.err)"
	n=$("$burst" 20000 2>b.err)
	"$strata" daemon --kill >/dev/null 2>>d.err || fail "run $i: daemon --kill: $(cat d.err)"
	wait
	info=$("$strata" info t 2>info.err) || fail "run $i: strata info: $(cat info.err)"
	ev=$(echo "$info" | sed -nE 's/^Events: *([0-9]+).*/\1/p')
	lost=$(echo "$info" | sed -nE 's/^Lost: *([0-9]+) events.*/\1/p')
	[ "$ev" = "$n" ] || fail "run $i: $ev recorded ($lost discarded) of $n logged: $(cat b.err)"
done
echo "earlyjoin: $runs programs started as the socket appeared: every event recorded"
