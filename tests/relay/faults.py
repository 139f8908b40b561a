#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""relay-faults: `strata record --relay` through a proxy that delays,
jitters, throttles, stalls and cuts the connection. Every packet the
sender reports as sent is in the relay's copy exactly once, identical
and in order; every other one is counted as lost, and the loss shows in
the relay's copy (packet_seq_num gaps that babeltrace2 reports); the
local trace is whole. The traced program's own time is printed, with
and without the relay (no assertion on it)."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy import FaultProxy  # noqa: E402
from relaylib import (Relay, all_files, fail, fresh_dir, make_token, packets,  # noqa: E402
                      sender_line, stream_files)

strata, workers, work = sys.argv[1:4]
fresh_dir(work)
tok = os.path.join(work, "token")
make_token(tok)
out = os.path.join(work, "out")
relay = Relay(strata, out, tok, os.path.join(work, "relay.log"))
RING = ["--packet-size", "64K", "--packets", "256"]
JOB = [workers, "4", "300000"]


def own_time(text):
    m = re.search(r"events logged, ([0-9.]+) s", text)
    return float(m.group(1)) if m else float("nan")


# the program alone under record, for its own time
base = subprocess.run([strata, "record", "-o", os.path.join(work, "base"), *RING, "--", *JOB],
                      capture_output=True, text=True, timeout=300)
if base.returncode:
    fail("record without relay: " + base.stderr)

proxy = FaultProxy(relay.port, delay_ms=2, jitter_ms=3, rate=4 << 20,
                   stall_after=512 << 10, stall_s=1.5, cut_every=1 << 20, max_cuts=4)
local = os.path.join(work, "local")
r = subprocess.run([strata, "record", "-o", local, *RING,
                    "--relay", "127.0.0.1:%d" % proxy.port, "--token-file", tok,
                    "--relay-buffer", "8", "--relay-timeout", "120", "--", *JOB],
                   capture_output=True, text=True, timeout=600)
print(r.stdout + r.stderr)
proxy.close()
if r.returncode:
    fail("record with relay failed")
sent, lost = sender_line(r.stderr)
print("proxy: %d connections, %d cuts, %d stall, %d bytes forwarded" %
      (proxy.connections, proxy.cuts, proxy.stalls, proxy.forwarded))
if proxy.cuts < 1 or proxy.connections < 2:
    fail("the proxy never cut a connection: the test tested nothing")
if "warning: relay" in r.stderr:
    fail("the relay's copy is incomplete")

hosts = os.listdir(out)
remote = os.path.join(out, hosts[0], "local")
total_local = real = synthetic = 0
lossy = set()
# ust/ streams are sent packet by packet as the consumer writes them; the
# rest (the state dump) whole at the end, compared below
for f in [f for f in stream_files(local) if f.startswith("ust/")]:
    mine = packets(os.path.join(local, f))
    total_local += len(mine)
    by_seq = {seq: data for seq, data, _ in mine}
    if len(by_seq) != len(mine):
        fail("%s: the local stream repeats a packet number" % f)
    rp = os.path.join(remote, f)
    theirs = packets(rp) if os.path.exists(rp) else []
    last = -1
    n_real = 0
    for seq, data, _ in theirs:
        if seq <= last:
            fail("%s: at the relay, packet %d after %d: duplicated or reordered" % (f, seq, last))
        last = seq
        if seq in by_seq and data == by_seq[seq]:
            n_real += 1
        elif len(data) == 96 and (seq not in by_seq or n_real == 0):
            # a lead or trailer that shows a loss: packet 0's number is
            # taken by the lead when packet 0 itself was dropped
            synthetic += 1
        elif seq in by_seq:
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
# metadata identical; indexes identical where no packet was lost, absent
# (rebuilt by readers) where one was
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
        continue  # index bytes that did not fit the queue: readers rebuild it
    if not f.startswith("ust/") or f.endswith("metadata") or f.endswith(".idx"):
        with open(os.path.join(local, f), "rb") as a, open(rp, "rb") as b:
            if a.read() != b.read():
                fail("%s differs at the relay" % f)
bt = subprocess.run(["babeltrace2", remote], capture_output=True, text=True)
if bt.returncode:
    fail("babeltrace2 cannot read the relay's copy: " + bt.stderr[:2000])
if lost and "discarded" not in bt.stderr:
    fail("%d packets lost, and babeltrace2 reports no discarded packets" % lost)
info = subprocess.run([strata, "info", remote], capture_output=True, text=True)
print(info.stdout[-600:] + info.stderr[-600:])
if info.returncode not in (0, 1):
    fail("strata info on the relay's copy: rc %d" % info.returncode)
m = re.search(r"(\d+) packets lost", info.stdout)
shown = int(m.group(1)) if m else 0
# exact, but for a stream whose packet 0 was dropped: no number is free
# before it for a lead packet (docs/relay.md, "Losses")
nstreams = len([f for f in stream_files(local) if f.startswith("ust/")])
if not lost - nstreams <= shown <= lost:
    fail("strata info shows %d packets lost at the relay, the sender counted %d" % (shown, lost))
print("program's own time: %.3f s alone, %.3f s streaming through the faulty proxy"
      % (own_time(base.stderr + base.stdout), own_time(r.stderr + r.stdout)))
if relay.stop():
    fail("relay exit status: " + relay.log())
print("ok")
