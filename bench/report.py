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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--env", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()

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
    for name, suite, flag in (("strata", "strata-disabled", "`strata_mask` bit"),
                              ("LTTng-UST", "lttng-disabled", "tracepoint `state`"),
                              ("FxT", "fxt-disabled", "`fut_active` & keymask")):
        h, c = R.stats(suite + "-hot", 1), R.stats(suite + "-cold", 1)
        if not h and not c:
            continue
        ct = R.rep_tsc.get((suite + "-cold", 1))
        w(f"| {name} | {flag} | {cell(h, 3)} | {cell(c)} | "
          f"{fmt(statistics.median(ct), 0) if ct else 'n/a'} |")
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
