#!/bin/sh
# SPDX-License-Identifier: MIT
# The kernel reader keeps up (issue 26, item 6): a program making system calls flat out, every one recorded, none discarded.
#
# usage: keepup.sh STRATA WORK [CALLS]
# `dd bs=1` makes a read and a write a byte: 2 x CALLS system calls, an
# enter and an exit each, as fast as one CPU can; the kernel's buffers
# (4 MiB per CPU) hold about 0.1 s of it. Before the reader woke at a
# quarter-full buffer (docs/kernel.md) it lost 139,192 events of this.
# In make check, run alone (RUN_SERIAL). One retry: a machine loaded by
# something else can starve even a reader at nice -10 once (docs/kernel.md,
# "Keeping up"), which says nothing of the code; twice in a row fails.
. "$(dirname "$0")/common.sh"
kernel_test_require
strata=$1 work=$2 calls=${3:-1000000}
# every read and write of dd, entered and left; more of its start-up
want=$((4 * calls))
one() {
	rm -rf "$work" && mkdir -p "$work" || exit 1
	"$strata" record -k syscalls -o "$work/trace" -- \
		dd if=/dev/zero of=/dev/null bs=1 count="$calls" 2>"$work/rec.err" ||
		{ echo "record failed:"; cat "$work/rec.err"; exit 1; }
	line=$(grep 'kernel events, [0-9]* discarded' "$work/rec.err") ||
		{ echo "no kernel summary:"; cat "$work/rec.err"; exit 1; }
	n=$(echo "$line" | sed -n 's/.*: \([0-9]*\) kernel events, \([0-9]*\) discarded.*/\1/p')
	lost=$(echo "$line" | sed -n 's/.*: \([0-9]*\) kernel events, \([0-9]*\) discarded.*/\2/p')
	echo "keepup: $n kernel events recorded, $lost discarded, for $want system call entries and exits of dd's copy"
	[ "$n" -ge "$want" ] || [ "$lost" != 0 ] ||
		{ echo "FAIL: fewer events than dd's system calls"; exit 1; }
	[ "$lost" = 0 ]
}
one && exit 0
echo "lost events: once more (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
one || { echo "FAIL: the kernel reader fell behind twice"; exit 1; }
