#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The cost of sampling (docs/profile.md, "Costs"): a real program, Debian's xz, compressing the same input plain and under `strata record --sample` (frame pointers and DWARF, 1 and 10 kHz), runs interleaved; prints a markdown section.

usage: bench/sample_bench.py STRATA WORKDIR [--runs N] [--mib M] [--level L]

Each round runs every configuration once, in turn (the order rotated from
round to round), so that the machine's load drifts over all of them alike;
the figures are the medians over the rounds, with [min-max], and each
configuration's ratio to plain is the median of its rounds' ratios to the
same round's plain run. The program's own elapsed and CPU time come from
bash's `time` around xz (inside `strata record`, so the recorder's start,
stop and reader thread are not counted; the reader's work on another CPU
is, where the CPUs are shared). "per sample" is the median of the rounds'
differences from the plain run of the same round, divided by that run's
samples: the traced program's time per sample. Exit 1 when a run fails,
77 when xz or perf sampling is missing.
"""
import os
import re
import shutil
import statistics
import subprocess
import sys

CONFIGS = (  # name, strata record options (None: plain)
    ("plain", None),
    ("fp, 1 kHz", ["--sample=1000"]),
    ("fp, 10 kHz", ["--sample=10000"]),
    ("dwarf, 1 kHz", ["--sample=1000", "--call-graph", "dwarf"]),
    ("dwarf, 10 kHz", ["--sample=10000", "--call-graph", "dwarf"]),
)
# the same under perf record, where it works: the kernel's share of the
# cost (the timer interrupt, the chain or the stack copy) is the same
PERF_CONFIGS = (
    ("perf record -g, 1 kHz", ["-F", "1000", "-g"]),
    ("perf record -g, 10 kHz", ["-F", "10000", "-g"]),
    ("perf record --call-graph dwarf, 1 kHz", ["-F", "1000", "--call-graph", "dwarf"]),
)
TIME_RE = re.compile(r"^XZTIME ([0-9.]+) ([0-9.]+) ([0-9.]+)$", re.M)
SAMPLES_RE = re.compile(r"samples: (\d+) samples(?: \((\d+) unwound with DWARF\))?, (\d+) lost")


def make_input(path, mib):
    """Text from a fixed seed: the same bytes on every machine."""
    import random
    r = random.Random(22)
    words = ["".join(r.choice("abcdefghijklmnopqrstuvwxyz")
                     for _ in range(r.randint(2, 9))) for _ in range(5000)]
    out, n = [], 0
    while n < mib << 20:
        line = " ".join(r.choice(words) for _ in range(12)) + "\n"
        out.append(line)
        n += len(line)
    with open(path, "w") as f:
        f.write("".join(out))


def run(strata, work, opts, xz, level, data):
    """(elapsed s, cpu s, samples, unwound, lost) of one run of xz"""
    script = 'TIMEFORMAT="XZTIME %%3R %%3U %%3S"; time %s -T1 -%d -c %s >/dev/null' % (
        xz, level, data)
    cmd = ["bash", "-c", script]
    trace = os.path.join(work, "trace")
    if opts and opts[0] == "perf":
        cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-o",
               os.path.join(work, "perf.data")] + opts[1:] + ["--"] + cmd
    elif opts is not None:
        shutil.rmtree(trace, ignore_errors=True)
        cmd = [strata, "record"] + opts + ["-o", trace, "--"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True)
    t = TIME_RE.search(p.stderr)
    if p.returncode or not t:
        sys.exit("sample_bench: %s failed (exit %d): %s" %
                 (" ".join(cmd), p.returncode, p.stderr.strip()[-300:]))
    if opts and opts[0] == "perf":
        return perf_counts(work, t)
    if opts is not None and ("sampling off" in p.stderr or "sampling with timers" in p.stderr):
        print("sample_bench: perf_event_open sampling is not available here", file=sys.stderr)
        sys.exit(77)
    s = SAMPLES_RE.search(p.stderr)
    samples, unwound, lost = ((int(s.group(1)), int(s.group(2) or 0), int(s.group(3)))
                              if s else (0, 0, 0))
    if opts is not None and not s:
        sys.exit("sample_bench: no samples line: " + p.stderr.strip()[-300:])
    return (float(t.group(1)), float(t.group(2)) + float(t.group(3)), samples, unwound, lost)


def perf_counts(work, t):
    """perf's samples and lost, from `perf report --stats`"""
    p = subprocess.run(["perf", "report", "--stats", "-i", os.path.join(work, "perf.data")],
                       capture_output=True, text=True)
    s = re.search(r"SAMPLE events:\s+(\d+)", p.stdout)
    lost = re.search(r"LOST events:\s+(\d+)", p.stdout)
    return (float(t.group(1)), float(t.group(2)) + float(t.group(3)),
            int(s.group(1)) if s else 0, 0, int(lost.group(1)) if lost else 0)


