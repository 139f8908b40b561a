#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Every analysis says, with numbers, that the trace it reads lost events (tiny rings, a flood).
import fcntl, json, os, re, subprocess, sys

strata, prog, work = sys.argv[1], sys.argv[2], sys.argv[3]
subprocess.run(["rm", "-rf", work], check=True)
os.makedirs(work)
trace = os.path.join(work, "trace")
env = dict(os.environ, STRATA_OUTPUT=trace, STRATA_PACKET_SIZE="16K", STRATA_PACKETS="2")
p = subprocess.run([prog, "flood", "1000000"], env=env, capture_output=True, text=True)
if p.returncode != 0:
    sys.exit("ivtest flood failed: %d %s" % (p.returncode, p.stderr))
info = subprocess.run([strata, "info", trace], capture_output=True, text=True).stdout
m = re.search(r"Lost:\s+(\d+) events discarded", info)
if not m or int(m.group(1)) == 0:
    print("SKIP: no event was lost (%s)" % (m.group(0) if m else info[:200]))
    sys.exit(77)
lost = int(m.group(1))

failures = []
cmds = [["intervals"], ["intervals", "--begin", "ivt:flood", "--end", "ivt:flood"],
        ["latency", "--begin", "ivt:flood", "--end", "ivt:flood"],
        ["latency", "--begin", "ivt:flood", "--end", "ivt:flood", "--by", "i"]]
for c in cmds:
    for fmt in ("text", "json"):
        r = subprocess.run([strata, *c, "--format", fmt, trace], capture_output=True, text=True)
        what = "strata %s --format %s" % (" ".join(c), fmt)
        if r.returncode != 0:
            failures.append("%s: exit %d %s" % (what, r.returncode, r.stderr))
            continue
        if "WARNING" not in r.stderr or str(lost) not in r.stderr:
            failures.append("%s: stderr does not say %d events were lost: %r" %
                            (what, lost, r.stderr))
        if fmt == "text" and not r.stdout.startswith("WARNING") or \
           fmt == "text" and str(lost) not in r.stdout.splitlines()[0]:
            failures.append("%s: the report does not begin with the loss: %r" %
                            (what, r.stdout[:200]))
        if fmt == "json" and json.loads(r.stdout)["lost"]["user_events"] != lost:
            failures.append("%s: JSON lost %r, info says %d" %
                            (what, json.loads(r.stdout).get("lost"), lost))
# breakdown reads kernel events: record them beside the flood (root only;
# one kernel test at a time, under tests/kernel/common.sh's lock)
ktrace = os.path.join(work, "ktrace")
k = None
if os.geteuid() == 0:
    with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "strata-kernel-tests.lock"), "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        k = subprocess.run([strata, "record", "-k", "sched", "--packet-size", "16K", "--packets",
                            "2", "-o", ktrace, "--", prog, "flood", "1000000"],
                           capture_output=True, text=True)
if k and k.returncode == 0 and os.path.isdir(os.path.join(ktrace, "kernel")):
    info = subprocess.run([strata, "info", ktrace], capture_output=True, text=True).stdout
    m = re.search(r"Lost:\s+(\d+) events discarded", info)
    klost = int(m.group(1)) if m else 0
    for fmt in ("text", "json"):
        r = subprocess.run([strata, "breakdown", "--format", fmt, ktrace], capture_output=True,
                           text=True)
        if r.returncode != 0:
            failures.append("breakdown: exit %d %s" % (r.returncode, r.stderr))
        elif klost and ("WARNING" not in r.stderr or str(klost) not in r.stderr):
            failures.append("breakdown --format %s: stderr does not say %d events were lost: %r"
                            % (fmt, klost, r.stderr))
    print("breakdown of a kernel trace that lost %d events: %s" %
          (klost, "said" if klost else "nothing lost, not checked"))
else:
    print("breakdown not checked: no kernel trace (%s)" %
          (k.stderr.strip()[-200:] if k else "not root"))
for f in failures:
    print("FAIL: " + f)
if failures:
    sys.exit(1)
print("PASS: %d lost events said by every analysis" % lost)
