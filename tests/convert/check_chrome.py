#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks a Chrome trace-event JSON file against the Trace Event Format.

usage: check_chrome.py FILE [--thread-name TID=NAME]... [--hex-field NAME]...
                            [--sched] [--no-sched]

What viewers (Perfetto, chrome://tracing) rely on: an object with a
"traceEvents" array (and optionally "systemTraceEvents", systrace text,
and "displayTimeUnit"); every event with a known "ph", a string name,
integer pid and tid, a numeric ts (metadata events aside); instant events
with a scope; every B matched by an E on its thread, in time order; args
whose values JavaScript reads exactly (integers within 2^53, finite
numbers). --thread-name: a thread_name metadata event names TID so, when TID has
events;
--hex-field: every value of that argument is a "0x..." string; --sched:
systemTraceEvents holds sched_switch and sched_waking lines that
Perfetto's systrace tokenizer accepts, --no-sched: it is absent.
Exits 0, or 1 with the first problem.
"""
import json
import re
import sys

PHASES = set("BEXiIMCbenSTpFstfPONDRcv()")
SCOPES = {"g", "p", "t"}
SAFE = 1 << 53
# Perfetto's systrace line tokenizer (src/trace_processor/importers/systrace)
LINE = re.compile(r"-(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*"
                  r"[a-zA-Z0-9.]{0,5}\s*(\d+\.\d+):\s+(\S+):")
STATE = re.compile(r"^(R\+?|[SDTtXZPIKWN](\|[SDTtXZPIKWN])*)$")


class Bad(Exception):
    pass


def safe(v, where):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return
    if isinstance(v, int):
        if abs(v) > SAFE:
            raise Bad("%s: integer %d beyond 2^53 (JavaScript rounds it)" % (where, v))
    elif isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise Bad("%s: %r is not a JSON number" % (where, v))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            safe(x, "%s[%d]" % (where, i))
    elif isinstance(v, dict):
        for k, x in v.items():
            safe(x, "%s.%s" % (where, k))
    else:
        raise Bad("%s: unexpected %r" % (where, v))


def check_sched(text):
    kinds = {}
    for ln in text.split("\n"):
        if not ln or ln.startswith("#"):
            continue
        m = LINE.search(ln)
        if not m:
            raise Bad("systemTraceEvents: not a systrace line: %r" % ln)
        ev = m.group(5)
        kinds[ev] = kinds.get(ev, 0) + 1
        args = dict(a.split("=", 1) for a in ln[m.end():].split() if "=" in a)
        if ev == "sched_switch":
            for k in ("prev_pid", "prev_prio", "next_pid", "next_prio"):
                int(args[k])
            if not STATE.match(args["prev_state"]):
                raise Bad("sched_switch: prev_state %r" % args["prev_state"])
        elif ev in ("sched_waking", "sched_wakeup"):
            int(args["pid"])
    if not kinds.get("sched_switch") or not kinds.get("sched_waking"):
        raise Bad("systemTraceEvents: no sched_switch or sched_waking lines: %r" % kinds)


def check(path, names, hexes, sched):
    with open(path) as f:
        d = json.load(f)
    if not isinstance(d, dict) or not isinstance(d.get("traceEvents"), list):
        raise Bad("no traceEvents array")
    if "displayTimeUnit" in d and d["displayTimeUnit"] not in ("ms", "ns"):
        raise Bad("displayTimeUnit %r" % d["displayTimeUnit"])
    if sched is True:
        if not isinstance(d.get("systemTraceEvents"), str):
            raise Bad("no systemTraceEvents")
        check_sched(d["systemTraceEvents"])
    elif sched is False and "systemTraceEvents" in d:
        raise Bad("systemTraceEvents in a trace without kernel scheduling")
    stacks = {}
    seen_names = {}
    evs = []
    for i, e in enumerate(d["traceEvents"]):
        where = "event %d" % i
        if not isinstance(e, dict):
            raise Bad("%s: not an object" % where)
        ph = e.get("ph")
        if not isinstance(ph, str) or ph not in PHASES:
            raise Bad("%s: ph %r" % (where, ph))
        if not isinstance(e.get("name"), str):
            raise Bad("%s: name %r" % (where, e.get("name")))
        for k in ("pid", "tid"):
            if not isinstance(e.get(k), int) or isinstance(e.get(k), bool):
                raise Bad("%s: %s %r" % (where, k, e.get(k)))
        if ph != "M" and (not isinstance(e.get("ts"), (int, float)) or
                          isinstance(e.get("ts"), bool)):
            raise Bad("%s: ts %r" % (where, e.get("ts")))
        if ph in "iI" and e.get("s", "t") not in SCOPES:
            raise Bad("%s: instant scope %r" % (where, e.get("s")))
        if ph == "X" and not isinstance(e.get("dur"), (int, float)):
            raise Bad("%s: X without dur" % where)
        if "args" in e:
            if not isinstance(e["args"], dict):
                raise Bad("%s: args is not an object" % where)
            safe(e["args"], where + " args")
            for h in hexes:
                v = e["args"].get(h)
                if v is not None and (not isinstance(v, str) or
                                      not re.fullmatch(r"0x[0-9a-f]+", v)):
                    raise Bad("%s: %s = %r is not a 0x... string" % (where, h, v))
        if ph == "M" and e["name"] == "thread_name":
            n = e.get("args", {}).get("name")
            if not isinstance(n, str) or not n or re.fullmatch(r"(main )?tid \d+", n):
                raise Bad("%s: thread %d named %r" % (where, e["tid"], n))
            seen_names[e["tid"]] = n
        if ph in "BE":
            evs.append((e["ts"], i, ph, (e["pid"], e["tid"])))
    # B/E pairing per thread, in time order (file order between equal times)
    for ts, i, ph, th in sorted(evs):
        st = stacks.setdefault(th, [])
        if ph == "B":
            st.append(i)
        elif not st:
            raise Bad("event %d: E at %s on thread %r without a B" % (i, ts, th))
        else:
            st.pop()
    for th, st in stacks.items():
        if st:
            raise Bad("thread %r: %d B without an E (event %d)" % (th, len(st), st[-1]))
    used = {e["tid"] for e in d["traceEvents"] if e["ph"] != "M"}
    for tid, name in names.items():
        if tid in used and seen_names.get(tid) != name:
            raise Bad("thread %d named %r, not %r" % (tid, seen_names.get(tid), name))
    if names and not used & set(names):
        raise Bad("none of the threads %s has an event" % sorted(names))
    return len(d["traceEvents"])


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    path, names, hexes, sched = args[0], {}, [], None
    i = 1
    while i < len(args):
        if args[i] == "--thread-name":
            tid, name = args[i + 1].split("=", 1)
            names[int(tid)] = name
            i += 2
        elif args[i] == "--hex-field":
            hexes.append(args[i + 1])
            i += 2
        elif args[i] in ("--sched", "--no-sched"):
            sched = args[i] == "--sched"
            i += 1
        else:
            print("check_chrome.py: unknown option %s" % args[i])
            return 2
    try:
        n = check(path, names, hexes, sched)
    except (Bad, KeyError, ValueError, OSError) as e:
        print("%s: %s" % (path, e))
        return 1
    print("%s: %d trace events, Trace Event Format checks passed" % (path, n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
