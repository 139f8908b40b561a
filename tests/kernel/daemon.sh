#!/bin/sh
# SPDX-License-Identifier: MIT
# strata daemon -k --clock mono: a program that joins later, its events and the kernel's in each trace, on one clock; the instance removed after.
. "$(dirname "$0")/common.sh"
kernel_test_require
strata=$1 align=$2 work=$3
command -v babeltrace2 >/dev/null || { echo "SKIP: babeltrace2 not installed"; exit 77; }
rm -rf "$work" && mkdir -p "$work/run" && chmod 700 "$work/run" || exit 1
export STRATA_RUNTIME_DIR=$work/run
fail() { echo "kernel-daemon: FAIL: $*"; "$strata" daemon --kill >/dev/null 2>&1; exit 1; }

"$strata" daemon --clock mono -k sched,syscalls -o "$work/t1" 2>"$work/d.err" || fail "daemon: $(cat "$work/d.err")"
"$align" 500 >/dev/null || fail "the program failed"
"$strata" session stop >/dev/null 2>&1 || fail "session stop failed"
"$strata" session start -o "$work/t2" >/dev/null 2>&1 || fail "session start failed"
"$align" 300 >/dev/null || fail "the program failed"
"$strata" daemon --kill >/dev/null 2>&1
for t in t1 t2; do
	[ -d "$work/$t/kernel" ] || fail "$t: no kernel streams ($(tail -3 "$work/run/default/log"))"
	babeltrace2 "$work/$t" >"$work/bt.txt" 2>"$work/bt.err" || fail "$t: babeltrace2 failed"
	[ -s "$work/bt.err" ] && fail "$t: babeltrace2 warned: $(head -2 "$work/bt.err")"
	"$strata" info "$work/$t" >"$work/info.txt" || fail "$t: strata info failed"
	grep -q '^Clock: .* 1000000000 Hz' "$work/info.txt" || fail "$t: not on CLOCK_MONOTONIC: $(grep Clock "$work/info.txt")"
	"$strata" print "$work/$t" >"$work/print.txt"
	grep -q ' K .* raw_syscalls:sys_enter ' "$work/print.txt" || fail "$t: no kernel events"
	grep -q ' U .* 10:1 ' "$work/print.txt" || fail "$t: no user events"
done
# the user events around getppid inside the kernel's sys_enter/sys_exit, on the one clock
n=$("$strata" print "$work/t2" | grep -c ' U .* 10:1 ')
[ "$n" = 300 ] || fail "t2: $n user events 10:1, 300 expected"
ls /sys/kernel/tracing/instances | grep -q '^strata' && fail "a strata tracefs instance is left"
echo "kernel-daemon: OK"
