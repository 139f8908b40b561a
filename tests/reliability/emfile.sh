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
	after=$("$strata" print t 2>/dev/null | grep -c ' 6:2 ' || true)
	[ "$after" = 10000 ] || fail "$how: $after of the 10000 events logged after the descriptors came back recorded"
	echo "emfile: $how: $ev recorded (all 10000 after) + $lost discarded while out of descriptors = $n logged"
done
