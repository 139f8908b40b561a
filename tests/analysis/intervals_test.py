#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# strata intervals and latency --by against the program's own clocks (ivtest.c).
import json, os, re, subprocess, sys

strata, prog, work = sys.argv[1], sys.argv[2], sys.argv[3]
subprocess.run(["rm", "-rf", work], check=True)
os.makedirs(work)
trace = os.path.join(work, "trace")
p = subprocess.run([prog], env=dict(os.environ, STRATA_OUTPUT=trace), capture_output=True,
                   text=True)
if p.returncode != 0:
    sys.exit("ivtest failed: %d %s" % (p.returncode, p.stderr))
gt = json.loads(p.stdout.strip().splitlines()[-1])

failures = []
def fail(msg):
    print("FAIL: " + msg)
    failures.append(msg)

def run(*args):
    r = subprocess.run([strata, *args, trace], capture_output=True, text=True)
    if r.returncode != 0:
        fail("strata %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r

# Each interval the program timed inside its events (in) and around them
# (out): the trace's lies between, give or take the clock conversion.
def within(what, got, lo, hi, n):
    tol = 0.001 * hi + 1000 * n
    ok = lo - tol <= got <= hi + tol
    print("%-62s %14.3f us in [%.3f, %.3f]  %s" % (what, got / 1e3, lo / 1e3, hi / 1e3,
                                                    "ok" if ok else "FAIL"))
    if not ok:
        failures.append(what)

def check(what, st, a):
    if st["count"] != a["n"]:
        fail("%s: %d intervals, the program made %d" % (what, st["count"], a["n"]))
    within(what + ": total", st["total_ns"], a["in_total"], a["out_total"], a["n"])
    within(what + ": min", st["min_ns"], a["in_min"], a["out_min"], 1)
    within(what + ": max", st["max_ns"], a["in_max"], a["out_max"], 1)

iv = json.loads(run("intervals", "--format", "json").stdout)
kinds = {k["kind"]: k for k in iv["kinds"]}
for name, a in gt["kinds"].items():
    if name not in kinds:
        fail("kind %s not found; kinds: %s" % (name, sorted(kinds)))
        continue
    check(name, kinds[name], a)
    if kinds[name]["open"] or kinds[name]["unmatched_ends"]:
        fail("%s: %d open, %d unmatched ends" % (name, kinds[name]["open"],
                                                  kinds[name]["unmatched_ends"]))
for tid, ks in gt["threads"].items():
    for name, a in ks.items():
        rows = [t for t in iv["threads"] if t["tid"] == int(tid) and t["kind"] == name]
        if not rows:
            fail("thread %s: no %s row" % (tid, name))
            continue
        check("tid %s %s" % (tid, name.split(":")[1].split("..")[0]), rows[0], a)

# latency --by: a job queued by the main thread, done by a worker
qin, qout = gt["queue_in"], gt["queue_out"]
lat = json.loads(run("latency", "--begin", "ivt:submit", "--end", "ivt:done", "--by", "job",
                     "--format", "json").stdout)
if lat["count"] != len(qin) or lat["unmatched"]:
    fail("latency --by job: %d pairs, %d unmatched; %d jobs" % (lat["count"], lat["unmatched"],
                                                              len(qin)))
within("latency --by job: total", lat["total_ns"], sum(qin), sum(qout), len(qin))
within("latency --by job: max", lat["max_ns"], max(qin), max(qout), 1)
within("latency --by job: median", lat["median_ns"], sorted(qin)[(len(qin) + 1) // 2 - 1],
       sorted(qout)[(len(qout) + 1) // 2 - 1], 1)
# without --by, each submit pairs with the next done of any job: not these
plain = json.loads(run("latency", "--begin", "ivt:submit", "--end", "ivt:done",
                       "--format", "json").stdout)
if plain["count"] == len(qin) and plain["total_ns"] == lat["total_ns"]:
    fail("latency without --by pairs the same as with it")
# the same pairs as intervals of one kind
ivb = json.loads(run("intervals", "--begin", "ivt:submit", "--end", "ivt:done", "--by", "job",
                     "--no-threads", "--format", "json").stdout)
if ivb["kinds"][0]["count"] != lat["count"] or ivb["kinds"][0]["total_ns"] != lat["total_ns"]:
    fail("intervals --by job and latency --by job differ: %r %r" % (ivb["kinds"][0], lat))

# one vocabulary: --from/--to is the window; --since/--until and the old
# --from EVENT still work
w1 = json.loads(run("latency", "--begin", "ivt:submit", "--end", "ivt:done", "--by", "job",
                    "--from", "0", "--to", "1000", "--format", "json").stdout)
w2 = json.loads(run("latency", "--begin", "ivt:submit", "--end", "ivt:done", "--by", "job",
                    "--since", "0", "--until", "1000", "--format", "json").stdout)
old = run("latency", "--from", "ivt:submit", "--to", "ivt:done", "--by", "job", "--format", "json")
w3 = json.loads(old.stdout)
if not (w1["count"] == w2["count"] == w3["count"] == lat["count"]):
    fail("windows: --from/--to %d, --since/--until %d, old --from EVENT %d pairs" %
         (w1["count"], w2["count"], w3["count"]))
if "--begin" not in old.stderr:
    fail("--from EVENT gives no note about --begin: %r" % old.stderr)
w4 = json.loads(run("latency", "--begin", "ivt:submit", "--end", "ivt:done", "--by", "job",
                    "--from", "1000", "--format", "json").stdout)
if w4["count"]:
    fail("--from past the trace's end still pairs %d" % w4["count"])

# units scale: the jobs' queue latencies are milliseconds, said as such,
# with a total
txt = run("latency", "--begin", "ivt:submit", "--end", "ivt:done", "--by", "job").stdout
m = re.search(r"total ([\d.]+) (ns|us|ms|s)\b", txt)
if not m:
    fail("latency text has no total: %r" % txt[:300])
else:
    unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)]
    if not 1 <= lat["total_ns"] / unit < 1000:
        fail("latency total %s %s for %d ns: the unit does not scale" %
             (m.group(1), m.group(2), lat["total_ns"]))
m = re.search(r"max ([\d.]+) (ns|us|ms|s)\b", txt)
if not m or m.group(2) != ("ms" if lat["max_ns"] >= 1e6 else "us"):
    fail("latency max printed as %r for %d ns" % (m and m.group(0), lat["max_ns"]))
# names: the per-thread rows of intervals name the workers
if not any(t["name"] for t in iv["threads"]):
    fail("intervals names no thread")

if failures:
    sys.exit("FAIL: %d checks" % len(failures))
print("PASS")
