#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Breakdown vs ground truth: a thread with known behaviour (workload.c) traced with strata ktrace.
import json, os, subprocess, sys

strata, workload, work = sys.argv[1], sys.argv[2], sys.argv[3]
TOL_REL, TOL_ABS_MS = 0.02, 1.0  # each state: within 2 % of the reference, or 1 ms

trace = os.path.join(work, "trace")
subprocess.run(["rm", "-rf", trace], check=True)
os.makedirs(work, exist_ok=True)
p = subprocess.run([strata, "ktrace", "-k", "sched,irq,syscalls", "-c", "-o", trace, "--",
                    workload, os.path.join(work, "io.tmp")],
                   capture_output=True, text=True)
sys.stderr.write(p.stderr)
if p.returncode != 0:
    sys.exit("ktrace failed: %d" % p.returncode)
gt = json.loads(p.stdout.strip().splitlines()[-1])
tid = gt["tid"]

marks = {}
out = subprocess.run([strata, "print", "--format", "json", "--event", "11:*", "--tid", str(tid), trace],
                     capture_output=True, text=True, check=True).stdout
for line in out.splitlines():
    e = json.loads(line)
    marks[int(e["event"].split(":")[1])] = e["time"]
assert sorted(marks) == [1, 2, 3, 4, 5, 6], marks

def bd(frm=None, to=None):
    cmd = [strata, "breakdown", "--format", "json"]
    if frm is not None:
        cmd += ["--from", "%.9f" % frm]
    if to is not None:
        cmd += ["--to", "%.9f" % to]
    r = json.loads(subprocess.run(cmd + [trace], capture_output=True, text=True, check=True).stdout)
    for th in r["threads"]:  # every thread's states add up to the window exactly
        if sum(th["ticks"]) != r["wall_ticks"]:
            sys.exit("tid %d: states add up to %d ticks, wall is %d" %
                     (th["tid"], sum(th["ticks"]), r["wall_ticks"]))
    th = [t for t in r["threads"] if t["tid"] == tid][0]
    ms = {k[:-3]: v / 1e6 for k, v in th.items() if k.endswith("_ns")}
    ms["running"] = ms["user_trap"] + ms["syscall"]
    return ms

failures = []
rows = []
def check(what, got, ref, slack=0.0):
    ok = abs(got - ref) <= max(TOL_REL * abs(ref), TOL_ABS_MS) + slack
    rows.append((what, got, ref, "ok" if ok else "FAIL"))
    if not ok:
        failures.append(what)

ns = lambda v: v / 1e6
# a phase's marks may lag the clocks the program read for them (preempted
# in between, on a loaded machine): that much more tolerance
sl = lambda k: ns(gt["mark_slack_ns"][k] + gt["mark_slack_ns"][k + 1])
whole = bd(to=marks[6])
check("whole: running vs schedstat run", whole["running"], ns(gt["run_ns"]))
check("whole: runnable vs schedstat wait", whole["runnable"], ns(gt["wait_ns"]))
ph = [bd(marks[k], marks[k + 1]) for k in (1, 2, 3, 4)]
check("spin: running vs thread CPU time", ph[0]["running"], ns(gt["phase_cpu_ns"][0]), sl(0))
# A thread that never blocks spends its wall time running, waiting for a
# CPU, or under the interrupts that hit its CPU (a disk's, the host's):
# none of it sleeping.
check("spin: running+runnable+irq vs wall", ph[0]["running"] + ph[0]["runnable"] + ph[0]["irq"],
      ns(gt["phase_wall_ns"][0]), sl(0))
check("sleep: sleep vs nanosleep wall", ph[1]["sleep"], ns(gt["sleep_wall_ns"]))
# The I/O phase blocks in D forty times: under contention this kernel
# charges such a thread for time it was off its CPU (docs/kernel.md,
# kernel-scope: 1176 us charged for a 135 us stint), so its CPU clock may
# run ahead of the time it was switched in, and wall - CPU behind the time
# it was off it: 15 % of its CPU time for those two checks.
check("io: running vs thread CPU time", ph[2]["running"], ns(gt["phase_cpu_ns"][2]),
      sl(2) + 0.15 * ns(gt["phase_cpu_ns"][2]))
check("io: io_wait+sleep+runnable vs wall-CPU", ph[2]["io_wait"] + ph[2]["sleep"] + ph[2]["runnable"],
      ns(gt["phase_wall_ns"][2] - gt["phase_cpu_ns"][2]), sl(2) + 0.15 * ns(gt["phase_cpu_ns"][2]))
check("preempted: running vs thread CPU time", ph[3]["running"], ns(gt["phase_cpu_ns"][3]), sl(3))
check("preempted: runnable vs wall-CPU", ph[3]["runnable"],
      ns(gt["phase_wall_ns"][3] - gt["phase_cpu_ns"][3]), sl(3))
if ph[2]["io_wait"] <= 0:
    failures.append("io: no uninterruptible (D) time seen")
if ph[3]["runnable"] < 50:
    failures.append("preempted: under 50 ms runnable with a competitor on the CPU")

print("%-42s %12s %12s" % ("state (ms)", "strata", "truth"))
for what, got, ref, st in rows:
    print("%-42s %12.3f %12.3f  %s" % (what, got, ref, st))
print("\nwhat the usual tools say about this thread (whole run):")
print("  strata: user+trap %.1f  syscall %.1f  runnable %.1f  sleep %.1f  io_wait %.1f" %
      (whole["user_trap"], whole["syscall"], whole["runnable"], whole["sleep"], whole["io_wait"]))
print("  time (getrusage): user %.1f  sys %.1f   ps (/proc stat): user %.1f  sys %.1f"
      "   - neither sees runnable, sleep or I/O wait" %
      (ns(gt["ru_utime_ns"]), ns(gt["ru_stime_ns"]), ns(gt["ps_utime_ns"]), ns(gt["ps_stime_ns"])))
if failures:
    sys.exit("FAIL: " + ", ".join(failures))
print("PASS")
