#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""relay-daemon: `strata daemon --relay` streams each of its traces (two,
with a `strata session stop` / `start` between them) to the relay; each
relay copy is byte-identical to the daemon's local trace."""
import filecmp
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaylib import all_files, fail, relay_in  # noqa: E402

strata, workers, work = sys.argv[1:4]
tok, out, relay = relay_in(strata, work)
env = dict(os.environ, STRATA_RUNTIME_DIR=os.path.join(work, "run"))
for k in ("STRATA_SESSION", "STRATA_OUTPUT"):
    env.pop(k, None)
err = open(os.path.join(work, "daemon.err"), "w")
d = subprocess.Popen([strata, "daemon", "-f", "-o", os.path.join(work, "t1"),
                      "--relay", "127.0.0.1:%d" % relay.port, "--token-file", tok],
                     stderr=err, env=env, cwd=work)
sock = os.path.join(work, "run", "default", "sock")
for _ in range(400):
    if os.path.exists(sock):
        break
    time.sleep(0.05)
else:
    fail("the daemon did not start")


def run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True, env=env, cwd=work, timeout=120)
    if r.returncode:
        fail("%s: %s" % (" ".join(args), r.stderr))


run(workers, "4", "100000")
run(strata, "session", "stop")
run(strata, "session", "start", "-o", os.path.join(work, "t2"))
run(workers, "2", "50000")
run(strata, "daemon", "--kill")
d.wait(60)
err.close()
log = open(os.path.join(work, "daemon.err")).read()
print(log)
if "warning" in log:
    fail("the daemon warned")
sent = [int(x) for x in re.findall(r": (\d+) packets sent, 0 lost", log)]
# streamed packet by packet, not only swept whole at the end
if len(sent) != 2 or min(sent) < 5:
    fail("expected two traces streamed packet by packet, got %r" % sent)
for t in ("t1", "t2"):
    local = os.path.join(work, t)
    hosts = [h for h in os.listdir(out) if os.path.isdir(os.path.join(out, h, t))]
    if len(hosts) != 1:
        fail("%s is not at the relay" % t)
    remote = os.path.join(out, hosts[0], t)
    mine = [f for f in all_files(local) if not os.path.basename(f).startswith(".")]
    if not any(f.startswith("ust/") for f in mine):
        fail("%s: no ust/ sub-trace: the test tested nothing" % t)
    if mine != all_files(remote):
        fail("%s: files differ: %r vs %r" % (t, mine, all_files(remote)))
    for f in mine:
        if not filecmp.cmp(os.path.join(local, f), os.path.join(remote, f), shallow=False):
            fail("%s: %s differs at the relay" % (t, f))
    print("%s: %d files identical at the relay" % (t, len(mine)))
if relay.stop():
    fail("relay exit status: " + relay.log())
print("ok")