def perf_works(work):
    """perf record runs here (the VM may refuse it, or have no perf)"""
    if not shutil.which("perf"):
        return False
    p = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "1000", "-o",
                        os.path.join(work, "perf.data"), "--", "true"],
                       capture_output=True, text=True)
    return p.returncode == 0


def paired(rs, plain, i):
    """the median over the rounds of run / the same round's plain run"""
    return statistics.median(r[i] / p[i] for r, p in zip(rs, plain))


def med(xs):
    return "%.3f [%.3f–%.3f]" % (statistics.median(xs), min(xs), max(xs))


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__.split("\n\n")[1])
    strata, work = args[0], args[1]
    runs, mib, level = 7, 2, 6
    rest = args[2:]
    while rest:
        if rest[0] in ("--runs", "--mib", "--level") and len(rest) > 1:
            v = int(rest[1])
            runs, mib, level = ((v, mib, level) if rest[0] == "--runs" else
                                (runs, v, level) if rest[0] == "--mib" else (runs, mib, v))
            rest = rest[2:]
        else:
            sys.exit("sample_bench: unknown argument %r" % rest[0])
    xz = shutil.which("xz")
    if not xz:
        print("sample_bench: no xz here (apt-get install xz-utils)", file=sys.stderr)
        sys.exit(77)
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "input.txt")
    make_input(data, mib)
    load0 = open("/proc/loadavg").read().split()[:3]
    configs = CONFIGS + (tuple((n, ["perf"] + o) for n, o in PERF_CONFIGS)
                         if perf_works(work) else ())
    res = {name: [] for name, _ in configs}
    for r in range(runs):
        # the order rotated each round: no configuration always first
        k = r % len(configs)
        for name, opts in configs[k:] + configs[:k]:
            res[name].append(run(strata, work, opts, xz, level, data))
    shutil.rmtree(work, ignore_errors=True)
    load1 = open("/proc/loadavg").read().split()[:3]
    version = subprocess.run([xz, "--version"], capture_output=True, text=True).stdout
    plain = res["plain"]
    pw = statistics.median(r[0] for r in plain)

    print("## Sampling: cost to a real program (xz)")
    print()
    print("`xz -T1 -%d` (%s) of %d MiB of text (from a fixed seed), plain and under "
          "`strata record --sample`, %d interleaved rounds (`bench/sample_bench.py`); "
          "load average %s at the start, %s at the end. Elapsed and CPU (user + "
          "system) of xz alone, from bash's `time` inside the recording; medians "
          "[min–max]. \"× plain\" is the median over the rounds of this run ÷ the "
          "same round's plain run (the order of the runs rotated each round); \"per sample\" the "
          "median over the rounds of (this run − the same round's plain run) ÷ this "
          "run's samples, in ns of xz's own time. perf's rows, where perf runs: "
          "`perf record -e cpu-clock -F HZ`: the kernel's part of the same work "
          "(the timer interrupt, the chain or the stack copy), without strata's."
          % (level, version.split("\n")[0], mib, runs, " ".join(load0), " ".join(load1)))
    print()
    print("| configuration | elapsed s | × plain | CPU s | × plain | samples a run | "
          "lost, all runs | unwound a run | ns per sample (elapsed) | ns per sample (CPU) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, opts in configs:
        rs = res[name]
        w = [r[0] for r in rs]
        c = [r[1] for r in rs]
        if opts is None:
            print("| plain | %s | 1.000 | %s | 1.000 | — | — | — | — | — |" % (med(w), med(c)))
            continue
        per_w = statistics.median((r[0] - p[0]) * 1e9 / r[2] for r, p in zip(rs, plain) if r[2])
        per_c = statistics.median((r[1] - p[1]) * 1e9 / r[2] for r, p in zip(rs, plain) if r[2])
        dwarf = "--call-graph" in opts and opts[0] != "perf"
        print("| %s | %s | %.3f | %s | %.3f | %d | %d | %s | %.0f | %.0f |" % (
            name, med(w), paired(rs, plain, 0), med(c), paired(rs, plain, 1),
            statistics.median(r[2] for r in rs), sum(r[4] for r in rs),
            "%d" % statistics.median(r[3] for r in rs) if dwarf else "—",
            per_w, per_c))
    print()
    print("Goal: ≤ 2 %% slowdown at 1 kHz: frame pointers %+.1f %%, DWARF %+.1f %% "
          "(elapsed, paired medians; the plain runs alone spread over %.1f %% of "
          "their median here, and a difference under that is noise)." % (
              (paired(res["fp, 1 kHz"], plain, 0) - 1) * 100,
              (paired(res["dwarf, 1 kHz"], plain, 0) - 1) * 100,
              (max(r[0] for r in plain) - min(r[0] for r in plain)) / pw * 100))


if __name__ == "__main__":
    main()
