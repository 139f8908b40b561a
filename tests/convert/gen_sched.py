#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a small trace with kernel scheduling and named threads, for the converters.

usage: gen_sched.py OUTDIR

A kernel sub-trace (stream class 0, docs/kernel.md's sched:sched_switch,
sched_waking and sched_wakeup on two CPUs) and a user sub-trace of process
300 "server": the state dump's strata:thread_name records (300 "server",
301 "worker-a", 302 "worker-b") and work:job_begin/job_end intervals that
cross the window 0.015..0.055 s, nest, end without a begin (the trace
starts inside one) and stay open at the end, with a pointer and a u64
beyond 2^53. Times are ns since the trace start.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reader"))
from gen_trace import (CLOCK_T, FREQ, OFFSET_S, PACKET_CONTEXT, PREAMBLE,  # noqa: E402
                       TRACE_BLOCK, UUID_CLOCK, header, write_stream)

T0 = 1000000000
MS = 1000000
PSIZE = 16384

HDR = CLOCK_T + """
stream {
	id = 0;
""" + PACKET_CONTEXT + """	event.header := struct {
		integer { size = 32; align = 64; signed = false; map = clock.strata.value; } timestamp;
		integer { size = 22; align = 1; signed = false; } id;
	} align(64);
};

event { name = "strata:thread"; id = 1; stream_id = 0;
	fields := struct { uint32_t tid; uint32_t pid; } align(64); };
"""

KERNEL_EVENTS = """
event { name = "sched:sched_switch"; id = 65537; stream_id = 0;
	fields := struct { uint32_t _prev_comm_len; char_t prev_comm[_prev_comm_len];
		int32_t prev_pid; int32_t prev_prio; int64_t prev_state;
		uint32_t _next_comm_len; char_t next_comm[_next_comm_len];
		int32_t next_pid; int32_t next_prio; } align(64); };
event { name = "sched:sched_wakeup"; id = 65538; stream_id = 0;
	fields := struct { uint32_t _comm_len; char_t comm[_comm_len];
		int32_t pid; int32_t prio; int32_t target_cpu;
		integer { size = 32; align = 1; signed = false; } _pad; } align(64); };
event { name = "sched:sched_waking"; id = 65540; stream_id = 0;
	fields := struct { uint32_t _comm_len; char_t comm[_comm_len];
		int32_t pid; int32_t prio; int32_t target_cpu;
		integer { size = 32; align = 1; signed = false; } _pad; } align(64); };
"""

USER_EVENTS = """
event { name = "strata:thread_name"; id = 7; stream_id = 0;
	fields := struct { uint32_t tid; uint32_t pid; uint32_t _name_len;
		char_t name[_name_len]; } align(64); };
event { name = "work:job_begin"; id = 196609; stream_id = 0;
	fields := struct { uint64_t job; uint64_hex_t where; } align(64); };
event { name = "work:job_end"; id = 196610; stream_id = 0;
	fields := struct { uint64_t job; } align(64); };
"""


def metadata(domain, pid, procname, uuid, events, env=""):
    return (PREAMBLE + TRACE_BLOCK % uuid +
            'env {\n\tdomain = "%s";\n\ttracer_name = "strata";\n\tvpid = %d;\n'
            '\tprocname = "%s";\n%s};\n\n' % (domain, pid, procname, env) +
            'clock {\n\tname = "strata";\n\tuuid = "%s";\n\tfreq = %d;\n\tprecision = 1;\n'
            '\toffset_s = %d;\n\toffset = 0;\n\tabsolute = TRUE;\n};\n\n'
            % (UUID_CLOCK, FREQ, OFFSET_S) + HDR + events)


def text(s, at):
    """A counted string at payload offset `at` (format.md §3): padded to a word."""
    b = s.encode() + b"\0"
    b += b"\0" * (-(at + 4 + len(b)) % 8)
    return struct.pack("<I", len(b)) + b


def switch(prev, pid, prio, state, nxt, npid):
    p = text(prev, 0) + struct.pack("<iiq", pid, prio, state)
    p += text(nxt, len(p)) + struct.pack("<ii", npid, 120)
    return p


def wake(comm, pid, cpu):
    return text(comm, 0) + struct.pack("<iiiI", pid, 120, cpu, 0)


