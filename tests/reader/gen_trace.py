#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes small strata test traces byte for byte per docs/format.md (mixed types).
"""usage: gen_trace.py OUTDIR [--events N] [--seed S] [--packet-size B]

Two processes, two CPUs each, several threads; every field type of format.md
§3 (integers, bool, f64, ptr, strings, arrays, an enum-free mix), format
strings and begin/end kinds in env (as the producer writes them),
strata:thread and strata:clock records, an events_discarded step and a
packet_seq_num gap. Timestamps are unique across the trace so that merged
order is unambiguous. Also writes index/cpuN.idx.

Every payload here is a whole number of words by its declared fields:
babeltrace2 2.0.4 fails on a packet whose last event's declared fields end
before the word boundary (it looks for one more event header in the padding).
"""
import argparse
import os
import random
import struct

FREQ = 1000000000
OFFSET_S = 1700000000
UUID_CLOCK = "0b8a6f3e-6f0e-4c3d-9a53-5e3f3b1c2d4e"

# (major, minor, name, kind, format, fields[(name, type)])
EVENTS = [
    (1, 1, "mem:alloc", None, "alloc %{size} bytes at %{addr:x}",
     [("size", "u64"), ("addr", "ptr"), ("flags", "u32"), ("node", "s32")]),
    (1, 2, "mem:free", None, None, [("addr", "ptr")]),
    (2, 1, "io:write", None, "write %{len} bytes to %{path}",
     [("fd", "s32"), ("path", "string"), ("len", "u64")]),
    (3, 1, "work:job_begin", "begin", "job %{job}", [("job", "u64"), ("prio", "u8"),
                                                      ("hint", "u16"), ("cpu", "u32")]),
    (3, 2, "work:job_end", "end", None, [("job", "u64"), ("ok", "bool"), ("bytes", "u8[3]"),
                                         ("code", "s32")]),
    (4, 1, "misc:sample", None, None,
     [("value", "f64"), ("small", "s8"), ("mid", "s16"), ("hist", "u16[3]"),
      ("big", "s64"), ("tag", "string"), ("after", "u32"), ("last", "u32")]),
]

CTYPE = {"u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
         "s8": "int8_t", "s16": "int16_t", "s32": "int32_t", "s64": "int64_t",
         "bool": "uint8_t", "f64": "double_t", "ptr": "uint64_hex_t"}
PACK = {"u8": "<B", "u16": "<H", "u32": "<I", "u64": "<Q", "s8": "<b", "s16": "<h",
        "s32": "<i", "s64": "<q", "bool": "<B", "f64": "<d", "ptr": "<Q"}

PREAMBLE = """/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 16; align = 16; signed = false; } := uint16_t;
typealias integer { size = 32; align = 32; signed = false; } := uint32_t;
typealias integer { size = 64; align = 64; signed = false; } := uint64_t;
typealias integer { size = 8; align = 8; signed = true; } := int8_t;
typealias integer { size = 16; align = 16; signed = true; } := int16_t;
typealias integer { size = 32; align = 32; signed = true; } := int32_t;
typealias integer { size = 64; align = 64; signed = true; } := int64_t;
typealias integer { size = 64; align = 64; signed = false; base = 16; } := uint64_hex_t;
typealias floating_point { exp_dig = 11; mant_dig = 53; align = 64; } := double_t;
typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } := char_t;
"""


# format.md §2: the trace block (its packet header) and a stream's packet
# context, shared by every stream class (compact_bt2.py uses them too).
TRACE_BLOCK = """trace {
	major = 1;
	minor = 8;
	uuid = "%s";
	byte_order = le;
	packet.header := struct {
		uint32_t magic;
		uint8_t uuid[16];
		uint32_t stream_id;
		uint64_t stream_instance_id;
	};
};

"""
CLOCK_T = """typealias integer { size = 64; align = 64; signed = false; map = clock.strata.value; } := uint64_clock_t;
"""
PACKET_CONTEXT = """	packet.context := struct {
		uint64_clock_t timestamp_begin;
		uint64_clock_t timestamp_end;
		uint64_t content_size;
		uint64_t packet_size;
		uint64_t packet_seq_num;
		uint64_t events_discarded;
		uint32_t cpu_id;
		uint32_t pid;
		uint32_t tid;
		uint32_t pad;
	};
"""


def packet_header(uuid_bytes, stream_id, pid, cpu, tid, tb, te, content, psize, seq, disc):
    """The 96 bytes of format.md §2; content and psize in bytes."""
    hdr = struct.pack("<I16sIQQQQQQQIIII", 0xC1FC1FC1, uuid_bytes, stream_id, pid << 32 | cpu,
                      tb, te, content * 8, psize * 8, seq, disc, cpu, pid, tid, 0)
    assert len(hdr) == 96
    return hdr


