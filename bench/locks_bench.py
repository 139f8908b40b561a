#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Lock tracing cost, side by side in one run (issue 21): libstrata-locks.so
against LTTng-UST's liblttng-ust-pthread-wrapper.so, on uncontended
lock/unlock pairs (bench_locks) and on a real lock-using program (xz -T2).
Prints a markdown section on stdout; progress on stderr.

usage: locks_bench.py BENCH_LOCKS LIBSTRATA_LOCKS WORK_DIR [--pairs N] [--reps R]
                      [--no-xz] [--no-lttng]
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("bench_locks", help="the bench_locks program")
ap.add_argument("preload", help="libstrata-locks.so")
ap.add_argument("work")
ap.add_argument("--pairs", type=int, default=20_000_000)
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--no-xz", action="store_true", help="leave out the real program")
ap.add_argument("--no-lttng", action="store_true", help="leave out LTTng-UST (no daemon)")
a = ap.parse_args()

BIN = a.bench_locks
PRELOAD = os.path.abspath(a.preload)
LTTNG_WRAP = "liblttng-ust-pthread-wrapper.so"
os.makedirs(a.work, exist_ok=True)


def note(msg):
    print("== " + msg, file=sys.stderr, flush=True)


def env_for(preload=None, trace=None, extra=None):
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "STRATA_OUTPUT", "STRATA_SESSION"):
        env.pop(k, None)
    if preload:
        env["LD_PRELOAD"] = preload
    if trace:
        shutil.rmtree(trace, ignore_errors=True)
        env["STRATA_OUTPUT"] = trace
    env.update(extra or {})
    return env


def pair_ns(preload=None, trace=None, event=False, extra=None, pairs=None):
    """Best of reps: ns per lock/unlock pair."""
    best = None
    for _ in range(a.reps):
        cmd = [BIN, str(pairs or a.pairs)] + (["event"] if event else [])
        out = subprocess.run(cmd, env=env_for(preload, trace, extra), capture_output=True,
                             text=True, check=True).stdout
        v = float(out.split("ns_per_pair=")[1])
        best = v if best is None or v < best else best
    return best


def wall_s(cmd, preload=None, trace=None):
    """Best of reps: seconds of wall time."""
    best = None
    for _ in range(a.reps):
        t0 = time.monotonic()
        subprocess.run(cmd, env=env_for(preload, trace), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        v = time.monotonic() - t0
        best = v if best is None or v < best else best
    return best


class Lttng:
    """A private session daemon (LTTNG_HOME under work) and a session that
    records the wrapper's events."""
    def __init__(self):
        self.home = os.path.join(a.work, "lttng-home")
        os.makedirs(self.home, exist_ok=True)
        self.env = dict(os.environ, LTTNG_HOME=self.home)
        self.pid = None
        self.ok = not a.no_lttng and shutil.which("lttng") and shutil.which("lttng-sessiond")

    def run(self, *args):
        return subprocess.run(["lttng", *args], env=self.env, capture_output=True,
                              text=True).returncode == 0

    def start(self):
        if not self.ok:
            return False
        if not self.run("list"):
            subprocess.run(["lttng-sessiond", "--daemonize", "--no-kernel"], env=self.env,
                           capture_output=True)
            time.sleep(1)
        self.ok = self.run("list")
        return self.ok

    def session(self, name, out):
        shutil.rmtree(out, ignore_errors=True)
        return (self.run("create", name, "--output=" + out) and
                self.run("enable-event", "-u", "lttng_ust_pthread:*", "-s", name) and
                self.run("start", name))

    def destroy(self, name):
        self.run("destroy", name)

    def stop_daemon(self):
        pidf = os.path.join(self.home, ".lttng", "lttng-sessiond.pid")
        try:
            pid = int(open(pidf).read())
            os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):
            pass


def lttng_env(env):
    # the LTTng app registers with the private daemon
    env["LTTNG_HOME"] = os.path.join(a.work, "lttng-home")
    return env


