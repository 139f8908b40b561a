#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata view serving at once while it builds the model (docs/view.md, "Serve at once").

usage: quick_test.py STRATA WORKERS WORKDIR

The example recorded with 250 000 events, served with the build held back
by STRATA_VIEW_TEST_HOLD (the tests' knob) until the checks of the build
under way are done: the URL comes first, the summary says `building` and claims no
count of events, the overview is the packets' content, every answer that
needs the model is a 503 with Retry-After (asked from four threads at
once meanwhile); once ready, the overview agrees with the model (the
CPUs with events are those whose packets hold more than their headers,
every mark lies where the packets have bytes, span, losses and bytes the
same), and the answers are byte for byte those of `--no-cache --wait`.
Then served at once with the cache: written after the build, used by
the next open, which is ready at once.
"""
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import recorded

strata, workers = sys.argv[1], sys.argv[2]
work, trace = recorded.fresh_work(sys.argv[3], "quick")
check = recorded.Checks("view-quick")
HOLD = os.path.join(work, "hold")  # the build waits until this file exists
HEADER = 96  # an empty packet's content: header and context (format.md)

subprocess.run([workers, "3", "50000"], env=dict(os.environ, STRATA_OUTPUT=trace),
               check=True, stdout=subprocess.DEVNULL)
check(recorded.wait_done(trace), "the recording: still live after 30 s")


def start(*args, hold=False):
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "xdg"))
    if hold:
        env["STRATA_VIEW_TEST_HOLD"] = HOLD
    v = subprocess.Popen([strata, "view", trace, *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    v.url = v.stdout.readline().strip()
    if not v.url:
        sys.exit(f"view-quick: FAIL: no URL from strata view {args}: {v.stderr.read()}")
    return v


def ask(v, path):
    """(status, headers, body bytes)"""
    try:
        with urllib.request.urlopen(v.url + path, timeout=60) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def get(v, path):
    st, _, body = ask(v, path)
    if st != 200:
        raise RuntimeError(f"{path}: {st} {body[:200]}")
    return json.loads(body)


def stop(v):
    v.terminate()
    v.wait(timeout=30)
    return v.stderr.read()


NEEDS_MODEL = ["window?t0=0&t1=1000000&w=100", "list?t=0&after=10", "stats?t0=0&t1=1000000",
               "intervals?t0=0&t1=1000000&kind=0", "search?find=work:*&t=0",
               "breakdown?tid=1&t0=0&t1=1000", "event?t=0&stream=0&offset=0", "live",
               "activity?rules=a%3Dwork%3Ajob_begin..work%3Ajob_end"]

# the same answers from both servers, byte for byte (the summary's build
# time and cache state aside)
ANSWERS = ["window?t0=0&t1={s}&w=1430", "window?t0={q}&t1={h}&w=800",
           "window?t0={q}&t1={q1}&w=500", "window?t0=0&t1={s}&w=600&ev=work:job_*",
           "list?t={q}&before=20&after=50", "list?index=1000&after=30",
           "stats?t0=0&t1={s}&kind=0", "stats?t0={q}&t1={q1}&kind=0",
           "intervals?t0=0&t1={s}&kind=0&n=100", "search?find=work:job_end&t={q}&skip=3"]


def answers(v, span):
    out = {}
    s = get(v, "api/summary")
    s["build_ms"] = s["cache"] = None
    out["summary"] = json.dumps(s, sort_keys=True)
    for a in ANSWERS:
        path = a.format(s=span, q=span // 4, h=span // 2, q1=span // 4 + span // 100)
        out[path] = ask(v, "api/" + path)[2]
    return out


# ---- served at once, the build held back -----------------------------------
early = start("--no-cache", hold=True)
first = get(early, "api/summary")
check(first.get("building") is True, f"the first summary says building: {str(first)[:200]}")
for key in ("events", "threads", "names", "kinds", "classes"):
    check(key not in first, f"the building summary claims {key}")
check(0 <= first.get("progress", -1) < 1, f"progress {first.get('progress')}")
check(first.get("cache") == "building", f"cache {first.get('cache')}")
streams = first.get("streams", [])
check(streams and sum(st["packets"] for st in streams) == first["packets"],
      "the streams' packets add up")
ov = get(early, "api/overview?w=64")
check(ov["coarse"] is True and len(ov["all"]) == 64, "the overview is coarse, 64 pixels")
for c in ov["cpus"]:
    want = next(x["content"] for x in first["cpus"] if x["cpu"] == c["cpu"])
    check(abs(sum(c["bytes"]) - want) <= 64, f"CPU {c['cpu']}: overview {sum(c['bytes'])} "
          f"bytes, its packets {want}")
check(abs(sum(ov["all"]) - first["content"]) <= 64, "the overview's bytes are the content's")

# during the build: 503 with Retry-After, never an answer, from 4 threads
seen = []


def hammer():
    for _ in range(5):
        for p in NEEDS_MODEL + ["summary", "overview?w=100"]:
            st, hd, body = ask(early, "api/" + p)
            seen.append((p, st, hd.get("Retry-After"), body))


threads = [threading.Thread(target=hammer) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
# the build is held until the file below exists: every answer is the
# building server's
for p, st, retry, body in seen:
    j = json.loads(body)
    if p.startswith("summary"):
        check(j.get("building") is True and "events" not in j, f"{p}: {body[:100]}")
    elif p.startswith("overview"):
        check(st == 200 and j["coarse"], f"{p}: {st}")
    else:
        check(st == 503 and retry == "1" and j.get("building") is True and "events" not in j,
              f"{p}: {st}, not a 503 with Retry-After and building: {retry} {body[:100]}")
check(len(seen) == 4 * 5 * (len(NEEDS_MODEL) + 2), f"{len(seen)} answers")
open(HOLD, "w").close()  # the build goes on

# the model swapped in: the page's poll sees it without a restart
deadline = time.monotonic() + 120
while True:
    s = get(early, "api/summary")
    if not s.get("building"):
        break
    check(time.monotonic() < deadline, "the model not ready in 120 s")
    if time.monotonic() > deadline:
        break
    time.sleep(0.1)
check(s.get("events", 0) > 0 and "building" not in s, "the ready summary is the model's")
check(s["span_ns"] == first["span_ns"] and s["wall_ns"] == first["wall_ns"] and
      s["bytes"] == first["bytes"] and s["freq"] == first["freq"], "span, start, bytes, clock")
check(s["lost_events"] == first["lost_events"] and s["lost_packets"] == first["lost_packets"],
      f"losses: model {s['lost_events']}/{s['lost_packets']}, packets "
      f"{first['lost_events']}/{first['lost_packets']}")
pk = {c["cpu"]: c for c in first["cpus"]}


def per_cpu(*opts):
    """Records per CPU as strata print lists them ("[001]")."""
    out = subprocess.run([strata, "print", *opts, trace], check=True, capture_output=True,
                         text=True).stdout
    n = {}
    for line in out.splitlines():
        cpu = int(line.split("[", 1)[1].split("]", 1)[0])
        n[cpu] = n.get(cpu, 0) + 1
    return n


# a CPU's packets hold more than their headers exactly when it has records:
# the program's events (the model's count) or only strata's own (names,
# state dump: not events), wherever the helper thread ran
events, records = per_cpu(), per_cpu("--internal")
for c in s["cpus"]:
    has = pk.get(c["cpu"], {"content": 0, "packets": 0})
    check(c["events"] == events.get(c["cpu"], 0),
          f"CPU {c['cpu']}: {c['events']} events, strata print {events.get(c['cpu'], 0)}")
    check((records.get(c["cpu"], 0) > 0) == (has["content"] > HEADER * has["packets"]),
          f"CPU {c['cpu']}: {records.get(c['cpu'], 0)} records, packets' content {has}")
# every mark of the model's whole-trace window where the packets have bytes
span = s["span_ns"]
W = 64
win = get(early, f"api/window?t0=0&t1={span}&w={W}")
ov = get(early, f"api/overview?w={W}")
for c in win["cpus"]:
    # the model has a row for every CPU up to the highest with a stream;
    # a CPU with no stream (the program never ran there) has no marks
    dens = next((x["bytes"] for x in ov["cpus"] if x["cpu"] == c["cpu"]), [0] * W)
    m = c["marks"]
    for i in range(0, len(m), 5):
        x = int(m[i])
        near = dens[max(0, x - 1):x + 2]
        check(any(near), f"CPU {c['cpu']}: a mark at pixel {x} where the packets have no bytes")
got = answers(early, span)
err = stop(early)
check("the model is ready" in err, f"stderr: {err}")

ref = start("--no-cache", "--wait")
want = answers(ref, span)
stop(ref)
for k in want:
    check(got[k] == want[k], f"{k}: served at once differs from --no-cache --wait")

# ---- with the cache: written after the build, then used ---------------------
v = start()
while get(v, "api/summary").get("building"):
    time.sleep(0.05)
err = ""
for _ in range(100):
    if get(v, "api/summary")["cache"] == "built":
        break
    time.sleep(0.05)
err = stop(v)
check("written" in err, f"the cache after a build served at once: {err}")
v = start()
s = get(v, "api/summary")
check(s.get("cache") == "used" and "building" not in s, f"the second open: {str(s)[:100]}")
check(ask(v, "api/overview?w=10")[0] == 404, "no overview on a cached open")
stop(v)

if check.failed:
    sys.exit(f"view-quick: {len(check.failed)} checks failed")
print("view-quick: ok")
