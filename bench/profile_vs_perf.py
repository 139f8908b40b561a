#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`strata record --sample` and `perf record` on the same command: each one's top functions by self share, side by side (markdown).

usage: bench/profile_vs_perf.py STRATA WORKDIR [--top N] [--hz HZ] -- COMMAND...

The command runs twice, once under each profiler (same rate, cpu-clock
software event for perf, as strata uses), its stdout discarded. Functions
are matched by name; kernel samples are one row, "[kernel]", on both
sides. A function in one top N and not the other is shown with the other's
share (0 when it has none). Exit 1 when either profiler fails.
"""
import json
import os
import re
import shutil
import subprocess
import sys


def usage():
    sys.exit(__doc__.split("\n\n")[1])


def main():
    if "--" not in sys.argv or len(sys.argv) < 4:
        usage()
    cut = sys.argv.index("--")
    opts, cmd = sys.argv[1:cut], sys.argv[cut + 1:]
    if len(opts) < 2 or not cmd:
        usage()
    strata, work = opts[0], opts[1]
    top, hz = 10, 1000
    rest = opts[2:]
    while rest:
        if rest[0] == "--top" and len(rest) > 1:
            top = int(rest[1])
        elif rest[0] == "--hz" and len(rest) > 1:
            hz = int(rest[1])
        else:
            usage()
        rest = rest[2:]
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, "strata-trace")
    shutil.rmtree(trace, ignore_errors=True)
    with open(os.devnull, "wb") as null:
        r = subprocess.run([strata, "record", "--sample=%d" % hz, "-o", trace, "--"] + cmd,
                           stdout=null, stderr=subprocess.PIPE)
        if r.returncode:
            sys.exit("strata record failed: " + r.stderr.decode(errors="replace"))
        data = os.path.join(work, "perf.data")
        r = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(hz), "-g",
                            "-o", data, "--"] + cmd, stdout=null, stderr=subprocess.PIPE)
        if r.returncode:
            sys.exit("perf record failed: " + r.stderr.decode(errors="replace"))
    prof = json.loads(subprocess.run([strata, "profile", "--format", "json", trace],
                                     check=True, capture_output=True).stdout)
    total = prof["samples"] or 1
    ours = {f["name"] or "?": 100.0 * f["self"] / total for f in prof["functions"]}

    rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                          "--sort", "symbol"], check=True, capture_output=True,
                         text=True).stdout
    perf = {}
    for line in rep.splitlines():
        m = re.match(r"\s+([0-9.]+)%\s+\[(.)\]\s+(\S+)", line)
        if not m:
            continue
        name = "[kernel]" if m.group(2) == "k" else m.group(3)
        perf[name] = perf.get(name, 0.0) + float(m.group(1))

    names = sorted(ours, key=ours.get, reverse=True)[:top]
    names += [n for n in sorted(perf, key=perf.get, reverse=True)[:top] if n not in names]
    print("| function | strata self % | perf self % | difference (points) |")
    print("| --- | ---: | ---: | ---: |")
    worst = 0.0
    for n in names:
        a, b = ours.get(n, 0.0), perf.get(n, 0.0)
        worst = max(worst, abs(a - b))
        print("| %s | %.1f | %.1f | %+.1f |" % (n, a, b, a - b))
    rank_a = sorted(ours, key=ours.get, reverse=True)[:top]
    rank_b = sorted(perf, key=perf.get, reverse=True)[:top]
    same = sum(1 for x, y in zip(rank_a, rank_b) if x == y)
    print("\nstrata: %d samples (%d in the kernel, %d lost); largest difference %.1f points; "
          "%d of the top %d in the same rank" % (prof["samples"], prof["kernel"], prof["lost"],
                                                 worst, same, top))


if __name__ == "__main__":
    main()
