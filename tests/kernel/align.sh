#!/bin/sh
# SPDX-License-Identifier: MIT
# Test (b): user events around each getppid land just before sys_enter and just after sys_exit, every time.
. "$(dirname "$0")/common.sh"
kernel_test_require
strata=$1 align=$2 work=$3 n=${4:-5000}
rm -rf "$work" && mkdir -p "$work" || exit 1
tid=$("$strata" ktrace -k sched,irq,syscalls -c -o "$work/trace" -- "$align" "$n") || exit 1
"$strata" print --format json --tid "$tid" "$work/trace" | python3 -c '
import json, sys
n = int(sys.argv[1]); seq = []
for line in sys.stdin:
    e = json.loads(line)
    ev = e["event"]
    if ev in ("10:1", "10:2"):
        seq.append((ev, e["fields"]["w0"], e["ts"], e["level"]))
    elif ev.startswith("raw_syscalls:") and e["fields"]["id"] == 110:  # getppid
        seq.append((ev, None, e["ts"], e["level"]))
want = ["10:1", "raw_syscalls:sys_enter", "raw_syscalls:sys_exit", "10:2"]
bad = 0
if len(seq) != 4 * n:
    sys.exit("expected %d events around getppid, got %d" % (4 * n, len(seq)))
for i in range(n):
    q = seq[4 * i:4 * i + 4]
    if [x[0] for x in q] != want or q[0][1] != i or q[3][1] != i or \
       [x[3] for x in q] != ["U", "K", "K", "U"] or not (q[0][2] < q[1][2] < q[2][2] < q[3][2]):
        bad += 1
        if bad < 5:
            print("misordered call %d: %s" % (i, q))
print("%d calls, %d misordered" % (n, bad))
sys.exit(1 if bad else 0)
' "$n"
