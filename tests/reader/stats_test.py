#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# strata stats (streams counted one after the other, issue 23) against the time-ordered listing of the same trace.
import collections, decimal, os, subprocess, sys

strata, workers, work = sys.argv[1], sys.argv[2], sys.argv[3]
trace = os.path.join(work, "stats-trace")
subprocess.run(["rm", "-rf", trace], check=True)
os.makedirs(work, exist_ok=True)
# Three threads on the machine's CPUs: several streams, and threads that
# migrate between them, so that a thread's first event may be in a
# stream read after the one holding its last (the order stats reads in
# is not the time order print lists in).
env = dict(os.environ, STRATA_OUTPUT=trace)
subprocess.run([workers, "3", "100000", "20"], env=env, check=True, stdout=subprocess.DEVNULL)

# The ground truth: `strata print`, one line per event in time order:
# "TIME [CPU] U PID/TID NAME ...".
want = {"event": {}, "cpu": {}, "thread": {}}
def seen(table, key, t):
    c, f, l = table.get(key, (0, t, t))
    table[key] = (c + 1, min(f, t), max(l, t))
out = subprocess.run([strata, "print", trace], capture_output=True, text=True, check=True).stdout
for line in out.splitlines():
    p = line.split()
    t = decimal.Decimal(p[0])
    seen(want["event"], p[4], t)
    seen(want["cpu"], str(int(p[1].strip("[]"))), t)
    seen(want["thread"], p[3], t)

# stats' tables: "Per event", "Per CPU", "Per thread", each a header line
# then rows KEY COUNT RATE FIRST LAST.
got = {"event": {}, "cpu": {}, "thread": {}}
section = None
st = subprocess.run([strata, "stats", trace], capture_output=True, text=True, check=True).stdout
for line in st.splitlines():
    s = line.strip()
    if s.startswith("Per "):
        section = {"Per event": "event", "Per CPU": "cpu", "Per thread": "thread"}.get(s)
        continue
    p = s.split()
    if section and len(p) == 5 and p[1].isdigit():
        got[section][p[0]] = (int(p[1]), decimal.Decimal(p[3]), decimal.Decimal(p[4]))

fails = 0
streams = len([f for _, _, fs in os.walk(trace) for f in fs if f.startswith("cpu") and not f.endswith(".idx")])
for what in ("event", "cpu", "thread"):
    if got[what] != want[what]:
        fails += 1
        print("FAIL: per %s: stats %r, print %r" % (what, got[what], want[what]))
cpus_of = collections.defaultdict(set)
for line in out.splitlines():
    p = line.split()
    cpus_of[p[3]].add(p[1])
migrated = sum(1 for v in cpus_of.values() if len(v) > 1)
print("stats: %d events, %d streams, %d of %d threads on more than one CPU: "
      "per event, CPU and thread counts and first/last times %s the listing's"
      % (sum(c for c, _, _ in want["event"].values()), streams, migrated, len(cpus_of),
         "differ from" if fails else "equal"))
sys.exit(1 if fails else 0)
