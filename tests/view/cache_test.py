#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""strata view's model cache (docs/view.md, "The cache"): made, used, invalidated, rebuilt.

usage: cache_test.py STRATA WORKERS WORKDIR NESTED

NESTED (tests/view/nested.c) makes intervals that close out of begin
order within a level: built in the spill file, in its levels' buffers
and across their writes (model.c, on_interval), they must answer as the
heap's model does.

Records the example, then opens it with --no-cache (the reference answers),
and again with the cache: the first open writes it, the second uses it, and
both answer every request byte for byte as the uncached open does. A trace
replaced by another under the same path, a truncated, bit-flipped or foreign
cache file, and a trace on a read-only mount are rebuilt or served, never
trusted into a wrong answer or a crash; the trace's folder is never written.
"""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import urllib.request

import recorded

strata, workers, work = sys.argv[1], sys.argv[2], os.path.join(sys.argv[3], "cache")
nested = sys.argv[4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
cache_home = os.path.join(work, "xdg")
env = dict(os.environ, XDG_CACHE_HOME=cache_home)
failed = []


def check(ok, what):
    if not ok:
        failed.append(what)
        print("view-cache: FAIL:", what, file=sys.stderr)


def record(name, threads, jobs, prog=None):
    path = os.path.join(work, name)
    argv = [prog, str(jobs)] if prog else [workers, str(threads), str(jobs)]
    subprocess.run(argv, env=dict(os.environ, STRATA_OUTPUT=path),
                   check=True, stdout=subprocess.DEVNULL)
    # the checks below compare the folder before and after
    check(recorded.wait_done(path), f"{name}: still live after 30 s")
    return path


def cache_files():
    d = os.path.join(cache_home, "strata", "view")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def tree(path):
    return sorted(os.path.join(r, f) for r, _, fs in os.walk(path) for f in fs)


def answers(trace, *opts, env=env, spill=False):
    """The view's answers to a fixed set of requests, its summary's cache
    field, and its stderr (read after Ctrl-C: a cache being written is
    whole by then)."""
    view = subprocess.Popen([strata, "view", trace, "--wait", *opts], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    out, how = None, None
    try:
        url = view.stdout.readline().strip()
        if url.startswith("http://"):
            if spill:
                spilled(view.pid, trace)
            out, how = ask(url)
    finally:
        view.send_signal(2)
        err = view.communicate(timeout=60)[1]
        if view.returncode not in (0, -2):
            check(False, f"{trace} {opts}: exit {view.returncode}: {err}")
    return out, how, err


def spilled(pid, trace):
    """Built in the spill file (docs/view.md, "Memory"): an unlinked file
    of the cache's folder mapped, before the first answer adopts the
    cache."""
    folder = os.path.join(cache_home, "strata", "view")
    with open(f"/proc/{pid}/maps") as f:
        maps = [line for line in f if folder in line and "(deleted)" in line]
    check(maps, f"{trace}: no spill file of {folder} mapped")


def ask(url):
    def get(path):
        with urllib.request.urlopen(url + path, timeout=60) as r:
            return r.read()

    s = json.loads(get("api/summary"))
    how = s.pop("cache", None)
    s.pop("build_ms")
    s.pop("trace")  # the path given
    span = s["span_ns"]
    out = {"summary": s}
    reqs = [f"api/window?t0=0&t1={span}&w=1000",
            f"api/window?t0=0&t1={span}&w=1000&ev=work:job_e*",
            f"api/window?t0={span // 2}&t1={span // 2 + span // 5000}&w=500",
            f"api/window?t0={span // 3}&t1={span // 3 + span // 50}&w=700",
            f"api/list?t={span // 2}&before=20&after=20",
            f"api/stats?t0=0&t1={span}",
            f"api/stats?t0={span // 4}&t1={span // 2}&ev=work:job_end",
            f"api/stats?t0=0&t1={span}&kind=0",
            "api/intervals?kind=0&n=100"]
    reqs += [f"api/breakdown?tid={t['tid']}&t0=0&t1={span}" for t in s["threads"]]
    for r in reqs:
        out[r] = get(r).decode()
    return out, how


def built(how, err, what):
    """Built now: the summary says built (or still writing), stderr that
    the cache was written."""
    check(how in ("built", "writing") and "written" in (err or ""),
          f"{what}: cache {how!r}, not built and written ({err})")


def same(a, b, what):
    if a is None or b is None:
        check(False, f"{what}: no answers")
        return
    diff = [k for k in a if a[k] != b.get(k)]
    check(not diff, f"{what}: answers differ from the uncached open's: {diff[:3]}")


a = record("a", 3, 60000)  # levels of 4096 intervals and more: their counts per bin
# the reference with the knob too: the heap's model must never be let go
ref, how, _ = answers(a, "--no-cache", env=dict(env, STRATA_VIEW_SPILL_MIN="4096"))
check(how == "off", f"--no-cache: summary says cache {how!r}")
check(not cache_files(), f"--no-cache wrote {cache_files()}")
check(ref and ref["summary"]["events"] > 0, "the uncached open: no events")

before = tree(a)
# every array of 4 KiB or more built in the spill file, not only those of
# 4 MiB: the answers, and the cache written from it, must not change
got, how, err = answers(a, env=dict(env, STRATA_VIEW_SPILL_MIN="4096"), spill=True)
built(how, err, "first open")
check(len(cache_files()) == 1, f"first open: cache files {cache_files()}")
# a's cache, for the damage below: named now, before nested's cache joins it
# in the folder (their names are hashes: listed in any order)
a_cache = cache_files()[:1]
same(ref, got, "first open")
# and the mapped cache's levels of 4 KiB and more let go after each
# window reads them (docs/view.md, "Memory")
got, how, _ = answers(a, env=dict(env, STRATA_VIEW_SPILL_MIN="4096"))
check(how == "used", f"second open: cache {how!r}, not 'used'")
same(ref, got, "second open (from the cache)")
check(tree(a) == before, f"the trace's folder changed: {set(tree(a)) ^ set(before)}")

# intervals closing out of begin order in one level: moved back past the
# ones that closed before them, in a level's buffer and across its writes
# to the file (the model's build, on_interval); 40 000 jobs, so that the
# two kinds' levels pass 2048 intervals (a buffer) many times
n = record("n", 1, 40000, nested)
nref, _, _ = answers(n, "--no-cache", env=dict(env, STRATA_VIEW_SPILL_MIN="4096"))
check(nref and nref["summary"]["events"] == 4 * 40000,
      f"nested: {nref and nref['summary']['events']} events, not {4 * 40000}")
got, how, err = answers(n, env=dict(env, STRATA_VIEW_SPILL_MIN="4096"), spill=True)
built(how, err, "nested, first open")
same(nref, got, "nested, first open")

# damage: each is rebuilt, then the next open uses the rebuilt one
path = os.path.join(cache_home, "strata", "view", a_cache[0]) if a_cache else None
size = os.path.getsize(path) if path else 0


def flip(f, at):
    f.seek(at)
    c = f.read(1)[0]
    f.seek(at)
    f.write(bytes([c ^ 1]))


damages = {
    "truncated": lambda f: f.truncate(size // 2),
    "cut inside its header": lambda f: f.truncate(20),
    "a bit flipped in its header": lambda f: flip(f, 40),
    "foreign": lambda f: (f.truncate(0), f.write(b"not a cache\n" * 1000)),
    "empty": lambda f: f.truncate(0),
}
for what, damage in damages.items():
    if not path:
        break
    with open(path, "r+b") as f:
        damage(f)
    got, how, err = answers(a)
    built(how, err, f"cache {what}")
    same(ref, got, f"cache {what}")
    check(os.path.getsize(path) == size, f"cache {what}: rebuilt to {os.path.getsize(path)} bytes")

# bytes of the body changed (no checksum covers it: that would read the
# whole file on each open): whatever is drawn, the server neither crashes
# nor reads outside the file, and answers every request. Half of the
# changes hit the threads' records (their counts of states, intervals...),
# found by walking the format (docs/view.md, "The cache").


def thread_records(buf):
    """The offsets of the threads' records in a cache file."""
    up = lambda n: (n + 7) & ~7
    (_, _, _, _, nwakes, nflows, nbins, ncpus, nthreads, _, ncls, nstreams,
     nprob, _) = struct.unpack_from("<QQQQQQIIIIIIII", buf, 32)
    off = (120 + up((nbins + 1) * 8) + up(nstreams) + up(nprob * 24) + up(nwakes * 32) +
           nflows * 56)
    for _ in range(ncpus):
        nsw = struct.unpack_from("<Q", buf, off)[0]
        off += 8 + up(nsw * 16) + up(nbins * 4)
        off += up(ncls) + 4 * 4096 * sum(buf[off:off + ncls])
    recs = []
    for _ in range(nthreads):
        recs.append(off)
        nrun, nst = struct.unpack_from("<QQ", buf, off + 16)
        nlev = struct.unpack_from("<40Q", buf, off + 48)
        has_bins, has_cbins = buf[off + 373], buf[off + 374]
        off += 392 + (up(nbins * 4) if has_bins else 0)
        if has_cbins:
            off += up(ncls) + 4 * 4096 * sum(buf[off:off + ncls])
        off += nrun * 16 + nst * 16 + (nst + 31) // 32 * 64
        for n in nlev:
            off += n * 24 + up((n + 63) // 64 * 8)
            off += up((nbins + 1) * 4) if 4096 <= n < 2**32 - 1 else 0
    check(off + up(len(recs) * 4) == len(buf), f"walking the cache: {off} of {len(buf)} bytes")
    return recs


if path:
    good = open(path, "rb").read()
    recs = thread_records(good)
    rng = random.Random(20)
    for i in range(16):
        bad = bytearray(good)
        for _ in range(4):
            bad[rng.randrange(120, len(bad))] = rng.randrange(256)
            r = rng.choice(recs)
            bad[r + rng.randrange(16, 372)] = rng.randrange(256)  # to the row
        with open(path, "wb") as f:
            f.write(bad)
        got, how, err = answers(a)
        check(got is not None and how in ("used", "built", "writing"),
              f"body changed ({i}): no answers, cache {how!r} ({err})")
    with open(path, "wb") as f:
        f.write(good)

# another trace under the same path (sizes, mtimes and uuid differ): rebuilt
moving = os.path.join(work, "moving")
shutil.copytree(a, moving)
got, how, err = answers(moving)
built(how, err, "copy of a")
b = record("b", 2, 7000)
ref_b, _, _ = answers(b, "--no-cache")
shutil.rmtree(moving)
shutil.copytree(b, moving)
got, how, err = answers(moving)
built(how, err, "trace replaced")
same(ref_b, got, "trace replaced")
# a stream file touched (a trace still being written)
stream = next(p for p in tree(moving) if os.path.basename(p).startswith("cpu")
              or "stream" in os.path.basename(p))
os.utime(stream, ns=(0, os.stat(stream).st_mtime_ns + 1000))
got, how, err = answers(moving)
built(how, err, f"stream {stream} touched")

# no cache folder can be made (XDG_CACHE_HOME under a file): served uncached
blocker = os.path.join(work, "not-a-folder")
open(blocker, "w").close()
got, how, err = answers(a, env=dict(env, XDG_CACHE_HOME=blocker))
check(how == "off" and "no cache folder" in err, f"no cache folder: cache {how!r} ({err})")
same(ref, got, "no cache folder")

# a read-only trace: a read-only bind mount where we may make one
ro = os.path.join(work, "ro")
os.makedirs(ro)
mounted = subprocess.run(["mount", "--bind", "-o", "ro", a, ro], stderr=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL).returncode == 0
if mounted:
    try:
        probe = os.path.join(ro, ".probe")
        try:
            open(probe, "w").close()
            os.unlink(probe)
            check(False, "the read-only mount is writable")
        except OSError:
            pass
        got, how, err = answers(ro)
        built(how, err, "read-only trace, first open")
        same(ref, got, "read-only trace")
        got, how, _ = answers(ro)
        check(how == "used", f"read-only trace: second open {how!r}")
    finally:
        subprocess.run(["umount", ro])
else:
    print("view-cache: no read-only mount here (not root?): that part skipped")

if failed:
    print(f"view-cache: {len(failed)} failed", file=sys.stderr)
    sys.exit(1)
print("view-cache: ok")
