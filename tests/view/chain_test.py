#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata view's api/event: a sample's call chain, symbolized, names the program's known functions.

usage: chain_test.py STRATA SPIN WORKDIR

Records tests/profile/spin.c (threads whose worker() calls f, g and h,
each of which calls burn(), built with frame pointers and -g) with
`strata record --sample --call-graph fp`, lists every sample through
api/list and asks api/event for each: 1 + n frames, the first the
sample's ip; a sample that names f, g or h (as function+0xoff
(spin.c:LINE), at the line spin.c defines it on) has worker as its
caller and start_thread below; one taken in burn shows burn, then f, g
or h; 80 % of the samples name f, g or h, a fifth at least are in burn
(the rest in clock_gettime's vDSO and the kernel, whose frame-pointer
walk loses burn's frame); the same event asked again answers the same
bytes (the cached frames). Skipped (77) where perf cpu-clock sampling is
not offered.
"""
import json
import os
import re
import subprocess
import sys

import recorded
import served

strata, spin = sys.argv[1], sys.argv[2]
work, trace = recorded.fresh_work(sys.argv[3], "chain")
check = recorded.Checks("view-chain")

r = subprocess.run([strata, "record", "--sample", "--call-graph", "fp", "-o", trace, "--",
                    spin, "2", "30"], capture_output=True, text=True)
if "sampling off" in r.stderr:
    print("view-chain: SKIP: no perf cpu-clock sampling here:", r.stderr.strip().splitlines()[0])
    sys.exit(77)
check(r.returncode == 0, f"strata record exited {r.returncode}: {r.stderr}")
check(recorded.wait_done(trace), "the recording: still live after 30 s")

# the lines spin.c defines them on: what DWARF gives for their frames
want_lines = {}
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "..", "profile", "spin.c")) as f:
    for no, line in enumerate(f, 1):
        for fn in ("f", "g", "h"):
            if re.match(rf"__attribute__\(\(noinline\)\) void {fn}\(", line):
                want_lines[fn] = no



def num(v):
    """A field as a number: pointers and values beyond 2^53 come as strings."""
    return v if isinstance(v, int) else int(v, 0)


with served.View(strata, trace, "--no-cache") as view:
    raw, get = view.raw, view.get
    samples = get("api/list?t=0&before=0&after=1000&ev=sample:cpu_clock")["events"]
    check(len(samples) >= 100, f"{len(samples)} samples listed, 100 at least wanted")
    frame = re.compile(r"^(\w+)\+0x[0-9a-f]+(?: \((\S+):(\d+)\))?$")
    in_burn = named = 0
    for e in samples:
        path = f"api/event?t={e['ts']}&stream={e['stream']}&offset={e['offset']}"
        body = raw(path)
        a = json.loads(body)
        chain = a.get("chain")
        check(chain and "symbols" not in a, f"sample at {e['ts']}: chain {chain}, {a.get('symbols')}")
        if not chain:
            continue
        n = num(e["fields"]["n"])
        check(len(chain) == 1 + n, f"sample at {e['ts']}: {len(chain)} frames, n = {n}")
        check(chain[0]["addr"] == hex(num(e["fields"]["ip"])), f"leaf {chain[0]['addr']}, ip "
              f"{e['fields']['ip']}")
        funcs = [m.group(1) if (m := frame.match(f["frame"])) else None for f in chain]
        j = next((k for k, fn in enumerate(funcs) if fn in want_lines), None)
        if j is None:
            continue
        named += 1
        m = frame.match(chain[j]["frame"])
        ok = funcs[j + 1:j + 2] == ["worker"] and "start_thread" in funcs[j + 2:] and \
            m.group(2) == "spin.c" and int(m.group(3)) == want_lines[funcs[j]]
        if funcs[0] == "burn":  # its leaf: burn, called by f, g or h
            in_burn += 1
            ok = ok and j == 1 and frame.match(chain[0]["frame"]).group(2) == "spin.c"
        check(ok, f"sample at {e['ts']}: {[f['frame'] for f in chain]}")
        check(raw(path) == body, f"sample at {e['ts']}: asked again, another answer")
    # the threads spin in f, g and h (burn, and the clock_gettime it
    # calls: a sample in the vDSO or the kernel loses burn's frame, as a
    # frame-pointer walk from code without one does, but keeps f's)
    check(named >= len(samples) * 8 // 10 and in_burn >= len(samples) // 5,
          f"{named} of {len(samples)} samples name f, g or h, {in_burn} in burn")

if check.failed:
    sys.exit(1)
print(f"view-chain: {len(samples)} samples, {named} naming f, g or h, {in_burn} in burn")
