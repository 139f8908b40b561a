#!/bin/sh
# SPDX-License-Identifier: MIT
# strata CLI on the mixed trace: counts round-trip through print, JSON, CSV, Chrome, Paje.
set -eu
strata=$1 trace=$2 py=$3 tmp=$4/cli-out
mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }

n=$(wc -l < "$trace/expected.txt")
[ "$("$strata" print "$trace" 2>/dev/null | wc -l)" -eq "$n" ] || fail "print count"
[ "$("$strata" print --format json "$trace" 2>/dev/null | wc -l)" -eq "$n" ] || fail "json count"
"$strata" print --format json "$trace" 2>/dev/null |
	"$py" -c 'import sys, json; [json.loads(l) for l in sys.stdin]' || fail "json lines"
[ "$("$strata" print --format csv "$trace" 2>/dev/null | "$py" -c 'import csv,sys; print(sum(1 for _ in csv.reader(sys.stdin)))')" -eq $((n + 1)) ] || fail "csv rows"

# same events as the generator wrote: time, cpu, pid, tid (attribution), name
"$strata" print --format json "$trace" 2>/dev/null | "$py" -c '
import sys, json
exp = [l.split() for l in open(sys.argv[1])]
got = [json.loads(l) for l in sys.stdin]
for e, g in zip(exp, got):
    if [int(e[0]), int(e[1]), int(e[2]), int(e[3]), e[4]] != [g["ts"], g["cpu"], g["pid"], g["tid"], g["event"]]:
        sys.exit("differs: %r %r" % (e, g))
' "$trace/expected.txt" || fail "attribution"

# filters
m=$(grep -c " mem:" "$trace/expected.txt")
[ "$("$strata" print --event 'mem:*' "$trace" 2>/dev/null | wc -l)" -eq "$m" ] || fail "--event"
c1=$(awk '$2 == 1' "$trace/expected.txt" | wc -l)
[ "$("$strata" print --cpu 1 "$trace" 2>/dev/null | wc -l)" -eq "$c1" ] || fail "--cpu"
t=$(awk '$4 == 4243' "$trace/expected.txt" | wc -l)
[ "$("$strata" print --tid 4243 "$trace" 2>/dev/null | wc -l)" -eq "$t" ] || fail "--tid"
"$strata" print --filter 'size > 4096 && flags & 1' "$trace" >/dev/null 2>&1 || fail "--filter"
"$strata" print --filter 'size >' "$trace" >/dev/null 2>&1 && fail "bad --filter accepted"
"$strata" print --from 1 --to 2 "$trace" 2>/dev/null | "$py" -c '
import sys
for l in sys.stdin:
    t = float(l.split()[0])
    if not 1 <= t <= 2: sys.exit("out of range: " + l)
' || fail "--from/--to"

# info and stats agree with the generator
"$strata" info "$trace" | grep -q "Events:     $n " || fail "info count"
"$strata" stats "$trace" | grep -q "Events:  $n" || fail "stats count"

# Chrome JSON: valid, one trace event per event (plus M metadata events)
"$strata" convert "$trace" -F chrome -o "$tmp/t.json" 2>/dev/null
"$py" -m json.tool "$tmp/t.json" >/dev/null || fail "chrome json invalid"
"$py" -c '
import sys, json
d = json.load(open(sys.argv[1]))["traceEvents"]
# intervals that begin before the trace or end after it are cut at its edges
ev = [e for e in d if e["ph"] != "M" and "cut" not in e.get("args", {})]
assert len(ev) == int(sys.argv[2]), len(ev)
assert all(e["ph"] in "iBE" for e in ev)
assert any(e["ph"] == "B" for e in ev) and any(e["ph"] == "E" for e in ev)
# threads are named only where the trace names them (it does not here)
assert any(e["name"] == "process_name" for e in d)
' "$tmp/t.json" "$n" || fail "chrome events"

# Paje: header, definitions, then events; one event line per event
"$strata" convert "$trace" -F paje -o "$tmp/t.paje" 2>/dev/null
head -1 "$tmp/t.paje" | grep -q '^%EventDef PajeDefineContainerType 1' || fail "paje header"
grep -q '^1 T P "Thread"' "$tmp/t.paje" || fail "paje definitions"
# (and the cut intervals' pushes and pops: tests/convert checks them)
[ "$(grep -c '^\(11\|12\|20\) ' "$tmp/t.paje")" -ge "$n" ] || fail "paje events"
"$py" -c '
import sys
state = 0  # 0 header, 1 definitions/events
for l in open(sys.argv[1]):
    if l.startswith("%"):
        assert state == 0, "header after body"
    else:
        state = 1
' "$tmp/t.paje" || fail "paje order"

# errors: one line, non-zero exit
"$strata" print /nonexistent 2>"$tmp/err" && fail "no error"
[ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q '^strata: /nonexistent: ' "$tmp/err" || fail "error line"
"$strata" help >/dev/null && "$strata" print --help | grep -q usage || fail "help"
echo "cli: all checks passed ($n events)"
