#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Helpers of bench/relay_bench.sh (docs/relay.md, "Benchmark").

  relay_bench.py run -- COMMAND...   run COMMAND, then print
      "self_s=S child_s=C wall_s=W": the CPU time of COMMAND's process
      alone (utime+stime of /proc/PID/stat, read while it is a zombie,
      so it covers its whole life but none of the children it reaped)
      and of the children it reaped (cutime+cstime: the traced program
      under `strata record`). Exit status: COMMAND's.
  relay_bench.py summary RAW          the table of the ROW lines of RAW.
"""
import os
import statistics
import subprocess
import sys
import time

TCK = os.sysconf("SC_CLK_TCK")


def run(cmd):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd)
    # WNOWAIT: the process stays a zombie, its /proc/PID/stat still readable
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    wall = time.monotonic() - t0
    with open("/proc/%d/stat" % p.pid) as f:
        st = f.read().rsplit(")", 1)[1].split()
    # fields 14-17 of proc(5); st[0] is field 3
    ut, stt, cut, cst = (int(x) for x in st[11:15])
    rc = p.wait()
    print("self_s=%.2f child_s=%.2f wall_s=%.3f" % ((ut + stt) / TCK, (cut + cst) / TCK, wall))
    return rc


def rows(path):
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("ROW "):
                out.append(dict(kv.split("=", 1) for kv in line.split()[1:]))
    return out


def med(rs, key):
    v = []
    for r in rs:
        try:
            v.append(float(r[key]))
        except (KeyError, ValueError):
            pass
    return statistics.median(v) if v else None


def fmt(v, scale=1.0, pat="%.1f"):
    return "-" if v is None else pat % (v * scale)


def summary(path):
    rs = rows(path)
    modes = []
    for r in rs:
        if r["mode"] not in modes:
            modes.append(r["mode"])
    print("medians over %d repetitions (interleaved); CPU in ms; loss = events "
          "discarded + events logged but absent" % max(
              (int(r["rep"]) + 1 for r in rs), default=0))
    hdr = ("mode", "logged", "recorded", "lost", "Mev/s", "MB/s", "sender_ms",
           "relay_ms", "wire_MB", "copy_rec", "copy_lost")
    print("%-14s" % hdr[0] + "".join("%11s" % h for h in hdr[1:]))
    m = {}
    for mode in modes:
        sel = [r for r in rs if r["mode"] == mode]
        m[mode] = {k: med(sel, k) for k in sel[0]}
        x = m[mode]
        print("%-14s" % mode + "".join("%11s" % s for s in (
            fmt(x.get("logged"), 1, "%.0f"), fmt(x.get("recorded"), 1, "%.0f"),
            fmt(x.get("lost"), 1, "%.0f"), fmt(x.get("evps"), 1e-6, "%.2f"),
            fmt(x.get("mbps"), 1, "%.1f"), fmt(x.get("sender_s"), 1e3, "%.0f"),
            fmt(x.get("relay_s"), 1e3, "%.0f"),
            fmt(x.get("wire_b"), 1e-6, "%.1f"), fmt(x.get("copy_rec"), 1, "%.0f"),
            fmt(x.get("copy_lost"), 1, "%.0f"))))

    def ratio(a, b, key):
        if a not in m or b not in m or not m[a].get(key) or not m[b].get(key):
            return "-"
        return "%.2f" % (m[a][key] / m[b][key])

    print("\nratios of medians (same run):")
    for a, b in (("strata-relay", "strata-local"), ("strata-zstd", "strata-relay"),
                 ("lttng-relayd", "strata-relay")):
        if a in m and b in m:
            # CPU per recorded event: the cost that matters at equal counts
            for mm in (m[a], m[b]):
                tot = (mm.get("sender_s") or 0) + (mm.get("relay_s") or 0)
                mm["cpu_ns_ev"] = tot * 1e9 / mm["recorded"] if mm.get("recorded") else None
            print("  %s / %s: events/s %s, MB/s %s, sender CPU %s, relay CPU %s, "
                  "sender+relay CPU per event %s, wire bytes %s" % (
                      a, b, ratio(a, b, "evps"), ratio(a, b, "mbps"),
                      ratio(a, b, "sender_s"), ratio(a, b, "relay_s"),
                      ratio(a, b, "cpu_ns_ev"), ratio(a, b, "wire_b")))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "run" and sys.argv[2] == "--":
        sys.exit(run(sys.argv[3:]))
    if len(sys.argv) == 3 and sys.argv[1] == "summary":
        summary(sys.argv[2])
        sys.exit(0)
    print("usage: relay_bench.py run -- COMMAND... | summary RAW", file=sys.stderr)
    sys.exit(2)
