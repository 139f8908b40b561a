#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata view's JSON API on a function-probe trace (tests/profile/throw.cc
built with -fexceptions, every call balanced): the probes are one
interval kind, `func:call_entry..call_exit`, on each thread's row, one
interval per call, each at the depth of the calls that enclose it: the
same calls, begin and end, as `strata convert -F chrome` writes as
complete events.

usage: view_test.py STRATA THROW_EH WORKDIR
"""
import collections
import json
import os
import sys

from probetest import done, fail, run, workdir

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "view"))
from served import View  # noqa: E402  (tests/view's: strata view --wait, its answers)

STRATA, PROG, WORK = sys.argv[1:4]
workdir(WORK)
trace = os.path.join(WORK, "t")
truth = json.loads(run([STRATA, "record", "--functions", "-o", trace, "--", PROG])
                   .strip().splitlines()[-1])
ncalls = sum(truth["calls"].values()) + truth["calls"]["t_mid"]  # + the guard's destructor

KIND = "func:call_entry..call_exit"
with View(STRATA, trace) as v:
    s = v.get("api/summary")
    kinds = s.get("kinds", [])
    if KIND not in kinds:
        sys.exit("summary kinds %s: no %s" % (kinds, KIND))
    r = v.get("api/intervals?t0=0&t1=%d&kind=%d&by=1&n=1000" % (s["span_ns"], kinds.index(KIND)))
ivs = r["intervals"]
if not r["complete"] or r["more"] or len(ivs) != ncalls:
    fail("%d intervals (complete %s, more %s), the program made %d calls"
         % (len(ivs), r["complete"], r["more"], ncalls))

# Nested: each interval's depth is the number of intervals of its thread
# that enclose it; the deepest are t_leaf(0)'s, 12 calls down (depth 11).
by_tid = collections.defaultdict(list)
for iv in ivs:
    by_tid[iv["tid"]].append(iv)
for tid, v in by_tid.items():
    v.sort(key=lambda iv: (iv["begin"], -iv["end"]))
    st = []
    for iv in v:
        while st and st[-1]["end"] <= iv["begin"]:
            st.pop()
        if st and iv["end"] > st[-1]["end"]:
            fail("thread %d: [%d, %d] overlaps [%d, %d] without nesting"
                 % (tid, iv["begin"], iv["end"], st[-1]["begin"], st[-1]["end"]))
            break
        if iv["depth"] != len(st):
            fail("thread %d: [%d, %d] at depth %d, inside %d calls"
                 % (tid, iv["begin"], iv["end"], iv["depth"], len(st)))
            break
        st.append(iv)
deepest = max((iv["depth"] for iv in ivs), default=-1)
if deepest != 11:
    fail("deepest interval at depth %d, expected 11 (main, t_top, t_mid, 9 t_leaf)" % deepest)

# The same calls as convert's complete events.
out = os.path.join(WORK, "t.json")
run([STRATA, "convert", trace, "-F", "chrome", "-o", out])
with open(out) as f:
    xs = [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
ns = lambda us: round(us * 1000)
conv = collections.Counter((x["tid"], ns(x["ts"]), ns(x["ts"]) + ns(x["dur"])) for x in xs)
view = collections.Counter((iv["tid"], iv["begin"], iv["end"]) for iv in ivs)
if conv != view:
    fail("view and convert differ: %d intervals only in the view, %d X only in convert"
         % (sum((view - conv).values()), sum((conv - view).values())))

done("view: %d function calls as nested intervals, %d deep, as convert's X events"
     % (len(ivs), deepest + 1))
