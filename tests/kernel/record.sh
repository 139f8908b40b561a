#!/bin/sh
# SPDX-License-Identifier: MIT
# strata record -k: user events through the session daemon and kernel events, one trace, one clock.
. "$(dirname "$0")/common.sh"
kernel_test_require
strata=$1 align=$2 work=$3
command -v babeltrace2 >/dev/null || { echo "SKIP: babeltrace2 not installed"; exit 77; }
rm -rf "$work" && mkdir -p "$work" || exit 1
"$strata" record -k sched,syscalls -o "$work/trace" -- "$align" 1000 >/dev/null 2>"$work/rec.err" ||
	{ echo "record failed:"; cat "$work/rec.err"; exit 1; }
grep -q 'kernel events, 0 discarded' "$work/rec.err" || { echo "no kernel summary:"; cat "$work/rec.err"; exit 1; }
babeltrace2 "$work/trace" >"$work/bt.txt" 2>"$work/bt.err" || { cat "$work/bt.err"; exit 1; }
[ -s "$work/bt.err" ] && { echo "babeltrace2 warned:"; cat "$work/bt.err"; exit 1; }
nbt=$(grep -vc ' strata:' "$work/bt.txt")
nst=$("$strata" print "$work/trace" | wc -l)
echo "events: babeltrace2 $nbt, strata $nst"
[ "$nbt" -eq "$nst" ] || exit 1
# Both levels, interleaved on one timeline.
"$strata" print "$work/trace" >"$work/print.txt"
grep -q ' K .* raw_syscalls:sys_enter ' "$work/print.txt" || { echo "no kernel events"; exit 1; }
grep -q ' U ' "$work/print.txt" || { echo "no user events"; exit 1; }
# Kernel lines name what the kernel's tools name: system calls and task
# states, not their numbers (issue 26, item 14); JSON keeps the numbers.
grep -qE ' raw_syscalls:sys_(enter|exit) id=[0-9]' "$work/print.txt" &&
	{ echo "a system call printed by number:"; grep -m1 -E ' raw_syscalls:sys_(enter|exit) id=[0-9]' "$work/print.txt"; exit 1; }
grep -q ' raw_syscalls:sys_enter id=getppid ' "$work/print.txt" || { echo "no getppid by name"; exit 1; }
grep -qE ' sched:sched_switch .* prev_state=[RSDTtXZPI]' "$work/print.txt" ||
	{ echo "sched_switch's prev_state not as letters:"; grep -m1 sched_switch "$work/print.txt"; exit 1; }
grep -qE ' sched:sched_switch .* prev_state=[0-9]' "$work/print.txt" && { echo "a prev_state printed by number"; exit 1; }
"$strata" print --format json "$work/trace" | grep -m1 -q '"prev_state":[0-9]' ||
	{ echo "JSON lost prev_state's number"; exit 1; }
# info lists the event types in one order, by name (issue 26, item 15)
"$strata" info "$work/trace" 2>/dev/null | sed -n '/^Event types/,$p' | awk 'NR > 2 {print $1}' >"$work/types"
[ "$(wc -l <"$work/types")" -ge 5 ] || { echo "info lists too few event types"; cat "$work/types"; exit 1; }
LC_ALL=C sort -c "$work/types" || { echo "info's event types are not in name order"; exit 1; }
# strata ktrace runs programs with STRATA_OUTPUT into the directory it made,
# kernel/ already inside: every program it runs is recorded, none taken for
# an earlier trace (that check disabled tracing in CI once).
"$strata" ktrace -k sched -o "$work/kt" -- sh -c "'$align' 100 && '$align' 100" \
	>/dev/null 2>"$work/kt.err" || { cat "$work/kt.err"; exit 1; }
grep -q 'tracing disabled' "$work/kt.err" && { cat "$work/kt.err"; exit 1; }
nu=$("$strata" print "$work/kt" | grep -c ' U ')
[ "$nu" -eq 400 ] || { echo "ktrace of two programs: $nu user events, want 400"; exit 1; }
# --kernel-buffer-kb sizes the kernel buffer (ktrace's --buffer-kb), and the
# reader wakes at a quarter full (buffer_percent 25, docs/kernel.md).
got=$("$strata" record -k sched --kernel-buffer-kb 1024 -o "$work/kb" -- \
	sh -c 'cat /sys/kernel/tracing/instances/strata*/buffer_size_kb /sys/kernel/tracing/instances/strata*/buffer_percent' \
	2>"$work/kb.err" | tr '\n' ' ')
case $got in
10[2-4][0-9]\ 25\ ) ;;
*) echo "--kernel-buffer-kb 1024: buffer_size_kb and buffer_percent read '$got'"; cat "$work/kb.err"; exit 1 ;;
esac
"$strata" record -k sched --kernel-buffer-kb 2 -- true 2>/dev/null && { echo "--kernel-buffer-kb 2 accepted"; exit 1; }
# ktrace and record -k speak one language (issue 26, item 14): the same
# scope (COMMAND's tree by default, --kernel-system for all), the same
# --kernel-event, --kernel-buffer-kb and -e (user events), and the same
# default output directory.
for cmd in record ktrace; do
	rm -rf "$work/one-$cmd"
	"$strata" $cmd -k sched --kernel-event sched:sched_process_exec --kernel-buffer-kb 1024 \
		-o "$work/one-$cmd" -- sh -c "'$align' 50; sleep 0.1" >/dev/null 2>"$work/one-$cmd.err" ||
		{ echo "$cmd:"; cat "$work/one-$cmd.err"; exit 1; }
	"$strata" print "$work/one-$cmd" >"$work/one-$cmd.txt" 2>/dev/null
	grep -q ' K .* sched:sched_process_exec ' "$work/one-$cmd.txt" ||
		{ echo "$cmd --kernel-event: no sched_process_exec"; exit 1; }
	# the command's tree only: no switch in which neither side is in it
	outside=$(grep ' sched:sched_switch ' "$work/one-$cmd.txt" | grep -vcE '(prev|next)_comm="(sh|kernel_align|sleep|strata|strata-session)"' || true)
	[ "$outside" = 0 ] || { echo "$cmd: $outside switches outside the command's tree"; exit 1; }
	nu=$(grep -c ' U ' "$work/one-$cmd.txt" || true)
	[ "$nu" = 100 ] || { echo "$cmd: $nu user events, want 100"; exit 1; }
	# -e: only the user events a pattern names (none here)
	rm -rf "$work/none-$cmd"
	"$strata" $cmd -k sched -e 'nomatch:*' -o "$work/none-$cmd" -- "$align" 50 >/dev/null 2>&1 ||
		{ echo "$cmd -e failed"; exit 1; }
	nu=$("$strata" print "$work/none-$cmd" 2>/dev/null | grep -c ' U ' || true)
	[ "$nu" = 0 ] || { echo "$cmd -e 'nomatch:*': $nu user events"; exit 1; }
done
"$strata" ktrace -k sched -e sched:sched_switch -- true 2>"$work/e.err" &&
	{ echo "ktrace -e with a tracefs event accepted"; exit 1; }
grep -q 'use --kernel-event sched:sched_switch' "$work/e.err" || { cat "$work/e.err"; exit 1; }
(cd "$work" && rm -rf strata-2* && "$strata" ktrace -k sched -- true 2>/dev/null) ||
	{ echo "ktrace without -o failed"; exit 1; }
ls -d "$work"/strata-2* >/dev/null 2>&1 || { echo "ktrace without -o made no strata-DATE directory"; exit 1; }
echo "record -k: OK"
