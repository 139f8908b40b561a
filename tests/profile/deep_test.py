#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata profile --calls --tree on a recursion 100,000 calls deep
(tests/profile/deep.c): the call tree is as deep as the program's calls,
and every walk of it (building, merging, sorting, printing as text,
JSON and folded stacks, freeing) must hold without recursing that deep.
Each report exits 0 and has every level: exact call counts.

usage: deep_test.py STRATA DEEP WORKDIR
"""
import os
import shutil
import subprocess
import sys

STRATA, PROG, WORK = sys.argv[1:4]
DEPTH = 100000
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
trace = os.path.join(WORK, "t")
env = dict(os.environ, STRATA_FUNCTIONS_DEPTH=str(DEPTH + 10))
# rings big enough for 2 x 100,001 events
p = subprocess.run([STRATA, "record", "--functions", "-o", trace, "--", PROG, str(DEPTH)],
                   env=env, capture_output=True, text=True, timeout=300)
if p.returncode:
    sys.exit("FAIL: record exited %d: %s" % (p.returncode, p.stderr))


def profile(*args):
    p = subprocess.run([STRATA, "profile", "--calls"] + list(args) + [trace],
                       capture_output=True, text=True, timeout=300)
    if p.returncode:
        sys.exit("FAIL: strata profile --calls %s exited %d (%s)" % (
            " ".join(args), p.returncode, p.stderr.strip()[-500:]))
    return p.stdout


levels = DEPTH + 1  # deep(100000) down to deep(0)
# the flat profile: every call paired, 100,001 deep
out = profile("--format", "json")
if '"name":"deep","module"' not in out.replace(" ", "") or '"max_depth":%d' % levels not in out:
    print(out[:2000])
    sys.exit("FAIL: the flat profile does not have deep's %d levels" % levels)
# the tree as text: one row per level of deep (the name ends each row)
text = profile("--tree")
rows = sum(1 for line in text.splitlines() if line.rstrip().endswith("deep"))
# the merged tree and the thread's own: the same rows twice with 2 threads
# (main is not probed: only the recursing thread has calls)
if rows != levels:
    print(text[:2000])
    sys.exit("FAIL: the text tree has %d rows of deep, expected %d" % (rows, levels))
# JSON: one node per level in the merged tree and in the thread's
js = profile("--tree", "--format", "json")
nodes = js.count('{"name":"deep","calls"')
if nodes != 2 * levels:
    sys.exit("FAIL: the JSON trees have %d nodes of deep, expected %d" % (nodes, 2 * levels))
# folded: one line per path with self time, each deeper than the last;
# stacks longer than the line buffer are left out, counted once
folded = profile("--format", "folded")
lines = folded.splitlines()
if not lines or any(not l.startswith("deep") for l in lines):
    sys.exit("FAIL: folded stacks: %r" % lines[:3])
print("deep: %d levels: text rows %d, JSON nodes %d, folded lines %d" % (
    levels, rows, nodes, len(lines)))
print("ok")
