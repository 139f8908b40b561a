#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata record --sample --call-graph dwarf on a program built without
frame pointers (nofp.c): its two threads spin in leaf() under known chains,
main -> outer -> middle -> leaf and worker -> outer -> middle -> leaf.

Nearly every sample in leaf (or below it: clock_gettime, the vdso, the
kernel) must carry its whole chain; with frame pointers (the control run)
almost none does, which shows that the program really has none and that
the chains come from the unwinder. Option errors exit 2 with one line.

With "short": RUNS runs of the program one after the other, each spinning
5 ms of CPU time on each thread, so short that most are gone before the
reader's first look at their samples: their modules must come from the
kernel's mmap2 records (kernel/unwind.c), and 90 % of the samples in leaf
must still carry the whole chain (when the modules were read from
/proc/PID/maps, 57 % did on a loaded 2-CPU machine).

With "fork": one process forks RUNS children one after the other, each
spinning 5 ms per thread, without exec: a child maps nothing of its own
(the kernel reports no mapping for it), so its frames are named from its
parent's maps (the sample reader's strata:process at the fork); 90 % of
the samples in leaf, nearly all the children's, must be named and whole.

usage: dwarf_test.py STRATA NOFP WORKDIR [short|fork [RUNS]]
"""
import os
import re
import shutil
import subprocess
import sys

STRATA, NOFP, WORK = sys.argv[1:4]
SHORT = len(sys.argv) > 4 and sys.argv[4] == "short"
FORK = len(sys.argv) > 4 and sys.argv[4] == "fork"
RUNS = int(sys.argv[5]) if len(sys.argv) > 5 else 100
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def record(name, *opts, cmd=(NOFP, "1")):
    trace = os.path.join(WORK, name)
    p = subprocess.run([STRATA, "record", "--sample"] + list(opts) +
                       ["-o", trace, "--"] + list(cmd), capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    if "sampling off" in p.stderr or "sampling with timers" in p.stderr:
        print("perf_event_open sampling is not available here; skipped")
        sys.exit(77)
    if p.returncode:
        fail("strata record exited %d" % p.returncode)
    return trace, p.stderr


def chained(trace):
    """(samples at or below leaf, those whose chain is whole)"""
    p = subprocess.run([STRATA, "profile", trace, "--format", "folded"],
                       capture_output=True, text=True)
    if p.returncode:
        fail("strata profile exited %d: %s" % (p.returncode, p.stderr))
    whole = re.compile(r"(^|;)(main|worker);outer;middle;leaf(;|$)")
    n = good = 0
    for line in p.stdout.splitlines():
        stack, _, count = line.rpartition(" ")
        if re.search(r"(^|;)leaf(;|$)", stack):
            n += int(count)
            good += int(count) if whole.search(stack) else 0
    return n, good


def counts(err):
    """(samples, unwound) of record's stop line"""
    m = re.search(r"samples: (\d+) samples \((\d+) unwound with DWARF\), (\d+) lost", err)
    if not m:
        fail("no samples line with DWARF counts: " + err)
    return int(m.group(1)), int(m.group(2))


if SHORT:
    loop = 'for i in $(seq %d); do "$0" 0.005 >/dev/null || exit 1; done' % RUNS
    trace, err = record("short", "--call-graph", "dwarf", cmd=("sh", "-c", loop, NOFP))
    samples, unwound = counts(err)
    n, good = chained(trace)
    # each run: about 5 samples per thread at 1 kHz
    if n < 2.5 * RUNS or good < 0.9 * n:
        fail("short: %d of %d samples in leaf have the whole chain, %d of %d "
             "unwound (want 90 %% of at least %d)" % (good, n, unwound, samples, 2.5 * RUNS))
    print("short: %d of %d samples in leaf of %d runs unwound to main or worker "
          "(%d of %d samples unwound)" % (good, n, RUNS, unwound, samples))
    sys.exit(0)

if FORK:
    trace, err = record("fork", "--call-graph", "dwarf", cmd=(NOFP, "0.005", str(RUNS)))
    n, good = chained(trace)
    if n < 2.5 * RUNS or good < 0.9 * n:
        fail("fork: %d of %d samples in leaf named and whole (want 90 %% of at least %d)"
             % (good, n, 2.5 * RUNS))
    print("fork: %d of %d samples in leaf of %d forked children named, main or worker "
          "to leaf" % (good, n, RUNS))
    sys.exit(0)

trace, err = record("dwarf", "--call-graph", "dwarf")
samples, unwound = counts(err)
if samples < 1000 or unwound < 0.95 * samples:
    fail("%d samples, %d unwound with DWARF (want 95 %%)" % (samples, unwound))
n, good = chained(trace)
if n < 0.9 * samples or good < 0.95 * n:
    fail("dwarf: %d of %d samples in leaf have the whole chain (want 95 %%)" % (good, n))
print("dwarf: %d of %d samples in leaf unwound to main or worker" % (good, n))

trace, err = record("fp", "--call-graph", "fp")
fn, fgood = chained(trace)
if fgood > 0.5 * fn:
    fail("fp: %d of %d samples whole without frame pointers: the program has "
         "them, so this test shows nothing" % (fgood, fn))
print("fp (control): %d of %d samples in leaf whole" % (fgood, fn))

for opts, want in ((["--call-graph", "lbr"], "is not fp or dwarf"),
                   (["--call-graph", "dwarf,10"], "64 to 65000"),
                   (["--sample-mode", "timer", "--call-graph", "dwarf"],
                    "timer sampler walks frame pointers")):
    p = subprocess.run([STRATA, "record", "--sample"] + opts +
                       ["-o", os.path.join(WORK, "bad"), "--", NOFP, "0"],
                       capture_output=True, text=True)
    if p.returncode != 2 or want not in p.stderr or os.path.exists(os.path.join(WORK, "bad")):
        fail("%s: exit %d, %r" % (" ".join(opts), p.returncode, p.stderr))
print("dwarf: OK")
