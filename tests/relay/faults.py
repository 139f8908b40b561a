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
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy import FaultProxy  # noqa: E402
from relaylib import (Relay, all_files, fail, packets, relay_in,  # noqa: E402
                      sender_line, stream_files)

strata, workers, work = sys.argv[1:4]
tok, out, relay = relay_in(strata, work)
relay_log = relay.log_path
RING = ["--packet-size", "64K", "--packets", "256"]
JOB = [workers, "4", "300000"]


def own_time(text):
    m = re.search(r"events logged, ([0-9.]+) s", text)
    return float(m.group(1)) if m else float("nan")


def check_copy(local, remote, sent, lost):
    """The relay's copy against the local trace (module docstring)."""
    total_local = real = synthetic = 0
    lossy = set()
    # ust/ streams are sent packet by packet as the consumer writes them;
    # the rest (the state dump) whole at the end, compared below
    ust = [f for f in stream_files(local) if f.startswith("ust/")]
    for f in ust:
        mine = packets(os.path.join(local, f))
        total_local += len(mine)
        by_seq = {seq: data for seq, data, _ in mine}
        if len(by_seq) != len(mine):
            fail("%s: the local stream repeats a packet number" % f)
        rp = os.path.join(remote, f)
        theirs = packets(rp) if os.path.exists(rp) else []
        last = -1
        n_real = 0
        # packet 0 dropped: the lead takes number 0, and every packet
        # after it is numbered one more at the relay (docs/relay.md §5)
        bias = int(bool(theirs) and theirs[0][0] == 0 and len(theirs[0][1]) == 96
                   and by_seq.get(0) != theirs[0][1])
        for seq, data, _ in theirs:
            if seq <= last:
                fail("%s: at the relay, packet %d after %d: duplicated or reordered" % (f, seq, last))
            last = seq
            want = by_seq.get(seq - bias)
            if bias and want is not None:
                want = want[:64] + struct.pack("<Q", seq) + want[72:]
            if want is not None and data == want:
                n_real += 1
            elif len(data) == 96 and (want is None or n_real == 0):
                synthetic += 1  # a lead or trailer that shows a loss
            elif want is not None:
                fail("%s: packet %d differs from the local one" % (f, seq))
            else:
                fail("%s: packet %d at the relay is not a local one" % (f, seq))
        real += n_real
        if n_real != len(mine):
            lossy.add(f)
    print("local %d packets; relay %d of them (+%d empty lead/trailer); sender: %d sent, %d lost"
          % (total_local, real, synthetic, sent, lost))
    if real != sent:
        fail("the sender says %d packets sent, the relay has %d" % (sent, real))
    if sent + lost != total_local:
        fail("sent %d + lost %d != %d local packets" % (sent, lost, total_local))
    if bool(lossy) != bool(lost):
        fail("lossy streams %r but %d lost" % (sorted(lossy), lost))
    # metadata and the rest identical; an index identical, or absent
    # (readers rebuild it) where packets or index bytes were dropped
    for f in all_files(local):
        if os.path.basename(f).startswith("."):
            continue
        stream = re.sub(r"index/(cpu\d+)\.idx$", r"\1", f)
        rp = os.path.join(remote, f)
        if f.endswith(".idx") and stream in lossy:
            if os.path.exists(rp):
                fail("%s published at the relay though its stream lost packets" % f)
            continue
        if f.endswith(".idx") and not os.path.exists(rp):
            continue
        if f in ust:
            continue
        with open(os.path.join(local, f), "rb") as a, open(rp, "rb") as b:
            if a.read() != b.read():
                fail("%s differs at the relay" % f)
    bt = subprocess.run(["babeltrace2", remote], capture_output=True, text=True)
    if bt.returncode:
        fail("babeltrace2 cannot read the relay's copy: " + bt.stderr[:2000])
    if lost and "discarded" not in bt.stderr:
        fail("%d packets lost, and babeltrace2 reports no discarded packets" % lost)
    info = subprocess.run([strata, "info", remote], capture_output=True, text=True)
    if info.returncode not in (0, 1):
        fail("strata info on the relay's copy: rc %d: %s" % (info.returncode, info.stderr))
    m = re.search(r"(\d+) packets lost", info.stdout)
    shown = int(m.group(1)) if m else 0
    print("strata info on the relay's copy: %d packets lost" % shown)
    if shown != lost:
        fail("strata info shows %d packets lost at the relay, the sender counted %d" % (shown, lost))


def record(name, proxy, during=None, extra=()):
    local = os.path.join(work, name)
    p = subprocess.Popen([strata, "record", "-o", local, *RING,
                          "--relay", "127.0.0.1:%d" % proxy.port, "--token-file", tok,
                          "--relay-buffer", "8", "--relay-timeout", "120", *extra,
                          "--", *JOB],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if during:
        during()
    so, se = p.communicate(timeout=600)
    print(so + se)
    if p.returncode:
        fail("record with relay failed")
    if "warning: relay" in se:
        fail("the relay's copy is incomplete")
    if "refused" in se:
        fail("the relay refused a frame of a good sender")
    sent, lost = sender_line(se)
    hosts = [h for h in os.listdir(out) if os.path.isdir(os.path.join(out, h, name))]
    check_copy(local, os.path.join(out, hosts[0], name), sent, lost)
    return so + se


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
