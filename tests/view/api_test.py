#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata view's JSON API on a recorded trace, against what strata print says of it.

usage: api_test.py STRATA WORKERS WORKDIR

Records the example (enough events that the whole trace is drawn from the
bins, a narrow window from the events), then checks the summary's counts
per CPU and thread, the marks of both kinds of window, the intervals,
and the event lists around a time against `strata print --format json`.
"""
import bisect
import collections
import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

import recorded
import served

strata, workers = sys.argv[1], sys.argv[2]
work, trace = recorded.fresh_work(sys.argv[3], "api")
check = recorded.Checks("view-api")
failed = check.failed


subprocess.run([workers, "3", "50000"], env=dict(os.environ, STRATA_OUTPUT=trace),
               check=True, stdout=subprocess.DEVNULL)
check(recorded.wait_done(trace), "the recording: still live after 30 s")
out = subprocess.run([strata, "print", trace, "--format", "json"], check=True,
                     capture_output=True, text=True).stdout
evs = [json.loads(line) for line in out.splitlines()]
for e in evs:
    e["ns"] = round(e["time"] * 1e9)
n = len(evs)
per_tid = collections.Counter(e["tid"] for e in evs)
per_cpu = collections.Counter(e["cpu"] for e in evs)

view = subprocess.Popen([strata, "view", trace, "--wait"], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
try:
    url = view.stdout.readline().strip()

    def get(path):
        with urllib.request.urlopen(url + path, timeout=60) as r:
            return json.load(r)

    s = get("api/summary")
    check(s["events"] == n, f"summary: {s['events']} events, print {n}")
    check(s["freq"] == 1000000000 or s["freq"] > 0, "summary: clock frequency")
    for c in s["cpus"]:
        check(c["events"] == per_cpu.get(c["cpu"], 0),
              f"summary: CPU {c['cpu']} {c['events']} events, print {per_cpu.get(c['cpu'], 0)}")
    rows = {t["tid"]: t for t in s["threads"]}
    check(set(rows) == set(per_tid), f"summary: threads {sorted(rows)}, print {sorted(per_tid)}")
    for tid, t in rows.items():
        check(t["events"] == per_tid[tid], f"summary: tid {tid} {t['events']}, print {per_tid[tid]}")
    jobs = collections.Counter(e["tid"] for e in evs if e["event"] == "work:job_end")
    for tid, t in rows.items():
        check(t["intervals"] >= jobs[tid], f"summary: tid {tid} {t['intervals']} intervals, "
              f"{jobs[tid]} jobs ended")
    check("work:job_begin..job_end" in s["kinds"], f"summary: kinds {s['kinds']}")
    # the workers name themselves: strata's own records, which the model
    # reads beside its pass (src/view/states.c)
    named = sorted(t["name"] for t in s["threads"] if t["events"])
    check(named == [f"worker-{i}" for i in range(3)], f"summary: thread names {named}")

    def marks_per_row(w):
        cpu = {c["cpu"]: sum(c["marks"][2::5]) for c in w["cpus"]}
        thr = {t["tid"]: sum(t["marks"][2::5]) for t in w["threads"]}
        return cpu, thr

    # the whole trace: more events than the exact limit, from the bins
    w = get(f"api/window?t0=0&t1={s['span_ns']}&w=1000")
    check(n <= 200000 or not w["exact"], "whole window: from the bins")
    # asked again the same answer; at another width, or filtered, each
    # its own
    for q, same in (("w=1000", True), ("w=999", False), ("w=1000&tids=1", False)):
        a = get(f"api/window?t0=0&t1={s['span_ns']}&{q}")
        check((a == w) == same and a["w"] == (999 if q == "w=999" else 1000),
              f"whole window again ({q}): {'not ' if same else ''}the same answer")
    cpu, thr = marks_per_row(w)
    check(all(cpu[c] == per_cpu.get(c, 0) for c in cpu), f"whole window: marks per CPU {cpu}")
    check(all(thr[t] == per_tid[t] for t in thr), f"whole window: marks per thread {thr}")
    check(all(len(t["intervals"]) > 0 for t in w["threads"] if jobs[t["tid"]]),
          "whole window: intervals drawn")

    # filters on the whole trace, from the bins of each row's event classes:
    # the same counts as print's, per CPU and per thread
    ends = [e for e in evs if e["event"] == "work:job_end"]
    w = get(f"api/window?t0=0&t1={s['span_ns']}&w=1000&ev=work:job_e*")
    check(not w["exact"] and w["filtered"], "filtered whole window: from the bins, filtered")
    cpu, thr = marks_per_row(w)
    want = collections.Counter(e["cpu"] for e in ends)
    check(all(cpu[c] == want.get(c, 0) for c in cpu), f"ev=work:job_e*: marks per CPU {cpu}, "
          f"print {dict(want)}")
    tid = sorted(per_tid)[-1]
    want = collections.Counter(e["tid"] for e in ends)
    w = get(f"api/window?t0=0&t1={s['span_ns']}&w=1000&ev=work:job_e*&tids={tid}")
    cpu, thr = marks_per_row(w)
    check(thr[tid] == want[tid] and all(thr[t] == 0 for t in thr if t != tid) and
          not w["filtered"] and sum(cpu.values()) == 0,
          f"ev and tids: marks {thr} (print {want[tid]} for {tid}), CPU rows {cpu}")
    w = get(f"api/window?t0=0&t1={s['span_ns']}&w=1000&expr=job%20%3D%3D%201")
    check(not w["filtered"], "an expression over the bins is said not to filter them")
    # marks=only (the page's marked events): the same marks, every other
    # list empty, from the bins and read
    for q in (f"t0=0&t1={s['span_ns']}&w=1000&ev=work:job_e*",
              f"t0={evs[n // 2]['ns']}&t1={evs[n // 2 + 500]['ns']}&w=700&ev=work:job_*"):
        a, b = get("api/window?" + q), get("api/window?" + q + "&marks=only")
        rows = lambda x: [r["marks"] for r in x["cpus"]] + [r["marks"] for r in x["threads"]]
        empty = all(not r.get(k) for r in b["cpus"] + b["threads"]
                    for k in ("slices", "running", "states", "intervals"))
        check(rows(a) == rows(b) and empty and not b["arrows"] and not b["flows"] and
              (a["exact"], a["filtered"]) == (b["exact"], b["filtered"]),
              f"marks=only ({q}): marks as the full window's, the rest empty")
    try:
        get(f"api/window?t0=0&t1=100&w=10&marks=all")
        check(False, "marks=all: not a 400")
    except urllib.error.HTTPError as e:
        check(e.code == 400, f"marks=all: {e.code}")

    # a narrow window: from the events themselves
    t0, t1 = evs[n // 3]["ns"], evs[n // 3 + 1000]["ns"]
    inside = [e for e in evs if t0 <= e["ns"] <= t1]
    w = get(f"api/window?t0={t0}&t1={t1}&w=500")
    check(w["exact"], "narrow window: exact")
    cpu, thr = marks_per_row(w)
    want = collections.Counter(e["tid"] for e in inside)
    check(all(thr[t] == want.get(t, 0) for t in thr), f"narrow window: {thr} vs {dict(want)}")
    first = {}
    for e in inside:
        first.setdefault(e["tid"], e)
    for t in w["threads"]:
        m = t["marks"]
        if m and t["tid"] in first:
            check(m[3] == first[t["tid"]]["ns"], f"narrow window: tid {t['tid']} first mark at "
                  f"{m[3]}, print {first[t['tid']]['ns']}")

    def key(e):  # a listed event, or a printed one
        return (e["ns"], e["event"], e["tid"], e["cpu"]) if "event" in e else \
            (e["ts"], e["name"], e["tid"], e["cpu"])

    # the list: from the start, and around a time
    lst = get("api/list?t=0&before=0&after=100")["events"]
    check([key(e) for e in lst] == [key(e) for e in evs[:100]], "list from the start")
    tm = evs[3000]["ns"]
    lst = get(f"api/list?t={tm}&before=20&after=5")
    prior = [e for e in evs if e["ns"] < tm][-20:]
    check([key(e) for e in lst["events"][:lst["before"]]] == [key(e) for e in prior],
          "list: the 20 events before a time")
    tid = sorted(per_tid)[-1]
    lst = get(f"api/list?t={tm}&before=5&after=50&tid={tid}")["events"]
    check(lst and all(e["tid"] == tid for e in lst), "list of one thread")
    e = lst[-1]
    check(isinstance(e["fields"], dict) and e["desc"], "list: fields and description")
    # the list under a filter, and a row's list narrowed by it
    lst = get(f"api/list?t={tm}&before=10&after=10&ev=work:job_end&expr=job%20%3E%2010")
    want = [e for e in ends if e["fields"]["job"] > 10]
    prior = [e for e in want if e["ns"] < tm][-10:] + [e for e in want if e["ns"] >= tm][:10]
    check([key(e) for e in lst["events"]] == [key(e) for e in prior],
          "list: work:job_end with job > 10 around a time")
    other = sorted(per_tid)[0]
    lst = get(f"api/list?t={tm}&before=5&after=5&tid={other}&tids={tid}")["events"]
    check(lst == [], f"list of thread {other} under a filter of thread {tid}: {len(lst)} events")

    # statistics of a range: a narrow one read from the events, against
    # print's counts per name, CPU and thread; the durations of the jobs
    # that begin in it, against print's begin/end pairs
    def tally(es):
        return (collections.Counter(e["event"] for e in es),
                collections.Counter(e["cpu"] for e in es),
                collections.Counter(e["tid"] for e in es))

    def stats_of(st):
        return ({x["name"]: x["count"] for x in st["names"]},
                {x["cpu"]: x["count"] for x in st["cpus"]},
                {x["tid"]: x["count"] for x in st["threads"]})

    kind = s["kinds"].index("work:job_begin..job_end")
    st = get(f"api/stats?t0={t0}&t1={t1}&kind={kind}")
    check(st["exact"] and st["events"] == len(inside), f"stats: {st['events']} events "
          f"(exact {st['exact']}), print {len(inside)}")
    got, want = stats_of(st), tally(inside)
    check(got[0] == dict(want[0]), f"stats per name: {got[0]}, print {dict(want[0])}")
    check(got[1] == dict(want[1]), f"stats per CPU: {got[1]}, print {dict(want[1])}")
    check(got[2] == dict(want[2]), f"stats per thread: {got[2]}, print {dict(want[2])}")
    open_ = collections.defaultdict(list)
    jobs_in = []
    for e in evs:
        if e["event"] == "work:job_begin":
            open_[e["tid"]].append(e["ns"])
        elif e["event"] == "work:job_end" and open_[e["tid"]]:
            b = open_[e["tid"]].pop()
            if t0 <= b <= t1:
                jobs_in.append(e["ns"] - b)
    jobs_in.sort()
    du = st["durations"]
    check(du["exact"] and du["count"] == len(jobs_in) and sum(du["hist"][2::3]) == len(jobs_in),
          f"stats: {du['count']} job durations, print {len(jobs_in)}")
    if jobs_in and du["count"]:
        check(abs(du["min"] - jobs_in[0]) <= 1 and abs(du["max"] - jobs_in[-1]) <= 1 and
              abs(du["median"] - jobs_in[len(jobs_in) // 2]) <= 1,
              f"stats: durations {du['min']}/{du['median']}/{du['max']}, print "
              f"{jobs_in[0]}/{jobs_in[len(jobs_in) // 2]}/{jobs_in[-1]}")
        h = du["hist"]
        per_bin = collections.Counter(next((h[i], h[i + 1]) for i in range(0, len(h), 3)
                                           if h[i] <= d < h[i + 1]) for d in jobs_in)
        check(per_bin == {(h[i], h[i + 1]): h[i + 2] for i in range(0, len(h), 3)} and
              all(h[i + 1] == 2 * max(1, h[i]) for i in range(0, len(h), 3)),
              f"stats: histogram {h}, print {dict(per_bin)}")
    # the whole trace, from the bins (not exact): every bin is in it, so
    # the counts are print's; a filter on names counts only those
    st = get(f"api/stats?t0=0&t1={s['span_ns']}")
    got, want = stats_of(st), tally(evs)
    check(not st["exact"] and got[0] == dict(want[0]) and got[1] == dict(want[1]) and
          got[2] == dict(want[2]), f"stats of the whole trace: {got}, print {want}")
    st = get(f"api/stats?t0=0&t1={s['span_ns']}&ev=work:job_e*")
    got = stats_of(st)
    check(got[0] == {"work:job_end": len(ends)} and st["filtered"],
          f"stats of work:job_e*: {got[0]}, print {len(ends)}")
    st = get(f"api/stats?t0={t0}&t1={t1}&ev=work:job_end&expr=job%20%3E%2010")
    want = [e for e in inside if e["event"] == "work:job_end" and e["fields"]["job"] > 10]
    check(st["events"] == len(want) and st["filtered"],
          f"stats under an expression: {st['events']}, print {len(want)}")
finally:
    view.terminate()
    view.wait(timeout=10)

# a damaged copy (a stream cut inside a packet, bits flipped) opens: what is
# readable is served, the damage is counted and placed in time
bad = os.path.join(work, "damaged")
shutil.copytree(trace, bad)
streams = [os.path.join(d, f) for d, _, fs in os.walk(bad) for f in fs
           if f.startswith("cpu") and not d.endswith("index")]
big = max(streams, key=os.path.getsize)
data = bytearray(open(big, "rb").read())
data = data[:len(data) // 2 + 1234]
for i in range(5000, len(data), 9973):
    data[i] ^= 0x5A
open(big, "wb").write(data)
view = subprocess.Popen([strata, "view", bad, "--wait"], stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, text=True)
try:
    url = view.stdout.readline().strip()
    check(url.startswith("http://"), "damaged trace: no URL")
    if url:
        s = get("api/summary")
        d = [s["damage"][i:i + 6] for i in range(0, len(s["damage"]), 6)]
        check(s["problems"] > 0 and len(d) >= 3, f"damaged trace: problems "
              f"{s['problems']}, placed {len(d)}")
        # each placed as the range of its stream it spoils (docs/view.md,
        # "Damage and loss"): inside the trace, the reader's point inside
        # it where that point is, on the cut stream's CPU; the cut itself
        # spoils its stream to the trace's end
        cpu = int(os.path.basename(big)[3:])
        span = s["span_ns"]
        wrong = [x for x in d if not (0 <= x[3] <= x[4] <= span and x[5] == cpu and
                                      (x[0] > span or x[3] <= x[0] <= x[4]))]
        check(not wrong and any(x[4] > x[3] for x in d), f"damaged trace: ranges {d[:4]}, "
              f"wrong {wrong[:3]} (CPU {cpu}, span {span})")
        cut = [x for x in d if x[1] == 1 and x[4] == span and x[3] < span]
        check(len(cut) >= 1, f"damaged trace: no range to the end for the cut stream: {d}")
        check(0 < s["events"] < n, f"damaged trace: {s['events']} events readable of {n}")
        # what print shows inside the trace's span (a flipped bit can send
        # a packet's times past it: those events are in no window)
        out = subprocess.run([strata, "print", bad, "--format", "json"],
                             capture_output=True, text=True).stdout
        inspan = sum(1 for line in out.splitlines()
                     if round(json.loads(line)["time"] * 1e9) <= s["span_ns"])
        w = get(f"api/window?t0=0&t1={s['span_ns']}&w=800")
        drawn = sum(sum(c["marks"][2::5]) for c in w["cpus"])
        check(drawn == inspan, f"damaged trace: {drawn} marks, print {inspan} in the span")
        check(len(get(f"api/list?t={s['span_ns'] // 2}&before=50&after=50")["events"]) > 0,
              "damaged trace: a list")
finally:
    view.terminate()
    view.wait(timeout=10)
# activity rules: work:job_begin..work:job_end paired per thread, and by
# the job field; their intervals listed longest first and in time order,
# against print's pairs
view = subprocess.Popen([strata, "view", trace, "--wait", "--activity", "job=work:job_begin..work:job_end",
                         "--activity", "byjob=work:job_b*..work:job_end,by=job"],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
try:
    url = view.stdout.readline().strip()
    s2 = get("api/summary")
    kj, kb = s2["kinds"].index("job"), s2["kinds"].index("byjob")
    check(s2["activities"] == [kj, kb], f"activities: {s2['activities']}, kinds {s2['kinds']}")
    pairs, bypairs = [], []
    open_, byopen = collections.defaultdict(list), collections.defaultdict(list)
    for e in evs:
        if e["event"] == "work:job_begin":
            open_[e["tid"]].append(e["ns"])
            byopen[e["fields"]["job"]].append(e["ns"])
        elif e["event"] == "work:job_end":
            if open_[e["tid"]]:
                b = open_[e["tid"]].pop()
                pairs.append((b, e["ns"] - b))
            if byopen[e["fields"]["job"]]:
                b = byopen[e["fields"]["job"]].pop()
                bypairs.append((b, e["ns"] - b))
    for k, want, what in [(kj, pairs, "per thread"), (kb, bypairs, "by job")]:
        a = get(f"api/intervals?kind={k}&n=1000")
        got = [iv["dur"] for iv in a["intervals"]]
        top = sorted((d for _, d in want), reverse=True)[:1000]
        check(a["complete"] and len(got) == 1000 and
              all(abs(x - y) <= 1 for x, y in zip(got, top)),
              f"activity {what}: the 1000 longest {got[:5]}..., print {top[:5]}...")
        a = get(f"api/intervals?kind={k}&by=1&n=50&t0={t0}&t1={t1}")
        got = [iv["begin"] for iv in a["intervals"]]
        # the intervals that overlap the range: those begun before it too
        overlap = sorted(b for b, d in want if b <= t1 and b + d >= t0)[:50]
        check(got == overlap, f"activity {what}: in time order {got[:5]}, print {overlap[:5]}")
        # a range that cuts the longest interval: it is listed
        lb, ld = max(want, key=lambda p: p[1])
        a = get(f"api/intervals?kind={k}&by=1&n=1000&t0={lb + ld // 2}&t1={lb + ld + 1000}")
        check(lb in [iv["begin"] for iv in a["intervals"]],
              f"activity {what}: the longest, cut by the range, not listed")
        st = get(f"api/stats?t0={t0}&t1={t1}&kind={k}")
        n_in = sum(1 for b, _ in want if t0 <= b <= t1)
        check(st["durations"]["count"] == n_in,
              f"activity {what}: stats count {st['durations']['count']}, print {n_in}")
        # the same rule typed in the page (api/activity): paired on
        # demand over the range, the same intervals as the command line's
        rule = ["job=work:job_begin..work:job_end", "byjob=work:job_b*..work:job_end,by=job"][
            k == kb]
        q = urllib.parse.quote(rule)
        # typed rules list the intervals that overlap the range, those
        # begun before it too (paired from further back), within the
        # bound on the events their passes read (docs/view.md,
        # "api/activity"): the ranges below are chosen within it, from
        # print's events, and must then be answered whole
        pairs = collections.defaultdict(set)  # two threads may begin at one ns
        for b, d in want:
            pairs[b].add(d)
        times = sorted(e["ns"] for e in evs)
        longest_first = sorted(want, key=lambda p: -p[1])
        by_begin = sorted(want)
        begins = [b for b, _ in by_begin]
        ends = [b + d for b, d in by_begin]

        def at(i):  # the time of the i-th event, the last past the end
            return times[min(i, len(times) - 1)]

        def passes(lo, hi):
            """docs/view.md's passes over [lo, hi], on print's events:
            each reads from `back` before lo to `back` and 50 000 events
            past hi, then while an interval it saw begin by hi is open
            (checked every 1024 events: its reach is known within 1024
            events); the next reaches 4 times further each way while an
            end at or after lo (within that reach) found no begin.
            Returns the events the last pass reads at most and the first
            pass's reach at least."""
            back, start, first = hi - lo + 1, times[0], None
            while True:
                frm = lo - back if lo - start > back else start
                i0, i1 = bisect.bisect_left(begins, frm), bisect.bisect(begins, hi)
                near = max(hi + back, max(ends[i0:i1], default=0),
                           at(bisect.bisect(times, hi) + 50000 - 1))
                first = first or near
                far = bisect.bisect_left(times, near) + 1024
                lost = any(lo <= e <= at(far) for e in ends[:i0])
                if not lost or lo - start <= back:
                    return far - bisect.bisect_left(times, frm), first
                back *= 4

        def fits(lo, hi, spans=None):
            """Whether the passes answer [lo, hi] whole (200 000 events,
            less a margin) and, given `spans`, an interval that began
            before the first pass, its end within the first's reach."""
            reads, reach = passes(lo, hi)
            return reads < 190000 and (spans is None or sum(spans) <= reach)

        def typed_ok(a, lo, hi):
            """Each interval listed is one of print's pairs, and all of
            those that overlap [lo, hi] and began within the first pass
            (a range's width back) are there, up to the last listed when
            there are more."""
            ivs = a["intervals"]
            wrong = [(iv["begin"], iv["dur"], iv["tid"]) for iv in ivs
                     if not any(abs(d - iv["dur"]) <= 1 for d in pairs.get(iv["begin"], ()))]
            right = not wrong
            need = {b for b, d in want if b <= hi and b + d >= lo and b >= lo - (hi - lo + 1)}
            if a["more"]:  # the first 1000 in time order: those up to the last
                need = {b for b in need if b <= max(iv["begin"] for iv in ivs)}
            lost = sorted(need - {iv["begin"] for iv in ivs})
            if not right or lost:
                print(f"view-api: typed [{lo}, {hi}]: not print's pairs {wrong[:5]} "
                      f"(print {[(w[0], sorted(pairs.get(w[0], ()))) for w in wrong[:5]]}), "
                      f"lost {lost[:5]}")
            return right and not lost

        # a range that cuts a long interval, from its middle to 1 ms past
        # its end: the longest whose range fits the passes' bound (on a
        # loaded machine the longest job can last a third of the trace,
        # and its range then needs more than 200 000 events)
        def cut(p):
            return p[0] + p[1] // 2, p[0] + p[1] + 1000000
        lb, ld = next(p for p in longest_first if fits(*cut(p)))
        r0, r1 = cut((lb, ld))
        a = get(f"api/activity?rules={q}&by=1&n=1000&t0={r0}&t1={r1}")
        got = [iv["begin"] for iv in a["intervals"]]
        check(a["kinds"] == [rule.split("=")[0]] and a["complete"] and lb in got and
              got == sorted(got) and typed_ok(a, r0, r1),
              f"typed rule {what}: [{r0}, {r1}] in time order {got[:5]}, the cut one {lb}, "
              f"complete {a['complete']}")
        b = get(f"api/activity?rules={q}&n=1000&t0={r0}&t1={r1}")
        durs = [iv["dur"] for iv in b["intervals"]]
        # the longest overlapping one begun within the first pass, or
        # one begun earlier that the passes found
        top = max(d for bb, d in want if r1 >= bb >= r0 - (r1 - r0 + 1) and bb + d >= r0)
        check(b["complete"] and durs[0] >= top - 1 and
              any(abs(durs[0] - d) <= 1 for bb, d in want if bb <= r1 and bb + d >= r0) and
              durs == sorted(durs, reverse=True),
              f"typed rule {what}: the longest {durs[:5]}..., print {top}, "
              f"complete {b['complete']}")
        # the typed rule's durations in the statistics: those that
        # begin in the range, as the command line's rule counts them
        st = get(f"api/stats?t0={t0}&t1={t1}&kind=0&rules={q}")
        du = st["durations"]
        mine = sorted(d for b, d in want if t0 <= b <= t1)
        check(du["count"] == n_in and abs(du["min"] - mine[0]) <= 1 and
              abs(du["max"] - mine[-1]) <= 1 and sum(du["hist"][2::3]) == n_in,
              f"typed rule {what}: stats {du['count']} [{du.get('min')}, {du.get('max')}], "
              f"print {n_in} [{mine[0]}, {mine[-1]}]")
        try:
            get(f"api/stats?t0={t0}&t1={t1}&kind=1&rules={q}")
            check(False, f"typed rule {what}: stats of rule 1 of 1 not refused")
        except urllib.error.HTTPError as e:
            check(e.code == 400 and "no such rule" in e.read().decode(),
                  f"typed rule {what}: stats of rule 1 of 1: {e.code}")
        # a range inside a long interval: it spans the range, and is
        # paired though neither its begin nor its end is in it (2 us
        # wide; the longest whose range fits the passes' bound)
        def inside(p):
            return p[0] + p[1] // 2 - 1000, p[0] + p[1] // 2 + 1000
        sb, sd = next(p for p in longest_first if p[1] > 4000 and fits(*inside(p), p))
        c0, c1 = inside((sb, sd))
        span = sorted(bb for bb, dd in want if bb <= c1 and bb + dd >= c0)  # for the message
        a = get(f"api/activity?rules={q}&by=1&n=1000&t0={c0}&t1={c1}")
        got = [iv["begin"] for iv in a["intervals"]]
        check(a["complete"] and sb in got and typed_ok(a, c0, c1),
              f"typed rule {what}: inside [{c0}, {c1}] {got[:5]}, print {span[:5]}, "
              f"complete {a['complete']}")
    # two rules in one request, each interval its rule's kind
    two = urllib.parse.quote("a=work:job_begin..work:job_end;"
                             "b=work:job_begin..work:job_end,by=job")
    a = get(f"api/activity?rules={two}&by=1&n=1000&t0={t0}&t1={t1}")
    check(a["kinds"] == ["a", "b"] and {iv["kind"] for iv in a["intervals"]} == {0, 1},
          f"two typed rules: kinds {a['kinds']}")

    def refused(args, why):
        try:
            get(f"api/activity?{args}")
            check(False, f"api/activity?{args[:60]}: not refused")
        except urllib.error.HTTPError as e:
            msg = json.load(e).get("error", "")
            check(e.code == 400 and why in msg, f"api/activity?{args[:60]}: {e.code} {msg}")
    refused("rules=job", "not NAME=BEGIN..END[,by=FIELD]")
    refused("rules=" + urllib.parse.quote("x=work:job_begin..nope:*"), "rule 1: no event matches")
    refused("rules=" + urllib.parse.quote("x=work:job_begin..work:job_end,by=nope"), "no field 'nope'")
    refused("rules=" + urllib.parse.quote(";".join(["x=work:*..work:*"] * 5)), "at most 4 rules")
    refused("rules=" + urllib.parse.quote("x=work:job_begin..work:job_end" + "," * 300),
            "longer than 256 bytes")
    refused("rules=" + "a" * 1100, "at most 1027 printable bytes")
    refused("", "no rule given")
    refused("rules=x&n=0", "n")