rows = []
note("bare pairs")
bare = pair_ns()
note("bare pairs + one strata event each (traced)")
anchor = pair_ns(trace=os.path.join(a.work, "t-event"), event=True)
note("strata preload, not tracing")
s_off = pair_ns(preload=PRELOAD)
note("strata preload, tracing")
s_on = pair_ns(preload=PRELOAD, trace=os.path.join(a.work, "t-locks"))
# every acquisition with its chain (an event and a backtrace() each): a
# hundredth of the pairs, each costs microseconds; the same run's pairs
# without, beside it, for a like-for-like pair of numbers
CHAIN_PAIRS = max(a.pairs // 100, 10000)
note("strata preload, tracing, STRATA_LOCKS_CHAINS=all (%d pairs)" % CHAIN_PAIRS)
s_chain_off = pair_ns(preload=PRELOAD, trace=os.path.join(a.work, "t-locks-c0"),
                      pairs=CHAIN_PAIRS)
s_chain = pair_ns(preload=PRELOAD, trace=os.path.join(a.work, "t-locks-call"),
                  extra={"STRATA_LOCKS_CHAINS": "all"}, pairs=CHAIN_PAIRS)
lt = Lttng()
l_on = l_off = None
if lt.start():
    note("lttng wrapper, no session")
    old = os.environ.get("LTTNG_HOME")
    os.environ["LTTNG_HOME"] = lt.home
    l_off = pair_ns(preload=LTTNG_WRAP)
    if lt.session("locksbench", os.path.join(a.work, "lttng-trace")):
        note("lttng wrapper, session recording lttng_ust_pthread:*")
        l_on = pair_ns(preload=LTTNG_WRAP)
        lt.destroy("locksbench")
else:
    note("skip: LTTng (lttng-tools missing or the session daemon did not start)")

added_s = s_on - bare
added_l = (l_on - bare) if l_on else None
print("## Locks\n")
print("Uncontended `pthread_mutex_lock`/`unlock` pairs (bench/bench_locks.c, one idle "
      "thread alive), best of %d runs of %d pairs each (bench/locks_bench.py)." % (a.reps, a.pairs))
print()
print("| run | ns per pair | added ns | vs. target |")
print("| --- | ---: | ---: | --- |")
print("| bare | %.2f | | |" % bare)
print("| bare + 1 strata event per pair (traced) | %.2f | %.2f | the anchor |" % (anchor, anchor - bare))
print("| libstrata-locks.so, not tracing | %.2f | %.2f | |" % (s_off, s_off - bare))
print("| libstrata-locks.so, tracing | %.2f | %.2f | %.2f x the anchor (target <= 1.5: %s) |" %
      (s_on, added_s, s_on / anchor, "PASS" if s_on <= 1.5 * anchor else "FAIL"))
print("| libstrata-locks.so, tracing, %d pairs | %.2f | %.2f | |" %
      (CHAIN_PAIRS, s_chain_off, s_chain_off - bare))
print("| libstrata-locks.so, tracing, STRATA_LOCKS_CHAINS=all, %d pairs | %.2f | %.2f | "
      "every acquisition's chain, on request |" % (CHAIN_PAIRS, s_chain, s_chain - bare))
if l_off is not None:
    print("| LTTng-UST pthread wrapper, no session | %.2f | %.2f | |" % (l_off, l_off - bare))
if l_on is not None:
    ratio = added_l / added_s if added_s > 0 else float("inf")
    print("| LTTng-UST pthread wrapper, recording | %.2f | %.2f | LTTng adds %.1f x what strata adds (target >= 3: %s) |" %
          (l_on, added_l, ratio, "PASS" if ratio >= 3 else "FAIL"))

# a real program: xz -T2 compressing 16 MiB of text-like data
xz = None if a.no_xz else shutil.which("xz")
if xz:
    data = os.path.join(a.work, "xz-input")
    if not os.path.exists(data):
        with open(data, "wb") as f:
            words = [b"strata", b"trace", b"lock", b"event", b"ring", b"packet", b"clock"]
            import random
            rnd = random.Random(1)
            chunk = b" ".join(rnd.choice(words) for _ in range(200000))
            while f.tell() < 16 << 20:
                f.write(chunk)
    cmd = [xz, "-T2", "-6", "-c", data]
    note("xz -T2: bare, strata, LTTng")
    xb = wall_s(cmd)
    xs = wall_s(cmd, preload=PRELOAD, trace=os.path.join(a.work, "t-xz"))
    xl = None
    if l_on is not None and lt.session("locksxz", os.path.join(a.work, "lttng-xz")):
        xl = wall_s(cmd, preload=LTTNG_WRAP)
        lt.destroy("locksxz")
    print()
    print("`xz -T2 -6` on 16 MiB (wall time, best of %d): bare %.3f s; libstrata-locks.so tracing "
          "%.3f s (%+.1f %%)%s." % (a.reps, xb, xs, 100 * (xs - xb) / xb,
                                    "; LTTng-UST wrapper recording %.3f s (%+.1f %%)" %
                                    (xl, 100 * (xl - xb) / xb) if xl else ""))
if l_on is not None or l_off is not None:
    os.environ.pop("LTTNG_HOME", None)
lt.stop_daemon()
