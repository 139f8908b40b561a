#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""relay-tsync: the clock exchange spoken by hand (docs/relay.md §7). A
sender that answers TSYNC gets a burst of them; nonsense answers are
ignored and a clock-offset still appears from the good ones; a reply
from a sender that did not offer TSYNC, or of the wrong length, is
refused; a sender may not write the relay's clock-offset itself."""
import atexit
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relaylib import (CHALLENGE, CREATE, ERROR, WELCOME, Client, Relay, fail,  # noqa: E402
                      fresh_dir, hello, make_token, recv_frame)
import socket  # noqa: E402

TSYNC, TSYNC_REPLY, HELLO_TSYNC = 5, 24, 4
strata, _workers, work = sys.argv[1:4]
fresh_dir(work)
tok = os.path.join(work, "token")
token = make_token(tok)
out = os.path.join(work, "out")
relay = Relay(strata, out, tok, os.path.join(work, "relay.log"))
# a failed check exits at once: the relay must not outlive the test
atexit.register(lambda: relay.alive() and relay.kill())


def frame(t, payload=b""):
    return struct.pack("<II", t, len(payload)) + payload


def connect(trace, flags):
    s = socket.create_connection(("127.0.0.1", relay.port))
    t, body = recv_frame(s)
    if t != CHALLENGE:
        fail("no CHALLENGE first")
    s.sendall(hello(token, body[4:36], os.urandom(16), b"clk", trace, flags))
    t, _ = recv_frame(s)
    if t != WELCOME:
        fail("%s: not welcomed" % trace)
    return s


def next_tsync(s):
    while True:
        f = recv_frame(s, 5.0)
        if f is None:
            fail("the relay closed instead of sending TSYNC")
        if f[0] == TSYNC:
            return struct.unpack("<IQ", f[1])
        if f[0] == ERROR:
            fail("refused: %r" % f[1])


# a sender 7 s ahead that answers in three ways, in turn: nonsense (t3
# before t2: dropped), at once (good), and 5 ms late without saying so
# (a round trip of 5 ms, its offset 2.5 ms off: the minimum-delay filter
# must pass it over, though the last valid sample is one)
s = connect(b"good", HELLO_TSYNC)
for i in range(16):
    sid, t1 = next_tsync(s)
    if i % 3 == 2:
        time.sleep(0.005)
    now = time.monotonic_ns() + 7000000000
    if i % 3 == 0:
        s.sendall(frame(TSYNC_REPLY, struct.pack("<IQQQ", sid, t1, 2**64 - 1, 0)))
    else:
        s.sendall(frame(TSYNC_REPLY, struct.pack("<IQQQ", sid, t1, now, now + 1000)))
path = os.path.join(out, "clk", "good", "clock-offset")
for _ in range(100):
    if os.path.exists(path):
        break
    time.sleep(0.05)
kv = dict(l.split(None, 1) for l in open(path) if l[0] != "#")
off = int(kv["offset_ns"])
if abs(off - 7000000000) > 1000000:
    fail("offset %d ns from replies 7 s ahead" % off)
def refused(s):
    """The ERROR frame that comes within 3 s (TSYNCs skipped), or None."""
    try:
        f = recv_frame(s, 3.0)
        while f and f[0] != ERROR:
            f = recv_frame(s, 3.0)
        return f
    except socket.timeout:
        return None


# a reply of the wrong length
s.sendall(frame(TSYNC_REPLY, b"\0" * 10))
if not refused(s):
    fail("a short TSYNC_REPLY was not refused")
s.close()

# a sender that did not offer TSYNC gets none, and may not answer
s = connect(b"old", 0)
s.settimeout(1.5)
try:
    f = recv_frame(s, 1.5)
except socket.timeout:
    f = None
if f and f[0] == TSYNC:
    fail("TSYNC sent to a sender that did not offer to answer")
s.sendall(frame(TSYNC_REPLY, b"\0" * 28))
if not refused(s):
    fail("a TSYNC_REPLY from a sender without HELLO flag 4 was not refused")
s.close()

# the relay's own file is not a sender's to write
c = Client(relay.port, token, host=b"clk", trace=b"sneaky")
if not c.welcomed():
    fail("sneaky: not welcomed")
c.send(CREATE, struct.pack("<IH", 1, len(b"clock-offset")) + b"clock-offset")
e = c.error()
if not e or e[0] != 1:  # EPERM
    fail("a sender's CREATE of clock-offset: %r" % (e,))

if not relay.alive():
    fail("the relay died")
relay.stop()
print("relay-tsync: offset %+d ns from the good third of 16 replies; nonsense and late ones passed over, "
      "short and unoffered replies refused, clock-offset not writable by a sender"
      % (off - 7000000000))
