#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata stats --follow on a trace being written (docs/cli.md, "strata stats").

usage: stats_follow_test.py STRATA SLOWLOG WORKDIR

slowlog logs 150 ticks 20 ms apart under `strata record --live=25` while
`strata stats --follow --every 0.3` counts the trace: at least three
lines come while it runs, each line's total is the last one's plus its
increment, the counts never go back, the last total is every event of
the finished trace, and the table that ends the output is `strata
stats`' own, byte for byte.
"""
import os
import re
import shutil
import subprocess
import sys
import time

strata, slowlog, work = sys.argv[1:4]
work = os.path.join(work, "stats-follow")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
trace = os.path.join(work, "t")
fails = []


def check(ok, what):
    if not ok:
        fails.append(what)
        print("FAIL:", what, file=sys.stderr)


rec = subprocess.Popen([strata, "record", "--live=25", "-o", trace, "--", slowlog, "150", "20",
                        "quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
# followed from before the trace exists, as a user watching would
fol = subprocess.run([strata, "stats", "--follow", "--every", "0.3", trace],
                     capture_output=True, text=True, timeout=120)
rec.wait(timeout=60)
check(fol.returncode == 0, "stats --follow exited %d: %s" % (fol.returncode, fol.stderr))
out = fol.stdout
live, _, table = out.partition("\n\n")
lines = [re.match(r"\s*([\d.]+) s  (\d+) events  \+(\d+) \(([\d.]+)/s\)  lost (\d+)", l)
         for l in live.splitlines()]
check(all(lines), "lines not as documented:\n" + live)
lines = [m for m in lines if m]
print(live)
check(len(lines) >= 3, "%d lines while the program ran 3 s" % len(lines))
total = 0
for m in lines:
    total += int(m.group(3))
    check(int(m.group(2)) == total, "a line's total %s is not the sum of the increments %d"
          % (m.group(2), total))
plain = subprocess.run([strata, "stats", trace], capture_output=True, text=True).stdout
n = int(re.search(r"Events:\s+(\d+)", plain).group(1))
check(total == n, "--follow counted %d events, the finished trace has %d" % (total, n))
check(n >= 150, "the trace holds %d events, slowlog logged 150" % n)
check(table == plain, "the final table differs from strata stats':\n%s\n---\n%s" % (table, plain))
sys.exit(1 if fails else 0)
