#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The kernel's streams followed live, and a live viewer's thread states
(docs/kernel.md "Live", docs/view.md "Live").

usage: viewlive_test.py STRATA SLOWLOG WORKERS WORKDIR

`strata view --live` follows `strata record -k sched --live=50` of
tests/reader/slowlog (numbered events 25 ms apart: its thread sleeps and
wakes) beside examples/workers. While the recording runs, the viewer must
hand out windows (the kernel's sub-trace writes its metadata, packets and
beacon on the live timer: before it did, a follower waited for the
recording's end) and draw thread states from the kernel's events as they
come. Each live answer's stretches are then checked, one by one, against
the finished trace's (the model built whole by the breakdown's pass over
the whole trace): every stretch that had ended is the finished one, to
the nanosecond; the one still open began where the finished one begins.
`strata print --follow` on the same kind of recording prints the kernel's
events before the recording ends. No timing is asserted.
"""
import json
import os
import select
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

strata, slowlog, workers, work = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
trace = os.path.join(work, "t")
env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "xdg"))
failed = []
W = 8192  # pixels: a thread with at most this many stretches is drawn exactly
NS = 2    # ns: two models' begins differ, each converts its own ticks


def check(ok, what):
    if not ok:
        failed.append(what)
        print("kernel-view-live: FAIL:", what, file=sys.stderr)


def bound(proc, seconds):
    """proc killed after `seconds`, if it still runs (the test exits
    without waiting for the timer)."""
    t = threading.Timer(seconds, proc.kill)
    t.daemon = True
    t.start()


def get(url, what):
    with urllib.request.urlopen(url + "api/" + what, timeout=60) as r:
        return json.load(r)


def stretches(win, counts):
    """{tid: [(from, to, state)]} of the threads drawn exactly."""
    out = {}
    for th in win["threads"]:
        st = th["states"]
        if st and 0 < counts.get(th["tid"], W + 1) <= W:
            out[th["tid"]] = [(st[i + 4], st[i + 5], st[i + 2]) for i in range(0, len(st), 6)]
    return out


def tick(url, t=0, back=False, seq=None):
    """A live:tick (the first, the last before t, or number seq): its
    (ns, seq), or None."""
    where = f"&where={urllib.parse.quote(f'seq == {seq}')}" if seq is not None else ""
    m = get(url, f"search?find=live:tick&t={t}&dir={-1 if back else 1}{where}").get("match")
    return m and (m["ts"], m["fields"]["seq"])


view = subprocess.Popen([strata, "view", "--live", trace], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True, env=env)
rec = subprocess.Popen([strata, "record", "-k", "sched", "--live=50", "-o", trace, "--", "sh",
                        "-c", '"$1" 120 25 & "$2" 2 20000 1 >/dev/null; wait', "sh", slowlog,
                        workers], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
# a recorder that died (a sanitizer's report) leaves its trace live for
# good: no step below may wait for it without a bound
bound(view, 300)
bound(rec, 300)
try:
    ready = select.select([view.stdout], [], [], 120)[0]
    url = view.stdout.readline().strip() if ready else ""
    if not url.startswith("http://"):
        sys.exit(f"kernel-view-live: FAIL: no URL from strata view: {view.stderr.read()}")
    snaps = []  # (first and last ticks, span, {tid: stretches})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        s = get(url, "summary")
        if not s["live"]:
            break
        first, last = tick(url), tick(url, s["span_ns"] + 1, back=True)
        counts = {t["tid"]: t["states"] for t in s["threads"]}
        if s["have_sched"] and first and last and last[1] > first[1] and any(counts.values()):
            win = get(url, f"window?t0=0&t1={s['span_ns']}&w={W}")
            threads = stretches(win, counts)
            if get(url, "summary")["live"] and threads:  # still the live model's
                snaps.append(((first, last), s["span_ns"], threads))
                # the busiest thread's times per state up to its open
                # stretch, from the running sums a live model keeps up
                # to date (vw_state_upto), against its stretches' own
                tid = max(threads, key=lambda t: len(threads[t]))
                st = threads[tid]
                bd = get(url, f"breakdown?tid={tid}&t0=0&t1={st[-1][0]}")["ns"]
                want = [sum(b - a for a, b, x in st[:-1] if x == k) for k in range(7)]
                check(all(abs(bd[k] - want[k]) <= 2 * len(st) + 2 for k in range(7)),
                      f"thread {tid}'s breakdown while live {bd[:7]}, its stretches {want}")
        time.sleep(0.25)
    err = rec.communicate(timeout=120)[1]
    check(rec.returncode == 0, f"strata record: {err}")
    check("kernel events" in err, f"no kernel streams: {err}")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and get(url, "summary")["live"]:
        time.sleep(0.1)
    s = get(url, "summary")
    check(not s["live"], "the viewer still follows the finished recording")
    counts = {t["tid"]: t["states"] for t in s["threads"]}
    done = stretches(get(url, f"window?t0=0&t1={s['span_ns']}&w={W}"), counts)
    # each live answer's two ticks in the finished model: the clock's
    # frequency may have been refined since (format.md §5), so a live
    # ns maps to a finished one through both
    anchors = {snap[0]: tuple(tick(url, seq=k[1])[0] for k in snap[0]) for snap in snaps}
finally:
    view.terminate()
    view.communicate(timeout=30)

print(f"kernel-view-live: {len(snaps)} live answers with states, "
      f"{sum(len(v) for _, _, th in snaps for v in th.values())} stretches", file=sys.stderr)
# the states grew while live: the kernel's events came as they were written
check(len(snaps) >= 3, f"{len(snaps)} live answers with states (3 or more expected)")
grew = sorted({sum(len(v) for v in th.values()) for _, _, th in snaps})
check(len(grew) >= 3, f"the live states did not grow: {grew}")
slow = max(done, key=lambda t: len(done[t]), default=None)
check(slow is not None and len(done[slow]) >= 100,
      f"the finished trace's busiest thread has {slow and len(done[slow])} stretches")

wrong = []
for (l0, l1), span, threads in snaps:
    f0, f1 = anchors[(l0, l1)]
    k = (f1 - f0) / (l1[0] - l0[0])

    def fin(ns):
        return round(f0 + (ns - l0[0]) * k)

    for tid, st in threads.items():
        # the stretches that had ended must be the finished ones; the one
        # still open may since have been given the state the machine
        # learnt later (analysis.h, bd_state_fn), and then merged into
        # the one before it when that had the same state
        a_last = fin(st[-1][0])
        got = [x for x in done.get(tid, []) if x[0] < a_last - NS]
        closed = [(fin(a), fin(b), state) for a, b, state in st[:-1]]
        same = len(got) == len(closed) and all(
            abs(x[0] - y[0]) <= NS and abs(x[1] - y[1]) <= NS and x[2] == y[2]
            for x, y in zip(got[:-1], closed[:-1]))
        if same and got:
            x, y = got[-1], closed[-1]
            merged = x[1] > a_last + NS and x[2] == y[2]
            same = abs(x[0] - y[0]) <= NS and x[2] == y[2] and (
                merged or abs(x[1] - y[1]) <= NS)
        opened = any(abs(x[0] - a_last) <= NS for x in done.get(tid, []))
        if not same or not (opened or (got and got[-1][1] > a_last + NS)):
            wrong.append((tid, span, closed[-3:], got[-3:], st[-1]))
check(not wrong, f"{len(wrong)} live stretches not the finished trace's: {wrong[:5]}")

# strata print --follow: the kernel's events before the recording ends
t2 = os.path.join(work, "t2")
rec = subprocess.Popen([strata, "record", "-k", "sched", "--live=50", "-o", t2, "--", slowlog,
                        "80", "25"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(600):
    if os.path.exists(os.path.join(t2, ".live")):
        break
    time.sleep(0.01)
follow = subprocess.Popen([strata, "print", "--follow", t2], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
bound(follow, 120)
bound(rec, 120)
kernel_live = 0
for line in follow.stdout:
    if " K " in line and rec.poll() is None:
        kernel_live += 1
    if rec.poll() is not None and kernel_live:
        break
follow.terminate()
follow.communicate(timeout=30)
rec.wait(timeout=60)
check(kernel_live > 0, "strata print --follow printed no kernel event while the recording ran")

if failed:
    sys.exit(1)
print("kernel-view-live: ok")
