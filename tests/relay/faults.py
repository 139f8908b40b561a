#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""relay-faults: `strata record --relay` through a proxy that delays,
jitters, throttles, stalls and cuts the connection, then through one
whose relay is killed (SIGKILL) and started again mid-stream. Every
packet the sender reports as sent is in the relay's copy exactly once,
identical and in order; every other one is counted as lost, and the
loss shows in the relay's copy (packet_seq_num gaps that babeltrace2
and strata info report); the local trace is whole. The traced
program's own time is printed, with and without the relay (no
assertion on it)."""
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy import FaultProxy  # noqa: E402
from relaylib import Relay, fail, record_checked, relay_in  # noqa: E402

strata, workers, work = sys.argv[1:4]
tok, out, relay = relay_in(strata, work)
relay_log = relay.log_path
RING = ["--packet-size", "64K", "--packets", "256"]
JOB = [workers, "4", "300000"]


def own_time(text):
    m = re.search(r"events logged, ([0-9.]+) s", text)
    return float(m.group(1)) if m else float("nan")


def record(name, proxy, during=None, extra=()):
    local = os.path.join(work, name)
    p = subprocess.Popen([strata, "record", "-o", local, *RING,
                          "--relay", "127.0.0.1:%d" % proxy.port, "--token-file", tok,
                          "--relay-buffer", "8", "--relay-timeout", "120", *extra,
                          "--", *JOB],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if during:
        during()
    text, _ = record_checked(strata, p, local, out, name)
    return text


# the program alone under record, for its own time
base = subprocess.run([strata, "record", "-o", os.path.join(work, "base"), *RING, "--", *JOB],
                      capture_output=True, text=True, timeout=300)
if base.returncode:
    fail("record without relay: " + base.stderr)

print("== delay, jitter, throttle, a stall, four cuts")
proxy = FaultProxy(relay.port, delay_ms=2, jitter_ms=3, rate=4 << 20,
                   stall_after=512 << 10, stall_s=1.5, cut_every=1 << 20, max_cuts=4)
text = record("cuts", proxy)
proxy.close()
print("proxy: %d connections, %d cuts, %d stall, %d bytes forwarded" %
      (proxy.connections, proxy.cuts, proxy.stalls, proxy.forwarded))
if proxy.cuts < 1 or proxy.connections < 2:
    fail("the proxy never cut a connection: the test tested nothing")
print("program's own time: %.3f s alone, %.3f s streaming through the faulty proxy"
      % (own_time(base.stderr + base.stdout), own_time(text)))

print("== the relay killed and started again mid-stream (zstd on the wire)")
port = relay.port
proxy = FaultProxy(port, rate=3 << 20)
restarted = {}


def crash():
    time.sleep(1.0)
    relay.kill()
    time.sleep(0.7)
    restarted["relay"] = Relay(strata, out, tok, relay_log, port=port)


t = threading.Thread(target=crash)
t.start()
record("crash", proxy, during=t.join, extra=["--relay-zstd"])
proxy.close()
relay = restarted["relay"]
if "resumed" not in open(relay_log).read().split("listening on port")[-1]:
    fail("the sender did not resume at the restarted relay")
if relay.stop():
    fail("relay exit status: " + relay.log())
print("ok")
