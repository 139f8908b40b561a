#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The guardian starts from a STRATA_TOOL given relative to the program's
# directory (it runs in "/", so the library makes the path absolute):
# no "no crash protection" line, and every event in the trace.
set -euo pipefail
bin=$2
work=$3
. "$(dirname "$0")/common.sh"
rel_init guardtool "$bin" "$work"
logn=$bin/tests/reliability/logn
tool=$(realpath --relative-to=. "$strata")
case $tool in /*) fail "could not name the tool relative to $work" ;; esac
STRATA_GUARD=1 STRATA_TOOL=$tool STRATA_OUTPUT=$work/t "$logn" 1000 2>prog.err ||
	fail "the program failed: $(cat prog.err)"
if grep -q "no crash protection" prog.err; then
	fail "STRATA_TOOL=$tool: $(cat prog.err)"
fi
n=$("$strata" info t | sed -n 's/^Events: *\([0-9]*\).*/\1/p')
[ "$n" = 1000 ] || fail "$n events in the trace, 1000 logged"
echo "guardtool: the guardian started from STRATA_TOOL=$tool; 1000 of 1000 events"
