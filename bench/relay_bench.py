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
  relay_bench.py latency STRATA SLOWLOG PORT TOKEN RELAY_DIR WORK
      the delay from logging an event to `strata print --follow` on the
      relay's copy printing it: slowlog's ticks (tests/reader/slowlog.c,
      200 events 20 ms apart) under `strata record --live=25 --relay`,
      as tests/reader/follow_test.py measures it on a local trace.
  relay_bench.py stall PORT AFTER_BYTES SECONDS
      tests/relay/proxy.py's fault proxy in front of a relay on PORT,
      stalling the sender's stream once for SECONDS after AFTER_BYTES:
      prints "port=P", then forwards until killed.
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
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
        if r["mode"] == "latency":
            print("live latency over the relay (logged -> printed by print --follow): "
                  + " ".join("%s=%s" % kv for kv in r.items() if kv[0] != "mode"))
    rs = [r for r in rs if r["mode"] != "latency"]
    for r in rs:
        if r["mode"] not in modes:
            modes.append(r["mode"])
    print("medians over %d repetitions (interleaved); CPU in ms; loss = events "
          "discarded + events logged but absent" % max(
              (int(r["rep"]) + 1 for r in rs), default=0))
    hdr = ("mode", "logged", "recorded", "lost", "Mev/s", "MB/s", "sender_ms",
           "relay_ms", "wire_MB", "copy_rec", "copy_lost", "prog_ms")
    print("%-18s" % hdr[0] + "".join("%11s" % h for h in hdr[1:]))
    m = {}
    for mode in modes:
        sel = [r for r in rs if r["mode"] == mode]
        m[mode] = {k: med(sel, k) for k in sel[0]}
        x = m[mode]
        print("%-18s" % mode + "".join("%11s" % s for s in (
            fmt(x.get("logged"), 1, "%.0f"), fmt(x.get("recorded"), 1, "%.0f"),
            fmt(x.get("lost"), 1, "%.0f"), fmt(x.get("evps"), 1e-6, "%.2f"),
            fmt(x.get("mbps"), 1, "%.1f"), fmt(x.get("sender_s"), 1e3, "%.0f"),
            fmt(x.get("relay_s"), 1e3, "%.0f"),
            fmt(x.get("wire_b"), 1e-6, "%.1f"), fmt(x.get("copy_rec"), 1, "%.0f"),
            fmt(x.get("copy_lost"), 1, "%.0f"), fmt(x.get("loop_ms"), 1, "%.0f"))))

    def ratio(a, b, key):
        if a not in m or b not in m or not m[a].get(key) or not m[b].get(key):
            return "-"
        return "%.2f" % (m[a][key] / m[b][key])

    print("\nratios of medians (same run):")
    for a, b in (("strata-relay", "strata-local"), ("strata-zstd", "strata-relay"),
                 ("strata-fsync", "strata-relay"), ("strata-relay-flat", "strata-local-flat"),
                 ("lttng-relayd", "strata-relay"), ("lttng-relayd", "strata-relay-flat")):
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
    # the traced program's own time, paced: what a stalled link cost it
    if "strata-relay-stall" in m and "strata-relay" in m:
        print("  the program's own loop, stalled link / link up: %s (%s ms / %s ms; "
              "lost %s events, every one counted)" % (
                  ratio("strata-relay-stall", "strata-relay", "loop_ms"),
                  fmt(m["strata-relay-stall"].get("loop_ms"), 1, "%.0f"),
                  fmt(m["strata-relay"].get("loop_ms"), 1, "%.0f"),
                  fmt(m["strata-relay-stall"].get("lost"), 1, "%.0f")))


def stall(port, after, seconds):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "tests", "relay"))
    import proxy
    p = proxy.FaultProxy(int(port), stall_after=int(after), stall_s=float(seconds))
    print("port=%d" % p.port, flush=True)

    def done(*_):
        print("stalls=%d forwarded=%d" % (p.stalls, p.forwarded), flush=True)
        os._exit(0)
    signal.signal(signal.SIGTERM, done)
    while True:
        time.sleep(3600)


def latency(strata, slowlog, port, token, relay_dir, work, n=200, period_ms=20):
    """One ROW line: the delay distribution in ms (min, median, p99, max)."""
    local = os.path.join(work, "lat-local")
    shutil.rmtree(local, ignore_errors=True)
    # the relay's copy is RELAY_DIR/<sender's host name>/<trace name>:
    # followed from before it exists, as a user watching would
    copy = os.path.join(relay_dir, os.uname().nodename, "lat-local")
    shutil.rmtree(copy, ignore_errors=True)
    fol = subprocess.Popen([strata, "print", "--follow", "--format", "json", copy],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    # RB_LIVE: the live timer's period (25 ms; "default": plain --live, 100)
    live = os.environ.get("RB_LIVE", "25")
    rec = subprocess.Popen([strata, "record", "--live" if live == "default" else "--live=" + live,
                            "-o", local, "--relay",
                            "127.0.0.1:%s" % port, "--token-file", token, "--", slowlog,
                            str(n), str(period_ms), "quiet"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    # the follow ends by itself when the copy is complete; a stuck one is
    # killed, and its lines so far still count
    guard = threading.Timer(60, fol.kill)
    guard.start()
    lines = [(time.monotonic_ns(), line) for line in fol.stdout]
    guard.cancel()
    fol.wait()
    rc = rec.wait()
    d = []
    for arrival, line in lines:
        ev = json.loads(line)
        if ev.get("event") == "live:tick" and ev["fields"]["seq"] < n:
            # slowlog logs its CLOCK_MONOTONIC: the same clock as ours
            d.append((arrival - ev["fields"]["mono_ns"]) / 1e6)
    d.sort()
    shutil.rmtree(local, ignore_errors=True)
    if not d:
        print("ROW mode=latency live=%s events=0 record_rc=%d" % (live, rc))
        return
    print("ROW mode=latency live=%s events=%d min_ms=%.1f median_ms=%.1f p99_ms=%.1f "
          "max_ms=%.1f record_rc=%d" % (live, len(d), d[0], d[len(d) // 2],
                                         d[min(len(d) - 1, len(d) * 99 // 100)], d[-1], rc))


if __name__ == "__main__":
    if len(sys.argv) == 8 and sys.argv[1] == "latency":
        latency(*sys.argv[2:])
        sys.exit(0)
    if len(sys.argv) > 2 and sys.argv[1] == "run" and sys.argv[2] == "--":
        sys.exit(run(sys.argv[3:]))
    if len(sys.argv) == 5 and sys.argv[1] == "stall":
        stall(*sys.argv[2:])
    if len(sys.argv) == 3 and sys.argv[1] == "summary":
        summary(sys.argv[2])
        sys.exit(0)
    print("usage: relay_bench.py run -- COMMAND... | summary RAW | latency STRATA SLOWLOG PORT TOKEN RELAY_DIR WORK", file=sys.stderr)
    sys.exit(2)
