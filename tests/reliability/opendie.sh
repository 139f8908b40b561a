#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A packet whose opener died inside its own reservation, after another
# thread of its CPU wrote events behind it (issue 26, item 2; record.md,
# "Crash salvage"): every one of those events is in the salvaged trace,
# embedded (the guardian) and under strata record; babeltrace2 reads it.
set -euo pipefail
bin=$1
work=$2
. "$(dirname "$0")/common.sh"
rel_init opendie "$bin" "$work"
opendie=$bin/tests/reliability/opendie
rel_killed_setup
n=300

# check TRACE WHAT ERRFILE
check() {
	babeltrace2 "$1" >bt 2>bt.err || fail "$2: babeltrace2: $(head -3 bt.err)"
	grep -v 'Tracer discarded' bt.err | grep -q . && fail "$2: babeltrace2: $(head -3 bt.err)"
	got=$(grep -c " 5:2: " bt || true)
	[ "$got" = "$n" ] || fail "$2: $got of the $n events written behind the dead opener: $(grep -E 'salvag|packet' "$3" | head -3)"
	seqs=$(sed -nE 's/.* 5:2: .*w0 = (0x[0-9a-fA-F]+|[0-9]+).*/\1/p' bt | sort -u | wc -l)
	[ "$seqs" = "$n" ] || fail "$2: $seqs distinct numbers of $n"
	grep -q " 5:1: .*w0 = 0" bt || fail "$2: the opener's first event is missing"
	grep -q 'salvaged without its header and first event' "$3" ||
		fail "$2: the salvage is not said: $(grep -E 'salvag|packet' "$3" | head -3)"
	echo "opendie: $2: all $n events behind the dead opener salvaged, its own event dropped and said"
}

rel_killed_both "$opendie" check "$n"
