#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""relay-roundtrip: `strata record --relay` of a multi-threaded program;
the relay's copy is byte-identical to the local trace (streams, index,
metadata, state dump) and babeltrace2 reads it (docs/relay.md)."""
import filecmp
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaylib import all_files, fail, relay_in, sender_line  # noqa: E402

strata, workers, work = sys.argv[1:4]
if not shutil.which("babeltrace2"):
    print("babeltrace2 missing: skipped")
    sys.exit(77)
tok, out, relay = relay_in(strata, work)
local = os.path.join(work, "local")
r = subprocess.run([strata, "record", "-o", local, "--relay", "127.0.0.1:%d" % relay.port,
                    "--token-file", tok, "--packet-size", "64K", "--packets", "64", "--",
                    workers, "4", "200000"],
                   capture_output=True, text=True, timeout=300)
print(r.stdout + r.stderr)
if r.returncode:
    fail("record failed")
sent, lost = sender_line(r.stderr)
host = os.listdir(out)
if len(host) != 1:
    fail("expected one host directory, got %r" % host)
remote = os.path.join(out, host[0], "local")
mine = [f for f in all_files(local) if not os.path.basename(f).startswith(".")]
theirs = all_files(remote)
if mine != theirs:
    fail("file lists differ:\nlocal  %r\nrelay  %r" % (mine, theirs))
streams = [f for f in mine if os.path.basename(f).startswith("cpu")]
if len(streams) < 2 or not any(f.startswith("ust/") for f in streams):
    fail("too few streams to be a test: %r" % streams)
for f in mine:
    if not filecmp.cmp(os.path.join(local, f), os.path.join(remote, f), shallow=False):
        fail("%s differs between the local trace and the relay's" % f)
if lost:
    fail("%d packets lost on loopback with a 64 MiB queue" % lost)
if sent < 10:
    fail("only %d packets sent" % sent)
a = subprocess.run(["babeltrace2", local], capture_output=True, text=True)
b = subprocess.run(["babeltrace2", remote], capture_output=True, text=True)
if b.returncode or "ERROR" in b.stderr:
    fail("babeltrace2 on the relay's copy: rc %d: %s" % (b.returncode, b.stderr[:2000]))
if a.stdout != b.stdout:
    fail("babeltrace2 prints the two traces differently")
i = subprocess.run([strata, "info", remote], capture_output=True, text=True)
if i.returncode:
    fail("strata info on the relay's copy: " + i.stderr)
# the same with zstd on the wire: the relay's copy is still identical
local_z = os.path.join(work, "local-z")
r = subprocess.run([strata, "record", "-o", local_z, "--relay", "127.0.0.1:%d" % relay.port,
                    "--token-file", tok, "--relay-zstd", "--packet-size", "64K",
                    "--packets", "64", "--", workers, "4", "200000"],
                   capture_output=True, text=True, timeout=300)
print(r.stderr)
if r.returncode:
    fail("record --relay-zstd failed")
m = re.search(r"(\d+) bytes \((\d+) on the wire\)", r.stderr)
if not m:
    fail("no byte counts in the sender's line")
print("zstd: %s file bytes, %s on the wire" % (m.group(1), m.group(2)))
if int(m.group(2)) >= int(m.group(1)):
    fail("zstd sent no fewer bytes than the files hold")
remote_z = os.path.join(out, host[0], "local-z")
mine = [f for f in all_files(local_z) if not os.path.basename(f).startswith(".")]
if mine != all_files(remote_z):
    fail("zstd: file lists differ")
for f in mine:
    if not filecmp.cmp(os.path.join(local_z, f), os.path.join(remote_z, f), shallow=False):
        fail("zstd: %s differs between the local trace and the relay's" % f)

rc = relay.stop()
if rc:
    fail("relay exit status %d: %s" % (rc, relay.log()))
print("ok: %d files identical, %d packets sent, %d events in babeltrace2" %
      (len(mine), sent, a.stdout.count("\n")))
