#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Function probes and C++ exceptions (tests/profile/throw.cc): g++ runs
the exit hook of -finstrument-functions in a cleanup, so a C++ frame an
exception leaves logs its exit while the stack unwinds, and every count
is exact with nothing unwound or partial. A C frame built without
-fexceptions (throw_c.c's c_mid) has no cleanup: its exit is never
logged, and the profile closes it at its caller's exit, unwound and
partial, as docs/profile.md says. Built with -fexceptions it balances too.

usage: throw_test.py STRATA THROW THROW_EH WORKDIR
"""
import json
import os
import sys

from probetest import done, fail, run, workdir

STRATA, PROG, PROG_EH, WORK = sys.argv[1:5]
workdir(WORK)


def nodes(n, path=()):
    """Every node of a call tree below n, with its path of names."""
    todo = [(c, path) for c in n["children"]]
    while todo:
        c, p = todo.pop()
        yield c, p + (c["name"],)
        todo += [(k, p + (c["name"],)) for k in c["children"]]


def check(name, prog, c_mid_unwound):
    trace = os.path.join(WORK, name)
    truth = json.loads(run([STRATA, "record", "--functions", "-o", trace, "--", prog])
                       .strip().splitlines()[-1])
    rounds = truth["calls"]["t_top"]
    if truth["caught"] != 2 * rounds:
        fail("%s: the program caught %d exceptions, not %d" % (name, truth["caught"], 2 * rounds))
    c = json.loads(run([STRATA, "profile", "--calls", "--tree", "--format", "json",
                        trace]))["calls"]
    fn = {f["name"]: f for f in c["functions"]}
    for f, n in truth["calls"].items():
        got = fn.get(f, {})
        if got.get("calls") != n:
            fail("%s: %s: %s calls, the program made %d" % (name, f, got.get("calls"), n))
        want = c_mid_unwound if f == "c_mid" else 0
        if got.get("unwound") != want:
            fail("%s: %s: %s unwound, expected %d" % (name, f, got.get("unwound"), want))
    # the guard's destructor, probed too: called once a round, balanced
    dtor = [f for n, f in fn.items() if "guard" in n]
    if len(dtor) != 1 or dtor[0]["calls"] != rounds or dtor[0]["unwound"]:
        fail("%s: the guard's destructor: %s" % (name, dtor))
    if c["open"] or c["stray"] or c["skipped"]:
        fail("%s: open %d, stray %d, skipped %d" % (name, c["open"], c["stray"], c["skipped"]))
    if c["unwound"] != c_mid_unwound or c["partial"] != c_mid_unwound:
        fail("%s: %d calls unwound, %d partial, expected %d (c_mid's)"
             % (name, c["unwound"], c["partial"], c_mid_unwound))
    # main, t_top, t_mid, then t_leaf(8) down to t_leaf(0): 12 deep
    if fn.get("t_leaf", {}).get("max_depth") != 12:
        fail("%s: t_leaf deepest %s, expected 12" % (name, fn.get("t_leaf", {}).get("max_depth")))
    partial = sorted({p for n, p in nodes(c["tree"]) if n["partial"]})
    want = [("main", "x_top", "c_mid")] if c_mid_unwound else []
    if partial != want:
        fail("%s: partial nodes %s, expected %s" % (name, partial, want))
    # t_cleanup runs from the destructor while t_mid is being left
    if not any(p[-1] == "t_cleanup" and p[:3] == ("main", "t_top", "t_mid")
               for n, p in nodes(c["tree"])):
        fail("%s: t_cleanup not under main;t_top;t_mid;~guard" % name)
    return sum(f["calls"] for f in c["functions"])


n = check("c-without-eh", PROG, 10)
n_eh = check("c-with-eh", PROG_EH, 0)
done("exceptions: %d calls exact, C++ frames balanced; the C frame unwound 10 times "
     "without -fexceptions, balanced with it (%d calls)" % (n, n_eh))
