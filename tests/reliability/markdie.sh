#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A writer killed inside a two-phase event (out of line, or inline in
# the program's own code) as long as the committed one after it (issue 26, item 2; record.md, "Crash salvage"): salvage
# cuts out the event its mark names and keeps every committed one,
# embedded (the guardian) and under strata record; babeltrace2 reads it.
set -euo pipefail
bin=$1
work=$2
. "$(dirname "$0")/common.sh"
rel_init markdie "$bin" "$work"
markdie=$bin/tests/reliability/markdie
rel_killed_setup
n=300

# check TRACE WHAT ERRFILE
check() {
	babeltrace2 "$1" >bt 2>bt.err || fail "$2: babeltrace2: $(head -3 bt.err)"
	grep -v 'Tracer discarded' bt.err | grep -q . && fail "$2: babeltrace2: $(head -3 bt.err)"
	got=$(grep -c " 5:2: " bt || true)
	seqs=$(sed -nE 's/.* 5:2: .*w0 = (0x[0-9a-fA-F]+|[0-9]+).*/\1/p' bt | sort -u | wc -l)
	[ "$got" = "$n" ] && [ "$seqs" = "$n" ] ||
		fail "$2: $got events ($seqs numbers) of the $n committed behind the dead writer: $(grep -E 'salvag|packet' "$3" | head -3)"
	grep -q " 5:3: " bt && fail "$2: the event in flight is in the trace"
	[ "$(grep -c " 5:1: " bt || true)" = 2 ] || fail "$2: the writer's committed events are missing"
	echo "markdie: $2: all $n events behind the dead writer kept, its event in flight cut out"
}

for how in slow inline; do
	echo "markdie: the writer stops in its $how event"
	rel_killed_both "$markdie" check "$n" "$how"
done