def metadata(pid, procname, trace_uuid):
    out = [PREAMBLE, TRACE_BLOCK % trace_uuid]
    env = ['\tdomain = "ust";', '\ttracer_name = "strata";', '\ttracer_major = 0;',
           '\ttracer_minor = 1;', '\tvpid = %d;' % pid, '\tprocname = "%s";' % procname,
           '\thostname = "testhost";', '\ttrace_creation_datetime = "20240101T000000+0000";']
    for (mj, mn, name, kind, fmt, fields) in EVENTS:
        eid = mj << 16 | mn
        if fmt:
            env.append('\tstrata_format_%d = "%s";' % (eid, fmt))
        if kind:
            env.append('\tstrata_kind_%d = "%s";' % (eid, kind))
    out.append("env {\n" + "\n".join(env) + "\n};\n\n")
    out.append('clock {\n\tname = "strata";\n\tuuid = "%s";\n\tdescription = "CLOCK_MONOTONIC";\n'
               '\tfreq = %d;\n\tprecision = 1;\n\toffset_s = %d;\n\toffset = 0;\n'
               '\tabsolute = TRUE;\n};\n\n' % (UUID_CLOCK, FREQ, OFFSET_S))
    out.append(CLOCK_T + "\nstream {\n\tid = 0;\n" + PACKET_CONTEXT + """	event.header := struct {
		integer { size = 32; align = 64; signed = false; map = clock.strata.value; } timestamp;
		integer { size = 22; align = 1; signed = false; } id;
	} align(64);
};

event {
	name = "strata:thread";
	id = 1;
	stream_id = 0;
	fields := struct {
		uint32_t tid;
		uint32_t pid;
	} align(64);
};

event {
	name = "strata:clock";
	id = 2;
	stream_id = 0;
	fields := struct {
		uint64_clock_t timestamp;
	} align(64);
};

""")
    for (mj, mn, name, kind, fmt, fields) in EVENTS:
        out.append('event {\n\tname = "%s";\n\tid = %d;\n\tstream_id = 0;\n' % (name, mj << 16 | mn))
        if fields:
            out.append("\tfields := struct {\n")
            for (fn, ft) in fields:
                if ft == "string":
                    out.append("\t\tuint32_t _%s_len;\n\t\tchar_t %s[_%s_len];\n" % (fn, fn, fn))
                elif "[" in ft:
                    base, n = ft[:-1].split("[")
                    out.append("\t\t%s %s[%s];\n" % (CTYPE[base], fn, n))
                else:
                    out.append("\t\t%s %s;\n" % (CTYPE[ft], fn))
            out.append("\t} align(64);\n")
        out.append("};\n\n")
    return "".join(out)


