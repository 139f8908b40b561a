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
