#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""follow_cost: the CPU time of one strata_follow_poll() with SIZE of trace
behind the follower (docs/reader.md, "Following a live trace", "Cost").
A measurement, not a test: no assertion on time.

usage: follow_cost.py LIBSTRATA_READER.so DIR SIZE_MB [PACKET_KIB] [POLLS]

Writes DIR (removed first): one stream of SIZE_MB of whole packets of
PACKET_KIB (default 256, strata's default), 64 mem:mark events each (the
packets a live timer closes are mostly padding; the poll's cost is per
packet, not per event), the trace live (`.live`). Then follows it through
the library: the first poll (which opens the trace), then POLLS polls
(default 50), each after one more packet is appended, and prints the
median and the largest CPU time (process CPU clock) of those polls.
"""
import ctypes
import os
import re
import shutil
import statistics
import struct
import sys
import time

lib, out, size_mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
psize = int(sys.argv[4]) * 1024 if len(sys.argv) > 4 else 256 * 1024
polls = int(sys.argv[5]) if len(sys.argv) > 5 else 50
EV = 64  # events per packet
STEP = 1000  # ns between events

# the metadata of the unit tests' writer (tests/reader/synth.h)
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "synth.h")) as f:
    src = f.read()
body = src[src.index("synth_metadata[] ="):]
body = body[:body.index(";\n\n")]
meta = "".join(bytes(m, "ascii").decode("unicode_escape")
               for m in re.findall(r'"((?:[^"\\]|\\.)*)"', body))


def packet(seq):
    """Packet seq of cpu0 (format.md §2, §3; as synth_header writes)."""
    t0 = 1000 + seq * EV * STEP
    words = []
    for i in range(EV):
        ts = t0 + i * STEP
        words.append(ts & 0xffffffff | 0x10004 << 32 | 2 << 54)
        words.append((-ts) & 0xffffffffffffffff)
    content = 96 + 16 * EV
    h = bytearray(96)
    struct.pack_into("<I", h, 0, 0xC1FC1FC1)
    struct.pack_into("<I", h, 20, 0)
    struct.pack_into("<QQQQQQ", h, 24, 100 << 32, t0, t0 + (EV - 1) * STEP,
                     content * 8, psize * 8, seq)
    struct.pack_into("<III", h, 80, 0, 100, 100)
    body = struct.pack("<%dQ" % len(words), *words)
    return bytes(h) + body + bytes(psize - content)


shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
with open(os.path.join(out, "metadata"), "w") as f:
    f.write(meta)
open(os.path.join(out, ".live"), "w").close()
n = size_mb * 1024 * 1024 // psize
stream = os.path.join(out, "cpu0")
with open(stream, "wb") as f:
    for seq in range(n):
        f.write(packet(seq))

r = ctypes.CDLL(lib)
r.strata_follow_create.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                   ctypes.POINTER(ctypes.c_void_p)]
r.strata_follow_poll.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                 ctypes.POINTER(ctypes.c_uint64),
                                 ctypes.POINTER(ctypes.c_uint64)]
r.strata_follow_destroy.argtypes = [ctypes.c_void_p]
fl, t = ctypes.c_void_p(), ctypes.c_void_p()
fr, to = ctypes.c_uint64(), ctypes.c_uint64()
if r.strata_follow_create(out.encode(), None, ctypes.byref(fl)):
    sys.exit("strata_follow_create failed")


def poll():
    c0 = time.process_time()
    rc = r.strata_follow_poll(fl, ctypes.byref(t), ctypes.byref(fr), ctypes.byref(to))
    c1 = time.process_time()
    if rc != 1:
        sys.exit("poll returned %d, not STRATA_FOLLOW_LIVE" % rc)
    return c1 - c0


first = poll()
cpu = []
with open(stream, "ab") as f:
    for k in range(polls):
        f.write(packet(n + k))
        f.flush()
        cpu.append(poll())
last_to = to.value
r.strata_follow_destroy(fl)
shutil.rmtree(out, ignore_errors=True)
print("%d MiB behind (%d packets of %d KiB): first poll %.2f ms; then per poll "
      "median %.3f ms, max %.3f ms (%d polls, window end %d)"
      % (size_mb, n, psize // 1024, first * 1e3, statistics.median(cpu) * 1e3,
         max(cpu) * 1e3, polls, last_to))
