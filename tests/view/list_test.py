#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata view's paged list (api/list by index and by anchor) and api/event, against strata print.

usage: list_test.py STRATA WORKERS WORKDIR

Records the example with 250 000 events, then pages through the whole
list as the page's virtualised list does (docs/view.md, "List"): forward
from the first event, each page anchored on the last event of the one
before (its stream and offset), and backward from the last, each anchored
on the first; every event must come exactly once, in print's order. The
same under a filter (an event glob and a thread). Then the list by index
(the scroll bar's jumps): the event at a position is print's event at it,
without a filter; and api/event: each listed event found again by its
stream and offset, a bad stream 400, a wrong offset 404.
"""
import json
import os
import subprocess
import sys

import recorded
import served

strata, workers = sys.argv[1], sys.argv[2]
work, trace = recorded.fresh_work(sys.argv[3], "list")
check = recorded.Checks("view-list")

subprocess.run([workers, "3", "50000"], env=dict(os.environ, STRATA_OUTPUT=trace),
               check=True, stdout=subprocess.DEVNULL)
check(recorded.wait_done(trace), "the recording: still live after 30 s")


def printed(*args):
    out = subprocess.run([strata, "print", trace, "--format", "json", *args], check=True,
                         capture_output=True, text=True).stdout
    return [(round(e["time"] * 1e9), e["tid"], e["cpu"], e["event"])
            for e in map(json.loads, out.splitlines())]


def key(e):
    return (e["ts"], e["tid"], e["cpu"], e["name"])


evs = printed()
n = len(evs)
check(n >= 200000, f"the recording: {n} events, 200 000 wanted")

with served.View(strata, trace, "--no-cache") as view:
    get, status = view.get, view.status
    span = get("api/summary")["span_ns"]
    PAGE = 999  # an anchored page asks for one more: 1000, the most

    def forward(flt):
        """Every event, a page at a time, each after the last one's anchor."""
        out = get(f"api/list?t=0&before=0&after={PAGE}{flt}")["events"]
        full = len(out) == PAGE
        while full:
            last = out[-1]
            page = get(f"api/list?t={last['ts']}&stream={last['stream']}"
                       f"&offset={last['offset']}&before=0&after={PAGE + 1}{flt}")["events"]
            if not page or (page[0]["stream"], page[0]["offset"]) != \
                    (last["stream"], last["offset"]):
                check(False, f"forward{flt}: the page after {key(last)} does not start at it")
                break
            out += page[1:]
            full = len(page) == PAGE + 1
        return out

    def backward(flt):
        """Every event, from the last, a page at a time before the first one's anchor."""
        end = get(f"api/list?t={span}&before={PAGE}&after={PAGE}{flt}")["events"]
        out = list(end)
        while True:
            first = out[0]
            page = get(f"api/list?t={first['ts']}&stream={first['stream']}"
                       f"&offset={first['offset']}&before={PAGE}&after=0{flt}")
            out = page["events"] + out
            if page["before"] < PAGE:
                break
        return out

    for flt, args in (("", ()),
                      ("&ev=work:job_*&tids=" + str(evs[n // 2][1]),
                       ("--event", "work:job_*", "--tid", str(evs[n // 2][1])))):
        want = printed(*args) if args else evs
        for how, got in (("forward", forward(flt)), ("backward", backward(flt))):
            keys = [key(e) for e in got]
            ids = {(e["stream"], e["offset"]) for e in got}
            check(len(ids) == len(got), f"{how}{flt}: {len(got) - len(ids)} events listed twice")
            check(keys == want, f"{how}{flt}: {len(keys)} events, print {len(want)}; first "
                  f"difference at {next((i for i, (a, b) in enumerate(zip(keys, want)) if a != b), min(len(keys), len(want)))}")

    # the scroll bar's jumps: by index, exact without a filter
    for i in (0, 1, n // 3, n // 2 + 7, n - 2, n - 1):
        a = get(f"api/list?index={i}&before=1&after=2")
        check(a["total"] == n, f"index {i}: total {a['total']}, print {n}")
        check(a["index"] == i, f"index {i}: answered as index {a['index']}")
        got = [key(e) for e in a["events"]]
        want = evs[max(0, i - 1):i + 2]
        check(got == want, f"index {i}: {got}, print {want}")
    a = get(f"api/list?index={n + 100}&before=0&after=1")
    check([key(e) for e in a["events"]] == evs[-1:], "an index past the end: the last event")
    tid = evs[n // 2][1]
    a = get(f"api/list?index={n // 2}&before=0&after=3&tids={tid}")
    check(a["events"] and all(e["tid"] == tid for e in a["events"]),
          "an index under a filter: that thread's events")
    check(a["index"] <= n // 2, f"an index under a filter: answered {a['index']}, at most {n // 2}")

    # one event by its stream and offset, the chain's request
    for e in get(f"api/list?t={evs[n // 4][0]}&before=5&after=5")["events"]:
        one = get(f"api/event?t={e['ts']}&stream={e['stream']}&offset={e['offset']}")
        check(one == e, f"api/event: {one}, the list's {e}")
        check("chain" not in one, "api/event: a chain on an event that is no sample")
    e = evs[0]
    check(status(f"api/event?t={e[0]}&stream=4000&offset=0") == 400, "api/event: a bad stream")
    check(status(f"api/event?t={e[0]}&stream=0&offset=1") == 404, "api/event: a wrong offset")
    check(status("api/list?index=-2") == 400, "api/list: index -2")
    check(status("api/list?t=0&stream=-2") == 400, "api/list: stream -2")

if check.failed:
    sys.exit(1)
print(f"view-list: {n} events paged forward and backward, with and without a filter")
