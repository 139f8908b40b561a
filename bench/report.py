#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turns the raw result lines of bench/run.sh into BENCHMARKS.md (tables, ratios, PASS/FAIL per target)."""
import argparse
import re
import statistics
import sys
from collections import defaultdict

LINE = re.compile(r"^([A-Z_]+) (.*)$")


def parse_kv(s):
    out = {}
    for tok in s.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k] = v
    return out


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


class Results:
    def __init__(self, path):
        self.rep = defaultdict(list)       # (suite, threads) -> [ns_ev per rep]
        self.rep_tsc = defaultdict(list)
        self.rep_max = defaultdict(list)   # slowest thread, per rep
        self.rep_ratio = defaultdict(list) # ÷ the paired floor of the same rep
        self.rep_cpu = defaultdict(list)   # the threads' own CPU time per event
        self.rep_ivcsw = defaultdict(list) # involuntary switches, all threads
        self.count = {}                    # (suite, threads) -> dict
        self.logged = {}
        self.sustain = []                  # trials of the default rings
        self.sustained = None              # the default rings' result
        self.sustained_other = []          # results with other rings
        self.workers = defaultdict(list)   # (density, variant) -> seconds
        self.workers_trace = {}            # density -> bytes
        self.callgrind = {}
        self.skips = []
        self.failed = []
        self.info = {}
        self.oob = []                      # out-of-the-box runs (bench_oob)
        self.oob_disk = []                 # the disk's O_DIRECT bandwidth, per measurement
        self.oob_setup = None
        with open(path) as f:
            for line in f:
                m = LINE.match(line.strip())
                if not m:
                    continue
                kind, kv = m.group(1), parse_kv(m.group(2))
                if kind == "RESULT":
                    key = (kv["suite"], int(kv["threads"]))
                    self.rep[key].append(float(kv["ns_ev"]))
                    self.rep_tsc[key].append(float(kv.get("tsc_ev", "nan")))
                    self.rep_max[key].append(float(kv.get("ns_ev_max", kv["ns_ev"])))
                    if "cpu_ns_ev" in kv:
                        self.rep_cpu[key].append(float(kv["cpu_ns_ev"]))
                        self.rep_ivcsw[key].append(int(kv.get("nivcsw", 0)))
                    fl = float(kv.get("floor_ns", 0) or 0)
                    if fl > 0:
                        self.rep_ratio[key].append(float(kv["ns_ev"]) / fl)
                elif kind == "COUNT":
                    self.count[(kv["suite"], int(kv["threads"]))] = kv
                elif kind == "SUSTAIN":
                    if kv.get("rings", "default") == "default":
                        self.sustain.append(kv)
                elif kind == "SUSTAINED":
                    if kv.get("rings", "default") == "default":
                        self.sustained = kv
                    else:
                        self.sustained_other.append(kv)
                elif kind == "WORKERS":
                    self.workers[(kv.get("density", "dense"), kv["variant"])].append(
                        float(kv["seconds"]))
                elif kind == "WORKERS_TRACE":
                    if kv.get("bytes"):
                        self.workers_trace[kv.get("density", "dense")] = int(kv["bytes"])
                elif kind == "CALLGRIND":
                    self.callgrind[kv["name"]] = kv
                elif kind == "SKIP":
                    self.skips.append((kv.get("what", "?"), kv.get("reason", "").replace("_", " ")))
                elif kind == "FAILED":
                    self.failed.append(kv.get("tag", "?"))
                elif kind == "OOB":
                    self.oob.append(kv)
                elif kind == "OOB_DISK":
                    self.oob_disk.append(kv)
                elif kind == "OOB_SETUP":
                    self.oob_setup = kv
                elif kind == "INFO":
                    self.info.update(kv)

    def stats(self, suite, threads):
        v = self.rep.get((suite, threads))
        if not v:
            return None
        return statistics.median(v), min(v), max(v), len(v)

    def paired(self, suite, threads):
        v = self.rep_ratio.get((suite, threads))
        if not v:
            return None
        return statistics.median(v), min(v), max(v), len(v)

    def cpu(self, suite, threads):
        v = self.rep_cpu.get((suite, threads))
        if not v:
            return None
        return statistics.median(v), min(v), max(v), len(v)

    def ivcsw(self, suite, threads):
        v = self.rep_ivcsw.get((suite, threads))
        return statistics.median(v) if v else None

    def med(self, suite, threads):
        s = self.stats(suite, threads)
        return s[0] if s else None


def fmt(x, d=1):
    if x is None:
        return "n/a"
    return f"{x:.{d}f}"


def cell(st, d=1):
    if not st:
        return "n/a"
    m, lo, hi, _ = st
    return f"{m:.{d}f} [{lo:.{d}f}–{hi:.{d}f}]"


def ratio(a, b, d=2):
    if a is None or b is None or b == 0:
        return "n/a"
    return f"{a / b:.{d}f}×"


def loss_cell(c, overwrite=False):
    if not c:
        return "not counted"
    logged = int(c.get("logged", 0))
    rec = int(c.get("recorded", 0))
    lost = int(c.get("lost", 0))
    if overwrite:
        return f"{rec:,} kept of {logged:,} (overwrite mode); dropped {lost:,}"
    missing = logged - rec - lost
    s = f"{lost:,} lost of {logged:,}"
    if missing > 0:
        s += f"; **{missing:,} unaccounted**"
    elif missing < 0:
        s += f" (+{-missing:,} on disk from before)"
    return s


def lost_of(c):
    if not c:
        return None
    logged = int(c.get("logged", 0))
    rec = int(c.get("recorded", 0))
    lost = int(c.get("lost", 0))
    return max(lost, logged - rec)


def spread(st):
    if not st or st[0] == 0:
        return None
    return (st[2] - st[1]) / st[0] * 100


# ---- out of the box (bench_oob: started by the environment) ------------------------

OOB_MODES = [
    ("embedded", "embedded: `STRATA_OUTPUT` (in-process consumer thread)"),
    ("guarded", "embedded, guarded: `STRATA_OUTPUT` + `STRATA_GUARD=1` (guardian process)"),
    ("record", "`strata record -o DIR -- PROGRAM` (session daemon)"),
    ("block", "embedded, `STRATA_MODE=block`"),
]
OOB_LABEL = {m: label for m, label in OOB_MODES}


def med3(xs):
    """(median, min, max, n) of a non-empty list, else None"""
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return statistics.median(xs), min(xs), max(xs), len(xs)


