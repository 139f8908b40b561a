#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The guardian starts from a STRATA_TOOL given relative to the program's
# directory (it runs in "/", so the library makes the path absolute):
# no "no crash protection" line, and every event in the trace. A tool
# that cannot be run is named with the reason (not "No child processes"),
# and the program records unprotected, all its events still there.
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

printf '\1\2\3\4' >notatool && chmod +x notatool # execve: ENOEXEC
STRATA_GUARD=1 STRATA_TOOL=notatool STRATA_OUTPUT=$work/u "$logn" 1000 2>prog.err ||
	fail "the program failed: $(cat prog.err)"
grep -q "no crash protection: the guardian (.*/notatool) did not start: Exec format error" prog.err ||
	fail "STRATA_TOOL=notatool: no clear reason: $(cat prog.err)"
STRATA_GUARD=1 STRATA_TOOL=nosuchtool STRATA_OUTPUT=$work/v "$logn" 10 2>prog.err ||
	fail "the program failed: $(cat prog.err)"
grep -q "no crash protection: STRATA_TOOL=nosuchtool is not an executable file" prog.err ||
	fail "STRATA_TOOL=nosuchtool: no clear reason: $(cat prog.err)"
n=$("$strata" info u | sed -n 's/^Events: *\([0-9]*\).*/\1/p')
[ "$n" = 1000 ] || fail "unprotected: $n events in the trace, 1000 logged"
echo "guardtool: the guardian started from STRATA_TOOL=$tool; 1000 of 1000 events;" \
	"a tool that cannot run named with its reason"
