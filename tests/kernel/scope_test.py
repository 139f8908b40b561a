#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# strata breakdown of a record -k trace (switches outside the command's tree dropped) against the kernel's accounting.
import json, os, subprocess, sys, time

strata, work = sys.argv[1], sys.argv[2]
TOL_REL, TOL_ABS_MS = 0.02, 2.0
trace = os.path.join(work, "trace")
subprocess.run(["rm", "-rf", work], check=True)
os.makedirs(work)

# The command's tree: a CPU-bound loop of system calls (spin), find (CPU
# and I/O), /bin/true (exit_group right away), sleep 0.2, each waited with
# wait4 for the kernel's own account of it (rusage: utime + stime = its
# runtime, to the microsecond).
SPIN = "import os, time\nt = time.thread_time() + 0.25\nwhile time.thread_time() < t: os.getppid()"
# Page faults the program times itself: touching 256 MiB of fresh pages,
# then the same loop again over pages now there; the difference is the
# kernel's work no event times (faults mark their entry only).
FAULTS = r'''
import json, mmap, resource, sys, time
sys_ns = lambda: round(resource.getrusage(resource.RUSAGE_SELF).ru_stime * 1e9)
n = 1 << 28
m = mmap.mmap(-1, n)
t0, s0 = time.thread_time_ns(), sys_ns()
for i in range(0, n, 4096): m[i] = 1
t1, s1 = time.thread_time_ns(), sys_ns()
for i in range(0, n, 4096): m[i] = 2
t2, s2 = time.thread_time_ns(), sys_ns()
with open(sys.argv[1], "w") as f:
    json.dump({"first_ns": t1 - t0, "again_ns": t2 - t1,
               "first_sys_ns": s1 - s0, "again_sys_ns": s2 - s1}, f)
'''
faults_out = os.path.join(work, "faults.json")
# The hog and the tree share one CPU: left free, the scheduler may give
# each its own CPU for the whole run, and the hog is then never seen.
SHARED_CPU = min(os.sched_getaffinity(0))
CHILD = r'''
import json, os, sys, time
os.sched_setaffinity(0, {%d})
out = {}
def steal():  # all CPUs' steal time, in clock ticks (/proc/stat)
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])
for name, argv in (("spin", [sys.executable, "-c", %r]),
                   ("faults", [sys.executable, "-c", %r, %r]),
                   ("find", ["find", "/usr/share", "-name", "*.x*"]), ("true", ["/bin/true"]),
                   ("sleep", ["sleep", "0.2"])):
    t0, s0 = time.monotonic_ns(), steal()
    pid = os.posix_spawn(argv[0] if argv[0].startswith("/") else "/usr/bin/" + argv[0], argv,
                         os.environ, file_actions=[(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)])
    _, st, ru = os.wait4(pid, 0)
    out[name] = {"pid": pid, "cpu_ns": round((ru.ru_utime + ru.ru_stime) * 1e9),
                 "utime_ns": round(ru.ru_utime * 1e9), "stime_ns": round(ru.ru_stime * 1e9),
                 "wall_ns": time.monotonic_ns() - t0, "faults": ru.ru_minflt + ru.ru_majflt,
                 "steal_ns": (steal() - s0 + 1) * 10**9 // os.sysconf("SC_CLK_TCK")}
print(json.dumps(out))
''' % (SHARED_CPU, SPIN, FAULTS, faults_out)

# A CPU hog outside the tree: the command yields to it, and its switches
# to other outside threads are not in the trace (set_event_pid).
hog = subprocess.Popen(["sh", "-c", "while :; do :; done"])
try:
    os.sched_setaffinity(hog.pid, {SHARED_CPU})
    time.sleep(0.1)
    p = subprocess.run([strata, "record", "-k", "sched,syscalls,irq", "-o", trace, "--",
                        sys.executable, "-c", CHILD], capture_output=True, text=True)
finally:
    hog.kill()
    hog.wait()
sys.stderr.write(p.stderr)
if p.returncode != 0:
    sys.exit("record failed: %d" % p.returncode)
truth = json.loads(p.stdout.strip().splitlines()[-1])

