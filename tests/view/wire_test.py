#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata view's binary window (api/window?...&fmt=bin) against its JSON answer, value for value.

usage: wire_test.py STRATA WORKERS MESSAGES WORKDIR

On three traces (the example with 250 000 events; gen_view.py's, with
kernel sched events, thread states and 300 more wakeups than its own;
messages.c's, with message arrows), asks many windows (the whole trace
at several widths, the page's zoom steps down to 1 us, narrow ones,
filtered by CPUs, threads, event globs and an expression) in both forms,
decodes the binary one as docs/view.md ("The binary window") lays it
out, byte by byte with struct, and checks every field and every number
equal to the JSON's: pixel positions within the JSON's rounding to the
hundredth and float32's, everything else exactly; the flows' keys as
strings. Also: fmt=json is the default byte for byte, another fmt a 400,
the binary answer's type, its columns on 8-byte boundaries and its
length what its header says.
"""
import json
import os
import struct
import subprocess
import sys
import urllib.request

import recorded
import served

strata, workers, messages = sys.argv[1:4]
work, trace = recorded.fresh_work(sys.argv[4], "wire")
check = recorded.Checks("view-wire")
here = os.path.dirname(os.path.abspath(__file__))

HEAD = 64
MAGIC = b"SVWB"
# the tables' columns (src/view/wire.c, docs/view.md): f float32, d
# float64, i int32, u uint32, b uint8
TABLES = ["ffib", "ffbbdd", "ffuuddb", "uuudi", "ddiuidd", "ddiuiudd"]
STRUCT = {"f": "f", "d": "d", "i": "i", "u": "I", "b": "B"}
SLICES, STATES, IVS, MARKS, ARROWS, FLOWS = range(6)


def pad(n):
    return (n + 7) & ~7


def decode(buf):
    """The binary answer as the JSON's dict; raises on a malformed one."""
    magic, version, plen, ntab = struct.unpack_from("<4sIII", buf, 0)
    if magic != MAGIC or version != 1 or ntab != len(TABLES):
        raise ValueError(f"header {magic} {version} {ntab}")
    dims = [struct.unpack_from("<II", buf, 16 + 8 * k) for k in range(ntab)]
    pre = json.loads(buf[HEAD:HEAD + plen].decode())
    at = pad(HEAD + plen)
    tables = []
    for (rows, n), spec in zip(dims, TABLES):
        if at % 8:
            raise ValueError(f"a table at {at}: not on 8 bytes")
        counts = struct.unpack_from(f"<{rows}I", buf, at)
        at += pad(4 * rows)
        cols = []
        for c in spec:
            if at % 8:
                raise ValueError(f"a column at {at}: not on 8 bytes")
            cols.append(struct.unpack_from(f"<{n}{STRUCT[c]}", buf, at))
            at += pad(struct.calcsize(STRUCT[c]) * n)
        if sum(counts) != n:
            raise ValueError(f"counts {sum(counts)}, records {n}")
        flat, first = [], 0
        for k in counts:
            flat.append([col[i] for i in range(first, first + k) for col in cols])
            first += k
        tables.append(flat)
    if at != len(buf):
        raise ValueError(f"{len(buf)} bytes, the header says {at}")
    nc, tids = pre["ncpus"], pre["tids"]
    if len(tables[SLICES]) != nc + len(tids) or len(tables[MARKS]) != nc + len(tids):
        raise ValueError("rows: not the CPUs' and the threads'")
    d = {k: pre[k] for k in ("t0", "t1", "w", "exact", "filtered", "events",
                             "arrows_left", "flows_left")}
    d["cpus"] = [{"cpu": i, "slices": tables[SLICES][i], "marks": tables[MARKS][i]}
                 for i in range(nc)]
    d["threads"] = [{"tid": tid, "running": tables[SLICES][nc + j],
                     "states": tables[STATES][j], "intervals": tables[IVS][j],
                     "marks": tables[MARKS][nc + j]} for j, tid in enumerate(tids)]
    d["arrows"] = tables[ARROWS][0]
    flows = tables[FLOWS][0]
    keys = pre["keys"]
    if len(keys) * 8 != len(flows):
        raise ValueError(f"{len(keys)} keys, {len(flows) // 8} flows")
    d["flows"] = [v for i, k in enumerate(keys) for v in flows[8 * i:8 * i + 8] + [k]]
    return d


seen = [0] * len(TABLES)  # records compared per table: what the windows covered


def same_list(what, spec, js, bn, table):
    """The flat lists of one row: spec's letter for each record's values."""
    stride = len(spec) + (table == FLOWS)
    if len(js) != len(bn):
        return f"{what}: {len(bn)} values, the JSON {len(js)}"
    for i, (a, b) in enumerate(zip(js, bn)):
        c = spec[i % stride] if i % stride < len(spec) else "s"
        # x0, x1 (but a mark's whole pixel): the JSON writes them to the
        # hundredth, the binary as float32 (float64: arrows, flows)
        px = table != MARKS and i % stride < 2
        ok = abs(a - b) <= 0.005 + 1e-6 * abs(a) if px else a == b
        if not ok:
            return f"{what}: value {i} ({c}) is {b!r}, the JSON {a!r}"
    seen[table] += len(js) // stride
    return None


