#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata view's message arrows (api/window's flows) against the program's own account.

usage: flows_test.py STRATA MESSAGES WORKDIR

Records messages.c (a producer passing 2000 messages with 8 ids, reused,
through a queue to two consumers; one send never received, one receive
never sent) and checks: the metadata says each class's flow to
libstrata-reader and babeltrace2 still reads it; every arrow, gathered
over windows narrow enough to list all of theirs, is exactly one of the
program's messages (its id, sender and receiver tids) at print's times of
its send and receive, each message once; the lone ends are drawn from the
window's edges; a thread filter keeps the arrows of either end; a window
counts the arrows it leaves out.
"""
import collections
import json
import os
import shutil
import subprocess
import sys
import urllib.request

import recorded
import served

strata, messages = sys.argv[1], sys.argv[2]
work, trace = recorded.fresh_work(sys.argv[3], "flows")
check = recorded.Checks("view-flows")
failed = check.failed


log = subprocess.run([messages, "2000"], env=dict(os.environ, STRATA_OUTPUT=trace),
                     check=True, capture_output=True, text=True).stdout.split("\n")
if not recorded.wait_done(trace):
    check(False, "the recording: still live after 30 s")
msgs = [tuple(map(int, line.split()[1:])) for line in log if line.startswith("msg ")]
lone_send = [tuple(map(int, line.split()[1:])) for line in log if line.startswith("lone_send")]
lone_recv = [tuple(map(int, line.split()[1:])) for line in log if line.startswith("lone_recv")]
out = subprocess.run([strata, "print", trace, "--format", "json"], check=True,
                     capture_output=True, text=True).stdout
evs = [json.loads(line) for line in out.splitlines()]
for e in evs:
    e["ns"] = round(e["time"] * 1e9)
posts = [e for e in evs if e["event"] == "msg:post"]
takes = [e for e in evs if e["event"] == "msg:take"]
check(len(posts) == len(msgs) + 1 and len(takes) == len(msgs) + 1,
      f"print: {len(posts)} posts, {len(takes)} takes, the program {len(msgs)} messages + 1")

# the program's messages at print's times: the n-th post of the queue is
# its n-th message, the n-th take (but the lone one) its n-th receive
sends = [e for e in posts if e["fields"]["id"] != lone_send[0][0]]
recvs = [e for e in takes if e["fields"]["id"] != lone_recv[0][0]]
want = collections.Counter()
for (mid, stid, rtid), s, r in zip(msgs, sends, recvs):
    check(s["fields"]["id"] == mid == r["fields"]["id"] and s["tid"] == stid and
          r["tid"] == rtid, f"message {mid}: print {s['fields']['id']} from {s['tid']}, "
          f"{r['fields']['id']} to {r['tid']}, the program {stid} -> {rtid}")
    want[(s["ns"], r["ns"], stid, rtid, str(mid))] += 1
ls = next(e for e in posts if e["fields"]["id"] == lone_send[0][0])
lr = next(e for e in takes if e["fields"]["id"] == lone_recv[0][0])
want[(ls["ns"], -1, lone_send[0][1], -1, str(lone_send[0][0]))] += 1
want[(-1, lr["ns"], -1, lone_recv[0][1], str(lone_recv[0][0]))] += 1

# the metadata: the flows in env (format.md §6), which babeltrace2 accepts
ust = os.path.join(trace, "ust")
meta = "".join(open(os.path.join(ust, d, "metadata")).read() for d in os.listdir(ust))
check(meta.count('"send";') == 1 and meta.count('"receive";') == 1 and
      meta.count('strata_flow_key_') == 2, "metadata: the flows of msg:post and msg:take")
bt2 = shutil.which("babeltrace2")
if bt2:
    r = subprocess.run([bt2, trace], capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout.count("msg:post") == len(posts),
          f"babeltrace2: exit {r.returncode}, {r.stdout.count('msg:post')} posts "
          f"{r.stderr.strip()[:200]}")

view = subprocess.Popen([strata, "view", trace, "--wait"], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
try:
    url = view.stdout.readline().strip()

    def get(path):
        with urllib.request.urlopen(url + path, timeout=60) as r:
            return json.load(r)

    s = get("api/summary")
    span = s["span_ns"]
    # the whole trace: 256 drawn, the rest counted
    w = get(f"api/window?t0=0&t1={span}&w=1000")
    total = sum(want.values())
    check(len(w["flows"]) // 9 + w["flows_left"] == total and len(w["flows"]) // 9 == 256,
          f"whole trace: {len(w['flows']) // 9} flows drawn, {w['flows_left']} left, "
          f"the program {total}")
    # windows of 100 receives each: every arrow that crosses one drawn
    times = sorted(e["ns"] for e in takes + posts)
    got = set()
    cuts = [0] + [times[i] for i in range(200, len(times), 200)] + [span]
    for a, b in zip(cuts, cuts[1:]):
        w = get(f"api/window?t0={a}&t1={b}&w=1000")
        f = w["flows"]
        check(w["flows_left"] == 0, f"[{a}, {b}]: {w['flows_left']} flows left out")
        for i in range(0, len(f), 9):
            x0, x1, stid, scpu, rtid, rcpu, ts, tr, key = f[i:i + 9]
            got.add((ts, tr, stid, rtid, key))
            # the lone ends at the window's edges
            check((ts != -1 or x0 == 0) and (tr != -1 or x1 == 1000),
                  f"[{a}, {b}]: a lone end not at the edge: {f[i:i + 9]}")
    missing, extra = set(want) - got, got - set(want)
    check(not missing and not extra and all(c == 1 for c in want.values()),
          f"arrows: {len(got)}, the program {len(want)}; missing {sorted(missing)[:3]}, "
          f"not the program's {sorted(extra)[:3]}")
    # a receiver's thread keeps its arrows, whoever sent them
    rtid = msgs[0][2]
    a, b = cuts[1], cuts[3]
    w = get(f"api/window?t0={a}&t1={b}&w=1000&tids={rtid}")
    f = w["flows"]
    kept = {(f[i + 6], f[i + 7]) for i in range(0, len(f), 9)}
    mine = {(k[0], k[1]) for k in want if k[3] == rtid and k[0] <= b and k[1] >= a}
    check(kept == mine, f"tids={rtid}: {len(kept)} arrows, the program {len(mine)}")
finally:
    view.terminate()
    view.wait(timeout=10)

# metadata that names a flow's key wrongly (no such field, a role that is
# not one): the trace reads as before, without arrows
bad = os.path.join(work, "bad")
shutil.copytree(trace, bad)
for d in os.listdir(os.path.join(bad, "ust")):
    m = os.path.join(bad, "ust", d, "metadata")
    text = open(m).read()
    text = text.replace('= "send";', '= "sideways";')
    i = text.rfind("strata_flow_key_")
    text = text[:i] + text[i:].replace('"id"', '"nope"', 1)
    open(m, "w").write(text)
p = subprocess.run([strata, "print", bad], capture_output=True, text=True)
check(p.returncode == 0 and p.stdout.count("msg:post") == len(posts),
      f"bad flows: strata print exit {p.returncode}, {p.stdout.count('msg:post')} posts")
view = subprocess.Popen([strata, "view", bad, "--wait", "--no-cache"], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
try:
    url = view.stdout.readline().strip()
    w = json.load(urllib.request.urlopen(url + f"api/window?t0=0&t1={span}&w=1000", timeout=60))
    check(w["flows"] == [] and w["flows_left"] == 0,
          f"bad flows: {len(w['flows']) // 9} arrows, {w['flows_left']} left")
finally:
    view.terminate()
    view.wait(timeout=10)
# Paired as they come (docs/view.md, "Live"): the recording copied as a
# live trace (its writer's mark, no published index), followed: the
# arrows of the live model are the program's messages received by its
# end, the sends received after it drawn alone, and no other.
live = os.path.join(work, "live")
shutil.copytree(trace, live, ignore=lambda d, names: ["index"] if "/ust/" in d + "/" else [])
open(os.path.join(live, ".live"), "w").close()
with served.View(strata, live, "--live") as v:
    s = v.get("api/summary")
    check(s["live"] and s["span_ns"] > 0, f"the copy followed: live {s['live']}")
    end = s["span_ns"]
    got = set()
    cuts = [0] + [t for t in times if t < end][200::200] + [end]
    for a, b in zip(cuts, cuts[1:]):
        w = v.get(f"api/window?t0={a}&t1={b}&w=1000")
        f = w["flows"]
        check(w["flows_left"] == 0, f"live [{a}, {b}]: {w['flows_left']} flows left out")
        got |= {tuple(f[i + 6:i + 9]) for i in range(0, len(f), 9)}
exp = set()
for ts, tr, stid, rtid, key in want:
    if tr != -1 and tr <= end:
        exp.add((ts, tr, key))
    elif ts != -1 and ts <= end:
        exp.add((ts, -1, key))  # received after the live end, or never
    elif ts == -1 and tr <= end:
        exp.add((-1, tr, key))
waiting = sum(1 for k in exp if k[1] == -1)
check(got == exp and waiting > 0 and len(exp) > 1000,
      f"live arrows up to {end} ns: {len(got)}, the program {len(exp)} ({waiting} sends "
      f"waiting); missing {sorted(exp - got)[:3]}, not the program's {sorted(got - exp)[:3]}")

if failed:
    print(f"view-flows: {len(failed)} failed ({len(msgs)} messages)")
    sys.exit(1)
print(f"view-flows: ok ({len(msgs)} messages, {len(want)} arrows)")
