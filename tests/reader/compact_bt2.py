#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The compact event layout of docs/compact.md, checked against babeltrace2
and strata's reader.

Writes one synthetic packet in stream class 1 (32-bit compact header with
LTTng's variant shape, 4-byte granularity, the payload of format.md §6
starting 4 or 16 bytes into the event: 64-bit fields declared 4-byte
aligned, the gaps of its own 8-byte alignment as `_padK` fields, counted
strings padded to the payload's next 8 bytes, gaps of 3, 5, 6 or 7 bytes
as byte arrays) and checks that babeltrace2 decodes every event as the
layout says: names, full timestamps (27-bit wrap, extended headers after a
large gap), field values; then that babeltrace2's CTF writer copies the
trace (sink.ctf.fs) and reads the copy the same. With STRATA, it
then checks that `strata print` reads the same events, with the same
values, attributed to the thread the packet names.

usage: compact_bt2.py BABELTRACE2 WORKDIR [STRATA]
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import uuid

from gen_trace import CLOCK_T, PACKET_CONTEXT, TRACE_BLOCK, packet_header

TS27 = (1 << 27) - 1
UUID = uuid.UUID("5a7a0c0d-0001-4c0d-8e11-0123456789ab")

METADATA = """/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 32; signed = false; } := uint32_t;
typealias integer { size = 64; align = 64; signed = false; } := uint64_t;
typealias integer { size = 64; align = 32; signed = false; } := uint64_c_t;
typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } := char_t;

""" + TRACE_BLOCK % UUID + """env {
	strata_id_10 = 65537;
	strata_id_11 = 65538;
	strata_id_12 = 65539;
	strata_id_13 = 65540;
};

clock {
	name = "strata";
	freq = 1000000000;
	offset_s = 0;
	absolute = TRUE;
};

""" + CLOCK_T + """
stream {
	id = 1;
""" + PACKET_CONTEXT + """	event.header := struct {
		enum : integer { size = 5; align = 32; signed = false; }
			{ compact = 0 ... 30, extended = 31 } id;
		variant <id> {
			struct {
				integer { size = 27; align = 1; signed = false; map = clock.strata.value; } timestamp;
			} compact;
			struct {
				uint32_t id;
				integer { size = 64; align = 32; signed = false; map = clock.strata.value; } timestamp;
			} extended;
		} v;
	} align(32);
};

event { name = "strata:thread"; id = 1; stream_id = 1;
	fields := struct { uint32_t tid; uint32_t pid; } align(32); };
event { name = "work:one"; id = 10; stream_id = 1;
	fields := struct { uint64_c_t w; } align(32); };
event { name = "work:mixed"; id = 11; stream_id = 1;
	fields := struct { uint32_t a; integer { size = 32; align = 1; signed = false; } _pad0;
		uint64_c_t b; } align(32); };
event { name = "work:named"; id = 12; stream_id = 1;
	fields := struct { uint32_t n; uint32_t _name_len; char_t name[_name_len]; } align(32); };
event { name = "work:small"; id = 13; stream_id = 1;
	fields := struct { uint8_t v; integer { size = 8; align = 8; signed = false; } _pad0[3];
		uint32_t n; uint8_t b;
		integer { size = 8; align = 8; signed = false; } _pad[7]; } align(32); };
event { name = "other:late"; id = 131077; stream_id = 1;
	fields := struct { uint64_c_t w; } align(32); };
"""


# work:small's gaps as byte arrays (now) and as single integers (before)
OLD_GAPS = ("integer { size = 8; align = 8; signed = false; } _pad0[3];",
            "integer { size = 24; align = 1; signed = false; } _pad0;",
            "integer { size = 8; align = 8; signed = false; } _pad[7];",
            "integer { size = 56; align = 1; signed = false; } _pad;")


