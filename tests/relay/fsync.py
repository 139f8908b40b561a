#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""relay-fsync: `strata relay --fsync` acknowledges nothing before it is
on stable storage (docs/relay.md §3). A power loss cannot be made here,
so the relay's system calls are watched instead (strace attached to
it) while slowlog's events, 20 ms apart and each closed in a packet of
its own by the live timer, make an ACK each: at every ACK it sends, every file it wrote since that file's last
fdatasync has been synced again, and every name it made, renamed or
removed has had a directory fsync after it. The copy is still the local
trace, byte for byte. Then a relay without --fsync syncs nothing."""
import filecmp
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaylib import Relay, all_files, fail, fresh_dir, make_token, sender_line  # noqa: E402

strata, slowlog, work = sys.argv[1:4]
if not shutil.which("strace"):
    print("strace missing: skipped")
    sys.exit(77)
fresh_dir(work)
tok = os.path.join(work, "token")
make_token(tok)
CALLS = "pwrite64,write,fdatasync,fsync,sendto,renameat,unlinkat,mkdirat,openat2"
ACK = '"\\3\\0\\0\\0\\10\\0\\0\\0'  # an ACK frame's header, as strace prints it


def traced_run(name, extra):
    """Record through a relay (with `extra` options) that strace
    watches: (strace's lines, sender's (sent, lost), local, remote)."""
    out = os.path.join(work, "out-" + name)
    relay = Relay(strata, out, tok, os.path.join(work, "relay-%s.log" % name), extra)
    log = os.path.join(work, "strace-%s.txt" % name)
    st = subprocess.Popen(["strace", "-qq", "-s", "16", "-e", "trace=" + CALLS, "-o", log,
                           "-p", str(relay.p.pid)], stderr=subprocess.PIPE, text=True)
    for _ in range(100):  # attached: its first line (epoll_wait is not traced)
        if os.path.exists(log):
            break
        time.sleep(0.05)
    time.sleep(0.3)
    local = os.path.join(work, "local-" + name)
    r = subprocess.run([strata, "record", "-o", local, "--relay", "127.0.0.1:%d" % relay.port,
                        "--token-file", tok, "--live=25", "--relay-timeout", "60",
                        "--", slowlog, "60", "20"],
                       capture_output=True, text=True, timeout=300)
    if r.returncode:
        fail("record failed: " + r.stderr)
    relay.stop()
    st.wait(20)
    with open(log) as f:
        lines = f.read().splitlines()
    host = os.listdir(out)
    return lines, sender_line(r.stderr), local, os.path.join(out, host[0], "local-" + name)


lines, (sent, lost), local, remote = traced_run("sync", ["--fsync"])
unsynced = {}   # fd -> the line that wrote it since its last sync
renamed = None  # a name changed since the last directory fsync
acks = syncs = 0
for ln in lines:
    m = re.match(r"(pwrite64|write|fdatasync|fsync|sendto)\((\d+)[,)]", ln)
    call, fd = (m.group(1), int(m.group(2))) if m else (ln.split("(")[0], -1)
    if call in ("pwrite64", "write") and fd > 2:
        unsynced.setdefault(fd, ln)
    elif call in ("fdatasync", "fsync"):
        unsynced.pop(fd, None)
        syncs += 1
        if call == "fsync":
            renamed = None
    elif call in ("renameat", "unlinkat", "mkdirat") or (call == "openat2" and "O_CREAT" in ln):
        if "= -1" not in ln:
            renamed = ln
    elif call == "sendto" and ACK in ln:
        acks += 1
        if unsynced:
            fail("an ACK sent while fds %s hold unsynced writes, e.g. %s"
                 % (sorted(unsynced), next(iter(unsynced.values()))))
        if renamed:
            fail("an ACK sent before a directory fsync after: " + renamed)
print("with --fsync: %d ACKs, %d syncs, %d packets sent, %d lost" % (acks, syncs, sent, lost))
if acks < 20 or not syncs:
    fail("too few ACKs (%d) or syncs (%d) to be a test" % (acks, syncs))
if lost:
    fail("%d packets lost on loopback" % lost)
mine = [f for f in all_files(local) if not os.path.basename(f).startswith(".")]
if mine != all_files(remote):
    fail("file lists differ:\nlocal  %r\nrelay  %r" % (mine, all_files(remote)))
for f in mine:
    if not filecmp.cmp(os.path.join(local, f), os.path.join(remote, f), shallow=False):
        fail("%s differs between the local trace and the relay's" % f)

lines, _, _, _ = traced_run("plain", [])
n = sum(1 for ln in lines if ln.startswith(("fdatasync(", "fsync(")))
print("without --fsync: %d syncs" % n)
if n:
    fail("a relay without --fsync synced %d times" % n)
print("ok")
