# SPDX-License-Identifier: MIT
"""strata view --live (docs/view.md, "Live"): examples/workers logs 2000
jobs (begin/end intervals) at full speed, then tests/reader/slowlog logs
numbered events slowly, and a second workers process, whose classes the
trace gains while followed, runs beside it; all under `strata record
--live=50` while the viewer follows the trace;
the API's end and counts grow, every event is listed exactly once, the
final counts are the programs' and strata info's, the intervals read while
live are the finished trace's, and no cache is written
while the trace is live. Then classes described late: a finished
recording copied as a live trace whose metadata first declares its
classes raw (named by their ids, no kinds), then as the writer described
them; the intervals read under the raw classes are the finished trace's
as soon as the classes are described. Then `strata view` without --live
on a live trace:
shown as it was, marked partial, not cached. No timing is asserted: each
state is waited for with a generous bound.

usage: live_test.py STRATA SLOWLOG WORKERS WORKDIR"""
import atexit
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

from recorded import Checks, fresh_work, wait_done

strata, slowlog, workers, base = sys.argv[1:5]
N, PERIOD_MS = 160, 25  # 40 events a second, about 4 s
check = Checks("view-live")
work, trace = fresh_work(base, "live")
cache = os.path.join(work, "xdg")
env = dict(os.environ, XDG_CACHE_HOME=cache)


def cleanup(p):
    """Whatever happens, no process of the test outlives it."""
    atexit.register(lambda: p.poll() is None and p.kill())
    return p


def spawn_view(*args):
    return cleanup(subprocess.Popen([strata, "view", trace, *args], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env=env))


def url_of(v):
    """The first line strata view prints, once it serves."""
    url = v.stdout.readline().strip()
    if not url.startswith("http://"):
        v.kill()
        sys.exit(f"view-live: FAIL: no URL from strata view {v.args}: {v.stderr.read()}")
    return url


def start_view(*args):
    v = spawn_view(*args)
    return v, url_of(v)


def get(url, what):
    with urllib.request.urlopen(url + "api/" + what, timeout=30) as r:
        return json.load(r)


def stop(v):
    v.terminate()
    _, err = v.communicate(timeout=30)
    return err


def ident(e):
    """An event, the same in the live and the finished trace (whose streams
    may be numbered otherwise): its time, thread, CPU and place in its
    stream file. Not its name nor its fields: an event logged before its
    class's descriptor reached the writer is listed under the raw class
    that stands for it, and under its own once the descriptor is declared
    (docs/view.md, "Live")."""
    return (e["ts"], e["tid"], e["cpu"], e["offset"])


def caches():
    return glob.glob(os.path.join(cache, "**", "*.vwc"), recursive=True)


# The viewer first (it waits for the trace to appear); a second workers
# process starts a second into slowlog's run, long after the first window:
# its classes, which begin and end intervals, come while the trace is
# followed (the intervals' pairer is made again on them).
# An activity rule too (docs/view.md, "Live"): its pairer is made on the
# classes as they come, and its jobs counted while live.
JOBS = "jobs=work:job_begin..work:job_end,by=job"
view = spawn_view("--live", "--activity", JOBS)
wout = os.path.join(work, "workers.out")
rec = cleanup(subprocess.Popen([strata, "record", "-o", trace, "--live=50", "--", "sh", "-c",
                                f'"$1" 2 2000 1 >"$2" 2>&1 && {{ "$3" {N} {PERIOD_MS} & sleep 1; '
                                f'"$1" 2 2000 1 >>"$2" 2>&1; wait; }}', "sh",
                                workers, wout, slowlog], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True))
url = url_of(view)

