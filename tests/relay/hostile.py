#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""relay-hostile: no token, a wrong token, garbage, truncated and
oversized frames, slowloris, an idle sender, paths that leave the
trace ('..', absolute, a symlink), a sender claiming another's name,
and 1000 connections: each is refused cleanly, while good senders
(`strata record --relay`) get their traces through, byte-identical."""
import errno
import filecmp
import os
import shutil
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaylib import (CHALLENGE, ERROR, HELLO, WRITE, WRITEZ, Client, Relay, all_files,  # noqa: E402
                      closed_by_peer, fail, frame, fresh_dir, hello, make_token,
                      recv_frame, sender_line)

strata, workers, work = sys.argv[1:4]
fresh_dir(work)
tok = os.path.join(work, "token")
token = make_token(tok)
out = os.path.join(work, "out")
outside = fresh_dir(os.path.join(work, "outside"))
relay = Relay(strata, out, tok, os.path.join(work, "relay.log"),
              ["--max-conns", "200", "--max-per-peer", "150",
               "--auth-timeout", "2", "--idle-timeout", "3"])
port = relay.port
results = []


def check(name, ok, detail=""):
    results.append((name, ok))
    print("%-28s %s %s" % (name, "refused" if ok else "NOT REFUSED", detail))
    if not relay.alive():
        fail("the relay died after: " + name + "\n" + relay.log())


def good_sender(name, job=("4", "200000")):
    local = os.path.join(work, name)
    return local, subprocess.Popen(
        [strata, "record", "-o", local, "--relay", "127.0.0.1:%d" % port,
         "--token-file", tok, "--relay-timeout", "60", "--", workers, *job],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def good_done(local, p):
    so, se = p.communicate(timeout=300)
    if p.returncode:
        fail("good sender %s failed: %s" % (local, se))
    sent, lost = sender_line(se)
    name = os.path.basename(local)
    hosts = [h for h in os.listdir(out) if os.path.isdir(os.path.join(out, h, name))]
    if len(hosts) != 1:
        fail("%s: not at the relay" % name)
    remote = os.path.join(out, hosts[0], name)
    mine = [f for f in all_files(local) if not os.path.basename(f).startswith(".")]
    if mine != all_files(remote):
        fail("%s: files differ at the relay: %r vs %r" % (name, mine, all_files(remote)))
    for f in mine:
        if not filecmp.cmp(os.path.join(local, f), os.path.join(remote, f), shallow=False):
            fail("%s: %s differs at the relay" % (name, f))
    if lost:
        fail("%s: %d packets lost on loopback" % (name, lost))
    print("good sender %s: %d packets, %d files identical" % (name, sent, len(mine)))


def connect():
    s = socket.create_connection(("127.0.0.1", port))
    f = recv_frame(s)
    if not f or f[0] != CHALLENGE:
        fail("no CHALLENGE")
    return s, f[1][4:36]


def refused_with(c, code):
    e = c.error()
    return e is not None and e[0] == code, e


g1 = good_sender("good1")

# no token: a HELLO with a MAC of nothing
s, nonce = connect()
h = bytearray(hello(token, nonce, os.urandom(16), b"x", b"notoken"))
h[8:40] = bytes(32)
s.sendall(bytes(h))
f = recv_frame(s)
check("no token", f is not None and f[0] == ERROR and struct.unpack("<I", f[1][:4])[0] == errno.EACCES
      and closed_by_peer(s), repr(f and f[1][4:]))

# a wrong token
s, nonce = connect()
s.sendall(hello(b"not-the-token-at-all", nonce, os.urandom(16), b"x", b"wrongtoken"))
f = recv_frame(s)
check("wrong token", f is not None and f[0] == ERROR and closed_by_peer(s), repr(f and f[1][4:]))

# garbage instead of a HELLO
s, _ = connect()
s.sendall(os.urandom(4096))
check("garbage", closed_by_peer(s))

# data before authentication
s, _ = connect()
s.sendall(frame(WRITE, struct.pack("<QIQ", 1, 0, 0) + b"x" * 100))
check("data before auth", closed_by_peer(s))

# a truncated HELLO, then silence: closed at the auth timeout
s, nonce = connect()
s.sendall(hello(token, nonce, os.urandom(16), b"x", b"trunc")[:30])
t0 = time.time()
check("truncated frame", closed_by_peer(s, 15), "closed after %.1f s" % (time.time() - t0))

# slowloris: a valid HELLO, one byte every 0.3 s
s, nonce = connect()
data = hello(token, nonce, os.urandom(16), b"x", b"slowloris")
t0 = time.time()
cut = False
try:
    for i in range(len(data)):
        s.send(data[i:i + 1])
        time.sleep(0.3)
        if time.time() - t0 > 12:
            break
except (BrokenPipeError, ConnectionResetError):
    cut = True
check("slowloris", cut or closed_by_peer(s, 5), "closed after %.1f s" % (time.time() - t0))

# an oversized frame after auth
c = Client(port, token, b"x", b"oversized")
if not c.welcomed():
    fail("a good hand-made client was not welcomed: %r" % (c.answer,))
c.s.sendall(struct.pack("<II", WRITE, 1 << 31))
ok, e = refused_with(c, errno.EPROTO)
check("oversized frame", ok, repr(e))

# a truncated frame after auth, and the connection closed: nothing applied
c = Client(port, token, b"x", b"trunc2")
c.create(1, b"f")
c.s.sendall(frame(WRITE, struct.pack("<QIQ", 99, 1, 0) + b"y" * 1000)[:200])
c.s.close()
time.sleep(0.5)
fpath = os.path.join(out, "x", "trunc2", "f")
check("truncated frame after auth", os.path.exists(fpath) and os.path.getsize(fpath) == 0)

# compressed writes that lie: garbage, and a zstd frame of 64 MiB of
# zeros announced as 100 bytes (a decompression bomb)
c = Client(port, token, b"x", b"zgarbage")
c.create(1, b"f")
c.send(WRITEZ, struct.pack("<IQI", 1, 0, 100) + os.urandom(200))
ok, e = refused_with(c, errno.EBADMSG)
check("zstd garbage", ok, repr(e))
if shutil.which("zstd"):
    bomb = subprocess.run(["zstd", "-19", "-c"], input=bytes(64 << 20),
                          capture_output=True).stdout
    c = Client(port, token, b"x", b"zbomb")
    c.create(1, b"f")
    c.send(WRITEZ, struct.pack("<IQI", 1, 0, 100) + bomb)
    ok, e = refused_with(c, errno.EBADMSG)
    check("zstd bomb (%d bytes)" % len(bomb), ok and os.path.getsize(
        os.path.join(out, "x", "zbomb", "f")) == 0, repr(e))

# an idle sender: closed at the idle timeout
c = Client(port, token, b"x", b"idle")
ok, e = refused_with(c, errno.ETIMEDOUT)
check("idle connection", ok, repr(e))

# paths that leave the trace
for i, path in enumerate((b"../evil", b"/tmp/evil", b"ust/../../evil", b"a//b", b".",
                          b"a\\..\\b", b"x\x00y", b".relay-session")):
    c = Client(port, token, b"x", b"path%d" % i)
    if not c.welcomed():
        fail("not welcomed: %r" % (c.answer,))
    c.create(1, path)
    ok, e = refused_with(c, errno.EPERM)
    check("path %r" % path, ok, repr(e))
# a symlink planted in a trace directory (by someone on the relay's host)
c = Client(port, token, b"x", b"symlink")
os.symlink(outside, os.path.join(out, "x", "symlink", "ust"))
c.create(1, b"ust/cpu0")
e = c.error()
check("path through a symlink", e is not None and not os.listdir(outside), repr(e))
for root, dirs, files in os.walk(work):
    for n in files:
        if n == "evil":
            fail("a file named evil was made at " + root)

# a sender claiming another's name
a = Client(port, token, b"x", b"claimed")
b = Client(port, token, b"x", b"claimed")
check("another's name", a.welcomed() and b.answer is not None and b.answer[0] == ERROR
      and struct.unpack("<I", b.answer[1][:4])[0] == errno.EBUSY, repr(b.answer))
a.s.close()

good_done(*g1)
# a complete trace's name
host1 = [h for h in os.listdir(out) if os.path.isdir(os.path.join(out, h, "good1"))][0]
b = Client(port, token, host1.encode(), b"good1")
check("a complete trace's name", b.answer is not None and b.answer[0] == ERROR
      and struct.unpack("<I", b.answer[1][:4])[0] == errno.EEXIST, repr(b.answer))

# strata record with the wrong token: the local trace is whole, the
# relay's refusal said in one line
bad_tok = os.path.join(work, "bad-token")
make_token(bad_tok)
r = subprocess.run([strata, "record", "-o", os.path.join(work, "badtok"), "--relay",
                    "127.0.0.1:%d" % port, "--token-file", bad_tok, "--", workers, "2", "1000"],
                   capture_output=True, text=True, timeout=120)
check("record with a wrong token", r.returncode == 0 and "authentication failed" in r.stderr
      and os.path.exists(os.path.join(work, "badtok", "ust")), r.stderr.strip().splitlines()[-1])

# 1000 connections held open, and a good sender meanwhile
flood = []
for i in range(1000):
    try:
        flood.append(socket.create_connection(("127.0.0.1", port), timeout=5))
    except OSError as e:
        print("connection %d: %s" % (i, e))
        break
print("flood: %d connections opened" % len(flood))
g2 = good_sender("good2", ("4", "100000"))
good_done(*g2)
for s in flood:
    s.close()
check("1000 connections", len(flood) == 1000)

# a token file others can read: the relay refuses to start
loose = os.path.join(work, "loose-token")
make_token(loose)
os.chmod(loose, 0o644)
r = subprocess.run([strata, "relay", "-o", os.path.join(work, "o2"), "--listen", "127.0.0.1:0",
                    "--token-file", loose], capture_output=True, text=True, timeout=20)
check("a token others can read", r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1,
      r.stderr.strip())

rc = relay.stop()
print(relay.log()[-1500:])
if rc:
    fail("relay exit status %d" % rc)
bad = [n for n, ok in results if not ok]
if bad:
    fail("not refused: " + ", ".join(bad))
print("ok")
