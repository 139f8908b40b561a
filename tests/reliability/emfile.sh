#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A ring that could not be created for want of file descriptors is
# created once there are some again, and what was lost meanwhile is
# counted (issue 24, item 9: before, its CPU's events were lost for the
# rest of the run, 40,000 of them, and `strata info` said Lost 0).
set -euo pipefail
bin=$2 work=$3
. "$(dirname "$0")/common.sh"
rel_init emfile "$bin" "$work"
prog=$bin/tests/reliability/emfile
for how in embedded record; do
	rm -rf t
	case $how in
	embedded) n=$(STRATA_OUTPUT=$work/t STRATA_MAJORS=none "$prog" 10000 2>run.err) ;;
	record) n=$("$strata" record --majors none -o t -- "$prog" 10000 2>run.err) ;;
	esac
	info=$("$strata" info t 2>info.err) || fail "$how: strata info: $(cat info.err)"
	ev=$(echo "$info" | sed -nE 's/^Events: *([0-9]+).*/\1/p')
	lost=$(echo "$info" | sed -nE 's/^Lost: *([0-9]+) events discarded.*/\1/p')
	[ $((ev + lost)) = "$n" ] || fail "$how: $ev recorded + $lost discarded != $n logged"
	[ "$lost" -gt 0 ] || fail "$how: nothing was lost while out of descriptors: $(cat run.err)"
	echo "$info" | grep -qE "^Lost: *$lost events discarded \(no buffer $lost\)" ||
		fail "$how: the $lost discarded are not all said to be for want of a buffer: $(echo "$info" | grep '^Lost')"
	after=$("$strata" print t 2>/dev/null | grep -c ' 6:2 ' || true)
	[ "$after" = 10000 ] || fail "$how: $after of the 10000 events logged after the descriptors came back recorded"
	echo "emfile: $how: $ev recorded (all 10000 after) + $lost discarded while out of descriptors = $n logged"
done
# Out of descriptors to the end: no ring is ever made, so no packet can
# count the losses; the trace's `unrecorded` file does (under strata
# record: the program's BYE counts them).
# The in-process consumer (STRATA_GUARD=0) has no BYE: the library
# writes the line itself at stop, with a descriptor it kept in reserve
# (before, nothing counted them, and the last metadata was not written).
# There the consumer's own records may make the ring of the program's CPU
# before it runs out: then they are recorded; either way all are counted.
for how in record inproc; do
	rm -rf t
	case $how in
	record) n=$("$strata" record --majors none -o t -- "$prog" 10000 never 2>run.err) ;;
	inproc) n=$(STRATA_GUARD=0 STRATA_OUTPUT=$work/t STRATA_MAJORS=none "$prog" 10000 never 2>run.err) ;;
	esac
	info=$("$strata" info t 2>info.err) || fail "never ($how): strata info: $(cat info.err)"
	ev=$(echo "$info" | sed -nE 's/^Events: *([0-9]+).*/\1/p')
	lost=$(echo "$info" | sed -nE 's/^Lost: *([0-9]+) events discarded.*/\1/p')
	un=$(echo "$info" | sed -nE 's/^Not recorded: ([0-9]+) events.*/\1/p')
	[ $((ev + lost + ${un:-0})) = "$n" ] ||
		fail "never ($how): $ev recorded + $lost discarded + ${un:-0} not recorded != $n logged: $(cat t/unrecorded run.err 2>&1)"
	[ "$ev" = "$n" ] || grep -q 'had no buffer' t/unrecorded ||
		fail "never ($how): t/unrecorded does not say why: $(cat t/unrecorded 2>&1)"
	echo "emfile: never a ring ($how): $ev recorded + $lost discarded + ${un:-0} counted in TRACE/unrecorded = $n logged"
done