def stream(d, cpu, pid, uuid, events):
    """events: (t_ns, tid, tgid, id, payload) in time order: one packet."""
    body, cur = bytearray(), None
    for (t, tid, tgid, eid, pl) in events:
        ts = T0 + t
        if (tid, tgid) != cur:
            body += header(ts, 0, 1, 2) + struct.pack("<II", tid, tgid)
            cur = (tid, tgid)
        assert len(pl) % 8 == 0
        body += header(ts, eid >> 16, eid & 0xffff, 1 + len(pl) // 8) + pl
    first = events[0][1], events[0][2]
    os.makedirs(os.path.join(d, "index"), exist_ok=True)
    write_stream(os.path.join(d, "cpu%d" % cpu), os.path.join(d, "index", "cpu%d.idx" % cpu),
                 [(bytes(body), T0, T0 + 100 * MS, 0, 0, first[0])], PSIZE,
                 bytes.fromhex(uuid.replace("-", "")), pid, cpu)


def main():
    out = sys.argv[1]
    sw, wk, wg = 1 << 16 | 1, 1 << 16 | 2, 1 << 16 | 4
    kd = os.path.join(out, "kernel")
    ku = "00000000-0000-4000-8000-00000000000a"
    os.makedirs(kd, exist_ok=True)
    with open(os.path.join(kd, "metadata"), "w") as f:
        f.write(metadata("kernel", 0, "kernel", ku, KERNEL_EVENTS))
    # R (preempted, 0), S (1), D (2), R+ (0x100)
    stream(kd, 0, 0, ku, [
        (1 * MS, 0, 0, sw, switch("swapper/0", 0, 120, 0, "server", 300)),
        (3 * MS, 300, 300, wg, wake("worker-a", 301, 0)),
        (4 * MS, 300, 300, sw, switch("server", 300, 120, 1, "worker-a", 301)),
        (40 * MS, 301, 300, sw, switch("worker-a", 301, 120, 2, "swapper/0", 0)),
        (45 * MS, 0, 0, wg, wake("worker-a", 301, 0)),
        (45 * MS + 10, 0, 0, wk, wake("worker-a", 301, 0)),
        (46 * MS, 0, 0, sw, switch("swapper/0", 0, 120, 0, "worker-a", 301)),
        (90 * MS, 301, 300, sw, switch("worker-a", 301, 120, 0x100, "server", 300)),
    ])
    stream(kd, 1, 0, ku, [
        (2 * MS, 0, 0, sw, switch("swapper/1", 0, 120, 0, "worker-b", 302)),
        (70 * MS, 302, 300, sw, switch("worker-b", 302, 120, 1, "swapper/1", 0)),
    ])

    ud = os.path.join(out, "ust", "pid-300")
    uu = "00000000-0000-4000-8000-00000000012c"
    os.makedirs(ud, exist_ok=True)
    env = '\tstrata_kind_196609 = "begin";\n\tstrata_kind_196610 = "end";\n'
    with open(os.path.join(ud, "metadata"), "w") as f:
        f.write(metadata("ust", 300, "server", uu, USER_EVENTS, env))

    def name(tid, s):
        return struct.pack("<II", tid, 300) + text(s, 8)

    def begin(job, where):
        return struct.pack("<QQ", job, where)

    big = (1 << 53) + 7
    stream(ud, 0, 300, uu, [
        (0 * MS + 10, 300, 300, 7, name(300, "server")),
        (0 * MS + 20, 300, 300, 7, name(301, "worker-a")),
        (0 * MS + 30, 300, 300, 7, name(302, "worker-b")),
        (2 * MS, 300, 300, 196610, struct.pack("<Q", 1)),      # began before the trace
        (10 * MS, 301, 300, 196609, begin(big, 0x7fff12345678)),
        (50 * MS, 301, 300, 196610, struct.pack("<Q", big)),
        (60 * MS, 300, 300, 196609, begin(3, 0x1000)),           # never ends
    ])
    stream(ud, 1, 300, uu, [
        (5 * MS, 302, 300, 196609, begin(4, 0xffffffffffffff00)),
        (20 * MS, 302, 300, 196609, begin(5, 0x2000)),
        (30 * MS, 302, 300, 196610, struct.pack("<Q", 5)),
        (80 * MS, 302, 300, 196610, struct.pack("<Q", 4)),
    ])


if __name__ == "__main__":
    main()
