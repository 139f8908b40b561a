#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata convert -F chrome of a function-probe trace (tests/profile/calls.c):
every call is one complete event (ph X, ts and dur) named by its function,
as many per function as the program made, each inside its caller on its
thread; the calls a longjmp left are marked unwound; in a window, the
calls crossing its edges are cut there and marked, the others kept whole.
The output passes tests/convert/check_chrome.py.

usage: chrome_test.py STRATA CALLS WORKDIR CHECK_CHROME
"""
import collections
import json
import os
import sys

from probetest import done, fail, run, workdir

STRATA, PROG, WORK, CHECK = sys.argv[1:5]
workdir(WORK)


def convert(name, *window):
    out = os.path.join(WORK, name + ".json")
    run([STRATA, "convert", trace, "-F", "chrome", "-o", out] + list(window))
    print(run([sys.executable, CHECK, out]).strip())
    with open(out) as f:
        return json.load(f)["traceEvents"]


ns = lambda us: round(us * 1000)  # the output's microseconds, 3 decimals


def nesting(xs, what):
    """Each thread's X events form a tree: each inside the one that
    encloses its start (its caller). Returns {id(x): parent or None}."""
    parent = {}
    by_tid = collections.defaultdict(list)
    for x in xs:
        by_tid[x["tid"]].append(x)
    for tid, v in by_tid.items():
        v.sort(key=lambda x: (ns(x["ts"]), -ns(x["dur"])))
        st = []
        for x in v:
            t0, t1 = ns(x["ts"]), ns(x["ts"]) + ns(x["dur"])
            # a call that ends where x begins is done, but for x of no
            # length (a call rounded to 0 ns), which may be its callee's
            # last; one that ends before x begins is done whatever x is
            while st and (ns(st[-1]["ts"]) + ns(st[-1]["dur"]) < t0 or
                          (ns(st[-1]["ts"]) + ns(st[-1]["dur"]) == t0 and ns(x["dur"]))):
                st.pop()
            if st and t1 > ns(st[-1]["ts"]) + ns(st[-1]["dur"]):
                fail("%s: thread %d: %s [%d, %d] overlaps %s [%d, %d] without nesting"
                     % (what, tid, x["name"], t0, t1, st[-1]["name"], ns(st[-1]["ts"]),
                        ns(st[-1]["ts"]) + ns(st[-1]["dur"])))
                return parent
            parent[id(x)] = st[-1] if st else None
            st.append(x)
    return parent


trace = os.path.join(WORK, "t")
truth = json.loads(run([STRATA, "record", "--functions", "-o", trace, "--", PROG])
                   .strip().splitlines()[-1])

# 1. The whole trace: one X per call, no B/E left of the probes.
ev = convert("all")
xs = [e for e in ev if e["ph"] == "X"]
be = [e for e in ev if e["ph"] in "BE" and e.get("cat") == "func"]
if be:
    fail("%d function probes as B/E, not X" % len(be))
got = collections.Counter(x["name"] for x in xs)
for name, n in truth["calls"].items():
    if got.get(name) != n:
        fail("%s: %s X events, the program made %d calls" % (name, got.get(name), n))
if set(got) - set(truth["calls"]):
    fail("X events of functions the program did not call: %s" % (set(got) - set(truth["calls"])))
if any(x.get("cat") != "func" or not x["args"]["fn"].startswith("0x") for x in xs):
    fail("an X without cat func or its fn address")
unwound = sorted(x["name"] for x in xs if x["args"].get("unwound"))
if unwound != ["jmp_leaf", "jmp_mid"]:
    fail("unwound: %s, expected jmp_leaf and jmp_mid (the longjmp left them)" % unwound)
cut = [x["name"] for x in xs if "cut" in x["args"]]
if cut:
    fail("cut calls in the whole trace: %s" % cut)

# Each call inside its caller: the parents the program's calls have.
parent = nesting(xs, "whole")
callers = {"a_top": {"main"}, "b_mid": {"a_top"}, "c_leaf": {"b_mid"},
           "spin_us": {"a_top", "b_mid", "c_leaf"}, "jmp_mid": {"jmp_top"},
           "jmp_leaf": {"jmp_mid"}, "fib": {"fib", "main", "worker"},
           "main": {None}, "worker": {None}}
for x in xs:
    if id(x) not in parent:
        break  # nesting() failed already
    p = parent[id(x)]
    pn = p["name"] if p else None
    if pn not in callers.get(x["name"], {pn}):
        fail("%s inside %s, expected inside one of %s" % (x["name"], pn, callers[x["name"]]))
        break
deepest = 0
for x in xs:
    d, p = 1, parent.get(id(x))
    while p:
        d, p = d + 1, parent.get(id(p))
    deepest = max(deepest, d)
if deepest != 21:
    fail("deepest nesting %d, expected 21 (main, then fib(20) down to fib(1))" % deepest)

# 2. A window through the middle of the run: the calls crossing its edges
# are cut there and marked, the calls inside it are the whole trace's. Its
# edges are where the 30th and 60th percent of the calls begin, not 30 and
# 60 % of the time: the run's phases move with the machine's load, and a
# window of time could fall inside one long call and hold none whole.
starts = sorted(ns(x["ts"]) for x in xs)
lo, hi = starts[len(starts) * 3 // 10], starts[len(starts) * 6 // 10]
lo_ns, hi_ns = lo // 1000 * 1000, max(hi, lo + 2000) // 1000 * 1000  # whole microseconds
win = [e for e in convert("window", "--from", "%.6f" % (lo_ns / 1e9),
                          "--to", "%.6f" % (hi_ns / 1e9)) if e["ph"] == "X"]
inside = collections.Counter((x["name"], x["tid"], ns(x["ts"]), ns(x["dur"])) for x in xs
                             if ns(x["ts"]) >= lo_ns and ns(x["ts"]) + ns(x["dur"]) <= hi_ns)
whole = collections.Counter((x["name"], x["tid"], ns(x["ts"]), ns(x["dur"])) for x in win
                            if "cut" not in x["args"])
if inside != whole or not whole:
    fail("window: %d calls whole in it, the whole trace has %d there"
         % (sum(whole.values()), sum(inside.values())))
ncut = 0
for x in win:
    c = x["args"].get("cut", "")
    a, b = ns(x["ts"]), ns(x["ts"]) + ns(x["dur"])
    ncut += bool(c)
    if a < lo_ns - 2 or b > hi_ns + 2:  # the edges in ticks, back in ns
        fail("window: %s [%d, %d] outside [%d, %d]" % (x["name"], a, b, lo_ns, hi_ns))
    if "began before the window" in c and abs(a - lo_ns) > 2:
        fail("window: %s marked %r, starts at %d, not %d" % (x["name"], c, a, lo_ns))
    if "ends after the window" in c and abs(b - hi_ns) > 2:
        fail("window: %s marked %r, ends at %d, not %d" % (x["name"], c, b, hi_ns))
if not ncut:
    fail("window: no call cut at its edges (main's crosses both)")
if not any(x["name"] == "main" and "began before the window, ends after the window"
           == x["args"].get("cut") for x in win):
    fail("window: main not cut at both edges")
nesting(win, "window")

done("chrome: %d calls as X, exact per function, nested %d deep; window: %d whole, %d cut"
     % (len(xs), deepest, sum(whole.values()), ncut))