finally:
    view.terminate()
    view.wait(timeout=10)
bad_rule = subprocess.run([strata, "view", trace, "--wait", "--activity", "x=work:job_begin..nope:*"],
                          capture_output=True, text=True, timeout=60)
check(bad_rule.returncode != 0 and "--activity x" in bad_rule.stderr,
      f"a rule matching no event: {bad_rule.returncode} {bad_rule.stderr.strip()}")

# wakeup arrows, on gen_view.py's trace with kernel events: sched_wakeup
# of worker-a (301) by idle on CPU 0 at 45 ms + 10 ns, run at 46 ms; of
# kworker (400) on CPU 1 at 75 ms, run at 76 ms (sched_waking is no arrow)
sched = os.path.join(work, "sched")
subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             "gen_view.py"), sched], check=True,
               stdout=subprocess.DEVNULL)
view = subprocess.Popen([strata, "view", sched, "--wait"], stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, text=True)
try:
    url = view.stdout.readline().strip()
    ms = 1000000

    def arrows(q):
        w = get(f"api/window?t0=0&t1={100 * ms}&w=1000{q}")
        a = w["arrows"]
        return [a[i + 2:i + 7] for i in range(0, len(a), 7)], w["arrows_left"], a

    got, left, flat = arrows("")
    check(got == [[0, 0, 301, 45 * ms + 10, 46 * ms], [0, 1, 400, 75 * ms, 76 * ms]] and
          left == 0, f"arrows: {got}, {left} left out")
    check(flat[:2] == [450, 460], f"arrows' pixels: {flat[:2]}")
    got, left, _ = arrows("&tids=400")
    check([g[2] for g in got] == [400], f"arrows of thread 400: {got}")
    got, left, _ = arrows("&cpus=0")
    check([g[2] for g in got] == [301], f"arrows of CPU 0: {got}")
    got, left, _ = arrows("&ev=work:*")
    check(got == [], f"arrows under ev=work:*: {got}")
    got, left, _ = arrows("&ev=sched:sched_wakeup")
    check(len(got) == 2, f"arrows under ev=sched:sched_wakeup: {got}")
    w = get(f"api/window?t0={50 * ms}&t1={80 * ms}&w=300")
    check(w["arrows"][2:5] == [0, 1, 400] and len(w["arrows"]) == 7,
          f"arrows of 50-80 ms: {w['arrows']}")
    # a thread's breakdown (the statistics' selected thread): its time
    # per state over the whole trace and over ranges that cut its
    # stretches, as strata breakdown counts it. [lo, hi) is [lo, end)
    # less [hi, end): breakdown --to stops its machine at hi, before it
    # learns what a later event says of the state (server's lost wakeup
    # makes its sleep unknown at 75 ms), and the viewer's stretches are
    # those of the whole trace
    span = get("api/summary")["span_ns"]

    def breakdown(lo):
        bd = subprocess.run([strata, "breakdown", sched, "--format", "json", "--from",
                             f"{lo / 1e9:.9f}"], capture_output=True, text=True,
                            check=True).stdout
        return {t["tid"]: t["ticks"] for t in json.loads(bd)["threads"]}
    for lo, hi in [(0, span), (20 * ms, 60 * ms), (5 * ms + 500, 77 * ms + 250)]:
        a, b = breakdown(lo), breakdown(hi) if hi < span else {}
        want = {tid: [x - y for x, y in zip(a[tid], b.get(tid, [0] * 8))] for tid in a}
        for tid in (300, 301, 302, 400):
            got = get(f"api/breakdown?tid={tid}&t0={lo}&t1={hi}")
            check(got["have_states"] and got["ns"] == want[tid],
                  f"breakdown of {tid} over [{lo}, {hi}]: {got['ns']}, strata breakdown "
                  f"{want[tid]}")
    got = get(f"api/breakdown?tid=12345&t0=0&t1={span}")
    check(not got["have_states"] and got["ns"][-1] == span,
          f"breakdown of a thread not in the trace: {got}")