class Packet:
    def __init__(self, ts_begin):
        self.body = b""
        self.prev = ts_begin
        self.expect = []
        self.values = []  # (ts, name, fields) as strata prints them

    def compact(self, cid, ts, payload, name, fields, values):
        assert 0 < cid < 31 and 0 <= ts - self.prev <= TS27
        self.body += struct.pack("<I", cid | (ts & TS27) << 5) + payload
        self._done(ts, name, fields, values, payload)

    def extended(self, eid, ts, payload, name, fields, values):
        words = (16 + len(payload)) // 4
        self.body += struct.pack("<IIQ", 31 | words << 5, eid, ts) + payload
        self._done(ts, name, fields, values, payload)

    def _done(self, ts, name, fields, values, payload):
        assert len(self.body) % 4 == 0 and len(payload) % 8 == 0
        self.prev = ts
        self.expect.append("[%d] %s: { %s }" % (ts, name, fields))
        if not name.startswith("strata:"):
            self.values.append((ts, name, values))


def string(s, before):
    """A counted string after `before` payload bytes: padded to the
    payload's next multiple of 8 (format.md §6)."""
    b = s.encode() + b"\0"
    b += b"\0" * (-(before + 4 + len(b)) % 8)
    return struct.pack("<I", len(b)) + b, '"%s"' % s


def main():
    bt2, work = sys.argv[1], sys.argv[2]
    trace = os.path.join(work, "compact")
    shutil.rmtree(trace, ignore_errors=True)
    os.makedirs(trace)
    with open(os.path.join(trace, "metadata"), "w") as f:
        f.write(METADATA)

    begin = (5 << 27) - 40  # the first events wrap the 27-bit timestamp
    p = Packet(begin)
    ts = begin + 10
    p.compact(1, ts, struct.pack("<II", 4242, 4240), "strata:thread",
              "tid = 4242, pid = 4240", None)
    for i in range(6):
        ts += 9
        w = 0x0123456789ABCDEF + i
        p.compact(10, ts, struct.pack("<Q", w), "work:one", "w = %d" % w,
                  {"w": w})
    ts += 3
    p.compact(11, ts, struct.pack("<IIQ", 7, 0, 1 << 40), "work:mixed",
              "a = 7, pad0 = 0, b = %d" % (1 << 40), {"a": 7, "b": 1 << 40})
    # strings cannot be compact (their length is not the class's): the
    # extended header, with the compact id (docs/compact.md)
    for name in ("", "abc", "abcd", "a longer thread name"):
        ts += 1
        s, shown = string(name, 4)
        p.extended(12, ts, struct.pack("<I", len(name)) + s, "work:named",
                   "n = %d, name_len = %d, name = %s" %
                   (len(name), len(s) - 4, shown),  # bt2 drops the leading _
                   {"n": len(name), "name": name})
    for cid in (13, 31):  # compact, then extended with the compact id
        ts += 1
        body = struct.pack("<B3xIB7x", 200, 70000, 1)
        shown = ("v = 200, pad0 = [ [0] = 0, [1] = 0, [2] = 0 ], n = 70000, "
                 "b = 1, pad = [ %s ]" % ", ".join("[%d] = 0" % i for i in range(7)))
        if cid == 13:
            p.compact(13, ts, body, "work:small", shown, {"v": 200, "n": 70000, "b": 1})
        else:
            p.extended(13, ts, body, "work:small", shown, {"v": 200, "n": 70000, "b": 1})
    ts += 2
    p.extended(131077, ts, struct.pack("<Q", 99), "other:late", "w = 99",
               {"w": 99})
    ts += 1 << 28  # too far for 27 bits: the extended form of a compact class
    p.extended(10, ts, struct.pack("<Q", 5), "work:one", "w = 5", {"w": 5})
    ts += TS27  # the largest gap a compact header may carry
    p.compact(10, ts, struct.pack("<Q", 6), "work:one", "w = 6", {"w": 6})

    psize = 4096
    pkt = packet_header(UUID.bytes, 1, 4240, 0, 4242, begin, ts,
                        96 + len(p.body), psize, 0, 0) + p.body
    pkt += b"\0" * (psize - len(pkt))
    with open(os.path.join(trace, "cpu0"), "wb") as f:
        f.write(pkt)

    out = subprocess.run([bt2, "--clock-cycles", "--no-delta", trace],
                         capture_output=True, text=True)
    # "[00000000000671088610] work:one: { cpu_id = 0, ... }, { w = 5 }"
    got = []
    for ln in out.stdout.splitlines():
        m = re.match(r"\[(\d+)\] (\S+) \{ cpu_id = 0, pid = 4240, "
                     r"tid = 4242, pad = 0 \}, (\{.*\})$", ln.strip())
        got.append("[%d] %s %s" % (int(m.group(1)), m.group(2), m.group(3))
                   if m else ln)
    if out.returncode != 0 or out.stderr.strip() or got != p.expect:
        print("babeltrace2 exit %d, stderr:\n%s" % (out.returncode, out.stderr))
        for i in range(max(len(got), len(p.expect))):
            e = p.expect[i] if i < len(p.expect) else "(nothing)"
            g = got[i] if i < len(got) else "(nothing)"
            print("%s expected %s\n  got      %s" % ("  " if e == g else "!!", e, g))
        return 1
    print("compact layout: babeltrace2 decoded %d events as specified" % len(got))
    if check_copy(bt2, trace, os.path.join(work, "compact-copy"), out.stdout):
        return 1
    if len(sys.argv) > 3:
        if check_strata(sys.argv[3], trace, p.values):
            return 1
        # traces written before the gaps became byte arrays declare them
        # as one integer of 24 to 56 bits: strata reads them the same
        with open(os.path.join(trace, "metadata"), "w") as f:
            f.write(METADATA.replace(OLD_GAPS[0], OLD_GAPS[1])
                    .replace(OLD_GAPS[2], OLD_GAPS[3]))
        return check_strata(sys.argv[3], trace, p.values)
    return 0


