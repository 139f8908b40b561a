#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""relay-lead: a stream whose packet 0 the sender drops (docs/relay.md
§5, "Losses"). With 2 MiB packets and a 1 MiB --relay-buffer, every
full packet is dropped and the last, partial one kept: the relay's copy
starts with an empty lead numbered 0, and every packet kept after it is
numbered one more than the local one, so that the packet_seq_num gap
counts exactly the packets lost. strata info and babeltrace2 must both
report exactly the sender's count; the packets kept must be the local
ones byte for byte but for that number."""
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaylib import fail, packets, relay_in, sender_line, stream_files  # noqa: E402

strata, leadburst, work = sys.argv[1:4]
PSIZE = 2 << 20
EVENT = 12  # bytes of one leadburst event (docs/compact.md)
# two full packets and a partial third, at most half the budget
N = 2 * PSIZE // EVENT + 20000
SEQ_OFF = 64  # packet_seq_num in the packet header (format.md §2)

tok, out, relay = relay_in(strata, work)
local = os.path.join(work, "local")
rec = subprocess.run([strata, "record", "-o", local, "--packet-size", "2M",
                      "--relay", "127.0.0.1:%d" % relay.port, "--token-file", tok,
                      "--relay-buffer", "1", "--relay-timeout", "60",
                      "--", leadburst, str(N), "3", "10"],
                     capture_output=True, text=True, timeout=120)
relay.stop()
if rec.returncode:
    fail("strata record: rc %d: %s" % (rec.returncode, rec.stderr))
sent, lost = sender_line(rec.stderr)
hosts = os.listdir(out)
remote = os.path.join(out, hosts[0], "local") if len(hosts) == 1 else None
if not remote or not os.path.isdir(remote):
    fail("no relay copy of 'local' under %s: %r" % (out, hosts))

# the burst's stream (on CPU 0: the library's first records may be on
# another CPU, before leadburst pins itself)
streams = [f for f in stream_files(local) if f.startswith("ust/")]
if not streams:
    fail("no stream in the local trace")
f = max(streams, key=lambda s: os.path.getsize(os.path.join(local, s)))
mine = packets(os.path.join(local, f))
theirs = packets(os.path.join(remote, f))
print("local packets (seq, bytes):", [(s, len(d)) for s, d, _ in mine])
print("relay packets (seq, bytes):", [(s, len(d)) for s, d, _ in theirs])
print("sender: %d sent, %d lost" % (sent, lost))
# the premise: packet 0 is full and dropped, the last one kept
if len(mine[0][1]) <= 1 << 20 or mine[0][0] != 0:
    fail("local packet 0 is not a full one (%d bytes): the test's premise" % len(mine[0][1]))
if lost < 1 or sent < 1:
    fail("the sender dropped %d and sent %d packets: the test wants both" % (lost, sent))

lead, kept = theirs[0], theirs[1:]
if lead[0] != 0 or len(lead[1]) != 96:
    fail("the relay's stream starts with packet %d of %d bytes, not an empty lead "
         "numbered 0" % (lead[0], len(lead[1])))
by_seq = {s: d for s, d, _ in mine}
for seq, data, _ in kept:
    want = by_seq.get(seq - 1)
    if want is None:
        fail("packet %d at the relay: no local packet %d" % (seq, seq - 1))
    renum = want[:SEQ_OFF] + struct.pack("<Q", seq) + want[SEQ_OFF + 8:]
    if data != renum:
        fail("packet %d at the relay is not local packet %d renumbered" % (seq, seq - 1))
if len(mine) - len(kept) != lost:
    fail("%d local packets, %d at the relay, but the sender counted %d lost"
         % (len(mine), len(kept), lost))

info = subprocess.run([strata, "info", remote], capture_output=True, text=True)
m = re.search(r"(\d+) packets lost", info.stdout)
shown = int(m.group(1)) if m else 0
print("strata info: %d packets lost" % shown)
if shown != lost:
    fail("strata info shows %d packets lost at the relay, the sender dropped %d"
         % (shown, lost))
bt = subprocess.run(["babeltrace2", remote], capture_output=True, text=True)
if bt.returncode:
    fail("babeltrace2 cannot read the relay's copy: " + bt.stderr[:2000])
bt_lost = sum(int(n) for n in re.findall(r"discarded (\d+) packets?", bt.stderr))
print("babeltrace2: %d packets discarded" % bt_lost)
if bt_lost != lost:
    fail("babeltrace2 shows %d packets discarded at the relay, the sender dropped %d"
         % (bt_lost, lost))
print("ok")
