#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata view's process filter (`pids=`, docs/view.md "Filters") against strata print.

usage: procs_test.py STRATA WORKERS WORKDIR

Records two processes of the example into one trace (`strata record`),
then, for each process, checks that `pids=` keeps exactly its threads'
events and nobody else's, wherever the filter applies: the whole
window from the bins, a narrow window from the events, the list, the
statistics and the search; that it narrows a thread filter (an AND, a
thread of another process keeps nothing) and that a bad list is a 400.
"""
import collections
import json
import subprocess
import sys
import urllib.error

import recorded
import served

strata, workers = sys.argv[1], sys.argv[2]
work, trace = recorded.fresh_work(sys.argv[3], "procs")
check = recorded.Checks("view-procs")

# two processes at once, of different sizes (3 and 2 threads)
subprocess.run([strata, "record", "-o", trace, "--", "sh", "-c",
                f"{workers} 3 40000 & {workers} 2 20000; wait"],
               check=True, stdout=subprocess.DEVNULL)
out = subprocess.run([strata, "print", trace, "--format", "json"], check=True,
                     capture_output=True, text=True).stdout
evs = [json.loads(line) for line in out.splitlines()]
for e in evs:
    e["ns"] = round(e["time"] * 1e9)
pids = sorted({e["pid"] for e in evs})
check(len(pids) == 2, f"print: processes {pids}, not 2")
per_pid_tid = collections.Counter((e["pid"], e["tid"]) for e in evs)


def key(e):  # a listed event, or a printed one
    return (e["ns"], e["event"], e["tid"], e["cpu"]) if "event" in e else \
        (e["ts"], e["name"], e["tid"], e["cpu"])


with served.View(strata, trace, "--no-cache") as view:
    check(view.url.startswith("http://"), "no URL")
    s = view.get("api/summary")
    span = s["span_ns"]
    for pid in pids:
        mine = [e for e in evs if e["pid"] == pid]
        tids = {t for p, t in per_pid_tid if p == pid}
        # the whole trace from the bins: each kept row's counts exact,
        # every other row empty
        w = view.get(f"api/window?t0=0&t1={span}&w=1000&pids={pid}")
        thr = {t["tid"]: sum(t["marks"][2::5]) for t in w["threads"]}
        want = {t: per_pid_tid[(pid, t)] for t in tids}
        check(w["filtered"] is False or not w["exact"],
              f"pids={pid}: whole window from the bins")
        check({t: n for t, n in thr.items() if n} == want,
              f"pids={pid}: whole window's marks {thr}, print {want}")
        # a narrow window read from the events
        t0, t1 = mine[len(mine) // 3]["ns"], mine[len(mine) // 3 + 2000]["ns"]
        w = view.get(f"api/window?t0={t0}&t1={t1}&w=500&pids={pid}")
        thr = {t["tid"]: sum(t["marks"][2::5]) for t in w["threads"]}
        want = collections.Counter(e["tid"] for e in mine if t0 <= e["ns"] <= t1)
        check(w["exact"] and {t: n for t, n in thr.items() if n} == dict(want),
              f"pids={pid}: narrow window's marks {thr}, print {dict(want)}")
        cpu = collections.Counter(e["cpu"] for e in mine if t0 <= e["ns"] <= t1)
        got = {c["cpu"]: sum(c["marks"][2::5]) for c in w["cpus"]}
        check({c: n for c, n in got.items() if n} == dict(cpu),
              f"pids={pid}: narrow window's CPU marks {got}, print {dict(cpu)}")
        # the list around a time, and the statistics of the narrow range
        tm = mine[len(mine) // 2]["ns"]
        lst = view.get(f"api/list?t={tm}&before=30&after=30&pids={pid}")["events"]
        near = [e for e in mine if e["ns"] < tm][-30:] + [e for e in mine if e["ns"] >= tm][:30]
        check([key(e) for e in lst] == [key(e) for e in near],
              f"pids={pid}: the list around a time ({len(lst)} events, print {len(near)})")
        st = view.get(f"api/stats?t0={t0}&t1={t1}&pids={pid}")
        check(st["events"] == sum(want.values()) and
              {x["tid"]: x["count"] for x in st["threads"]} == dict(want),
              f"pids={pid}: stats {st['events']} events, print {sum(want.values())}")
        # the search finds this process's first job_end, not the other's
        first = next(e for e in mine if e["event"] == "work:job_end")
        hit = view.get(f"api/search?t=0&dir=1&find=work:job_end&pids={pid}")["match"]
        check(hit and key(hit) == key(first),
              f"pids={pid}: search found {hit and key(hit)}, print {key(first)}")
        # AND with threads: one of its own, and one of the other process's
        own = min(tids)
        lst = view.get(f"api/list?t=0&before=0&after=50&pids={pid}&tids={own}")["events"]
        check(lst and all(e["tid"] == own for e in lst), f"pids={pid}&tids={own}: the list")
        other = min(t for p, t in per_pid_tid if p != pid)
        lst = view.get(f"api/list?t=0&before=0&after=50&pids={pid}&tids={other}")["events"]
        w = view.get(f"api/window?t0=0&t1={span}&w=1000&pids={pid}&tids={other}")
        check(lst == [] and all(sum(t["marks"][2::5]) == 0 for t in w["threads"]),
              f"pids={pid}&tids={other} (another process's thread): keeps nothing")
    # a process the trace lacks keeps nothing; a bad list is a 400
    lst = view.get("api/list?t=0&before=0&after=50&pids=1")["events"]
    check(lst == [], f"pids=1: {len(lst)} events")
    for bad in ("pids=x", "pids=1,,2", "pids=-3", "pids=" + ",".join(["1"] * 65)):
        check(view.status(f"api/list?t=0&{bad}") == 400, f"{bad}: not a 400")

if check.failed:
    sys.exit(1)
print("view-procs: passed")