finally:
    view.terminate()
    view.wait(timeout=10)

# a window too wide to read (over 200 000 events: from the bins) on a
# trace whose thread rows include one with kernel events only (workers'
# main thread, which waits: no bins of its own): it is answered, every
# event a mark of its CPU. Recorded with the kernel's sched events, so
# only as root with tracefs mounted (gen_view.py's packets hold too few)
wide = os.path.join(work, "wide")
shutil.rmtree(wide, ignore_errors=True)
if os.geteuid() == 0 and os.path.isdir("/sys/kernel/tracing/events/sched"):
    rec = subprocess.run([strata, "record", "-k", "sched", "--packets", "512", "--mode",
                          "block", "-o", wide, "--", workers, "3", "50000"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    check(rec.returncode == 0, f"recording with -k sched: {rec.stderr[-300:]}")
    view = subprocess.Popen([strata, "view", wide, "--wait"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        url = view.stdout.readline().strip()
        s = get("api/summary")
        w = get(f"api/window?t0=0&t1={s['span_ns']}&w=800")
        marks = sum(sum(c["marks"][2::5]) for c in w["cpus"])
        # each thread's row: its events and the kernel's run for it
        # (docs/view.md, "The page"), all in the bins of a wide window
        rows = {t["tid"]: sum(t["marks"][2::5]) for t in w["threads"]}
        wrong = [(t["tid"], t["events"], rows.get(t["tid"])) for t in s["threads"]
                 if rows.get(t["tid"]) != t["events"]]
        kernel_only = [t["tid"] for t in s["threads"] if not t["intervals"] and t["events"]]
        check(not w["exact"] and marks == s["events"] and not wrong and kernel_only,
              f"a wide window with kernel-only threads {kernel_only[:5]}: exact {w['exact']}, "
              f"{marks} marks of {s['events']} events; threads whose marks are not their "
              f"events: {wrong[:5]}")
    except OSError as e:
        check(False, f"a wide window with a kernel-only thread: {e} (server {view.poll()})")
    finally:
        view.terminate()
        view.wait(timeout=10)
else:
    print("view-api: not root or no tracefs: the wide window with kernel events not checked")

# the selected thread's system calls (api/breakdown's "syscalls") against
# strata breakdown's own, per thread over the whole trace: the same calls,
# counts and times, from a real recording with system call events
calls = os.path.join(work, "calls")
shutil.rmtree(calls, ignore_errors=True)
if os.geteuid() == 0 and os.path.isdir("/sys/kernel/tracing/events/raw_syscalls"):
    rec = subprocess.run([strata, "record", "-k", "sched,syscalls", "-o", calls, "--", "sh", "-c",
                          "for i in 1 2 3; do cat /etc/hostname /etc/os-release >/dev/null; "
                          "ls / >/dev/null; done"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    check(rec.returncode == 0, f"recording with -k sched,syscalls: {rec.stderr[-300:]}")
    bd = json.loads(subprocess.run([strata, "breakdown", calls, "--format", "json"],
                                   check=True, capture_output=True, text=True).stdout)
    with served.View(strata, calls) as view:
        span = view.get("api/summary")["span_ns"]
        compared, differ = 0, []
        for t in bd["threads"]:
            want = {c["name"] or str(c["nr"]): (c["count"], c["time_ns"])
                    for c in t.get("syscalls") or []}
            if not want:
                continue
            a = view.get(f"api/breakdown?tid={t['tid']}&t0=0&t1={span}")
            got = {c["name"] or str(c["nr"]): (c["count"], c["ns"]) for c in a["syscalls"] or []}
            compared += 1
            # ns: the view's times are floored to the ns from ticks,
            # breakdown's rounded: one apart at most
            if set(got) != set(want) or any(got[k][0] != want[k][0] or
                                             abs(got[k][1] - want[k][1]) > 1 for k in want):
                differ.append((t["tid"], t["comm"], sorted(got.items())[:4],
                               sorted(want.items())[:4]))
        check(compared >= 4 and not differ, f"system calls of {compared} threads against strata "
              f"breakdown's: {differ[:2]}")
else:
    print("view-api: not root or no tracefs: system calls against strata breakdown not checked")

# the cap: 300 more wakeups of kworker by worker-b (302) on CPU 1, 50-60 ms
subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             "gen_view.py"), sched + "-many", "300"],
               check=True, stdout=subprocess.DEVNULL)
view = subprocess.Popen([strata, "view", sched + "-many", "--wait"], stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, text=True)
try:
    url = view.stdout.readline().strip()
    got, left, _ = arrows("")
    check(len(got) == 256 and left == 302 - 256 and got[1][:3] == [302, 1, 400] and
          got[1][4] == 76 * ms, f"302 wakeups: {len(got)} drawn, {left} left out, {got[:2]}")
    got, left, _ = arrows("&tids=301")
    check(len(got) == 1 and left == 0, f"302 wakeups, of thread 301: {len(got)}, {left}")
    got, left, _ = arrows("&cpus=1")
    check(len(got) == 256 and left == 301 - 256, f"301 on CPU 1: {len(got)} drawn, {left} left")
    w = get(f"api/window?t0={61 * ms}&t1={100 * ms}&w=100")
    check(len(w["arrows"]) == 7 and w["arrows_left"] == 0, f"61-100 ms: {w['arrows']}")
finally:
    view.terminate()
    view.wait(timeout=10)
print("view-api:", "ok" if not failed else f"{len(failed)} failed", f"({n} events)")
sys.exit(1 if failed else 0)
