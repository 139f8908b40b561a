#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes tests/convert/gen_sched.py's trace plus what the viewer's thread states need.

usage: gen_view.py OUTDIR [WAKEUPS]

On CPU 1, added to gen_sched's events: worker-b (302) in a system call from
10 to 12 ms (raw_syscalls:sys_enter/sys_exit), and a thread with kernel
events only, kworker (400), woken at 75 ms, running from 76 ms and asleep
from 85 ms. States then (ms): worker-a (301) runnable 3-4, running 4-40,
I/O wait 40-45, runnable 45-46, running 46-90, runnable 90-100; worker-b
running 2-10, syscall 10-12, running 12-70, sleeping 70-100.
With WAKEUPS, worker-b also wakes kworker that many times more between
50 and 60 ms (the window's cap on arrows, api_test.py).
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "convert"))
import gen_sched as g  # noqa: E402

SYSCALLS = """event { name = "raw_syscalls:sys_enter"; id = 65541; stream_id = 0;
	fields := struct { int64_t id; } align(64); };
event { name = "raw_syscalls:sys_exit"; id = 65542; stream_id = 0;
	fields := struct { int64_t id; int64_t ret; } align(64); };
"""


def extra(wakeups):
    ms = g.MS
    enter, leave, sw, wk = 1 << 16 | 5, 1 << 16 | 6, 1 << 16 | 1, 1 << 16 | 2
    more = [(50 * ms + i * (10 * ms // max(1, wakeups)), 302, 300, wk, g.wake("kworker", 400, 1))
            for i in range(wakeups)]
    return more + [
        (10 * ms, 302, 300, enter, struct.pack("<q", 0)),
        (12 * ms, 302, 300, leave, struct.pack("<qq", 0, 64)),
        (75 * ms, 0, 0, wk, g.wake("kworker", 400, 1)),
        (76 * ms, 0, 0, sw, g.switch("swapper/1", 0, 120, 0, "kworker", 400)),
        (85 * ms, 400, 400, sw, g.switch("kworker", 400, 120, 1, "swapper/1", 0)),
    ]


def main():
    plain = g.stream
    wakeups = int(sys.argv[2]) if len(sys.argv) > 2 else 0

    def stream(d, cpu, pid, uuid, events):
        if d.endswith("kernel") and cpu == 1:
            events = sorted(events + extra(wakeups), key=lambda e: e[0])
        plain(d, cpu, pid, uuid, events)

    g.stream = stream
    g.KERNEL_EVENTS += SYSCALLS
    del sys.argv[2:]
    g.main()


if __name__ == "__main__":
    main()