# Poll as the page does; list every event once, from a cursor that only
# moves forward: an event the server handed out before an earlier one of
# the other CPU's stream was written would be missed, one listed twice
# counted twice.
seen, times, ends, cursor, was_live, cached_live, live_iv = [], [], [], 0, 0, [], {}
live_jobs = []  # the rule's intervals while live
at_cursor = set()  # the events listed at ns `cursor`, by ident()
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    live = get(url, "live")
    ends.append((live["span_ns"], live["events"], live["live"]))
    if live["live"]:
        was_live += 1
        cached_live += caches()
        s = get(url, "summary")  # the recording may have ended since
        check(s["cache"] == "live" or not s["live"], f"a live summary: cache {s['cache']}")
        if s["live"]:
            live_iv = {t["tid"]: t["intervals"] for t in s["threads"] if t["intervals"]}
            check(s["kinds"][-1:] == ["jobs"], f"the rule's kind while live: {s['kinds']}")
            st = get(url, f"stats?t0=0&t1={s['span_ns']}&kind={len(s['kinds']) - 1}")
            if get(url, "live")["live"]:
                live_jobs.append(st["durations"]["count"])
    newest = -1
    while True:
        try:
            lst = get(url, f"list?t={cursor}&before=0&after=1000")
        except urllib.error.HTTPError as e:  # a cursor past the end
            check(False, f"list from {cursor} ns: {e}")
            break
        # from the last ns listed again (two threads can log in the same
        # ns): the events already listed there are skipped
        evs = [e for e in lst["events"] if ident(e) not in at_cursor]
        seen += [e["fields"]["seq"] for e in evs if e["name"] == "live:tick"]
        times += [e["ts"] for e in evs]
        if not evs:
            break
        cursor = evs[-1]["ts"]
        at_cursor = {ident(e) for e in lst["events"] if e["ts"] == cursor}
        newest = max(newest, cursor)
    # the list ends at the end the follower handed out: what it listed is
    # never past the end the server says next
    after = get(url, "live")["span_ns"]
    check(newest <= after, f"an event listed at {newest} ns, past the end {after}")
    if not live["live"]:
        break
    time.sleep(0.1)

rec_err = rec.communicate(timeout=60)[1]
check(rec.returncode == 0, f"strata record failed: {rec_err}")
check(wait_done(trace), "the recorder left .live")
print(f"view-live: {was_live} live answers, {len(seen)} events listed, ends {[e[0] for e in ends][:3]}..{ends[-1][0]}", file=sys.stderr)
check(was_live >= 3, f"the API answered live only {was_live} times")
live_ends = [e for e in ends if e[2]]
grew_end = sorted({e[0] for e in live_ends})
grew_events = sorted({e[1] for e in live_ends})
check(len(grew_end) >= 3 and len(grew_events) >= 3,
      f"end and events grew while live: {len(grew_end)} ends, {len(grew_events)} counts")
check(all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(live_ends, live_ends[1:])),
      "end and events never went back while live")
# each live answer's count is that of the events at or before its end,
# as listed: the model read each window once, none twice or left out
wrong = [(span, n, sum(t <= span for t in times)) for span, n, _ in live_ends
         if n != sum(t <= span for t in times)]
check(not wrong, f"live counts against the events listed up to their end: {wrong[:5]}")
check(not cached_live, f"a cache written while live: {cached_live}")
check(ends and not ends[-1][2], "the follow did not end with the recording")

dups = sorted({s for s in seen if seen.count(s) > 1})
missing = sorted(set(range(N)) - set(seen))
check(not dups and not missing and len(seen) == N,
      f"every event listed once: {len(seen)} listed, duplicates {dups[:10]}, "
      f"missing {missing[:10]}")

logged = [int(n) for n in re.findall(r"(\d+) events logged", open(wout).read())]
logged = sum(logged) + N if len(logged) == 2 else None
info = subprocess.run([strata, "info", trace], capture_output=True, text=True).stdout
m = re.search(r"^Events:\s+(\d+)", info, re.M)
s = get(url, "summary")
stats = get(url, f"stats?t0=0&t1={s['span_ns']}")
ticks = {n["name"]: n["count"] for n in stats.get("names", [])}.get("live:tick")
check(m and s["events"] == logged == int(m.group(1)) == len(times),
      f"events at the end: the API {s['events']}, listed {len(times)}, the programs "
      f"{logged}, strata info {m and m.group(1)}")
done_iv = {t["tid"]: t["intervals"] for t in s["threads"] if t["intervals"]}
# an interval open when the trace gains classes is lost (the pairer is
# made again, docs/view.md "Live"): a few at most, never one more
lost = sum(done_iv.values()) - sum(live_iv.values())
check(len(done_iv) == 4 and live_iv.keys() == done_iv.keys() and
      all(live_iv[t] <= done_iv[t] for t in done_iv) and 0 <= lost <= 16,
      f"the jobs' intervals: live {live_iv}, finished {done_iv}")
check(ticks == N, f"the statistics count {ticks} live:tick of {N}")
# the rule's jobs: every job of both workers runs once finished; while
# live never fewer than before, and all of the first run's once slowlog
# logs (the first run had ended)
done_jobs = get(url, f"stats?t0=0&t1={s['span_ns']}&kind={len(s['kinds']) - 1}")
done_jobs = done_jobs["durations"]["count"]
check(s["kinds"][-1:] == ["jobs"] and done_jobs == 4000,
      f"the rule's jobs, finished: {done_jobs} of 4000 ({s['kinds']})")
