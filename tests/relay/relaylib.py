# SPDX-License-Identifier: MIT
"""Helpers of the relay tests: a relay to run, a token, the protocol
spoken by hand (docs/relay.md), and the packets of a stream file."""
import hashlib
import hmac
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time

CHALLENGE, WELCOME, ACK, ERROR = 1, 2, 3, 4
HELLO, CREATE, WRITE, CLOSE, METADATA, END, PING, WRITEZ = 16, 17, 18, 19, 20, 21, 22, 23


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def make_token(path, secret=None):
    with open(path, "wb") as f:
        f.write(secret or os.urandom(24).hex().encode())
    os.chmod(path, 0o600)
    with open(path, "rb") as f:
        return f.read().rstrip(b"\r\n")


def relay_in(strata, work):
    """A fresh `work`, a token in work/token, and a relay writing to
    work/out: (token file, out, Relay)."""
    fresh_dir(work)
    tok = os.path.join(work, "token")
    make_token(tok)
    out = os.path.join(work, "out")
    return tok, out, Relay(strata, out, tok, os.path.join(work, "relay.log"))


class Relay:
    """`strata relay` on a free loopback port, its log in work/relay.log."""

    def __init__(self, strata, out, token_file, log, extra=(), port=0):
        self.log_path = log
        self.logf = open(log, "a")
        self.start_at = self.logf.tell()
        self.p = subprocess.Popen(
            [strata, "relay", "--listen", "127.0.0.1:%d" % port, "-o", out,
             "--token-file", token_file, *extra],
            stdout=self.logf, stderr=self.logf)
        for _ in range(200):
            m = re.search(r"listening on port (\d+)", self.log()[self.start_at:])
            if m:
                self.port = int(m.group(1))
                return
            if self.p.poll() is not None:
                fail("relay exited at start: " + self.log())
            time.sleep(0.05)
        fail("relay did not start: " + self.log())

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def kill(self):
        self.p.kill()
        self.p.wait()
        self.logf.close()

    def alive(self):
        return self.p.poll() is None

    def stop(self):
        self.p.terminate()
        try:
            rc = self.p.wait(20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            fail("relay did not stop on SIGTERM")
        self.logf.close()
        return rc


def frame(t, payload=b""):
    return struct.pack("<II", t, len(payload)) + payload


def recv_frame(sock, timeout=5.0):
    """One frame (type, payload), or None when the peer closed."""
    try:
        return recv_frame_raw(sock, timeout)
    except (ConnectionResetError, BrokenPipeError):
        return None


def recv_frame_raw(sock, timeout):
    sock.settimeout(timeout)
    buf = b""
    while len(buf) < 8:
        d = sock.recv(8 - len(buf))
        if not d:
            return None
        buf += d
    t, n = struct.unpack("<II", buf)
    body = b""
    while len(body) < n:
        d = sock.recv(n - len(body))
        if not d:
            return None
        body += d
    return t, body


def closed_by_peer(sock, timeout=10.0):
    """Read until EOF (True) or timeout (False); frames are skipped."""
    sock.settimeout(timeout)
    end = time.time() + timeout
    try:
        while time.time() < end:
            d = sock.recv(65536)
            if not d:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    return False


def hello(token, nonce, sid, host, trace, flags=0, version=1):
    body = (struct.pack("<I", version) + sid + struct.pack("<I", flags) +
            struct.pack("<H", len(host)) + host +
            struct.pack("<H", len(trace)) + trace)
    mac = hmac.new(token, nonce + body, hashlib.sha256).digest()
    return frame(HELLO, mac + body)


class Client:
    """A sender spoken by hand."""

    def __init__(self, port, token, host=b"tester", trace=b"t", sid=None):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.seq = 0
        t, body = recv_frame(self.s)
        if t != CHALLENGE:
            fail("no CHALLENGE first")
        self.nonce = body[4:36]
        self.sid = sid or os.urandom(16)
        self.s.sendall(hello(token, self.nonce, self.sid, host, trace))
        self.answer = recv_frame(self.s)

    def welcomed(self):
        return self.answer is not None and self.answer[0] == WELCOME

    def send(self, t, payload):
        self.seq += 1
        self.s.sendall(frame(t, struct.pack("<Q", self.seq) + payload))

    def create(self, fid, path):
        self.send(CREATE, struct.pack("<IH", fid, len(path)) + path)

    def write(self, fid, off, data):
        self.send(WRITE, struct.pack("<IQ", fid, off) + data)

    def error(self, timeout=5.0):
        """The ERROR frame that follows (errno, text), skipping ACKs."""
        while True:
            f = recv_frame(self.s, timeout)
            if f is None:
                return None
            if f[0] == ERROR:
                return struct.unpack("<I", f[1][:4])[0], f[1][4:].decode()


HDR = 96


def packets(path):
    """The packets of a stream file: (seq, content bytes, discarded)."""
    out = []
    with open(path, "rb") as f:
        data = f.read()
    off = 0
    while off + HDR <= len(data):
        content_bits, psize_bits, seq, disc = struct.unpack_from("<QQQQ", data, off + 48)
        content = content_bits // 8
        psize = psize_bits // 8
        if psize < 4096 or content < HDR or content > psize:
            fail("%s: damaged packet at %d" % (path, off))
        out.append((seq, data[off:off + content], disc))
        off += psize
    return out


def stream_files(root):
    """Relative paths of the stream files (cpuN) below root."""
    res = []
    for d, _, files in os.walk(root):
        for n in files:
            if re.fullmatch(r"cpu\d+", n):
                res.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(res)


def all_files(root):
    """Relative paths of the files below root, but for the relay's own
    clock-offset at the root (docs/relay.md §7), which a local trace has
    not."""
    res = []
    for d, _, files in os.walk(root):
        for n in files:
            res.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(r for r in res if r != "clock-offset")


def sender_line(err):
    m = re.search(r"relay \S+: (\d+) packets sent, (\d+) lost", err)
    if not m:
        fail("no sender summary in: " + err)
    return int(m.group(1)), int(m.group(2))