def compare(js, bn):
    """None when bn (decoded) says what js does, else the first difference."""
    for k in ("t0", "t1", "w", "exact", "filtered", "events", "arrows_left",
              "flows_left"):
        if js[k] != bn[k]:
            return f"{k} {bn[k]}, the JSON {js[k]}"
    if [c["cpu"] for c in js["cpus"]] != [c["cpu"] for c in bn["cpus"]]:
        return "the CPUs' rows differ"
    if [t["tid"] for t in js["threads"]] != [t["tid"] for t in bn["threads"]]:
        return "the threads' rows differ"
    lists = [(f"cpu {a['cpu']} {k}", t, a[k], b[k]) for a, b in zip(js["cpus"], bn["cpus"])
             for k, t in (("slices", SLICES), ("marks", MARKS))]
    lists += [(f"tid {a['tid']} {k}", t, a[k], b[k])
              for a, b in zip(js["threads"], bn["threads"])
              for k, t in (("running", SLICES), ("states", STATES),
                           ("intervals", IVS), ("marks", MARKS))]
    lists += [("arrows", ARROWS, js["arrows"], bn["arrows"]),
              ("flows", FLOWS, js["flows"], bn["flows"])]
    for what, t, a, b in lists:
        why = same_list(what, TABLES[t], a, b, t)
        if why:
            return why
    return None


def windows(v, span, filters):
    """The page's windows of the trace: whole at several widths, its zoom
    steps (x0.7) to 1 us, narrow ones, and each filter whole and zoomed."""
    qs = [f"t0=0&t1={span}&w={w}" for w in (1, 37, 1000, 1430, 8192)]
    w = span
    while w > 1000:
        lo = (span - int(w)) // 2
        qs.append(f"t0={lo}&t1={lo + int(w)}&w=1600")
        w *= 0.7
    qs += [f"t0={span // 3}&t1={span // 3 + 1000}&w=100",
           f"t0={span - 5000}&t1={span}&w=700", f"t0=0&t1=0&w=10"]
    for f in filters:
        qs += [f"t0=0&t1={span}&w=1000&{f}",
               f"t0={span // 2}&t1={span // 2 + span // 50}&w=1600&{f}",
               f"t0={span // 2}&t1={span // 2 + span // 5000}&w=800&{f}"]
    return qs


def run(name, path, filters, *args):
    with served.View(strata, path, "--no-cache", *args) as v:
        span = v.get("api/summary")["span_ns"]
        n = 0
        for q in windows(v, span, filters):
            raw = v.raw(f"api/window?{q}")
            check(v.raw(f"api/window?{q}&fmt=json") == raw,
                  f"{name}: {q}: fmt=json not the default's bytes")
            try:
                bn = decode(v.raw(f"api/window?{q}&fmt=bin"))
            except (ValueError, struct.error) as e:
                check(False, f"{name}: {q}: the binary answer: {e}")
                continue
            why = compare(json.loads(raw), bn)
            check(why is None, f"{name}: {q}: {why}")
            n += 1
        whole = f"api/window?t0=0&t1={span}&w=1430"
        with urllib.request.urlopen(v.url + whole + "&fmt=bin", timeout=60) as r:
            check(r.headers["Content-Type"] == "application/octet-stream",
                  f"{name}: binary answer's type {r.headers['Content-Type']}")
            nbin = len(r.read())
        njson = len(v.raw(whole))
        print(f"{name}: {n} windows compared; the whole trace at 1430 px: "
              f"{njson} B of JSON, {nbin} B binary")
        check(v.status(f"api/window?t0=0&t1={span}&fmt=xml") == 400, f"{name}: fmt=xml not 400")
        check(v.status(f"api/window?t0=0&t1={span}&fmt=bin&expr=%3D%3D") == 400,
              f"{name}: a bad expression with fmt=bin not 400")


subprocess.run([workers, "3", "50000"], env=dict(os.environ, STRATA_OUTPUT=trace),
               check=True, stdout=subprocess.DEVNULL)
check(recorded.wait_done(trace), "the recording: still live after 30 s")
s = None
with served.View(strata, trace, "--no-cache") as v:
    s = v.get("api/summary")
tids = [t["tid"] for t in s["threads"]][:2]
run("workers", trace, ["cpus=0", f"tids={','.join(map(str, tids))}", "ev=work:job_e*",
                       "expr=job%20%3D%3D%201", f"ev=*begin*&tids={tids[0]}&cpus=0,1"])

sched = os.path.join(work, "sched")
subprocess.run([sys.executable, os.path.join(here, "gen_view.py"), sched, "300"], check=True,
               stdout=subprocess.DEVNULL)
run("sched", sched, ["cpus=1", "tids=301", "tids=400", "ev=sched:*", "ev=sched:sched_wakeup*",
                     "expr=next_pid%20%3D%3D%20301"])

flows = os.path.join(work, "messages")
subprocess.run([messages, "2000"], env=dict(os.environ, STRATA_OUTPUT=flows), check=True,
               stdout=subprocess.DEVNULL)
check(recorded.wait_done(flows), "the messages' recording: still live after 30 s")
run("flows", flows, ["cpus=0", "ev=msg:take", "ev=msg:post"])

names = ["slices", "states", "intervals", "marks", "arrows", "flows"]
print("records compared: " + ", ".join(f"{n} {k}" for n, k in zip(seen, names)))
for k, n in zip(names, seen):
    check(n > 0, f"no {k} compared: the windows do not cover them")
if check.failed:
    sys.exit(1)
print("view-wire: ok")
