#!/bin/sh
# SPDX-License-Identifier: MIT
# strata switches: the context switches inside pairs of user events, with their states and durations.
. "$(dirname "$0")/common.sh"
kernel_test_require
strata=$1 holder=$2 work=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
"$strata" record -k sched -o "$work/trace" -- "$holder" 2>"$work/rec.err" || { cat "$work/rec.err"; exit 1; }
"$strata" switches --from 7:1 --to 7:2 --top 0 --format json "$work/trace" >"$work/out.json" || exit 1
python3 - "$work/out.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
assert r["pairs"] == 5, r["pairs"]
assert r["with_switches"] == 5, r
for p in r["longest"]:
    assert p["switches"] >= 1, p
    assert any(s["state"] == "sleeping (S)" for s in p["list"]), p
    # the 20 ms sleep is blocked time, all of the pair but a little
    assert 19e6 <= p["blocked_ns"] <= p["duration_ns"], p
    assert p["duration_ns"] - p["blocked_ns"] - p["runnable_ns"] < 5e6, p
print("switches: OK (5 pairs, each with its 20 ms sleep as blocked time)")
PY

# The same program's system calls: each 20 ms sleep blocks inside
# clock_nanosleep, so a sched_switch is among the events inside it.
rm -rf "$work/trace2"
"$strata" record -k sched,syscalls -o "$work/trace2" -- "$holder" 2>"$work/rec2.err" || { cat "$work/rec2.err"; exit 1; }
"$strata" breakdown --format json "$work/trace2" >"$work/bd.json" || exit 1
python3 - "$work/bd.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
sc = [s for t in r["threads"] for s in t["syscalls"] if s["name"] in ("clock_nanosleep", "nanosleep")]
assert sc, "no sleep system call in the breakdown"
inside = {i["event"]: i["count"] for s in sc for i in s["inside"]}
assert inside.get("sched:sched_switch", 0) >= 5, inside
print("breakdown: the 5 sleeps' switches are inside clock_nanosleep:", inside)
PY
