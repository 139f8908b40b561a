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
    ms["switches"] = th["switches"]
    ms["running"] = ms["user_trap"] + ms["syscall"]
    return ms

failures = []
rows = []
def check(what, got, ref, slack=0.0):
    bracket(what, ref, got, got, slack)

# truth within [lo, hi] (what the trace says), give or take the tolerance
# (below: how much further below lo the truth may be; above: above hi)
def bracket(what, truth, lo, hi, slack=0.0, below=0.0, above=0.0):
    tol = max(TOL_REL * abs(hi), TOL_ABS_MS) + slack
    ok = lo - tol - below <= truth <= hi + tol + above
    rows.append((what, truth, lo, hi, "ok" if ok else "FAIL"))
    if not ok:
        failures.append(what)

ns = lambda v: v / 1e6
# a phase's marks may lag the clocks the program read for them (preempted
# in between, on a loaded machine): that much more tolerance
sl = lambda k: ns(gt["mark_slack_ns"][k] + gt["mark_slack_ns"][k + 1])
# A KVM guest's kernel leaves steal time (the host running something else
# on this vCPU) out of a thread's CPU time; the trace cannot see it and
# counts it as running. /proc/stat shows it in whole ticks only, so a
# phase's steal is under (delta + 1) ticks: CPU-time truths may lie that
# far below the traced running time (and wall - CPU that far above).
# Measured on this project's Firecracker guest: up to 8.5 ms in a 300 ms
# spin, 1.5-2.6 ms in the 15 ms of fdatasync (the host's I/O competes
# with the vCPUs).
steal = [ns((d + 1) * gt["tick_ns"]) for d in gt["phase_steal_ticks"]]
steal_all = ns((sum(gt["phase_steal_ticks"]) + 1) * gt["tick_ns"])
# This kernel charges a thread woken from D (I/O wait) for part of the
# time before its switch in, up to a millisecond (kernel-scope measured it
# with sched_stat_runtime): the kernel's CPU time of a thread that blocked
# in D lies between its traced running time and that plus its I/O wait.
# Interrupt handlers' time counts in the thread's CPU time unless the
# kernel has IRQ_TIME_ACCOUNTING (this one has not): it joins the upper
# bounds too.
whole = bd(to=marks[6])
bracket("whole: schedstat run in running .. +irq+io_wait+unknown", ns(gt["run_ns"]),
        whole["running"], whole["running"] + whole["irq"] + whole["io_wait"] + whole["unknown"],
        below=steal_all)
# schedstat's wait is timed by the run-queue clock, which the kernel reads
# at each scheduling point a little before the tracepoints fire: measured
# here, it runs 5-9 us per switch of the subject ahead of the traced
# runnable time (2.3-3.6 ms over ~420 switches); 10 us per switch more.
bracket("whole: schedstat wait in runnable .. +unknown", ns(gt["wait_ns"]), whole["runnable"],
        whole["runnable"] + whole["unknown"], whole["switches"] * 0.010)
ph = [bd(marks[k], marks[k + 1]) for k in (1, 2, 3, 4)]
bracket("spin: thread CPU time in running .. +irq+unknown", ns(gt["phase_cpu_ns"][0]),
        ph[0]["running"], ph[0]["running"] + ph[0]["irq"] + ph[0]["unknown"], sl(0),
        below=steal[0])
# A thread that never blocks spends its wall time running, waiting for a
# CPU, or under the interrupts that hit its CPU (a disk's, the host's):
# none of it sleeping.
bracket("spin: wall in running+runnable+irq .. +unknown", ns(gt["phase_wall_ns"][0]),
        ph[0]["running"] + ph[0]["runnable"] + ph[0]["irq"],
        ph[0]["running"] + ph[0]["runnable"] + ph[0]["irq"] + ph[0]["unknown"], sl(0))
# nanosleep's wall time: the sleep, and the wait for a CPU after it
bracket("sleep: nanosleep wall in sleep .. +runnable+unknown", ns(gt["sleep_wall_ns"]),
        ph[1]["sleep"], ph[1]["sleep"] + ph[1]["runnable"] + ph[1]["unknown"], sl(1))
bracket("io: thread CPU time in running .. +irq+io_wait+unknown", ns(gt["phase_cpu_ns"][2]),
        ph[2]["running"], ph[2]["running"] + ph[2]["irq"] + ph[2]["io_wait"] + ph[2]["unknown"],
        sl(2), below=steal[2])
blocked = ph[2]["io_wait"] + ph[2]["sleep"] + ph[2]["runnable"]
bracket("io: wall-CPU in blocked-io_wait .. +irq+unknown",
        ns(gt["phase_wall_ns"][2] - gt["phase_cpu_ns"][2]), blocked - ph[2]["io_wait"],
        blocked + ph[2]["irq"] + ph[2]["unknown"], sl(2), above=steal[2])
bracket("preempted: thread CPU time in running .. +irq+unknown", ns(gt["phase_cpu_ns"][3]),
        ph[3]["running"], ph[3]["running"] + ph[3]["irq"] + ph[3]["unknown"], sl(3),
        below=steal[3])
bracket("preempted: wall-CPU in runnable .. +irq+unknown",
        ns(gt["phase_wall_ns"][3] - gt["phase_cpu_ns"][3]), ph[3]["runnable"],
        ph[3]["runnable"] + ph[3]["irq"] + ph[3]["unknown"], sl(3), above=steal[3])
# the trace may lose track of the subject (its CPU switched through threads
# outside -c's scope to idle, and the kernel does not record the switch out
# of idle): that much is unknown, never more than a tenth of a phase
for k, p in enumerate(ph):
    if p["unknown"] > 30:
        failures.append("phase %d: %.1f ms unknown" % (k + 1, p["unknown"]))
if ph[2]["io_wait"] <= 0:
    failures.append("io: no uninterruptible (D) time seen")
if ph[3]["runnable"] < 50:
    failures.append("preempted: under 50 ms runnable with a competitor on the CPU")

print("%-58s %10s %10s %10s" % ("ms: truth within strata's low .. high", "truth", "low", "high"))
for what, truth, lo, hi, st in rows:
    print("%-58s %10.3f %10.3f %10.3f  %s" % (what, truth, lo, hi, st))
print("steal (ticks, per phase): %s; the subject's switches: %d" %
      (gt["phase_steal_ticks"], whole["switches"]))
print("\nwhat the usual tools say about this thread (whole run):")
print("  strata: user+trap %.1f  syscall %.1f  runnable %.1f  sleep %.1f  io_wait %.1f" %
      (whole["user_trap"], whole["syscall"], whole["runnable"], whole["sleep"], whole["io_wait"]))
print("  time (getrusage): user %.1f  sys %.1f   ps (/proc stat): user %.1f  sys %.1f"
      "   - neither sees runnable, sleep or I/O wait" %
      (ns(gt["ru_utime_ns"]), ns(gt["ru_stime_ns"]), ns(gt["ps_utime_ns"]), ns(gt["ps_stime_ns"])))
if failures:
    sys.exit("FAIL: " + ", ".join(failures))
print("PASS")
