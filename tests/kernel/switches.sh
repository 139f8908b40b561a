#!/bin/sh
# SPDX-License-Identifier: MIT
# strata switches: the context switches inside pairs of user events, with their states and durations.
. "$(dirname "$0")/common.sh"
kernel_test_require
strata=$1 holder=$2 work=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
"$strata" record -k sched -o "$work/trace" -- "$holder" 2>"$work/rec.err" || { cat "$work/rec.err"; exit 1; }
"$strata" switches --begin 7:1 --end 7:2 --top 0 --format json "$work/trace" >"$work/out.json" || exit 1
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

# Without the kernel's scheduling events, the analyses that need them say
# so and fail: a user-space trace, and one with interrupts only.
rm -rf "$work/user" "$work/irq"
"$strata" record -o "$work/user" -- "$holder" 2>/dev/null || exit 1
"$strata" record -k irq -o "$work/irq" -- "$holder" 2>/dev/null || exit 1
for t in user irq; do
	for cmd in "breakdown" "switches --begin 7:1 --end 7:2" "latency --sched"; do
		if $strata $cmd "$work/$t" >"$work/out" 2>"$work/err"; then
			echo "FAIL: strata $cmd on a trace without sched events exits 0"; exit 1
		fi
		grep -q -- "-k sched" "$work/err" ||
			{ echo "FAIL: strata $cmd: no word of -k sched: $(cat "$work/err")"; exit 1; }
	done
done
echo "no sched events: breakdown, switches and latency --sched fail and say -k sched"

# Names rather than numbers: who ran instead is named.
"$strata" switches --begin 7:1 --end 7:2 --top 0 "$work/trace" >"$work/sw.txt" || exit 1
grep -q "ran instead" "$work/sw.txt" || { echo "FAIL: no switch listed"; exit 1; }
if grep "ran instead" "$work/sw.txt" | grep -qv "(tid [0-9]*) ran instead\|idle ran instead"; then
	echo "FAIL: a thread that ran instead is not named:"; grep "ran instead" "$work/sw.txt"; exit 1
fi
echo "switches names the threads that ran instead"
