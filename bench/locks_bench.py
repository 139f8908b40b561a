#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Lock tracing cost, side by side in one run (issue 21): libstrata-locks.so
against LTTng-UST's liblttng-ust-pthread-wrapper.so, on uncontended
lock/unlock pairs (bench_locks) and on real programs (xz -T2; perl's
threads::shared, lock-heavy).
Prints a markdown section on stdout; progress on stderr.

usage: locks_bench.py BENCH_LOCKS LIBSTRATA_LOCKS WORK_DIR [--pairs N] [--reps R]
                      [--no-xz] [--no-lttng] [--strata STRATA]
"""
import argparse
import json
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
ap.add_argument("--no-xz", action="store_true", help="leave out the real programs")
ap.add_argument("--real-only", action="store_true", help="only the real programs")
ap.add_argument("--strata", help="the strata CLI: count the real programs' acquisitions")
ap.add_argument("--no-lttng", action="store_true", help="leave out LTTng-UST (no daemon)")
a = ap.parse_args()

BIN = a.bench_locks
STRATA = a.strata
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


lt = Lttng()
lttng_up = lt.start()
if lttng_up:
    os.environ["LTTNG_HOME"] = lt.home


def pairs_table():
    """The uncontended pairs, each way, and the markdown table."""
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
    l_on = l_off = None
    if lttng_up:
        note("lttng wrapper, no session")
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


if not a.real_only:
    pairs_table()


def acquisitions(trace):
    """The acquisitions the traced run made, as strata locks counts them."""
    r = subprocess.run([STRATA, "locks", trace, "--format", "json"], capture_output=True, text=True)
    try:
        return sum(t.get("acquisitions", 0) for t in json.loads(r.stdout).get("per_thread", []))
    except ValueError:
        return None


def real_program(what, cmd, tag):
    """One real program's wall time bare, under strata's preload tracing
    and under LTTng-UST's wrapper recording; a markdown line."""
    note(what + ": bare, strata, LTTng")
    b = wall_s(cmd)
    trace = os.path.join(a.work, "t-" + tag)
    s = wall_s(cmd, preload=PRELOAD, trace=trace)
    n = acquisitions(trace) if STRATA else None
    lt_s = None
    if lttng_up and lt.session("locks" + tag, os.path.join(a.work, "lttng-" + tag)):
        lt_s = wall_s(cmd, preload=LTTNG_WRAP)
        lt.destroy("locks" + tag)
    print()
    print("%s (wall time, best of %d): bare %.3f s; libstrata-locks.so tracing %.3f s (%+.1f %%)%s%s." %
          (what, a.reps, b, s, 100 * (s - b) / b,
           "; LTTng-UST wrapper recording %.3f s (%+.1f %%)" % (lt_s, 100 * (lt_s - b) / b)
           if lt_s else "",
           "; %s lock acquisitions in strata's trace" % format(n, ",") if n else ""))


# real programs: xz -T2 compressing 16 MiB of text-like data (few locks:
# its workers run for seconds between hand-overs), and a lock-heavy one:
# Debian's perl, threads::shared, two threads taking one shared lock
# (pthread mutexes inside perl) for every increment of a shared counter
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
    real_program("`xz -T2 -6` on 16 MiB", [xz, "-T2", "-6", "-c", data], "xz")
perl = None if a.no_xz else shutil.which("perl")
if perl and subprocess.run([perl, "-Mthreads", "-Mthreads::shared", "-e", "1"],
                           capture_output=True).returncode == 0:
    PERL_N = 2000000
    real_program("`perl` threads::shared, 2 threads x %d locked increments" % PERL_N,
                 [perl, "-Mthreads", "-Mthreads::shared", "-e",
                  "my $n :shared = 0; my @t = map { threads->create(sub { for (1..%d) "
                  "{ lock($n); $n++; } }) } 1..2; $_->join for @t; $n == %d or die" %
                  (PERL_N, 2 * PERL_N)], "perl")
if lttng_up:
    os.environ.pop("LTTNG_HOME", None)
lt.stop_daemon()