class Oob:
    """The runs of bench_oob by mode and fraction of the disk's bandwidth
    (0: flat out), with what each figure is derived from."""

    def __init__(self, R):
        self.runs = defaultdict(list)  # (mode, frac) -> [run]
        for kv in R.oob:
            r = {k: num(v) for k, v in kv.items()}
            for k in ("med_ns_ev", "nivcsw", "packets_lost", "asked", "minflt",
                      "cons_cpu_ns", "cons_wait_ns", "steal_ms", "steal_max_ms", "disk_mb",
                      "disk_busy_ms", "rc"):
                r.setdefault(k, None)
            r["mode"] = kv["mode"]
            r["via"] = kv.get("via")
            r["frac"] = float(kv["frac"])
            n = r["logged"] or 0
            secs = (r["loop_ns"] or 0) / 1e9
            r["ns_ev"] = r["loop_ns"] / n if n else None
            r["cpu_ev"] = r["cpu_ns"] / n if n else None
            r["call_ev"] = r["call_ns"] / n if n else None
            r["lost"] = max(int(r["discarded"] or 0), int(n - (r["recorded"] or 0)))
            r["unaccounted"] = int(n - (r["recorded"] or 0) - (r["discarded"] or 0))
            r["mbps"] = r["stream_bytes"] / 1e6 / secs if secs else None
            # what the producer offered: its events at the trace's bytes per event
            bpe = r["stream_bytes"] / r["recorded"] if r["recorded"] else 12.0
            r["offered_mbps"] = n * bpe / 1e6 / secs if secs else None
            self.runs[(r["mode"], r["frac"])].append(r)
        self.disk = med3([num(d.get("mbps")) for d in R.oob_disk])
        self.direct = all(d.get("direct") == "1" for d in R.oob_disk)
        st = R.oob_setup or {}
        self.setup_mbps = num(st.get("disk_mbps"))
        self.ms = st.get("ms", "?")
        self.reps = st.get("reps", "?")
        self.fracs = sorted({f for (_, f) in self.runs if f > 0})

    def get(self, mode, frac):
        return self.runs.get((mode, frac), [])

    def paired(self, mode, base, frac, key):
        """mode ÷ base of one figure, per repetition (same rep, same rate)"""
        b = {r["rep"]: r for r in self.get(base, frac)}
        out = []
        for r in self.get(mode, frac):
            o = b.get(r["rep"])
            if o and r[key] and o[key]:
                out.append(r[key] / o[key])
        return med3(out)

    def paired_all_fracs(self, mode, base, key):
        out = []
        for f in self.fracs:
            b = {r["rep"]: r for r in self.get(base, f)}
            for r in self.get(mode, f):
                o = b.get(r["rep"])
                if o and r[key] and o[key]:
                    out.append(r[key] / o[key])
        return med3(out)


def oob_loss_cell(runs):
    if not runs:
        return "n/a"
    logged = sum(int(r["logged"]) for r in runs)
    lost = sum(r["lost"] for r in runs)
    bad = [r for r in runs if r["lost"]]
    unacc = sum(abs(r["unaccounted"]) for r in runs)
    plost = sum(int(r.get("packets_lost") or 0) for r in runs)
    if not lost:
        s = f"0 of {logged:,}"
    else:
        worst = max(r["lost"] / r["logged"] for r in bad) * 100
        s = (f"**{lost:,} of {logged:,} ({lost / logged * 100:.2f} %)**, "
             f"{len(bad)} of {len(runs)} runs (worst {worst:.2f} %)")
    if plost:
        s += f"; {plost:,} packets lost"
    if unacc:
        s += f"; **{unacc:,} unaccounted** (recorded + discarded ≠ logged)"
    return s


