#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata record --functions and strata profile against a program whose
calls are known (tests/profile/calls.c): exact call counts, nesting,
recursion counted once, a longjmp, the depth bound, an exclusion, and
the probes off when not asked for.

usage: calls_test.py STRATA CALLS WORKDIR
"""
import json
import os
import subprocess
import sys

from probetest import fail, failures, workdir

STRATA, PROG, WORK = sys.argv[1:4]
workdir(WORK)


def record(name, env=None, functions=True):
    trace = os.path.join(WORK, name)
    args = [STRATA, "record"] + (["--functions"] if functions else []) + ["-o", trace, "--", PROG]
    p = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    if p.returncode:
        sys.exit("record %s exited %d: %s" % (name, p.returncode, p.stderr))
    truth = json.loads(p.stdout.strip().splitlines()[-1])
    prof = subprocess.run([STRATA, "profile", "--format", "json", trace],
                          capture_output=True, text=True)
    return truth, prof


def calls_of(prof):
    if prof.returncode:
        sys.exit("profile exited %d: %s" % (prof.returncode, prof.stderr))
    c = json.loads(prof.stdout)["calls"]
    return c, {f["name"]: f for f in c["functions"]}


# 1. Everything probed: exact counts, the longjmp, times against the
# program's own clock.
truth, prof = record("all")
c, fn = calls_of(prof)
for name, n in truth["calls"].items():
    got = fn.get(name, {}).get("calls")
    if got != n:
        fail("%s: %s calls, the program made %d" % (name, got, n))
for name, unwound in (("jmp_top", 0), ("jmp_mid", 1), ("jmp_leaf", 1), ("fib", 0), ("a_top", 0)):
    if fn.get(name, {}).get("unwound") != unwound:
        fail("%s: unwound %s, expected %d (jmp_leaf longjmps into jmp_top)" % (name, fn.get(name, {}).get("unwound"), unwound))
if c["open"] or c["stray"] or c["skipped"]:
    fail("open %d, stray %d, skipped %d: every call was entered and left in the trace"
         % (c["open"], c["stray"], c["skipped"]))
# main -> fib(20) -> ... -> fib(1): 21 frames on the main thread's stack
if fn["fib"]["max_depth"] != 21:
    fail("fib: deepest %d, expected 21 (main, then fib(20) down to fib(1))" % fn["fib"]["max_depth"])
# Times: no assertion on how long anything took (the machine is shared),
# only what must hold whatever the load. The probes run inside the spans
# the program times itself, so the trace's totals are at most those; a
# spin lasts at least its nominal time; self times add up to the total of
# the tree they partition; and recursion counts fib's time once, in its
# outermost calls (counted at every level it would be about 20 times the
# program's own figure).
ms = lambda ns: ns / 1e6
rows = []
def check(what, got, lo, hi):
    ok = lo <= got <= hi
    rows.append("%-52s %10.3f  [%.3f .. %.3f]  %s" % (what, got, lo, hi, "ok" if ok else "FAIL"))
    if not ok:
        failures.append(what)
check("fib total, at most its outermost calls' (ms)", ms(fn["fib"]["total_ns"]), 0.0,
      ms(truth["fib_ns"]) + 0.01)
check("a_top total, at most the program's clock (ms)", ms(fn["a_top"]["total_ns"]),
      ms(fn["b_mid"]["total_ns"]), ms(truth["a_top_ns"]) + 0.01)
check("b_mid total, within a_top's, over c_leaf's (ms)", ms(fn["b_mid"]["total_ns"]),
      ms(fn["c_leaf"]["total_ns"]), ms(fn["a_top"]["total_ns"]))
check("c_leaf total, at least 6 x 200 us (ms)", ms(fn["c_leaf"]["total_ns"]), 1.2,
      ms(fn["b_mid"]["total_ns"]))
check("spin_us total, at least 1.8 ms, within a_top (ms)", ms(fn["spin_us"]["total_ns"]), 1.8,
      ms(fn["a_top"]["total_ns"]))
selfs = sum(fn[n]["self_ns"] for n in ("a_top", "b_mid", "c_leaf", "spin_us"))
check("a_top's tree: self times add up to its total (ms)", ms(selfs),
      ms(fn["a_top"]["total_ns"]) - 0.001, ms(fn["a_top"]["total_ns"]) + 0.001)
print("\n".join(rows))

# 1b. The call tree: the calls the longjmp left (jmp_mid, jmp_leaf) are
# closed at jmp_top's exit and marked partial; jmp_top, which returned,
# is not.
p = subprocess.run([STRATA, "profile", "--calls", "--tree", "--format", "json",
                    os.path.join(WORK, "all")], capture_output=True, text=True)
if p.returncode:
    sys.exit("profile --tree exited %d: %s" % (p.returncode, p.stderr))
calls_tree = json.loads(p.stdout)["calls"]
todo, top = [calls_tree["tree"]], None
while todo and not top:
    n = todo.pop()
    top = n if n["name"] == "jmp_top" else None
    todo += n["children"]
kid = lambda n, name: next((c for c in (n or {}).get("children", []) if c["name"] == name), None)
mid = kid(top, "jmp_mid")
leaf = kid(mid, "jmp_leaf")
if not top or not mid or not leaf or top["partial"] or not mid["partial"] or not leaf["partial"]:
    fail("longjmp in the tree: jmp_top %s, jmp_mid %s, jmp_leaf %s: want the two it left "
         "partial, jmp_top not" % tuple((n or {}).get("partial") for n in (top, mid, leaf)))
if calls_tree["partial"] < 2:
    fail("longjmp in the tree: %d calls partial, at least jmp_mid's and jmp_leaf's"
         % calls_tree["partial"])

# 2. The depth bound: what is deeper is counted, never half-logged.
truth, prof = record("depth", {"STRATA_FUNCTIONS_DEPTH": "10"})
c, fn = calls_of(prof)
if fn.get("fib", {}).get("calls", 0) + c["skipped"] != truth["calls"]["fib"]:
    fail("depth 10: %s fib calls logged + %d skipped != %d made" %
         (fn.get("fib", {}).get("calls"), c["skipped"], truth["calls"]["fib"]))
if c["open"] or c["stray"] or c["max_depth"] > 10:
    fail("depth 10: open %d, stray %d, deepest %d" % (c["open"], c["stray"], c["max_depth"]))

# 3. An exclusion by symbol: c_leaf's calls gone, its callee's kept.
truth, prof = record("exclude", {"STRATA_FUNCTIONS_EXCLUDE": "c_leaf"})
c, fn = calls_of(prof)
if "c_leaf" in fn or fn.get("spin_us", {}).get("calls") != 10 or fn.get("b_mid", {}).get("calls") != 3:
    fail("exclude c_leaf: rows %s" % sorted((k, v["calls"]) for k, v in fn.items()))
if c["skipped"] != 6:
    fail("exclude c_leaf: %d calls counted as not logged, expected 6" % c["skipped"])

# 4. Not asked for: no probe writes anything.
truth, prof = record("off", functions=False)
if prof.returncode == 0 or "func:call_entry" not in prof.stderr:
    fail("without --functions: profile exited %d (%s): the probes were on"
         % (prof.returncode, prof.stderr.strip()))

if failures:
    sys.exit(1)
print("calls: %d functions' calls exact, a longjmp unwound, recursion counted once, "
      "the depth bound and an exclusion counted, the probes off unless asked" % len(truth["calls"]))