check(live_jobs and live_jobs == sorted(live_jobs) and 2000 <= live_jobs[-1] <= 4000,
      f"the rule's jobs while live: {live_jobs[:3]}..{live_jobs[-3:]}")
check(not s["live"] and s["cache"] in ("writing", "built"), f"finished: {s['cache']}")
err = stop(view)
check(len(caches()) == 1, f"the finished trace cached once: {caches()}")
check("is finished" in err, f"stderr does not say the recording ended: {err}")

# Classes described late (docs/view.md, "Live"): a writer may declare an id
# as a raw class before its descriptor arrives, then rename it and give it
# its kind. A finished recording of workers, copied as a live trace whose
# metadata first has each class raw (named by its id, no kind), then the
# writer's own: the intervals of the events read under the raw classes
# are the finished trace's once the classes are described, without a
# window more.
for f in caches():
    os.remove(f)
work3, src = fresh_work(base, "live-late")
subprocess.run([strata, "record", "-o", src, "--", workers, "2", "2000", "1"], check=True,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
trace = os.path.join(work3, "copy")
shutil.copytree(src, trace, ignore=lambda d, names: ["index"] if "/ust/" in d + "/" else [])
open(os.path.join(trace, ".live"), "w").close()
meta = glob.glob(os.path.join(trace, "ust", "*", "metadata"))
check(len(meta) == 1, f"one process recorded: {meta}")
described = open(meta[0]).read()
raw = re.sub(r"\tstrata_kind_\d+ = \"\w+\";\n", "", described)
ids = iter(range(1, 7))
raw = re.sub(r'name = "work:\w+";', lambda m: f'name = "1:{next(ids)}";', raw)
check(raw.count('name = "1:') == 6 and "strata_kind_" not in raw, "the raw metadata made")
with open(meta[0], "w") as f:
    f.write(raw)
view, url = start_view("--live")
deadline = time.monotonic() + 60
while time.monotonic() < deadline and get(url, "live")["events"] < 10000:
    time.sleep(0.1)
s = get(url, "summary")
check(s["live"] and not any(t["intervals"] for t in s["threads"]),
      f"raw classes pair nothing: {[(t['tid'], t['intervals']) for t in s['threads']]}")
with open(meta[0] + ".tmp", "w") as f:  # as the writer does: renamed into place
    f.write(described)
os.rename(meta[0] + ".tmp", meta[0])
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    s = get(url, "summary")
    late_iv = {t["tid"]: t["intervals"] for t in s["threads"] if t["intervals"]}
    if len(late_iv) == 2 or not s["live"]:
        break
    time.sleep(0.1)
check(s["live"], "the copy stopped being live before its classes were described")
for d in glob.glob(os.path.join(src, "ust", "*", "index")):  # the end
    shutil.copytree(d, os.path.join(trace, os.path.relpath(d, src)))
os.remove(os.path.join(trace, ".live"))
deadline = time.monotonic() + 60
while time.monotonic() < deadline and get(url, "live")["live"]:
    time.sleep(0.1)
s = get(url, "summary")
done_iv = {t["tid"]: t["intervals"] for t in s["threads"] if t["intervals"]}
stop(view)
# the events at the window's end wait for the next one: an interval or
# two per thread at most may be missing while live
check(len(done_iv) == 2 and late_iv.keys() == done_iv.keys() and
      all(done_iv[t] - 2 <= late_iv[t] <= done_iv[t] for t in done_iv),
      f"the intervals read under raw classes: live {late_iv}, finished {done_iv}")

# Without --live on a trace still written: what is there, partial, no cache.
for f in caches():
    os.remove(f)
work2, trace = fresh_work(base, "live-partial")
rec = cleanup(subprocess.Popen([strata, "record", "-o", trace, "--live=50", "--", slowlog,
                                "80", str(PERIOD_MS)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE))
for _ in range(600):  # the first packets written
    if glob.glob(os.path.join(trace, "ust", "*", "cpu*")) and os.path.exists(
            os.path.join(trace, ".live")):
        break
    time.sleep(0.05)
time.sleep(0.5)
if os.path.exists(os.path.join(trace, ".live")):
    view, url = start_view()
    s = get(url, "summary")
    err = stop(view)
    check(s["partial"] and not s["live"] and s["cache"] == "off",
          f"opened while written: partial {s['partial']}, cache {s['cache']}")
    check("still being written" in err and "--live" in err, f"stderr: {err}")
    check(not caches(), f"a partial model cached: {caches()}")
else:
    print("view-live: the recording ended before strata view opened it: partial not checked",
          file=sys.stderr)
rec.communicate(timeout=60)
sys.exit(1 if check.failed else 0)