def oob_lossy_runs(R, O, w):
    """Each run that lost events below the flat-out rows, beside what might
    explain it: the disk as measured at its repetition's start and the next
    one's, the rate the producer reached, how long the consumer waited
    for a CPU and how often the producer was preempted. A loss that
    coincides with a slow disk or a starved consumer is the machine's; one
    that does not is strata's to explain."""
    disk = {}
    for d in R.oob_disk:
        try:
            disk[float(d.get("rep"))] = num(d.get("mbps"))
        except (TypeError, ValueError):
            pass
    bad = sorted((r for (m, f), rs in O.runs.items() if f > 0 for r in rs if r["lost"]),
                 key=lambda r: (r["rep"] or 0, r["frac"], r["mode"]))
    if not bad:
        return
    w("**The paced runs that lost events**, one by one: the disk's bandwidth measured at "
      "the start of the run's repetition and of the next one (a run lies between the two), "
      "the rate the run's trace reached, the consumer's wait for a CPU, the producer's "
      "preemptions, the hypervisor's steal time over the run (all CPUs; the most of one "
      "CPU: a virtual CPU the host does not run is a wait that no figure inside the guest "
      "shows), and the traces' device over the run: the share of it with a write in flight "
      "(the consumer writes one at a time) and what it wrote per second.")
    w("")
    w("| rep | rate | mode | lost | disk MB/s at the rep's start, next | trace MB/s | "
      "consumer waiting for a CPU | producer preemptions | steal ms (one CPU) | "
      "device busy, MB/s |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in bad:
        rep = r["rep"] or 0
        d0, d1 = disk.get(float(rep)), disk.get(float(rep + 1))
        wait = (f"{r['cons_wait_ns'] / 1e6:.1f} ms ({r['cons_wait_ns'] / r['loop_ns'] * 100:.1f} %)"
                if r.get("cons_wait_ns") is not None and r["loop_ns"] else "n/a")
        w(f"| {rep:.0f} | {r['frac'] * 100:.0f} % | {r['mode']} | "
          f"{r['lost']:,} ({r['lost'] / r['logged'] * 100:.2f} %) | "
          f"{fmt(d0) if d0 else 'n/a'}, {fmt(d1) if d1 else 'none after'} | "
          f"{fmt(r['mbps'])} | {wait} | {fmt(r['nivcsw'] or 0, 0)} | {steal(r)} | {device(r)} |")
    w("")
    # steal over the lossy runs beside the others: a loss the host caused
    # comes with more of it
    good = [r for (m, f), rs in O.runs.items() if f > 0 for r in rs
            if not r["lost"] and r.get("steal_ms") is not None]
    lossy = sorted(r["steal_ms"] for r in bad if r.get("steal_ms") is not None)
    if good and lossy:
        st = sorted(r["steal_ms"] for r in good)
        w(f"Steal time over these {len(lossy)} runs: median {fmt(statistics.median(lossy), 0)} ms, "
          f"at most {fmt(lossy[-1], 0)}; over the {len(good)} paced runs that lost nothing: "
          f"median {fmt(statistics.median(st), 0)} ms, at most {fmt(st[-1], 0)}.")
        w("")
    busy_bad = sorted(b for b in (busy(r) for r in bad) if b is not None)
    busy_good = sorted(b for b in (busy(r) for r in good) if b is not None)
    if busy_bad and busy_good:
        w(f"The device busy over these runs: median {fmt(statistics.median(busy_bad), 0)} %, "
          f"[{fmt(busy_bad[0], 0)}–{fmt(busy_bad[-1], 0)} %]; over the paced runs that lost "
          f"nothing: median {fmt(statistics.median(busy_good), 0)} %, "
          f"[{fmt(busy_good[0], 0)}–{fmt(busy_good[-1], 0)} %].")
        w("")


def busy(r):
    """The share of a run the traces' device had a write in flight, %, or None."""
    b = r.get("disk_busy_ms")
    if b is None or b < 0 or not r["loop_ns"]:
        return None
    return b / (r["loop_ns"] / 1e6) * 100


def device(r):
    """The device's busy share and write rate over a run, 'n/a' without them."""
    b = busy(r)
    if b is None or r.get("disk_mb") is None:
        return "n/a"
    return f"{fmt(b, 0)} %, {fmt(r['disk_mb'] / (r['loop_ns'] / 1e9), 0)}"


def steal(r):
    """A run's steal time, 'n/a' from a bench_oob that did not measure it."""
    if r.get("steal_ms") is None:
        return "n/a"
    return f"{fmt(r['steal_ms'], 0)} ({fmt(r.get('steal_max_ms') or 0, 0)})"


def oob_section(R, w):
    """Writes the section; returns its rows of the Targets table."""
    O = Oob(R)
    targets = []
    w("## Out of the box: default rings, no pinning, started by the environment (1 thread)")
    w("")
    if not O.runs:
        w("not measured")
        w("")
        return targets
    disk = O.disk[0] if O.disk else None
    w(f"`bench_oob` logs 1-field strata-gen events (12 bytes on disk) from one thread that "
      f"is not pinned, for {O.ms} ms per run, through whatever its environment starts, as "
      "a user's program would: no `strata_start()`, the default rings (docs/record.md "
      "\"Ring size\": 64 × 256 KiB per CPU up to 8 CPUs), discard mode unless said. Four modes, interleaved within each of the "
      f"{O.reps} repetitions (their order rotated): flat out, then paced at fractions of "
      "the disk's own bandwidth (a CPU-bound program: it spins between bursts of 64 "
      "events). Recorded and discarded come from `strata info` of each trace; "
      "\"lost\" is logged − recorded. ns/event is the producer's: wall time of the loop ÷ "
      "events logged (flat out) or time inside the bursts of calls ÷ events (paced); "
      "\"on-CPU\" is the thread's CPU time over the loop ÷ events; \"usual\" the median "
      "chunk of calls (4096 flat out, 64 paced) ÷ its events, which preemptions and the "
      "rare slow path do not move. Page faults are the producer thread's (minor) over "
      "the loop. The consumer's figures are its threads' (`/proc/PID/task/*/schedstat`: "
      "the in-process thread, the guardian, or the `strata record` process) over the "
      "loop: CPU time per MB written, and the share of the loop it spent runnable but "
      "waiting for a CPU. Medians over the repetitions, [min–max].")
    w("")
    lat = ""
    p99 = [num(d.get("p99_ms")) for d in R.oob_disk if d.get("p99_ms")]
    mx = [num(d.get("max_ms")) for d in R.oob_disk if d.get("max_ms")]
    if p99 and mx:
        lat = (f"; one 1 MiB write took {fmt(statistics.median(num(d['p50_ms']) for d in R.oob_disk if d.get('p50_ms')), 2)} ms "
               f"(median), {fmt(max(p99), 2)} ms at the 99th percentile and {fmt(max(mx), 1)} ms at worst "
               "(the worst measurement of each)")
    w(f"The disk: a new file on the traces' file system, written sequentially with "
      f"{'`O_DIRECT`' if O.direct else 'buffered (the file system refused `O_DIRECT`)'} "
      f"1 MiB writes, one at a time, then `fdatasync` (as the consumer writes its "
      f"batches, docs/record.md \"Direct I/O\"), {len(R.oob_disk)} times in the run (3 before, "
      f"one per repetition): **{cell(O.disk)} MB/s**{lat}. The paced rates are fractions of "
      f"{fmt(O.setup_mbps)} MB/s, the median of the first three.")
    w("")

    def cons_cells(runs):
        cpu = med3([r["cons_cpu_ns"] / 1e6 / (r["stream_bytes"] / 1e6)
                    for r in runs if r.get("cons_cpu_ns") is not None and r["stream_bytes"]])
        wt = med3([r["cons_wait_ns"] / r["loop_ns"] * 100
                   for r in runs if r.get("cons_wait_ns") is not None and r["loop_ns"]])
        return (cell(cpu, 2) if cpu else "n/a",
                f"{wt[0]:.0f} % [{wt[1]:.0f}–{wt[2]:.0f} %]" if wt else "n/a")

    def faults(runs):
        v = [r["minflt"] for r in runs if r.get("minflt") is not None]
        return fmt(statistics.median(v), 0) if v else "n/a"

    w("**Flat out**: the producer logs as fast as it can for the whole run, which on "
      "most machines is more than the disk takes, so every discard mode loses events "
      "here and the modes do not lose the same share: an event dropped because the ring "
      "is full goes through the slow path, so the per-event figures of two modes that "
      "lost different shares compare different work (the paced rows compare the same).")
    w("")
    w("| mode | ns/event | on-CPU ns/event | usual ns/event | × embedded (paired) | "
      "producer: preemptions, page faults | consumer: CPU ms per MB, waiting for a CPU | "
      "trace MB/s (% of the disk) | events lost |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for m, label in OOB_MODES:
        runs = O.get(m, 0.0)
        if not runs:
            continue
        st = med3([r["ns_ev"] for r in runs])
        pr = O.paired(m, "embedded", 0.0, "ns_ev") if m != "embedded" else None
        mb = med3([r["mbps"] for r in runs])
        pct = f" ({mb[0] / disk * 100:.0f} %)" if mb and disk else ""
        cc, cw = cons_cells(runs)
        w(f"| {label} | {cell(st)} | {cell(med3([r['cpu_ev'] for r in runs]))} | "
          f"{cell(med3([r['med_ns_ev'] for r in runs]))} | "
          f"{cell(pr, 2) if pr else '—'} | "
          f"{fmt(statistics.median(r['nivcsw'] or 0 for r in runs), 0)}, {faults(runs)} | "
          f"{cc}, {cw} | {cell(mb)}{pct} | {oob_loss_cell(runs)} |")
    w("")
    if O.fracs:
        w("**Paced, at fractions of the disk's bandwidth**: ns/event is the time inside the "
          "calls, \"usual\" the median burst's.")
        w("")
        w("| rate | mode | trace MB/s | ns/event | usual ns/event | × embedded (paired) | "
          "producer page faults | consumer: CPU ms per MB, waiting for a CPU | events lost |")
        w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for f in O.fracs:
            for m, label in OOB_MODES:
                rs = O.get(m, f)
                if not rs:
                    continue
                asked = rs[0]["asked"] or 0
                mb = med3([r["mbps"] for r in rs])
                pr = O.paired(m, "embedded", f, "call_ev") if m != "embedded" else None
                cc, cw = cons_cells(rs)
                w(f"| {f * 100:.0f} % ({asked * 12 / 1e6:.0f} MB/s, {asked / 1e6:.2f} M events/s) | "
                  f"{m} | {fmt(mb and mb[0])} | {cell(med3([r['call_ev'] for r in rs]))} | "
                  f"{cell(med3([r['med_ns_ev'] for r in rs]))} | {cell(pr, 2) if pr else '—'} | "
                  f"{faults(rs)} | {cc}, {cw} | {oob_loss_cell(rs)} |")
        w("")
    oob_lossy_runs(R, O, w)
    odd = [r for rs in O.runs.values() for r in rs
           if r.get("via") and r["via"] != {"embedded": "inproc", "block": "inproc",
                                            "guarded": "guardian", "record": "daemon"}[r["mode"]]]
    bad_rc = [r for rs in O.runs.values() for r in rs if r.get("rc")]
    if odd or bad_rc:
        w(f"**Warning**: {len(odd)} runs did not record the way their mode says (e.g. no "
          f"guardian: the tool was not found) and {len(bad_rc)} exited non-zero; see stderr.log.")
        w("")
    # ---- targets -----------------------------------------------------------------
    # Below the disk's bandwidth nothing may be lost: every paced run, and
    # the flat-out runs whose own rate came out below the disk's (on a
    # loaded machine a producer that gets part of a CPU logs less than the
    # disk takes).
    for m in ("embedded", "guarded", "record"):
        below = [r for f in O.fracs for r in O.get(m, f)]
        below += [r for r in O.get(m, 0.0)
                  if disk and r["offered_mbps"] and r["offered_mbps"] < disk]
        if not below:
            targets.append((f"{m}: defaults lose nothing below the disk's bandwidth",
                            "not measured", "NOT MEASURED"))
            continue
        nflat = sum(1 for r in below if r["frac"] == 0)
        bad = [r for r in below if r["lost"] or r["unaccounted"]]
        rng = (f"paced at {', '.join(f'{f * 100:.0f}' for f in O.fracs)} % of "
               f"{fmt(O.setup_mbps)} MB/s" if O.fracs else "")
        if nflat:
            rng += (", and " if rng else "") + f"{nflat} flat-out run{'s' if nflat > 1 else ''} " \
                f"that offered less than the disk's {fmt(disk)} MB/s"
        if not bad:
            meas = f"0 lost in {len(below)} runs ({rng})"
        else:
            wr = max(bad, key=lambda r: r["lost"] / r["logged"])
            at = (f"{wr['frac'] * 100:.0f} % of the disk" if wr["frac"] else
                  f"flat out, {fmt(wr['offered_mbps'])} MB/s offered")
            meas = (f"lost in {len(bad)} of {len(below)} runs ({rng}); worst "
                    f"{wr['lost']:,} of {int(wr['logged']):,} ({wr['lost'] / wr['logged'] * 100:.2f} %) "
                    f"at {at}, trace {fmt(wr['mbps'])} MB/s")
            un = sum(abs(r["unaccounted"]) for r in below)
            if un:
                meas += f"; {un:,} unaccounted"
        targets.append((f"{m} (`{'STRATA_OUTPUT' if m == 'embedded' else 'STRATA_GUARD=1' if m == 'guarded' else 'strata record'}`): "
                        "defaults lose nothing below the disk's bandwidth",
                        meas, "PASS" if not bad else f"FAIL ({len(bad)} of {len(below)} runs lost events)"))
    # The producer's cost: record ÷ embedded, paired by repetition.
    for key, what, frac in (("ns_ev", "flat out, wall ns/event", 0.0),
                            ("call_ev", "paced, ns/event inside the calls", None)):
        pr = (O.paired("record", "embedded", frac, key) if frac is not None
              else O.paired_all_fracs("record", "embedded", key))
        if not pr:
            continue
        notes = [f"{cell(pr, 2)} over {pr[3]} pairs"]
        if frac is not None:
            c = O.paired("record", "embedded", 0.0, "cpu_ev")
            u = O.paired("record", "embedded", 0.0, "med_ns_ev")
            if c:
                notes.append(f"on-CPU {cell(c, 2)}")
            if u:
                notes.append(f"usual {cell(u, 2)}")
            e, r_ = O.get("embedded", 0.0), O.get("record", 0.0)
            notes.append(f"{fmt(statistics.median(x['ns_ev'] for x in r_))} vs "
                         f"{fmt(statistics.median(x['ns_ev'] for x in e))} ns")
        else:
            u = O.paired_all_fracs("record", "embedded", "med_ns_ev")
            if u:
                notes.append(f"usual {cell(u, 2)}")
        ok = pr[0] <= 1.10
        targets.append((f"record mode costs the producer ≤ 1.10 × embedded ({what})",
                        "; ".join(notes), "PASS" if ok else "FAIL"))
    # Blocking mode: nothing lost, whatever the rate; its cost is beside.
    blk = [r for (m, f), rs in O.runs.items() if m == "block" for r in rs]
    if blk:
        bad = [r for r in blk if r["lost"] or r["unaccounted"]]
        fl = O.get("block", 0.0)
        meas = [f"{sum(r['lost'] for r in blk):,} lost of {sum(int(r['logged']) for r in blk):,} "
                f"in {len(blk)} runs"]
        if fl:
            st = med3([r["ns_ev"] for r in fl])
            mb = med3([r["mbps"] for r in fl])
            pr = O.paired("block", "embedded", 0.0, "ns_ev")
            meas.append(f"flat out {fmt(st[0])} ns/event ({cell(pr, 2) if pr else 'n/a'} × embedded, "
                        f"which discards), {fmt(mb and mb[0])} MB/s"
                        + (f" = {mb[0] / disk * 100:.0f} % of the disk" if mb and disk else ""))
        pc = O.paired_all_fracs("block", "embedded", "call_ev")
        if pc:
            meas.append(f"paced {cell(pc, 2)} × embedded")
        targets.append(("blocking mode (`STRATA_MODE=block`) loses nothing", "; ".join(meas),
                        "PASS" if not bad else f"FAIL ({len(bad)} of {len(blk)} runs lost events)"))
    # How much the machine's other work moved the figures
    sp = []
    for (m, f), rs in O.runs.items():
        st = med3([r["ns_ev"] if f == 0 else r["call_ev"] for r in rs])
        if st and st[3] > 1 and st[0]:
            sp.append((st[2] - st[1]) / st[0] * 100)
    cpu_share = med3([r["cpu_ns"] / r["loop_ns"] for rs in
                      (O.get(m, 0.0) for m, _ in OOB_MODES) for r in rs if r["loop_ns"]])
    if sp or cpu_share:
        parts = []
        if sp:
            parts.append(f"spread (max − min) ÷ median of the producer's cost over the "
                         f"repetitions: median {statistics.median(sp):.0f} %, worst {max(sp):.0f} %")
        if cpu_share:
            parts.append(f"flat out, the producer ran {cpu_share[0] * 100:.0f} % "
                         f"[{cpu_share[1] * 100:.0f}–{cpu_share[2] * 100:.0f} %] of its loop's wall time "
                         "(the rest it waited for a CPU: the consumer's, or other work on the machine)")
        if O.disk and O.disk[0]:
            parts.append(f"the disk's bandwidth varied {(O.disk[2] - O.disk[1]) / O.disk[0] * 100:.0f} % "
                         "over the run")
        w("Noise: " + "; ".join(parts) + ".")
        w("")
    return targets


def splice_oob(raw, report, note):
    """`run.sh --oob-only`: the out-of-the-box section and its Targets
    rows of an existing report replaced by those of `raw`, the rest kept."""
    R = Results(raw)
    sec = []
    targets = oob_section(R, sec.append)
    # the section says which run it comes from: not the report's header's
    sec[1:1] = ["", f"_This section: `bench/run.sh --oob-only`, {note}; the rest of the "
                "report is older (its header)._"]
    with open(report) as f:
        text = f.read()
    head = "\n" + sec[0] + "\n"
    i = text.find(head)
    if i < 0:
        sys.exit(f"report.py: {report} has no section '{sec[0]}'")
    j = text.find("\n## ", i + len(head))
    text = text[:i + 1] + "\n".join(sec).rstrip("\n") + "\n" + (text[j:] if j >= 0 else "")
    lines = text.split("\n")
    for t, meas, v in targets:
        row = f"| {t} | {meas} | {v} |"
        k = next((n for n, l in enumerate(lines) if l.startswith(f"| {t} |")), None)
        if k is None:
            sys.exit(f"report.py: {report}'s Targets has no row '{t}'")
        lines[k] = row
    with open(report, "w") as f:
        f.write("\n".join(lines))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--env")
    ap.add_argument("--out")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--splice-oob", metavar="REPORT",
                    help="replace only the out-of-the-box section and rows of REPORT")
    ap.add_argument("--note", default="", help="with --splice-oob: the run's commit and date")
    a = ap.parse_args()
    if a.splice_oob:
        return splice_oob(a.raw, a.splice_oob, a.note)
    if not a.env or not a.out:
        ap.error("--env and --out are required")

    env = {}
    with open(a.env) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                env[k] = v
    R = Results(a.raw)
    tn = int(re.search(r"threads_n=(\d+)", env.get("events", "threads_n=2")).group(1))
    ghz = num(R.info.get("tsc_ghz"))
    out = []
    w = out.append

    w("# strata benchmarks")
    w("")
    w("Generated by `make bench` (`bench/run.sh`); do not edit by hand."
      + (" **SMOKE RUN: tiny sizes, the figures mean nothing.**" if a.smoke else ""))
    w("")
    w("| | |")
    w("| --- | --- |")
    for k, label in [("date", "date"), ("commit", "commit"), ("cpu", "machine"),
                     ("cpus", "CPUs"), ("mhz", "cpu MHz (/proc/cpuinfo)"),
                     ("hypervisor", "virtualised"), ("kernel", "kernel"),
                     ("compiler", "compiler"), ("cflags", "flags"),
                     ("lttng_ust", "LTTng-UST"), ("lttng_tools", "lttng-tools"),
                     ("fxt", "FxT"), ("babeltrace2", "babeltrace2"),
                     ("outfs", "trace output file system"), ("events", "sizes"),
                     ("loadavg", "load average"),
                     ("perf_hw", "hardware counters (perf)"),
                     ("clocksource", "kernel clocksource"),
                     ("strata_clock", "strata's trace clock (metadata)")]:
        w(f"| {label} | {env.get(k, 'n/a')} |")
    if ghz:
        w(f"| TSC | {ghz:.3f} GHz (calibrated) |")
    w("")
    w("Every figure is the median of the repetitions, with [min–max]. Each repetition "
      "times one loop of events per thread (threads pinned, one per CPU, started "
      "together on a barrier) after an untimed warm-up of a tenth as many; ns/event "
      "is per thread. Every event is one call of a non-inlined function holding the "
      "tracepoint (the floor likewise), with one 64-bit payload word unless said "
      "otherwise. Buffers are sized so that one repetition fits (strata 128 MiB per "
      "CPU, LTTng 128 × 1 MiB per CPU, FxT one buffer for the whole run) and the "
      "consumers get a pause between repetitions; events lost are printed beside "
      "every speed, and a speed that lost events cannot pass a target.")
    w("")
    w("With more CPUs than this machine has: bench/SCALING.md (1 to 16 producer "
      "threads, strata against the floor and LTTng-UST, `bench/scale.sh`).")
    w("")

    # ---- event cost ---------------------------------------------------------
    floor1 = R.med("floor", 1)
    floorn = R.med("floor", tn)
    rows = [
        ("floor: rdtsc + 16-byte TLS store", "floor", False),
        ("strata, 1 word, discard, consumer → disk", "strata-ev1", False),
        ("strata, 1 u64 field, strata-gen function", "strata-gen1", False),
        ("strata, 2 words (STRATA_EVENT2)", "strata-ev2", False),
        ("strata, 8 words (strata_log_words)", "strata-ev8", False),
        ("strata, u64 + 3-byte string (strata-gen: reserve, copy, commit)", "strata-str", False),
        ("strata, 1 word, CAS protocol (`STRATA_RSEQ=0`, ring.md §2)", "strata-cas", False),
        ("strata, 1 word, CLOCK_MONOTONIC (`STRATA_CLOCK=mono`: rseq out of line)", "strata-mono", False),
        ("strata, 1 word, overwrite (flight recorder, memory)", "strata-overwrite", True),
        ("LTTng-UST, 1 × uint64, session → disk", "lttng", False),
        ("FxT, FUT_PROBE1, buffer → file", "fxt", False),
    ]
    w("## Enabled tracepoint: cost per event")
    w("")
    w("\"× floor (paired)\" is the median over repetitions of this loop ÷ a floor "
      "loop timed just before it on the same thread; it drifts far less than the "
      "ratio of two medians taken minutes apart (\"× floor\").")
    w("")
    w(f"| tracer | 1 thread ns/event | × floor | × floor (paired) | events lost (1 thread) | "
      f"{tn} threads ns/event/thread | × floor (paired) | × 1 thread | events lost ({tn} threads) |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, suite, ow in rows:
        s1, sn = R.stats(suite, 1), R.stats(suite, tn)
        if not s1 and not sn:
            continue
        p1, pn = R.paired(suite, 1), R.paired(suite, tn)
        w(f"| {label} | {cell(s1)} | {ratio(s1 and s1[0], floor1)} | {cell(p1, 2)} | "
          f"{loss_cell(R.count.get((suite, 1)), ow) if suite != 'floor' else '—'} | "
          f"{cell(sn)} | {cell(pn, 2)} | {ratio(sn and sn[0], s1 and s1[0])} | "
          f"{loss_cell(R.count.get((suite, tn)), ow) if suite != 'floor' else '—'} |")
    w("")
    fl = [R.stats(s + "-firstlap", t) for s in ("strata-ev1",) for t in (1,)]
    if fl[0]:
        w(f"The first lap of strata's fresh rings (untimed above: the pages of the "
          f"shared mapping are new; the consumer faults them in ahead of the writer, "
          f"docs/ring.md §1) cost {fmt(fl[0][0])} ns/event (1 thread, 1 word).")
        w("")

    if any(R.cpu(suite, tn) for _, suite, _ in rows):
        w(f"### One thread per core: contention, or a shared CPU?")
        w("")
        w("The same runs, timed by each producer thread's own CPU time "
          "(`CLOCK_THREAD_CPUTIME_ID` over the timed loop) instead of the wall clock. "
          "Contention between the threads (cache lines they both write, a shared buffer) "
          "costs CPU time; another thread running on a producer's CPU (the consumer, "
          f"which has no CPU of its own when {tn} pinned producers fill {tn} CPUs, or "
          "anything else on the machine) costs wall time only, and shows as involuntary "
          "context switches of the producers.")
        w("")
        w(f"| tracer | 1 thread, on-CPU ns/event | {tn} threads, on-CPU ns/event/thread | "
          f"× 1 thread (on-CPU) | × 1 thread (wall, above) | preemptions per repetition ({tn} threads) |")
        w("| --- | --- | --- | --- | --- | --- |")
        for label, suite, ow in rows:
            c1, cn = R.cpu(suite, 1), R.cpu(suite, tn)
            if not c1 or not cn:
                continue
            s1, sn = R.stats(suite, 1), R.stats(suite, tn)
            iv = R.ivcsw(suite, tn)
            w(f"| {label} | {cell(c1)} | {cell(cn)} | {ratio(cn[0], c1[0])} | "
              f"{ratio(sn and sn[0], s1 and s1[0])} | {fmt(iv, 0) if iv is not None else 'n/a'} |")
        w("")

    s_ev1 = R.med("strata-ev1", 1)
    s_ev1n = R.med("strata-ev1", tn)
    w("### strata against its peers (1 word)")
    w("")
    w("| | 1 thread | " + f"{tn} threads |")
    w("| --- | --- | --- |")
    def vs(peer, t):
        # ratio of the floor-normalised costs when paired, else of the medians
        pp, ps = R.paired(peer, t), R.paired("strata-ev1", t)
        if pp and ps:
            return pp[0] / ps[0]
        a_, b_ = R.med(peer, t), R.med("strata-ev1", t)
        return a_ / b_ if a_ and b_ else None

    for peer, name in (("lttng", "LTTng-UST"), ("fxt", "FxT")):
        w(f"| {name} ÷ strata | {fmt(vs(peer, 1), 2)}× (medians: {ratio(R.med(peer, 1), s_ev1)}) | "
          f"{fmt(vs(peer, tn), 2)}× (medians: {ratio(R.med(peer, tn), s_ev1n)}) |")
    w("")

    # ---- parts ---------------------------------------------------------------
    parts = [("part-call", "an empty non-inlined call"),
             ("part-rdtsc", "`rdtsc` (+ one store)"),
             ("part-mono", "`clock_gettime(CLOCK_MONOTONIC)` through the vDSO (+ one store)"),
             ("part-cas", "`lock cmpxchg` on a thread-local word"),
             ("part-xadd", "`lock xadd` on a thread-local word"),
             ("part-model", "floor + CAS + XADD: the least a CAS-reserve / atomic-commit tracer does")]
    if any(R.stats(p, 1) for p, _ in parts):
        w("### Where the time goes on this machine")
        w("")
        w("Each row is one non-inlined call per event doing one thing (1 thread). "
          "strata's CAS protocol (docs/ring.md §2, the fallback) does an `rdtsc`, a "
          "`lock cmpxchg` on the ring's write offset and a `lock xadd` on the "
          "packet's commit count: the last row is its lower bound, which is why "
          "strata writes rings with restartable sequences where it can (ring.md §7: "
          "an `rdtsc`, then one rseq critical section that writes the event and "
          "moves the write offset with a plain add: no locked instruction, and no "
          "commit count for fixed-size events). Where the trace clock is "
          "CLOCK_MONOTONIC, the same sections run out of line around "
          "`clock_gettime` (ring.md §7, \"Any clock\"); the first table's CAS and "
          "CLOCK_MONOTONIC rows measure both fallbacks.")
        w("")
        w("| part | ns/event | × floor |")
        w("| --- | --- | --- |")
        for p, label in parts:
            st = R.stats(p, 1)
            if st:
                w(f"| {label} | {cell(st)} | {ratio(st[0], floor1)} |")
        w("")

    # ---- disabled -------------------------------------------------------------
    w("## Disabled tracepoint (compiled in, masked off)")
    w("")
    w("Added cost over an empty loop. Hot: the tracepoint inlined in a loop, "
      "difference of two timed loops. Cold: each iteration first flushes the cache "
      "line of the enable flag (`clflush`), then times the tracepoint alone between "
      "fenced `rdtsc`s; median per iteration minus the same loop without it (the "
      "method of LTTng's immediate-values paper).")
    w("")
    w("| tracer | flag | hot ns | cold ns | cold TSC ticks |")
    w("| --- | --- | --- | --- | --- |")
    for name, suite, flag in (("strata", "strata-disabled", "patched site (no-op)"),
                              ("strata, inline mask test (before static branches)",
                               "strata-disabled-inline", "`strata_mask` bit"),
                              ("strata, STRATA_PATCH=0 (fallback)", "strata-disabled-fallback",
                               "jump to the `strata_mask` test"),
                              ("LTTng-UST", "lttng-disabled", "tracepoint `state`"),
                              ("FxT", "fxt-disabled", "`fut_active` & keymask")):
        h, c = R.stats(suite + "-hot", 1), R.stats(suite + "-cold", 1)
        if not h and not c:
            continue
        ct = R.rep_tsc.get((suite + "-cold", 1))
        w(f"| {name} | {flag} | {cell(h, 3)} | {cell(c)} | "
          f"{fmt(statistics.median(ct), 0) if ct else 'n/a'} |")
    w("")

    # ---- static branches ------------------------------------------------------
    tg = R.stats("strata-toggle", 1)
    if tg or R.info.get("site_count"):
        w("## Static branches (docs/patch.md)")
        w("")
        w("A disabled site is a 5-byte no-op patched in the code: cold, it reads "
          "no data. The rows above put it beside today's inline mask test and the "
          "fallback (`STRATA_PATCH=0`). Toggling: one `strata_enable_majors()` and "
          "one `strata_disable_majors()` of a major with 10,000 sites, each "
          "patching every site (a batch: three `membarrier` calls, `mprotect` around it).")
        w("")
        w("| | |")
        w("| --- | --- |")
        ci, cp = R.med("strata-disabled-inline-cold", 1), R.med("strata-disabled-cold", 1)
        if ci is not None and cp is not None:
            w(f"| cold disabled, inline test ÷ patched site | {fmt(ci)} ns ÷ {fmt(cp, 3)} ns"
              f" ({fmt(ci - cp)} ns saved per cold site) |")
        if tg:
            n = int(R.info.get("site_count", 10000))
            w(f"| toggle {n:,} sites (enable + disable) | {fmt(tg[0] / 1e6, 2)} ms "
              f"(min {fmt(tg[1] / 1e6, 2)}), {fmt(tg[0] / n / 2, 1)} ns per site patched |")
        if R.info.get("site_code_branch"):
            n = int(R.info["site_count"])
            b, i = int(R.info["site_code_branch"]), int(R.info["site_code_inline"])
            w(f"| code per site, static branch vs inline test | {fmt(b / n, 1)} vs "
              f"{fmt(i / n, 1)} bytes ({(b - i) / n:+.1f}), plus a "
              f"{R.info.get('site_desc', 16)}-byte descriptor in `__strata_sites` |")
        w("")

    # ---- sustained --------------------------------------------------------------
    w("## Sustained throughput to disk (strata, 1 producer thread)")
    w("")
    if R.sustained:
        S = R.sustained
        w("One producer pinned to CPU 0 logs 1-word events at a paced rate for "
          f"{env.get('sust_ms', '?')} ms; each trial is a fresh session with the default "
          "rings (16 × 256 KiB per CPU) and the in-process consumer writing to disk; "
          "the rate is found by bisection between 0 and the flat-out rate, a trial "
          "passing only if nothing was lost. Consumer CPU time is read from "
          "/proc/self/task/TID/schedstat of the consumer thread(s).")
        w("")
        w("| | |")
        w("| --- | --- |")
        w(f"| largest lossless rate | {float(S['rate']) / 1e6:.2f} M events/s |")
        w(f"| trace bandwidth at that rate | {S['mbps']} MB/s |")
        w(f"| flat-out producer rate | {float(S['flatout']) / 1e6:.2f} M events/s "
          f"(lost events: {S['flatout_lost']}) |")
        w(f"| consumer CPU per MB written | {S['consumer_cpu_ms_per_mb']} ms |")
        w(f"| bytes per event on disk (that trial) | {S['bytes_per_event']} |")
        w("")
        w("| trial | asked ev/s | achieved ev/s | logged | recorded | lost | seconds |")
        w("| --- | --- | --- | --- | --- | --- | --- |")
        for t in R.sustain:
            w(f"| {t['tag']} | {float(t['asked']) / 1e6:.2f} M | {float(t['achieved']) / 1e6:.2f} M | "
              f"{int(t['logged']):,} | {int(t['recorded']):,} | {int(t['lost']):,} | {t['seconds']} |")
        w("")
        if R.sustained_other:
            mbps = float(S["mbps"]) or 1.0
            w("A trial loses events when the disk stalls for longer than the ring lasts "
              f"at that rate (the default 4 MiB per CPU: about {4 * 1.048576 / mbps * 1000:.0f} ms "
              f"at {S['mbps']} MB/s; this VM's virtual disk stalls now and then). The "
              "same search with bigger rings:")
            w("")
            w("| rings per CPU | largest lossless rate | MB/s | flat-out rate (lost?) | consumer CPU per MB |")
            w("| --- | --- | --- | --- | --- |")
            for o in R.sustained_other:
                w(f"| {o['rings'].replace('x', ' × ').replace('KiB', ' KiB')} | {float(o['rate']) / 1e6:.2f} M events/s | "
                  f"{o['mbps']} | {float(o['flatout']) / 1e6:.2f} M ({o['flatout_lost']}) | "
                  f"{o['consumer_cpu_ms_per_mb']} ms |")
            w("")
    else:
        w("not measured")
        w("")

    oob_targets = oob_section(R, w)

    # ---- bytes per event ----------------------------------------------------------
    w("## Bytes per event on disk (1 word, 1 thread)")
    w("")
    w("Stream bytes (packet headers, padding and any per-thread/clock records "
      "included; metadata and index excluded) ÷ events recorded.")
    w("")
    w("| tracer | bytes/event | how |")
    w("| --- | --- | --- |")
    bpe = {}
    c = R.count.get(("strata-ev1", 1))
    if c and int(c.get("recorded", 0)):
        bpe["strata"] = int(c["bytes_written"]) / int(c["recorded"])
        w(f"| strata | {bpe['strata']:.2f} | bytes_written ÷ events_written of the timed phase (strata_get_stats) |")
    c = R.count.get(("lttng", 1))
    if c and int(c.get("recorded", 0)):
        bpe["lttng"] = int(c["stream_bytes"]) / int(c["recorded"])
        w(f"| LTTng-UST | {bpe['lttng']:.2f} | stream files ÷ babeltrace2 event count |")
    c = R.count.get(("fxt", 1))
    if c and int(c.get("recorded", 0)):
        bpe["fxt"] = int(c["stream_bytes"]) / int(c["recorded"])
        w(f"| FxT | {bpe['fxt']:.2f} | trace file ÷ fxt_print event count |")
    w("")

    # ---- workers -------------------------------------------------------------------
    w("## Real program: examples/workers.c")
    w("")
    if R.workers:
        w("Elapsed wall time of the whole process (`bench_workers_* THREADS JOBS WORK`: "
          "THREADS threads take JOBS jobs from a queue under a mutex and compute for "
          "WORK × 150 LCG steps on average each; 5 events per job), runs of the three "
          "builds interleaved. Two densities of events: the example as shipped, an "
          "event every hundred nanoseconds or so on each thread (a tracing "
          "micro-benchmark more than a program: most of its time is the two threads "
          "handing the queue's mutex to each other, a hand-off whose timing any change "
          "of code layout moves, so read its ratios with their spread), and jobs 40 "
          "times longer, an event every couple of microseconds, nearer what K42 and "
          "LTT measured. "
          "\"ns added per event\" is the elapsed time added over the compiled-out "
          "build, less what the same build adds to a run with no jobs (the session's "
          "start and stop), × threads ÷ events: what each event cost its thread, the "
          "consumer's share of the CPUs included.")
        w("")
        fixed = {}
        e_off = R.workers.get(("empty", "compiled_out"))
        if e_off:
            parts = []
            for v, label in (("majors_off", "compiled in and disabled"),
                             ("recording", "recording")):
                xs = R.workers.get(("empty", v))
                if xs:
                    fixed[v] = statistics.median(xs) - statistics.median(e_off)
                    parts.append(f"{label} {fixed[v] * 1e3:+.1f} ms")
            w(f"Start and stop alone (`bench_workers_* {env.get('workers_empty_args', '')}`, "
              f"no jobs; compiled out {statistics.median(e_off) * 1e3:.1f} ms): "
              + ", ".join(parts) + ".")
            w("")
        for density, key in (("dense", "workers_args"), ("coarse", "workers_coarse_args")):
            off = R.workers.get((density, "compiled_out"))
            if not off:
                continue
            args = env.get(key, "").split()
            try:
                nthr, njobs = int(args[0]), int(args[1])
            except (IndexError, ValueError):
                nthr = njobs = 0
            events = njobs * 5 + nthr * 4
            moff = statistics.median(off)
            rate = events / nthr / moff if nthr and moff > 0 else 0
            w(f"**{density}** (`{' '.join(args)}`): {events:,} events, "
              f"{rate / 1e6:.2f} M events/s per thread compiled out "
              f"(one every {1e9 / rate:.0f} ns)." if rate else f"**{density}**")
            w("")
            w("| build | seconds | × compiled out | ns added per event |")
            w("| --- | --- | --- | --- |")
            for v, label in (("compiled_out", "`-DSTRATA_DISABLE`"),
                             ("majors_off", "compiled in, `STRATA_MAJORS=none`"),
                             ("recording", "compiled in, recording to disk")):
                xs = R.workers.get((density, v))
                if not xs:
                    continue
                st = (statistics.median(xs), min(xs), max(xs), len(xs))
                added = "—" if v == "compiled_out" or not events else \
                    f"{(st[0] - moff - fixed.get(v, 0)) * nthr / events * 1e9:.1f}"
                w(f"| {label} | {cell(st, 4)} | {ratio(st[0], moff, 3)} | {added} |")
            w("")
            if R.workers_trace.get(density):
                w(f"Trace of the last recording run: {R.workers_trace[density]:,} bytes.")
                w("")
    else:
        w("not measured")
        w("")

    # ---- instruction counts --------------------------------------------------------------
    w("## Instructions per event (callgrind, noise-free)")
    w("")
    if env.get("perf_hw") == "yes":
        w("Hardware counters work here; see `perf stat` for cycles.")
    else:
        w("Hardware counters are not available (`perf stat -e instructions` is "
          "not supported in this VM), so instruction counts come from "
          "`valgrind --tool=callgrind --toggle-collect=FUNCTION`: inclusive "
          "instructions of the event function ÷ its calls. Under valgrind glibc's "
          "rseq registration fails, so strata's CPU lookup takes its fallback "
          "(the slow path asks the kernel); its count is an upper bound of the "
          "fast path.")
    w("")
    if R.callgrind:
        w("| function | instructions/event | calls |")
        w("| --- | --- | --- |")
        for name, kv in R.callgrind.items():
            ir, calls = int(kv["ir"]), int(kv["calls"])
            w(f"| {name} (`{kv['function']}`) | {ir / calls if calls else float('nan'):.1f} | {calls:,} |")
        w("")

    # ---- noise --------------------------------------------------------------------------------
    w("## Noise")
    w("")
    sp = [(k, spread(R.stats(*k))) for k in sorted(R.rep)]
    sp = [(k, s) for k, s in sp if s is not None and not k[0].endswith("-hot")]
    med_sp = statistics.median(s for _, s in sp) if sp else 0
    if sp:
        worst = max(sp, key=lambda x: x[1])
        med_sp = statistics.median(s for _, s in sp)
        w(f"Spread (max − min) ÷ median over the repetitions: median {med_sp:.0f} %, "
          f"worst {worst[1]:.0f} % ({worst[0][0]}, {worst[0][1]} threads).")
        rd = R.stats("part-rdtsc", 1)
        virt = env.get("hypervisor", "none")
        if rd:
            w(f"`rdtsc` alone cost {rd[1]:.1f}–{rd[2]:.1f} ns in this run"
              + (f" (a {env.get('cpus', '?')}-vCPU "
                 + ("virtual machine" if virt == "yes" else f"{virt} guest")
                 + ": it varies from run "
                 "to run and from host to host)" if virt != "none" else "")
              + "; differences under ~20 % between tracers are not significant.")
    w("")

    # ---- targets ---------------------------------------------------------------------------
    w("## Targets")
    w("")
    if sp and med_sp > 20:
        w(f"**This run was noisy (median spread {med_sp:.0f} %): verdicts near a "
          "threshold are not reliable; rerun on a quiet machine.**")
        w("")
    w("| target | measured | verdict |")
    w("| --- | --- | --- |")

    def verdict(ok, lost=0, missing=False):
        if missing:
            return "NOT MEASURED"
        if lost:
            return f"FAIL ({lost:,} events lost)"
        return "PASS" if ok else "FAIL"

    lost1 = lost_of(R.count.get(("strata-ev1", 1)))
    lostn = lost_of(R.count.get(("strata-ev1", tn)))
    pr = R.paired("strata-ev1", 1)
    r = pr[0] if pr else (s_ev1 / floor1 if s_ev1 and floor1 else None)
    w(f"| strata 1 word, 1 thread ≤ 1.25 × floor | {fmt(r, 2)} × paired "
      f"({fmt(s_ev1)} ns; floor run alone {fmt(floor1)} ns) | "
      f"{verdict(r is not None and r <= 1.25, lost1, r is None)} |")
    for peer, name, need in (("lttng", "LTTng-UST", 6), ("fxt", "FxT", 3)):
        r = vs(peer, 1)
        pl = lost_of(R.count.get((peer, 1)))
        note = f" (peer lost {pl:,})" if pl else ""
        w(f"| strata ≥ {need}× faster than {name} (1 thread) | {fmt(r, 2)}×{note} | "
          f"{verdict(r is not None and r >= need, lost1, r is None)} |")
    # Per-CPU buffers must not contend: strata's cost with N threads over its
    # cost with 1, each divided by the floor timed just before it on the same
    # thread (paired), so that what the machine does to any code when every
    # CPU is busy (the floor's own change) is not counted as contention.
    r = s_ev1n / s_ev1 if s_ev1n and s_ev1 else None
    p1, pn = R.paired("strata-ev1", 1), R.paired("strata-ev1", tn)
    rn = pn[0] / p1[0] if p1 and pn else None
    c1, cn = R.cpu("strata-ev1", 1), R.cpu("strata-ev1", tn)
    notes = [f"wall {fmt(r, 2)} ×"]
    if c1 and cn:
        notes.append(f"on-CPU {fmt(cn[0] / c1[0], 2)} ×")
    if floor1 and floorn:
        notes.append(f"the floor's own change {fmt(floorn / floor1, 2)} ×")
    rv = rn if rn is not None else r
    w(f"| per-thread cost, {tn} threads ≤ 1.1 × 1 thread (each ÷ its paired floor) | "
      f"{fmt(rv, 2)} × ({'; '.join(notes)}) | "
      f"{verdict(rv is not None and rv <= 1.1, lostn, rv is None)} |")
    h = R.med("strata-disabled-hot", 1)
    w(f"| disabled, cache-hot ≤ 0.3 ns | {fmt(h, 3)} ns | {verdict(h is not None and h <= 0.3, 0, h is None)} |")
    c = R.med("strata-disabled-cold", 1)
    ci = R.med("strata-disabled-inline-cold", 1)
    note = f" (inline mask test: {fmt(ci)} ns)" if ci is not None else ""
    w(f"| disabled, flag line flushed (cache-cold) ≤ 1 ns | {fmt(c, 3)} ns{note} | "
      f"{verdict(c is not None and c <= 1.0, 0, c is None)} |")
    # The target names no ring size: the rings only buffer the disk's
    # stalls. The best lossless rate of any rings measured, named, with the
    # default rings' figure beside it when it is not the best.
    cands = ([("the default rings (16 × 256 KiB per CPU)", R.sustained)] if R.sustained else []) + \
        [(f"rings of {o['rings'].replace('x', ' × ').replace('KiB', ' KiB')} per CPU", o)
         for o in R.sustained_other]
    best = max(cands, key=lambda c: float(c[1]["rate"]), default=None)
    sr = float(best[1]["rate"]) if best else None
    # What limits it: when the flat-out run lost nothing (it is then the
    # rate found), the consumer kept up with the producer's full speed, and
    # 40 M/s is a producer cost of 25 ns/event, this many of this run's floor.
    why = f" with {best[0]}" if best else ""
    if best and best[1] is not R.sustained and R.sustained:
        why += f"; {float(R.sustained['rate']) / 1e6:.2f} M/s with the default rings"
    if sr and best[1].get("flatout_lost") == "0":
        why += (f" (the producer's flat-out rate, nothing lost: the consumer kept up; "
                f"{fmt(1e9 / sr, 1)} ns/event; 40 M/s needs 25.0"
                + (f", {fmt(25.0 / floor1, 2)} × this run's floor)" if floor1 else ")"))
    w(f"| sustained ≥ 40 M events/s to disk, zero loss | "
      f"{fmt(sr / 1e6 if sr else None, 2)} M/s{why} | "
      f"{verdict(sr is not None and sr >= 40e6, 0, sr is None)} |")
    b = bpe.get("strata")
    w(f"| ≤ 16 bytes/event | {fmt(b, 2)} (the event: 4-byte compact header + 8-byte word = 12, "
      f"docs/compact.md; the rest is packet headers) | "
      f"{verdict(b is not None and b <= 16, 0, b is None)} |")
    for t, meas, v in oob_targets:
        w(f"| {t} | {meas} | {v} |")
    w("")

    if R.skips or R.failed:
        w("## Skipped or failed")
        w("")
        for what, why in R.skips:
            w(f"- skipped {what}: {why}")
        for t in R.failed:
            w(f"- FAILED {t} (see bench-out/stderr.log)")
        w("")

    w("## Reproduce")
    w("")
    w("`make bench` (or `bench/run.sh`); `bench/run.sh --smoke` for the quick "
      "variant that CTest runs (`ctest -L bench-smoke`). Raw result lines are kept "
      "in `build-bench/bench-out/raw.txt`.")
    w("")
    with open(a.out, "w") as f:
        f.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