def breakdown(*args):
    r = subprocess.run([strata, "breakdown", "--format", "json", *args, trace],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("breakdown %s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr))
    return json.loads(r.stdout)

r = breakdown()
failures = []
def fail(msg):
    print("FAIL: " + msg)
    failures.append(msg)

wall = r["wall_ticks"]
ncpus = len(r["cpus"])
# 1. Per CPU, its threads' on-CPU time is its busy time, and busy + idle +
# unknown is the wall time: arithmetic, so exact to the tick. (Before the
# fix, threads whose switch-out was not recorded ran on until their next
# event: a CPU's threads summed to several times the wall time.)
oncpu_ns = [0] * ncpus
for th in r["threads"]:
    if sum(th["ticks"]) != wall:
        fail("tid %d: states add up to %d ticks, wall is %d" % (th["tid"], sum(th["ticks"]), wall))
    for c, ns in th["cpus"].items():
        oncpu_ns[int(c)] += ns
for k in r["cpus"]:
    c = k["cpu"]
    if oncpu_ns[c] > r["wall_ns"] + 1000 * len(r["threads"]):
        fail("cpu %d: its threads ran %.3f ms in a %.3f ms window" %
             (c, oncpu_ns[c] / 1e6, r["wall_ns"] / 1e6))
    if "ticks" in k:
        busy = sum(th.get("cpu_ticks", {}).get(str(c), 0) for th in r["threads"])
        if busy != k["ticks"][0]:
            fail("cpu %d: threads' on-CPU ticks %d, busy %d" % (c, busy, k["ticks"][0]))
        if sum(k["ticks"]) != wall:
            fail("cpu %d: busy + idle + unknown = %d ticks, wall is %d" % (c, sum(k["ticks"]), wall))

def proc(pid):
    ths = [t for t in r["threads"] if t["pid"] == pid]
    if not ths:
        fail("pid %d not in the breakdown" % pid)
    return ths

rows = []
def check(what, got, lo, hi, below=0.0):
    ok = lo - max(TOL_REL * lo, TOL_ABS_MS) - below <= got <= hi + max(TOL_REL * hi, TOL_ABS_MS)
    rows.append((what, got, lo, hi, "ok" if ok else "FAIL"))
    if not ok:
        failures.append(what)

ms = lambda ns: ns / 1e6
# 2. each process's on-CPU time against its rusage. What the trace knows
# is a lower bound; with the time the trace lost track of it, an upper one.
# This kernel also charges a task woken from D (I/O wait) for part of the
# time before its switch in: beside the hog, find's rusage ran up to 7 %
# ahead of its on-CPU time, and sched_stat_runtime, recorded beside, showed
# it all after D sleeps (1176 us charged for a 135 us stint, 6.8 ms over
# 230 stints; nothing after preemptions): its I/O wait joins the upper bound.
# A KVM guest's kernel also leaves steal time (the host running something
# else on a vCPU) out of rusage, while the trace counts it as running: the
# rusage may lie below the on-CPU time by the steal of the child's life, which
# /proc/stat gives in whole ticks for all CPUs (an upper bound: steal_ns).
# find (I/O the host serves on the same CPUs) once read 543 ms of rusage
# against 630 ms on-CPU, with steal counted on the CPUs meanwhile.
NAMES = ("spin", "faults", "find", "true", "sleep")
for name in NAMES:
    ths = proc(truth[name]["pid"])
    known = sum(t.get("user_trap_ns", t.get("user_ns", 0)) + t["syscall_ns"] + t["irq_ns"] for t in ths)
    unknown = sum(t.get("unknown_ns", 0) + t["io_wait_ns"] for t in ths)
    cpu = ms(truth[name]["cpu_ns"])
    check("%s: rusage in on-CPU .. +unknown+io_wait" % name, cpu, ms(known), ms(known + unknown),
          below=ms(truth[name]["steal_ns"]))
    # 3. exit_group ends with the process, not at the trace's end
    for t in ths:
        for s in t["syscalls"]:
            if s["name"] in ("exit", "exit_group") and s["time_ns"] > truth[name]["wall_ns"]:
                fail("%s: %s lasted %.3f ms, the whole process %.3f ms" %
                     (name, s["name"], ms(s["time_ns"]), ms(truth[name]["wall_ns"])))
        if t["tid"] == truth[name]["pid"] and t.get("exited") is False:
            fail("%s: not seen exiting" % name)
# 4. page faults (the faults group, on with sched) against the kernel's
# count (ru_minflt + ru_majflt; the tracepoint also sees the faults retried)
if not r.get("faults_traced"):
    fail("no page fault events: the faults group did not come with sched")
for name in NAMES:
    ths = proc(truth[name]["pid"])
    got = sum(t["faults_user"] + t["faults_kernel"] for t in ths)
    rows.append(("%s: page faults vs rusage" % name, got, truth[name]["faults"],
                 truth[name]["faults"], "ok"))
    if abs(got - truth[name]["faults"]) > 0.05 * truth[name]["faults"] + 20:
        fail("%s: %d page faults traced, rusage says %d" % (name, got, truth[name]["faults"]))
sl = proc(truth["sleep"]["pid"])[0]
check("sleep 0.2: sleep state vs its wall time", ms(sl["sleep_ns"]), 200.0, ms(truth["sleep"]["wall_ns"]))

# 5. the kernel's split of user+trap (strata:thread_times), for every
# process seen whole: the share of its ticks spent in the kernel is what
# wait4 says (the same samples read another way: taskstats at the exit,
# unscaled, against rusage, scaled to the runtime; to 2 ticks), and the
# split adds up to user+trap. spin's kernel time outside its system calls
# is their entry and exit path (with the tracepoints' own cost): under
# 2 us a call.
TICK_MS = 1000.0 / 250
def split_of(ths):
    return all("split" in t for t in ths)
for name in NAMES:
    ths = proc(truth[name]["pid"])
    if not split_of(ths):
        # a process seen whole and given ticks must have it
        if not any(t["partial"] for t in ths) and truth[name]["cpu_ns"] > 3 * TICK_MS * 1e6:
            fail("%s: no kernel split of user+trap (strata:thread_times)" % name)
        continue
    ku = ms(sum(t["split"]["kernel_utime_ns"] for t in ths))
    ks = ms(sum(t["split"]["kernel_stime_ns"] for t in ths))
    ru, rs = ms(truth[name]["utime_ns"]), ms(truth[name]["stime_ns"])
    if ru + rs > 0:
        got, want = 100 * ks / (ku + ks), 100 * rs / (ru + rs)
        # 2 ticks of the smaller count: taskstats' unscaled ticks can be
        # far fewer than the runtime rusage is scaled to (spin: 8-9 ticks
        # for 288 ms), and then one tick moves its share by 11 points
        slack = 100 * 2 * TICK_MS / min(ku + ks, ru + rs)
        ok = abs(got - want) <= slack
        rows.append(("%s: kernel share of ticks vs rusage, %%" % name, got, want - slack,
                     want + slack, "ok" if ok else "FAIL"))
        if not ok:
            failures.append("%s: kernel share of ticks" % name)
    for t in ths:
        if abs(t["split"]["user_ns"] + t["split"]["trap_ns"] - t["user_trap_ns"]) > 2:
            fail("%s: split %r does not add up to user+trap %d" % (name, t["split"], t["user_trap_ns"]))
spin = proc(truth["spin"]["pid"])
if split_of(spin):
    calls = sum(sc["count"] for t in spin for sc in t["syscalls"])
    per = sum(t["split"]["trap_ns"] for t in spin) / max(calls, 1)
    rows.append(("spin: kernel time outside its calls, ns a call", per, 0.0, 2000.0,
                 "ok" if per <= 2000 else "FAIL"))
    if per > 2000:
        failures.append("spin: kernel time outside its calls")

# The faults program, recorded alone (no hog: its switches with outside
# threads can leave it partial, and a partial thread has no split): the
# kernel time the split finds against the program's own measure, its first
# loop less the same loop again, within 20 % or 10 ticks (the split is
# tick-sampled: ~80 ticks, 80 % in the kernel, have a standard deviation of
# ~4 ticks), plus up to 10 ms of Python's start-up faults.
for attempt in range(3):
    ftrace = os.path.join(work, "faults-trace-%d" % attempt)
    p = subprocess.run([strata, "record", "-k", "sched,syscalls,irq", "-o", ftrace, "--",
                        sys.executable, "-c", FAULTS, faults_out], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("record (faults) failed: %d: %s" % (p.returncode, p.stderr))
    trace = ftrace
    fr = breakdown()
    fths = [t for t in fr["threads"] if not t["outside_scope"]]
    if fths and split_of(fths):
        break
else:
    fail("faults: seen whole in none of 3 recordings, no split to check")
    fths = []
if fths and split_of(fths):
    with open(faults_out) as f:
        own = json.load(f)
    want = ms(own["first_ns"] - own["again_ns"])
    # The split stands on the kernel's tick-sampled system time. Under a
    # hypervisor that runs the guest's kernel in user mode (a
    # paravirtualized MMU: a page fault's world switches are the host's),
    # that accounting itself sees only part of the faults' CPU time (56 %
    # on one such machine); then the kernel's own count over the same
    # loops is the truth the split must meet, and the line says so.
    ksys = ms(own["first_sys_ns"] - own["again_sys_ns"])
    what = "faults: kernel split's trap vs its own loops"
    if abs(ksys - want) > max(0.2 * want, 10 * TICK_MS) + 10.0:
        print("faults: the kernel's own system time for the faults is %.1f ms of their %.1f ms "
              "of CPU (a hypervisor's share it does not see): checked against it" % (ksys, want))
        want, what = ksys, "faults: kernel split's trap vs the kernel's own system time"
    check(what, ms(sum(t["split"]["trap_ns"] for t in fths)),
          want - max(0.2 * want, 10 * TICK_MS), want + max(0.2 * want, 10 * TICK_MS) + 10.0)
    # its process's row pools the same samples: the same split
    grp = [g for g in breakdown("--by", "process")["groups"] if g["pid"] == fths[0]["pid"]]
    if not grp or grp[0].get("split", {}).get("trap_ns") != sum(t["split"]["trap_ns"] for t in fths):
        fail("faults: --by process split %r, its threads' %r" %
             (grp and grp[0].get("split"), [t["split"] for t in fths]))
trace = os.path.join(work, "trace")

# 6. the hog is outside the tree: partly seen, and said so, even when each
# switch the trace has of it pairs up (its switches to other outside
# threads are never recorded); the tree's own processes are inside it
tree = {truth[n]["pid"] for n in truth}
if not any(t["pid"] == hog.pid for t in r["threads"]):
    fail("the hog (pid %d) has no row in the breakdown" % hog.pid)
for t in r["threads"]:
    if t["pid"] in tree and t.get("outside_scope") is not False:
        fail("pid %d is in the recorded tree, not outside its scope" % t["pid"])
    if t["pid"] == hog.pid and not (t.get("partial") and t.get("outside_scope")):
        fail("the hog (pid %d, outside the recorded tree) is not marked partial: %s" %
             (hog.pid, json.dumps({k: t[k] for k in ("ticks", "switches_in", "lost", "created", "exited") if k in t})))

# the same for the scheduling latency: the hog's waits are upper bounds
lat = subprocess.run([strata, "latency", "--sched", "--top", "0", "--format", "json", trace],
                     capture_output=True, text=True)
if lat.returncode:
    fail("latency --sched failed (%d): %s" % (lat.returncode, lat.stderr))
else:
    tasks = json.loads(lat.stdout)["tasks"]
    if not any(k["pid"] == hog.pid for k in tasks):
        fail("latency --sched: the hog (pid %d) has no row" % hog.pid)
    for k in tasks:
        if k["pid"] in tree and k.get("outside_scope") is not False:
            fail("latency --sched: pid %d is in the recorded tree, not outside" % k["pid"])
        if k["pid"] == hog.pid and not k.get("outside_scope"):
            fail("latency --sched: the hog (pid %d) is not marked outside the scope" % hog.pid)

# 7. roll-ups: a process's row sums its threads; the commands' rows sum
# to all threads (a command takes its name from a process's main thread,
# which may not be in the window)
for by in ("process", "command"):
    g = breakdown("--by", by)
    if "groups" not in g:
        fail("--by %s: no groups" % by)
        continue
    nst = len(g["threads"][0]["ticks"])
    for grp in g["groups"] if by == "process" else []:
        members = [t for t in g["threads"] if t["pid"] == grp["pid"]]
        want = [sum(t["ticks"][s] for t in members) for s in range(nst)]
        if grp["ticks"] != want or grp["threads"] != len(members):
            fail("--by process: %d %r sums %r, its threads %r" %
                 (grp["pid"], grp["comm"], grp["ticks"], want))
    total = [sum(x["ticks"][s] for x in g["groups"]) for s in range(nst)]
    want = [sum(t["ticks"][s] for t in g["threads"]) for s in range(nst)]
    if total != want or sum(x["threads"] for x in g["groups"]) != len(g["threads"]):
        fail("--by %s: the groups sum to %r, the threads to %r" % (by, total, want))

print("%-52s %10s %10s %10s" % ("check (ms, or a count): value within low .. high", "value", "low", "high"))
for what, got, lo, hi, st in rows:
    print("%-52s %10.3f %10.3f %10.3f  %s" % (what, got, lo, hi, st))
if failures:
    sys.exit("FAIL: %d checks" % len(failures))
print("PASS")
