#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Per-task scheduling latency: strata latency --sched and perf sched latency on the same run agree.
import json, os, re, subprocess, sys

strata, work_prog, work = sys.argv[1], sys.argv[2], sys.argv[3]
subprocess.run(["rm", "-rf", work], check=True)
os.makedirs(work)
trace, pdata = os.path.join(work, "trace"), os.path.join(work, "perf.data")

# perf records system-wide around strata record, which records the
# program's tree: both see the same scheduler events of its threads. Not
# "perf sched record": it records sched_waking where the kernel has it,
# and perf 6.1's latency then counts no wait after a wakeup.
p = subprocess.run(["perf", "record", "-q", "-a", "-o", pdata] +
                   [a for e in ("switch", "wakeup", "wakeup_new", "migrate_task", "process_fork")
                    for a in ("-e", "sched:sched_" + e)] +
                   ["--", strata, "record", "-k", "sched", "-o", trace, "--", work_prog],
                   capture_output=True, text=True)
sys.stderr.write(p.stderr[-2000:])
if p.returncode != 0:
    sys.exit("perf sched record / strata record failed: %d" % p.returncode)
tids = json.loads(p.stdout.strip().splitlines()[-1])
want = tids["spinners"] + [tids["sleeper"]]

perf = {}
out = subprocess.run(["perf", "sched", "latency", "-p", "-i", pdata], capture_output=True,
                     text=True, check=True).stdout
# "  name:tid | 12.3 ms | 40 | avg: 0.1 ms | max: 0.5 ms | ..."
for line in out.splitlines():
    m = re.match(r"\s*(.*):(\d+)\s*\|\s*([\d.]+) ms\s*\|\s*(\d+)\s*\|\s*avg:\s*([\d.]+) ms\s*\|"
                 r"\s*max:\s*([\d.]+) ms", line)
    if m:
        perf[int(m.group(2))] = {"runtime": float(m.group(3)), "waits": int(m.group(4)),
                                 "avg": float(m.group(5)), "max": float(m.group(6))}

r = subprocess.run([strata, "latency", "--sched", "--format", "json", trace],
                   capture_output=True, text=True)
if r.returncode != 0:
    sys.exit("strata latency --sched failed: " + r.stderr)
ours = {t["tid"]: t for t in json.loads(r.stdout)["tasks"]}

# Where the two differ, by design (strata) or by a bug (perf 6.1), and what
# strata says about it (JSON): perf reads prev_state 0x100 (R+, preempted
# in kernel mode) as a sleep and counts no wait after it; this kernel never
# records the switch out of idle (docs/kernel.md), which strata infers and
# perf misses. The rest must agree wait for wait.
failures = []
print("%-8s %-8s %11s %11s %10s %10s %6s %6s" %
      ("tid", "", "total ms", "perf", "max ms", "perf", "waits", "perf"))
for tid in want:
    s, pf = ours.get(tid), perf.get(tid)
    if not s or not pf:
        failures.append("tid %d: strata %s, perf %s" % (tid, bool(s), bool(pf)))
        continue
    waits = s["waits"] - s["kernel_preempted"] - s["inferred"]
    total = (s["total_ns"] - s["kernel_preempted_ns"] - s["inferred_ns"]) / 1e6
    ptotal = pf["avg"] * pf["waits"]
    mx = s["max_ns"] / 1e6
    print("%-8d %-8s %11.3f %11.3f %10.3f %10.3f %6d %6d   (strata also: %d in-kernel "
          "preemptions, %.3f ms; %d inferred, %.3f ms)" %
          (tid, "sleeper" if tid == tids["sleeper"] else "spinner", total, ptotal, mx,
           pf["max"], waits, pf["waits"], s["kernel_preempted"], s["kernel_preempted_ns"] / 1e6,
           s["inferred"], s["inferred_ns"] / 1e6))
    # perf prints ms with 3 decimals (its total: avg x waits, 0.0005 ms x
    # waits off); both stamp the same kernel events with the same TSC
    if abs(total - ptotal) > max(0.01 * ptotal, 0.0006 * pf["waits"] + 0.01):
        failures.append("tid %d: waits total %.3f ms, perf %.3f ms" % (tid, total, ptotal))
    if s["max_cause"] != "preempted in kernel" and not s["max_inferred"] and \
       abs(mx - pf["max"]) > max(0.01 * pf["max"], 0.002):
        failures.append("tid %d: max delay %.3f ms, perf %.3f ms" % (tid, mx, pf["max"]))
    if waits != pf["waits"]:
        failures.append("tid %d: %d waits, perf %d" % (tid, waits, pf["waits"]))
    if s["waits"] < 5:
        failures.append("tid %d: only %d waits on a shared CPU" % (tid, s["waits"]))
if failures:
    sys.exit("FAIL: " + "; ".join(failures))
print("PASS")
