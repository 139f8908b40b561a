#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""relay-follow: `strata print --follow` on the relay's copy of a trace
that `strata record --relay` is still sending (docs/reader.md,
"Following a live trace"): every event once, in time order, the follow
ending by itself when the sender's END completes the copy. Recorded with
the live timer (--live=25), whose beacon (.live-time: a time and its
complement) must reach the relay's copy while the program runs, so that
a quiet CPU does not hold a follower there back, and be gone at the end."""
import glob
import json
import os
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaylib import fail, relay_in  # noqa: E402

strata, slowlog, work = sys.argv[1:4]
N, PERIOD_MS = 100, 20
tok, out, relay = relay_in(strata, work)
local = os.path.join(work, "local")
rec = subprocess.Popen([strata, "record", "--live=25", "-o", local, "--relay",
                        "127.0.0.1:%d" % relay.port,
                        "--token-file", tok, "--", slowlog, str(N), str(PERIOD_MS)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
# the relay's copy is DIR/<sender's host>/<trace name>: follow it as soon
# as it is there, while the program still logs for two seconds
remote = None
for _ in range(200):
    hosts = os.listdir(out) if os.path.isdir(out) else []
    if hosts and os.path.isdir(os.path.join(out, hosts[0], "local")):
        remote = os.path.join(out, hosts[0], "local")
        break
    time.sleep(0.01)
if not remote:
    rec.kill()
    fail("the relay's copy did not appear within 2 s")
fol = subprocess.Popen([strata, "print", "--follow", "--format", "json", remote],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
lines = []


def reader():
    for line in fol.stdout:
        lines.append(line)


th = threading.Thread(target=reader)
th.start()


def beacons():
    """The relay's beacons now: (path, a whole one's time or None if torn)"""
    got = []
    for path in glob.glob(os.path.join(remote, "**", ".live-time"), recursive=True):
        try:
            with open(path, "rb") as f:
                b = f.read(16)
        except FileNotFoundError:
            continue
        if len(b) == 16:
            t, c = struct.unpack("<QQ", b)
            got.append((path, t if c == t ^ (2**64 - 1) else None))
    return got


seen = {}
while rec.poll() is None:
    for path, t in beacons():
        if t is not None:
            seen.setdefault(path, []).append(t)
    time.sleep(0.05)
err = rec.communicate(timeout=120)[1]
before_end = len(lines)
if rec.returncode:
    fail("record --relay failed: " + err)
try:
    rc = fol.wait(timeout=30)
except subprocess.TimeoutExpired:
    fol.kill()
    fail("print --follow did not end when the relay's copy was complete")
th.join()
ferr = fol.stderr.read()
if rc:
    fail("print --follow exited %d: %s" % (rc, ferr))
ticks = [json.loads(l) for l in lines]
ticks = [(e["ts"], e["fields"]["seq"]) for e in ticks if e["event"] == "live:tick"]
seqs = [s for _, s in ticks]
if seqs != list(range(N)):
    fail("%d ticks printed from the relay's copy, expected each of 0..%d once in order: %r"
         % (len(seqs), N - 1, seqs[:20]))
if [t for t, _ in ticks] != sorted(t for t, _ in ticks):
    fail("events printed out of time order")
full = subprocess.run([strata, "print", "--format", "json", remote], capture_output=True,
                      text=True).stdout.splitlines()


def untimed(l):
    e = json.loads(l)
    e.pop("time")
    return e


if [untimed(l) for l in lines] != [untimed(l) for l in full]:
    fail("the followed listing differs from the finished copy's (%d lines against %d)"
         % (len(lines), len(full)))
if not seen:
    fail("no live beacon (.live-time) reached the relay's copy while the program ran")
for path, ts in seen.items():
    if ts != sorted(ts):
        fail("the relay's beacon %s went back in time: %r" % (path, ts[:10]))
left = glob.glob(os.path.join(remote, "**", ".live-time"), recursive=True)
if left:
    fail("the beacon outlived the recording at the relay: %s" % left)
relay.stop()
print("relay-follow: %d events followed at the relay, once each, in order (%d lines printed "
      "before the sender ended); %d beacon readings there, gone at the end"
      % (len(seqs), before_end, sum(len(ts) for ts in seen.values())))
