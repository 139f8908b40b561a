#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""libstrata-locks.so and `strata locks` against the test programs' own truth.

usage: locks_test.py contention|rwlock|unchanged|sigfork|symbols|record STRATA LIBLOCKS CONTEND SIGFORK WORKDIR CONTEND_NOPIE
"""
import json
import os
import shutil
import subprocess
import sys

PART, STRATA, LIB, CONTEND, SIGFORK, WORK, CONTEND_NOPIE = sys.argv[1:8]
WORKERS, ROUNDS, COLD, HOLD_US = 3, 40, 50, 300


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, preload=None, trace=None, timeout=120):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("STRATA_OUTPUT", None)
    if preload:
        env["LD_PRELOAD"] = preload
    if trace:
        env["STRATA_OUTPUT"] = trace
        # the default, crash-guarded embedded mode: its guardian runs
        # without the preload (src/lib/guard.c, guardian_env)
        env.pop("STRATA_GUARD", None)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode:
        fail("%s exited %d: %s" % (cmd, p.returncode, p.stderr))
    return p.stdout


def contend(preload, name, mode="mutex"):
    truth = os.path.join(WORK, name + ".json")
    trace = os.path.join(WORK, name) if preload else None
    out = run([CONTEND, str(WORKERS), str(ROUNDS), str(COLD), truth, str(HOLD_US), mode],
              preload, trace)
    with open(truth) as f:
        return out, json.load(f), trace


def near(what, got, want, tol):
    print("%s: traced %d, program %d (%+.2f %%)" % (what, got, want,
          100.0 * (got - want) / want))
    if abs(got - want) > tol * want:
        fail("%s off by more than %d %%" % (what, tol * 100))


def contention(mode="mutex"):
    _, truth, trace = contend(LIB, "t", mode)
    rep = json.loads(run([STRATA, "locks", "--format", "json", "--top", "0", trace]))
    locks = rep["locks"]
    if not locks or int(locks[0]["addr"], 16) != int(truth["hot"], 16):
        fail("the hot lock %s is not ranked first: %s" % (truth["hot"], locks[:2]))
    hot = locks[0]
    if hot["contended"] != truth["hot_contended"] or hot["failed"]:
        fail("hot contended %d (failed %d), the program says %d" % (
            hot["contended"], hot["failed"], truth["hot_contended"]))
    if hot["holds"] != truth["hot_contended"]:
        fail("hot holds %d, want %d" % (hot["holds"], truth["hot_contended"]))
    cold = {int(a, 16) for a in truth["cold"]}
    if any(int(l["addr"], 16) in cold for l in locks):
        fail("an uncontended cold lock is reported: %s" % locks)
    kind = "rwlock-r" if mode == "rw" else "mutex"
    if hot["kind"] != kind:
        fail("hot lock kind %s, want %s" % (hot["kind"], kind))
    tids = sorted(t["tid"] for t in truth["threads"])
    if hot["tids"] != tids:
        fail("hot waiters %s, want %s" % (hot["tids"], tids))
    want = sum(t["acquisitions"] for t in truth["threads"]) + truth["main_acquisitions"]
    # the tracer's own threads may take locks too: at least the program's
    if rep["acquisitions"] < want or rep["contended"] < truth["hot_contended"]:
        fail("acquisitions %d contended %d, the program's %d and %d" % (
            rep["acquisitions"], rep["contended"], want, truth["hot_contended"]))
    near("total wait", hot["wait_ns"], truth["wait_ns"], 0.05)
    near("total hold", hot["hold_ns"], truth["hold_ns"], 0.05)
    # a static lock is named by its symbol (PIE executable here)
    name = "hot_rw" if mode == "rw" else "hot"
    if hot["name"] != name or not hot["symbolized"]:
        fail("hot lock named %r (symbolized %s), want %r" % (hot["name"], hot["symbolized"], name))
    text = run([STRATA, "locks", "--sort", "count", trace])
    lines = text.splitlines()
    rows = [l.split() for l in lines[lines.index(next(l for l in lines if l.strip().startswith("lock "))) + 1:] if l.strip()]
    if not rows or rows[0][0] != name:
        fail("text report: hot lock not first:\n" + text)
    print(text)


def unchanged():
    a, _, _ = contend(None, "bare")
    b, _, _ = contend(LIB, "t")
    if a != b:
        fail("contend's output changed under the preload:\n%s---\n%s" % (a, b))
    a = run([SIGFORK])
    b = run([SIGFORK], LIB, os.path.join(WORK, "s"))
    if a != b:
        fail("sigfork's output changed under the preload:\n%s---\n%s" % (a, b))
    print(a + b)


def sigfork():
    trace = os.path.join(WORK, "s")
    out = run([SIGFORK], LIB, trace, timeout=60)
    if "children 20 ok; handler ran yes" not in out:
        fail("sigfork: " + out)
    rep = json.loads(run([STRATA, "locks", "--format", "json", trace]))
    if rep["open_waits"] or rep["orphans"]:
        fail("unpaired lock events: %s" % rep)
    print(out, "acquisitions %d contended %d" % (rep["acquisitions"], rep["contended"]))


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
def symbols():
    """Static locks named by symbol in a non-PIE executable and a shared
    library; a binary replaced since the trace is not read, and says so."""
    global CONTEND
    for exe, mode, want in ((CONTEND_NOPIE, "mutex", "hot"), (CONTEND, "lib", "lib_hot")):
        CONTEND = exe
        _, truth, trace = contend(LIB, "sym-" + mode, mode)
        rep = json.loads(run([STRATA, "locks", "--format", "json", trace]))
        got = rep["locks"][0] if rep["locks"] else {}
        print("%s %s: %s" % (os.path.basename(exe), mode, got.get("name")))
        if got.get("name") != want or not got.get("symbolized"):
            fail("%s (%s): hot lock named %r, want %r" % (exe, mode, got.get("name"), want))
    # a copy of the program, traced, then rebuilt (a new file over it)
    copy = os.path.join(WORK, "contend-copy")
    shutil.copy(CONTEND_NOPIE, copy)
    CONTEND = copy
    _, truth, trace = contend(LIB, "sym-changed")
    shutil.copy(CONTEND_NOPIE, copy + ".new")
    os.replace(copy + ".new", copy)
    rep = json.loads(run([STRATA, "locks", "--format", "json", trace]))
    got = rep["locks"][0] if rep["locks"] else {}
    print("replaced binary: %s" % got.get("name"))
    if got.get("symbolized") or "changed since the trace" not in got.get("name", ""):
        fail("a binary replaced since the trace was read: %r" % got)
    if int(got["addr"], 16) != int(truth["hot"], 16):
        fail("replaced binary: lock 0x%x, the program's %s" % (int(got["addr"], 16), truth["hot"]))


def record():
    """strata record --locks: the preload set up by record, for the command
    and its children (a shell runs the program): the same exact counts."""
    truth_path = os.path.join(WORK, "rec.json")
    trace = os.path.join(WORK, "rec")
    shutil.rmtree(trace, ignore_errors=True)
    run([STRATA, "record", "--locks", "-o", trace, "--", "sh", "-c",
         " ".join([CONTEND, str(WORKERS), str(ROUNDS), str(COLD), truth_path, str(HOLD_US)])])
    with open(truth_path) as f:
        truth = json.load(f)
    rep = json.loads(run([STRATA, "locks", "--format", "json", trace]))
    hot = rep["locks"][0] if rep["locks"] else {}
    print("record --locks: %s contended %s of %d" % (hot.get("name"), hot.get("contended"),
                                                   truth["hot_contended"]))
    if hot.get("name") != "hot" or hot.get("contended") != truth["hot_contended"]:
        fail("record --locks: %r, the program says %d contended" % (hot, truth["hot_contended"]))
    # a bad STRATA_LOCKS_LIB is one clear line and exit 2, nothing run
    env = dict(os.environ, STRATA_LOCKS_LIB=os.path.join(WORK, "nonexistent.so"))
    p = subprocess.run([STRATA, "record", "--locks", "-o", trace + "-bad", "--", "true"],
                       env=env, capture_output=True, text=True)
    if p.returncode != 2 or "STRATA_LOCKS_LIB" not in p.stderr or os.path.exists(trace + "-bad"):
        fail("record --locks with a missing library: exit %d, %r" % (p.returncode, p.stderr))


{"record": record, "symbols": symbols, "contention": contention, "rwlock": lambda: contention("rw"), "unchanged": unchanged, "sigfork": sigfork}[PART]()
print("ok")
