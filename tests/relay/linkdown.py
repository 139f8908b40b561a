#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""relay-linkdown: the sender on another "host" (a network namespace
joined to this one by a veth pair) streams to the relay while the link
goes down for 2 s (`ip link set ... down`, issue 25: this kernel has no
tc netem, and a proxy cannot fake a dead link's silence). TCP retries
or the sender reconnects; either way every packet the sender reports
as sent is in the relay's copy exactly once, identical and in order,
every other one is counted as lost and the loss shows in the copy, the
local trace is whole. The traced program's own time is printed, with
and without the outage (no assertion on it)."""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaylib import Relay, fail, fresh_dir, make_token, record_checked  # noqa: E402

strata, workers, work = sys.argv[1:4]
if os.geteuid() != 0 or not shutil.which("ip"):
    print("relay-linkdown: needs root and ip (network namespaces): skipped")
    sys.exit(77)
fresh_dir(work)
tok = os.path.join(work, "token")
make_token(tok)
out = os.path.join(work, "out")
tag = "%d" % (os.getpid() % 100000)
ns, near, far = "rld" + tag, "rlr" + tag, "rls" + tag
sub = 1 + os.getpid() % 250
addr_near, addr_far = "10.227.%d.1" % sub, "10.227.%d.2" % sub
RING = ["--packet-size", "64K", "--packets", "256"]
JOB = [workers, "2", "800000", "40"]


def sh(*cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        fail("%s: %s" % (" ".join(cmd), r.stderr.strip()))


def own_time(text):
    m = re.search(r"events logged, ([0-9.]+) s", text)
    return float(m.group(1)) if m else float("nan")


relay = None
try:
    sh("ip", "netns", "add", ns)
    sh("ip", "link", "add", near, "type", "veth", "peer", "name", far)
    sh("ip", "link", "set", far, "netns", ns)
    sh("ip", "addr", "add", addr_near + "/24", "dev", near)
    sh("ip", "link", "set", near, "up")
    sh("ip", "-n", ns, "addr", "add", addr_far + "/24", "dev", far)
    sh("ip", "-n", ns, "link", "set", far, "up")
    sh("ip", "-n", ns, "link", "set", "lo", "up")
    relay = Relay(strata, out, tok, os.path.join(work, "relay.log"), listen=addr_near)

    def record(name, outage):
        local = os.path.join(work, name)
        p = subprocess.Popen(["ip", "netns", "exec", ns, strata, "record", "-o", local, *RING,
                              "--relay", "%s:%d" % (addr_near, relay.port), "--token-file", tok,
                              "--relay-buffer", "8", "--relay-timeout", "120", "--", *JOB],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if outage:
            # once the relay has the session's first stream
            for _ in range(1000):
                if any(f.startswith("cpu") for _, _, fs in os.walk(out) for f in fs):
                    break
                time.sleep(0.01)
            sh("ip", "link", "set", near, "down")
            down_while = p.poll() is None
            time.sleep(2)
            sh("ip", "link", "set", near, "up")
            if not down_while:
                fail("the program ended before the link went down: the test tested nothing")
        return record_checked(strata, p, local, out, name)

    print("== the link up all along")
    base, _ = record("up", False)
    print("== the link down for 2 s while the program streams")
    text, lost = record("down", True)
    print("program's own time: %.3f s with the link up, %.3f s with it down 2 s; %d packets lost"
          % (own_time(base), own_time(text), lost))
    if relay.stop():
        fail("relay exit status: " + relay.log())
    relay = None
    print("ok")
finally:
    if relay:
        relay.kill()
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    subprocess.run(["ip", "link", "del", near], capture_output=True)
