#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata profile --calls --tree and --format folded against a program
whose call tree is known (tests/profile/tree.c): the shape and call
counts exact, times against the program's own clock, self times adding
up to each thread's covered time, folded stacks summing to the total,
and calls not seen whole marked [partial].

usage: tree_test.py STRATA TREE WORKDIR
"""
import json
import os
import re
import subprocess
import sys

from probetest import fail, failures, workdir

STRATA, PROG, WORK = sys.argv[1:4]
workdir(WORK)


def run(*args):
    p = subprocess.run([STRATA] + list(args), capture_output=True, text=True)
    if p.returncode:
        sys.exit("strata %s exited %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p


trace = os.path.join(WORK, "t")
p = run("record", "--functions", "-o", trace, "--", PROG)
truth = json.loads(p.stdout.strip().splitlines()[-1])


def paths(node, prefix=()):
    """{path: node} of a JSON tree, below its root."""
    out = {}
    for ch in node["children"]:
        path = prefix + (ch["name"],)
        out[";".join(path)] = ch
        out.update(paths(ch, path))
    return out


def sorted_ok(node):
    tot = [c["total_ns"] for c in node["children"]]
    return tot == sorted(tot, reverse=True) and all(sorted_ok(c) for c in node["children"])


calls = json.loads(run("profile", "--calls", "--tree", "--format", "json", trace).stdout)["calls"]
tree = paths(calls["tree"])

# 1. The shape and the counts, exact; partial exactly where the thread
# never left its calls.
want = {"main": 1, "main;a": 2, "main;a;b": 2, "main;c": 1, "main;rec": 1,
        "main;rec;rec": 1, "main;rec;rec;rec": 1, "stuck_thread": 1, "stuck_thread;stuck": 1}
got = {k: v["calls"] for k, v in tree.items()}
if got != want:
    fail("tree %s, expected %s" % (sorted(got.items()), sorted(want.items())))
partial = sorted(k for k, v in tree.items() if v["partial"])
if partial != ["stuck_thread", "stuck_thread;stuck"]:
    fail("partial paths %s: only the never-left thread's" % partial)
if not sorted_ok(calls["tree"]):
    fail("children not sorted by total time")

# 2. Times: the probes run inside the spans the program times, so the
# trace's totals are at most the program's (plus 10 us, calls_test.py's
# slack), and at least the spins' nominal time.
ms = lambda ns: ns / 1e6
rows = []
def check(what, got, lo, hi):
    ok = lo <= got <= hi
    rows.append("%-48s %9.3f  [%.3f .. %.3f]  %s" % (what, got, lo, hi, "ok" if ok else "FAIL"))
    if not ok:
        failures.append(what)
if got == want:
    # a, b and c time themselves inside their probes: the trace's total
    # is at least theirs (less 10 us of rounding), and more only by the
    # probes' own cost, or a preemption between probe and clock read
    # (10 % + 0.5 ms: the suite runs two tests at a time).
    inside = lambda t: (ms(t) - 0.01, ms(t) * 1.1 + 0.5)
    check("main;a total (ms)", ms(tree["main;a"]["total_ns"]), *inside(truth["a_ns"]))
    check("main;a self: a's own spins (ms)", ms(tree["main;a"]["self_ns"]), 2.0,
          inside(truth["a_ns"] - truth["b_ns"])[1])
    check("main;a;b total (ms)", ms(tree["main;a;b"]["total_ns"]), *inside(truth["b_ns"]))
    check("main;c total (ms)", ms(tree["main;c"]["total_ns"]), *inside(truth["c_ns"]))
    check("main;rec total, 3 levels (ms)", ms(tree["main;rec"]["total_ns"]), 1.5,
          ms(truth["rec_ns"]) + 0.01)
    for k in ("main;rec", "main;rec;rec", "main;rec;rec;rec"):
        check(k + " self, 0.5 ms spin (ms)", ms(tree[k]["self_ns"]), 0.5,
              ms(tree["main;rec"]["total_ns"]))
    # a node's total is its self plus its children's totals
    for k, v in tree.items():
        inner = v["self_ns"] + sum(c["total_ns"] for c in v["children"])
        if abs(inner - v["total_ns"]) > len(v["children"]) + 1:
            fail("%s: total %d != self + children %d" % (k, v["total_ns"], inner))
print("\n".join(rows))

# 3. Each thread: its self times add up to its covered time.
covered = 0
for th in calls["thread_trees"]:
    nodes = paths(th["tree"])
    selfs = sum(v["self_ns"] for v in nodes.values())
    covered += th["covered_ns"]
    if abs(selfs - th["covered_ns"]) > len(nodes):
        fail("thread %d: self times add up to %d ns, covered %d" % (th["tid"], selfs, th["covered_ns"]))
    if th["covered_ns"] > th["span_ns"]:
        fail("thread %d: covered %d > span %d" % (th["tid"], th["covered_ns"], th["span_ns"]))

# 4. Folded: every line "frame;frame value", the values the tree's
# selves, summing to the threads' covered time.
p = run("profile", "--calls", "--format", "folded", trace)
total = 0
for line in p.stdout.splitlines():
    m = re.fullmatch(r"(\S+(?:;\S+)*) (\d+)", line)
    if not m:
        fail("folded line %r" % line)
        continue
    total += int(m.group(2))
    key = m.group(1).replace("[partial]", "")
    if key not in tree or tree[key]["self_ns"] != int(m.group(2)):
        fail("folded %r: not the tree's self time" % line)
if abs(total - covered) > len(tree):
    fail("folded sums to %d ns, the threads covered %d" % (total, covered))
if "stuck_thread[partial];stuck[partial] " not in p.stdout or "[partial]" not in p.stderr:
    fail("folded: the open calls not marked [partial]:\n" + p.stdout + p.stderr)

# 5. Text: indented by depth, --min leaves the small paths out and says so.
out = run("profile", "--calls", "--tree", trace).stdout
if not re.search(r"\n  +.*  main\n(.*\n)*.*    a\n(.*\n)*.*      b\n", out) \
        or "stuck [partial]" not in out:
    fail("text tree not indented by depth, or no [partial]:\n" + out)
if got == want:
    # just above rec's share of all threads' time: rec left out, a kept
    cut = 100.0 * tree["main;rec"]["total_ns"] / sum(
        c["total_ns"] for c in calls["tree"]["children"]) + 0.05
    out = run("profile", "--calls", "--tree", "--min", "%.2f" % cut, trace).stdout
    merged = out.split("\nThread ")[0]
    if " rec" in merged or "left out" not in merged or "    a" not in merged:
        fail("--min %.2f: rec shown, or no note, or a left out:\n%s" % (cut, out))

# 6. A window starting inside main and a: their exits have no entry;
# they are closed from the thread's first event and marked.
ev = [l.split() for l in run("print", trace).stdout.splitlines() if "func:call_" in l]
tid = ev[0][3]
mine = [float(e[0]) for e in ev if e[3] == tid]
start = (mine[1] + mine[2]) / 2  # after main's and a's entries, before b's
w = json.loads(run("profile", "--calls", "--tree", "--format", "json", "--from", "%.9f" % start,
                   trace).stdout)["calls"]
wt = paths(w["tree"])
if wt.get("main", {}).get("partial") is not True or wt.get("main;a", {}).get("partial") is not True \
        or wt.get("main;a", {}).get("calls") != 2 or wt.get("main;a;b", {}).get("calls") != 2 \
        or wt.get("main;a;b", {}).get("partial"):
    fail("--from inside a: %s" % sorted((k, v["calls"], v["partial"]) for k, v in wt.items()))

if failures:
    sys.exit(1)
print("tree: %d paths exact, times within the program's clock, self times adding up to "
      "each thread's covered time, folded summing to it, [partial] marked" % len(tree))