def check_copy(bt2, trace, copy, shown):
    """babeltrace2's CTF writer re-writes both header forms and every
    padding field, and reads its copy as it read the trace (it aborts on a
    byte-aligned integer of 24, 40, 48 or 56 bits: docs/compact.md)."""
    shutil.rmtree(copy, ignore_errors=True)
    out = subprocess.run([bt2, trace, "--component", "sink.ctf.fs",
                          "--params", 'path="%s"' % copy],
                         capture_output=True, text=True)
    if out.returncode != 0:
        print("babeltrace2 sink.ctf.fs exit %d:\n%s" % (out.returncode, out.stderr))
        return 1
    again = subprocess.run([bt2, "--clock-cycles", "--no-delta", copy],
                           capture_output=True, text=True)
    if again.returncode != 0 or again.stdout != shown:
        print("babeltrace2 reads its copy differently (exit %d):\n%s%s" %
              (again.returncode, again.stderr, again.stdout))
        return 1
    print("compact layout: babeltrace2's CTF writer copied it unchanged")
    return 0


def check_strata(strata, trace, want):
    out = subprocess.run([strata, "print", "--format", "json", trace],
                         capture_output=True, text=True)
    got = []
    for ln in out.stdout.splitlines():
        e = json.loads(ln)
        if (e["pid"], e["tid"]) != (4240, 4242):
            print("strata attributed %s to %d/%d, not 4240/4242" %
                  (e["event"], e["pid"], e["tid"]))
            return 1
        got.append((e["ts"], e["event"], e["fields"]))
    if out.returncode != 0 or out.stderr.strip() or got != want:
        print("strata print exit %d, stderr:\n%s" % (out.returncode, out.stderr))
        for i in range(max(len(got), len(want))):
            e = want[i] if i < len(want) else "(nothing)"
            g = got[i] if i < len(got) else "(nothing)"
            print("%s expected %s\n  got      %s" % ("  " if e == g else "!!", e, g))
        return 1
    print("compact layout: strata read the same %d events" % len(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