def payload(fields, rnd):
    """Pack values with natural alignment (format.md §3); return bytes, values."""
    b = bytearray()
    vals = {}
    for (fn, ft) in fields:
        if ft == "string":
            s = rnd.choice(["/tmp/a", "", "x" * rnd.randint(1, 30), "h\u00e9llo", "a b,c"])
            raw = s.encode() + b"\0"
            raw += b"\0" * ((-(len(b) + 4 + len(raw))) % 8)
            while len(b) % 4:
                b.append(0)
            b += struct.pack("<I", len(raw)) + raw
            vals[fn] = s
            continue
        if "[" in ft:
            base, n = ft[:-1].split("[")
            size = struct.calcsize(PACK[base])
            while len(b) % size:
                b.append(0)
            arr = [rnd.randint(0, (1 << (8 * size)) - 1) for _ in range(int(n))]
            for v in arr:
                b += struct.pack(PACK[base], v)
            vals[fn] = arr
            continue
        size = struct.calcsize(PACK[ft])
        while len(b) % size:
            b.append(0)
        if ft == "f64":
            v = rnd.choice([0.5, -2.25, 1e300, 3.0, 123.125])
        elif ft == "bool":
            v = rnd.randint(0, 1)
        elif ft[0] == "s":
            bits = size * 8
            v = rnd.randint(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        else:
            v = rnd.randint(0, (1 << (size * 8)) - 1) if rnd.random() < 0.3 else rnd.randint(0, min(100000, (1 << (size * 8)) - 1))
        b += struct.pack(PACK[ft], v)
        vals[fn] = v
    while len(b) % 8:
        b.append(0)
    return bytes(b), vals


def header(ts, mj, mn, words):
    return struct.pack("<Q", (ts & 0xffffffff) | (mj << 48 | mn << 32) | (words << 54))


def write_stream(path, idxpath, packets, psize, uuid_bytes, pid, cpu):
    """packets: list of (events_bytes, ts_begin, ts_end, seq, discarded, tid)"""
    with open(path, "wb") as f, open(idxpath, "wb") as ix:
        ix.write(struct.pack(">IIII", 0xC1F1DCC1, 1, 1, 72))
        for i, (data, tb, te, seq, disc, tid) in enumerate(packets):
            content = 96 + len(data)
            pkt = packet_header(uuid_bytes, 0, pid, cpu, tid, tb, te, content, psize, seq,
                                disc) + data
            pkt += b"\0" * (psize - len(pkt))
            f.write(pkt)
            ix.write(struct.pack(">QQQQQQQQQ", i * psize, psize * 8, content * 8, tb, te, disc,
                                 0, pid << 32 | cpu, seq))


def generate(out, nevents=3000, seed=1, psize=16384):
    rnd = random.Random(seed)
    procs = [(4242, "alpha", [4242, 4243, 4244]), (5151, "beta", [5151, 5152])]
    # one global timeline, unique timestamps
    ts = 1000000
    stream_events = {}  # (pid, cpu) -> list of (ts, tid, event tuple)
    for i in range(nevents):
        gap = rnd.randint(1, 5000)
        if i % 997 == 500:
            gap = (1 << 28) + rnd.randint(1, 1 << 33)   # forces a strata:clock record
        ts += gap
        pi = rnd.randrange(len(procs))
        pid, _, tids = procs[pi]
        cpu = rnd.randrange(2)
        tid = rnd.choice(tids)
        ev = rnd.choice(EVENTS)
        stream_events.setdefault((pid, cpu), []).append((ts, tid, ev))
    manifest = []
    for (pid, name, tids) in procs:
        d = os.path.join(out, "ust", "pid-%d" % pid)
        os.makedirs(os.path.join(d, "index"), exist_ok=True)
        tu = "%08x-0000-4000-8000-%012x" % (pid, pid)
        with open(os.path.join(d, "metadata"), "w") as f:
            f.write(metadata(pid, name, tu))
        ub = bytes.fromhex(tu.replace("-", ""))
        for cpu in range(2):
            evs = stream_events.get((pid, cpu), [])
            packets = []
            seq, disc = 0, 0
            cur = bytearray()
            cur_tid = None
            opener_tid = None
            tb = prev = None
            te = None
            for (t, tid, ev) in evs:
                mj, mn, ename, kind, fmt, fields = ev
                data, vals = payload(fields, rnd)
                rec = bytearray()
                if tb is None:
                    tb = prev = t - rnd.randint(0, 50)
                    opener_tid = tid
                    cur_tid = tid
                if tid != cur_tid:
                    rec += header(t, 0, 1, 2) + struct.pack("<II", tid, pid)
                need_clock = t - prev >= (1 << 28)
                if need_clock:
                    rec += header(t, 0, 2, 2) + struct.pack("<Q", t)
                rec += header(t, mj, mn, 1 + len(data) // 8) + data
                if 96 + len(cur) + len(rec) + 24 > psize and cur:
                    packets.append((bytes(cur), tb, te, seq, disc, opener_tid))
                    seq += 1
                    if len(packets) == 2:
                        seq += 1          # a lost packet
                    if len(packets) == 1:
                        disc += 7         # events dropped while the ring was full
                    cur = bytearray()
                    tb = prev = t - rnd.randint(0, 50)
                    opener_tid = tid
                    cur_tid = tid
                    rec = bytearray()
                    if t - prev >= (1 << 28):
                        rec += header(t, 0, 2, 2) + struct.pack("<Q", t)
                    rec += header(t, mj, mn, 1 + len(data) // 8) + data
                cur += rec
                cur_tid = tid
                prev = t
                te = t
                manifest.append((t, cpu, pid, tid, ename, vals))
            if cur:
                packets.append((bytes(cur), tb, te, seq, disc, opener_tid))
            write_stream(os.path.join(d, "cpu%d" % cpu), os.path.join(d, "index", "cpu%d.idx" % cpu),
                         packets, psize, ub, pid, cpu)
    manifest.sort(key=lambda e: e[0])
    return manifest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--events", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--packet-size", type=int, default=16384)
    a = ap.parse_args()
    m = generate(a.out, a.events, a.seed, a.packet_size)
    with open(os.path.join(a.out, "expected.txt"), "w") as f:
        for (t, cpu, pid, tid, name, vals) in m:
            f.write("%d %d %d %d %s\n" % (t, cpu, pid, tid, name))


if __name__ == "__main__":
    main()
