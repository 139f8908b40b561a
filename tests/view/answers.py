#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata view's answers on one trace, saved for comparison, and how long they take.

usage: answers.py STRATA TRACE OUTDIR [ROUNDS] [-- VIEW-OPTIONS...]

Starts `strata view TRACE` (the options after `--`, e.g. --no-cache), says
how long the model took (the URL printed), then asks the summary, windows
from the whole trace down to a microsecond at 1600 px (with and without
filters), stats, breakdowns and intervals, and writes each answer to
OUTDIR/NN.json (the summary without its timing, cache state and path). Two runs'
OUTDIRs compared with `diff -r` say whether a change kept every answer
byte for byte (docs/view.md, "Speed"). Each window is asked ROUNDS times
(default 5): the median and the largest time of each are printed, the
server's own time included, not the browser's. STRATA_ANSWERS_FMT=bin
asks the windows in their binary form (docs/view.md, "The binary
window"), saved as they come: their times and sizes against JSON's.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request

args = sys.argv[1:]
more = []
if "--" in args:
    more = args[args.index("--") + 1:]
    args = args[:args.index("--")]
strata, trace, out = args[:3]
rounds = int(args[3]) if len(args) > 3 else 5
fmt = os.environ.get("STRATA_ANSWERS_FMT", "")
os.makedirs(out, exist_ok=True)

t0 = time.monotonic()
view = subprocess.Popen([strata, "view", trace, "--wait", *more], stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, text=True)
try:
    url = view.stdout.readline().strip()
    if not url.startswith("http://"):
        sys.exit(f"answers.py: {trace}: strata view printed no URL")
    print(f"model ready (URL printed): {time.monotonic() - t0:.3f} s")

    def get(path):
        t = time.monotonic()
        with urllib.request.urlopen(url + path, timeout=120) as r:
            body = r.read()
        return body, (time.monotonic() - t) * 1e3

    raw = get("api/summary")[0]
    s = json.loads(raw)
    print(f"build_ms {s['build_ms']:.0f}, cache {s['cache']}")
    span = s["span_ns"]
    tids = [t["tid"] for t in s["threads"]][:3]
    # as the server wrote it, but for the fields that differ from run to run
    for k in ("build_ms", "cache", "trace"):
        raw = re.sub(rb'"%s":("[^"]*"|[0-9.]+)' % k.encode(), b'"%s":-' % k.encode(), raw)
    queries = []
    w = span
    while w > 1000: # the page's W: x0.7 a step from the whole trace
        lo = (span - int(w)) // 2
        queries.append(f"api/window?t0={lo}&t1={lo + int(w)}&w=1600")
        w *= 0.7
    queries += [
        f"api/window?t0=0&t1={span}&w=1600&ev=*begin*",
        f"api/window?t0=0&t1={span}&w=1600&tids={','.join(map(str, tids))}",
        f"api/window?t0=0&t1={span}&w=1600&cpus=0",
        f"api/window?t0={span // 3}&t1={span // 3 + span // 50}&w=1600&ev=*end*",
        f"api/stats?t0=0&t1={span}&kind=0",
        f"api/stats?t0={span // 2}&t1={span // 2 + span // 1000}&kind=0",
        f"api/intervals?t0=0&t1={span}&kind=0&by=0&n=50",
        f"api/intervals?t0={span // 2}&t1={span // 2 + span // 100}&kind=0&by=1&n=50",
    ] + [f"api/breakdown?tid={t}&t0=0&t1={span}" for t in tids]
    if fmt:
        queries = [q + f"&fmt={fmt}" if q.startswith("api/window") else q for q in queries]
    with open(os.path.join(out, "00.json"), "wb") as f:
        f.write(raw)
    slow = []
    for i, q in enumerate(queries, 1):
        body, ms = get(q)
        times = [ms] + [get(q)[1] for _ in range(rounds - 1)]
        with open(os.path.join(out, f"{i:02}.json"), "wb") as f:
            f.write(q.encode() + b"\n" + body)
        slow.append((statistics.median(times), max(times), len(body), q))
    for med, mx, n, q in slow:
        print(f"{med:7.1f} {mx:7.1f} ms {n:9} B  {q}")
    meds = sorted(m for m, _, _, q in slow if "window" in q)
    print(f"windows: n={len(meds)} median-of-medians {statistics.median(meds):.1f} ms, "
          f"p95 {meds[min(len(meds) - 1, int(0.95 * len(meds)))]:.1f} ms, max {meds[-1]:.1f} ms")
    # the server's memory (docs/view.md, "Memory"): its peak, and what
    # it holds for itself (the file pages of a mapped cache are the page
    # cache's, which the kernel may drop)
    with open(f"/proc/{view.pid}/status") as f:
        st = {l.split(":")[0]: l.split()[1] for l in f if l.startswith(("VmHWM", "RssAnon"))}
    print(f"server peak RSS {int(st['VmHWM']) >> 10} MiB, anonymous {int(st['RssAnon']) >> 10} MiB")
finally:
    view.terminate()
    view.wait()
