#!/bin/sh
# SPDX-License-Identifier: MIT
# Test (c): babeltrace2 reads the kernel streams with their real field names and agrees with strata on counts.
. "$(dirname "$0")/common.sh"
kernel_test_require
strata=$1 align=$2 work=$3
command -v babeltrace2 >/dev/null || { echo "SKIP: babeltrace2 not installed"; exit 77; }
rm -rf "$work" && mkdir -p "$work" || exit 1
"$strata" ktrace -k sched,irq,syscalls -o "$work/trace" -- "$align" 2000 >/dev/null || exit 1
bt="$work/bt.txt"
babeltrace2 "$work/trace/kernel" >"$bt" 2>"$work/bt.err" || { cat "$work/bt.err"; exit 1; }
[ -s "$work/bt.err" ] && { echo "babeltrace2 warned:"; cat "$work/bt.err"; exit 1; }
nbt=$(grep -vc ' strata:' "$bt")
nst=$("$strata" print "$work/trace/kernel" | wc -l)
echo "kernel events: babeltrace2 $nbt, strata $nst"
[ "$nbt" -eq "$nst" ] || exit 1
for f in prev_comm prev_pid prev_state next_comm next_pid; do
	grep -q "sched:sched_switch: .*$f = " "$bt" || { echo "no field $f"; exit 1; }
done
# system calls and task states named in the metadata (enums), for every reader
grep -q 'raw_syscalls:sys_enter: .*id = ( "getppid" : container = 110 ), args = ' "$bt" ||
	{ echo "no sys_enter id/args, or getppid not named: $(grep -m1 'sys_enter:' "$bt")"; exit 1; }
grep -qE 'sched:sched_switch: .*prev_state = \( "[RSDTtXZPI]\+?" : container = [0-9]+ \)' "$bt" ||
	{ echo "prev_state not named: $(grep -m1 'sched_switch:' "$bt")"; exit 1; }
# the whole super-trace too: user + kernel, same counts
nbt=$(babeltrace2 "$work/trace" 2>/dev/null | grep -vc ' strata:')
nst=$("$strata" print "$work/trace" | wc -l)
echo "super-trace events: babeltrace2 $nbt, strata $nst"
[ "$nbt" -eq "$nst" ]
