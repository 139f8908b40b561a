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
    """`strata relay` on a free port of `listen` (loopback unless said), its
    log in work/relay.log."""

    def __init__(self, strata, out, token_file, log, extra=(), port=0, listen="127.0.0.1"):
        self.log_path = log
        self.logf = open(log, "a")
        self.start_at = self.logf.tell()
        self.p = subprocess.Popen(
            [strata, "relay", "--listen", "%s:%d" % (listen, port), "-o", out,
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


def check_copy(strata, local, remote, sent, lost):
    """The relay's copy against the local trace: every packet the sender
    reports as sent is there exactly once, identical and in order; every
    other one is counted as lost, and the loss shows (packet_seq_num gaps
    that babeltrace2 and strata info report); metadata and the other
    files identical."""
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


def record_checked(strata, p, local, out, name):
    """The end of `strata record -o local --relay ...` (Popen p, pipes):
    it succeeded, its copy is complete and held to check_copy(); its
    output, and the packets it lost."""
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
    check_copy(strata, local, os.path.join(out, hosts[0], name), sent, lost)
    return so + se, lost
