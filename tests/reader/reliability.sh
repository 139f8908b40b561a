#!/bin/sh
# SPDX-License-Identifier: MIT
# The reader never gives a confident wrong answer: lying indexes, missing pieces, sparse tails, time going back, several recordings, filters matching nothing.
#
# usage: reliability.sh STRATA PYTHON GEN_TRACE.PY WORKDIR
# Each case damages a fresh copy of one generated trace and checks what
# the CLI reads (events), says (lines on stderr, naming the file) and
# returns (exit status, docs/cli.md). No case asserts a duration: the
# machines are shared; `timeout` only guards against a hang.
set -u
strata=$1 py=$2 gen=$3 work=$4/reliability
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1
fails=0
fail() {
	echo "FAIL: $case: $*" >&2
	fails=$((fails + 1))
}

"$py" "$gen" clean --events 20000 >/dev/null || exit 1
n=$(wc -l < clean/expected.txt)
p1=ust/pid-4242
n1=$(awk '$3 == 4242' clean/expected.txt | wc -l)
n10=$(awk '$3 == 4242 && $2 == 0' clean/expected.txt | wc -l)

# run NAME CMD...: $out (stdout lines), $err (stderr file), $rc
run() {
	err=$work/$1.err
	shift
	out=$( { timeout 60 "$@" 2>"$err"; echo $? >"$work/rc"; } | wc -l)
	rc=$(cat "$work/rc")
	[ "$rc" -ne 124 ] || fail "hangs"
}
nerr() { wc -l < "$err"; }

# The clean trace: its own stderr lines (an events_discarded step and a
# packet_seq_num gap per stream, format.md §2) are the baseline.
case=clean
run clean "$strata" print clean
[ "$out" -eq "$n" ] && [ "$rc" -eq 0 ] || fail "$out events, exit $rc"
base=$(nerr)
info_lost=$("$strata" info clean | grep '^Lost:')

fresh() {
	rm -rf "$1"
	cp -r clean "$1"
}

# index TRACE FILE EXPR: rewrite entries of an index file (format.md §7);
# EXPR is Python on e (the 9 fields of an entry) and i (its number)
index() {
	"$py" - "$1/$2" "$3" <<'EOF'
import struct, sys
path, expr = sys.argv[1], sys.argv[2]
d = bytearray(open(path, "rb").read())
for i in range((len(d) - 16) // 72):
    e = list(struct.unpack_from(">9Q", d, 16 + 72 * i))
    exec(expr)
    struct.pack_into(">9Q", d, 16 + 72 * i, *e)
open(path, "wb").write(d)
EOF
}

# ---- issue 24.12: an index that lies is rebuilt, said once ----------------
# e: offset, packet_size, content_size, ts_begin, ts_end, discarded, stream_id,
# stream_instance_id, seq
for lie in "e[5] = 12345" "e[3] = e[4] = 0" "e[2] = 256 * 8" \
	   "e[5] = 12345 if i == len(range((len(d) - 16) // 72)) - 1 else e[5]" \
	   "e[8] = e[8] + 1 if i == 6 else e[8]" \
	   "e[4] = e[4] - 1000 if i == 6 else e[4]" \
	   "e[2] = e[2] - 64 if i == 6 else e[2]"; do
	case="index lie '$lie'"
	fresh lie
	index lie ust/pid-4242/index/cpu0.idx "$lie"
	run lie "$strata" print lie
	[ "$out" -eq "$n" ] || fail "$out of $n events"
	[ "$rc" -eq 0 ] || fail "exit $rc"
	[ "$(nerr)" -eq $((base + 1)) ] || fail "$(nerr) lines on stderr, not $((base + 1))"
	grep -q "lie/$p1/index/cpu0.idx: .*rebuilt" "$err" || fail "no line says the index was rebuilt"
	[ "$("$strata" info lie 2>/dev/null | grep '^Lost:')" = "$info_lost" ] ||
		fail "info says '$("$strata" info lie 2>/dev/null | grep '^Lost:')'"
	# a seek (--from) lands where it would without the index
	[ "$("$strata" print --from 50 lie 2>/dev/null | wc -l)" -eq \
	  "$("$strata" print --from 50 clean 2>/dev/null | wc -l)" ] || fail "--from differs"
done
case="index is a FIFO"
fresh lie
rm lie/$p1/index/cpu0.idx
mkfifo lie/$p1/index/cpu0.idx
run fifo "$strata" print lie
[ "$out" -eq "$n" ] && [ "$rc" -eq 0 ] || fail "$out events, exit $rc"
grep -q "index/cpu0.idx: .*not a regular file" "$err" || fail "not said"

# ---- issue 24.13: missing pieces are reported, the exit status says so ----
for what in missing fifo zero dir; do
	case="metadata $what"
	fresh mp
	rm mp/$p1/metadata
	case $what in
	fifo) mkfifo mp/$p1/metadata ;;
	zero) ln -s /dev/zero mp/$p1/metadata ;;
	dir) mkdir mp/$p1/metadata ;;
	esac
	run meta "$strata" print mp
	[ "$out" -eq $((n - n1)) ] || fail "$out events, not $((n - n1))"
	[ "$rc" -eq 2 ] || fail "exit $rc, not 2"
	grep -q "mp/$p1.*metadata" "$err" || fail "no line names the sub-trace"
	[ "$(nerr)" -eq $((base / 2 + 1)) ] || fail "$(nerr) lines on stderr, not $((base / 2 + 1))"
done
for what in empty fifo dir null zero; do
	case="stream $what"
	fresh ms
	rm ms/$p1/cpu0
	case $what in
	empty) : > ms/$p1/cpu0 ;;
	fifo) mkfifo ms/$p1/cpu0 ;;
	dir) mkdir ms/$p1/cpu0 ;;
	null) ln -s /dev/null ms/$p1/cpu0 ;;
	zero) ln -s /dev/zero ms/$p1/cpu0 ;;
	esac
	run stream "$strata" print ms
	[ "$out" -eq $((n - n10)) ] || fail "$out events, not $((n - n10))"
	[ "$rc" -eq 2 ] || fail "exit $rc, not 2"
	grep -q "ms/$p1/cpu0: " "$err" || fail "no line names the stream"
	[ "$(nerr)" -eq $((base - 2 + 1)) ] || fail "$(nerr) lines on stderr, not $((base - 1))"
	"$strata" info ms >/dev/null 2>&1
	[ $? -eq 2 ] || fail "info: exit not 2"
done
case="stream missing, index lists it"
fresh ms
rm ms/$p1/cpu0
run stream "$strata" print ms
[ "$out" -eq $((n - n10)) ] && [ "$rc" -eq 2 ] || fail "$out events, exit $rc"
grep -q "ms/$p1/cpu0: " "$err" || fail "no line names the stream"

# ---- issue 24.14: zero-filled tails, sparse or written --------------------
# 100 GiB only where the file system knows its holes (SEEK_DATA): else
# its zeros are read, which takes minutes (the reader still says it once)
holes=$("$py" -c '
import os, sys
f = os.open("holes", os.O_RDWR | os.O_CREAT)
os.ftruncate(f, 1 << 20)
try:
    os.lseek(f, 0, os.SEEK_DATA)
    print("no")
except OSError:
    print("yes")
')
rm -f holes
tails=10G
[ "$holes" = yes ] && tails="10G 100G"
for tail in $tails; do
	case="sparse tail $tail"
	fresh sp
	truncate -s +$tail sp/$p1/cpu0
	run sparse "$strata" print sp
	[ "$out" -eq "$n" ] || fail "$out of $n events"
	[ "$rc" -eq 2 ] || fail "exit $rc, not 2"
	[ "$(nerr)" -eq $((base + 1)) ] || fail "$(nerr) lines on stderr, not $((base + 1))"
	grep -q "sp/$p1/cpu0: offset 229376: .*zero" "$err" || fail "no line gives the extent"
	run sparse-info "$strata" info sp
	[ "$(nerr)" -eq 1 ] || fail "info: $(nerr) lines on stderr, not 1"
	rm -rf sp
done
case="written zeros"
# 200 packets of zeros written (no hole) between packets 6 and 7
fresh sp
{ head -c $((7 * 16384)) clean/$p1/cpu0
  dd if=/dev/zero bs=16384 count=200 2>/dev/null
  tail -c +$((7 * 16384 + 1)) clean/$p1/cpu0; } > sp/$p1/cpu0
run zeros "$strata" print sp
[ "$out" -eq "$n" ] || fail "$out of $n events"
[ "$rc" -eq 2 ] || fail "exit $rc, not 2"
[ "$(grep -c "zero" "$err")" -eq 1 ] || fail "$(grep -c zero "$err") lines on zeros"
grep -q "sp/$p1/cpu0: offset 114688: zero-filled up to offset 3391488 (3.1 MiB)" "$err" ||
	fail "no line gives the extent"
# the packets after them are where the index says they are not: rebuilt
grep -q "sp/$p1/index/cpu0.idx: .*rebuilt" "$err" || fail "index not rebuilt"
[ "$(nerr)" -eq $((base + 2)) ] || fail "$(nerr) lines on stderr, not $((base + 2))"

# ---- issue 24.15: time going back within a stream is said, once -----------
case="time goes back"
fresh tb
# packet 3 of pid-4242/cpu0 claims to begin 1 s before packet 2 ends
"$py" - tb/$p1/cpu0 <<'EOF'
import struct, sys
f = open(sys.argv[1], "r+b")
f.seek(3 * 16384 + 32)
tb = struct.unpack("<Q", f.read(8))[0]
f.seek(2 * 16384 + 40)
f.write(struct.pack("<Q", tb - 10**9 - 1))      # packet 2's timestamp_end
f.seek(3 * 16384 + 32)
f.write(struct.pack("<Q", tb - 10**9))          # packet 3's timestamp_begin
EOF
rm -r tb/$p1/index
run back "$strata" print tb
[ "$out" -eq "$n" ] || fail "$out of $n events"
[ "$rc" -eq 2 ] || fail "exit $rc, not 2"
[ "$(grep -c "back" "$err")" -eq 1 ] || fail "$(grep -c back "$err") lines say time goes back"
grep -q "tb/$p1/cpu0: offset 49152: .*back" "$err" || fail "no line gives the offset"

# ---- issue 26.11: a directory of several recordings is refused -------------
case="several recordings"
rm -rf many && mkdir many
cp -r clean many/a
"$py" "$gen" many/b --events 300 --seed 2 >/dev/null
run many "$strata" info many
[ "$rc" -eq 1 ] || fail "exit $rc, not 1"
[ "$out" -eq 0 ] || fail "info printed a summary"
grep -q "^strata: many: .*2 recordings" "$err" || fail "not refused"
grep -q "many/a" "$err" && grep -q "many/b" "$err" || fail "recordings not named"
run many-print "$strata" print many
[ "$rc" -eq 1 ] && [ "$out" -eq 0 ] || fail "print: $out events, exit $rc"
run merge "$strata" print --merge many
[ "$out" -eq $((n + 300)) ] || fail "--merge: $out events"
run merge-info "$strata" info --merge many
[ "$rc" -eq 0 ] || fail "info --merge: exit $rc"
case="one recording below"
rm -rf one && mkdir one && cp -r clean one/a
run one "$strata" print one
[ "$out" -eq "$n" ] && [ "$rc" -eq 0 ] || fail "$out events, exit $rc"

# ---- issue 26.13: filters that cannot match are said -----------------------
case="--filter unknown field"
run nofield "$strata" print --filter 'sise > 4096' clean
[ "$rc" -eq 1 ] && [ "$out" -eq 0 ] || fail "$out lines, exit $rc"
[ "$(nerr)" -eq 1 ] || fail "$(nerr) lines on stderr"
grep -q "sise" "$err" && grep -q "size" "$err" && grep -q "path" "$err" ||
	fail "the field and the fields that exist are not named"
case="--filter matching nothing"
run nomatch "$strata" print --filter 'size == 1 && size == 2' clean
[ "$rc" -eq 0 ] && [ "$out" -eq 0 ] || fail "$out lines, exit $rc"
[ "$(nerr)" -eq $((base + 1)) ] && grep -q "^strata: clean: no event matches --filter$" "$err" ||
	fail "not said"
run nomatch-stats "$strata" stats --filter 'size == 1 && size == 2' clean
[ "$rc" -eq 0 ] && grep -q "no event" "$err" || fail "stats: not said"
case="window outside the trace"
run window "$strata" print --from 500 clean
[ "$rc" -eq 1 ] && [ "$out" -eq 0 ] || fail "$out lines, exit $rc"
[ "$(nerr)" -eq 1 ] && grep -q "after the trace's end" "$err" || fail "not said"
case="window with no event"
# inside the first gap of more than 3 us between two events
gap=$("$strata" print clean 2>/dev/null | awk '
	NR > 1 && $1 - t > 0.000003 { printf "--from %.9f --to %.9f", t + 0.000001, $1 - 0.000001; exit }
	{ t = $1 }')
run gap "$strata" print $gap clean
[ "$rc" -eq 0 ] && [ "$out" -eq 0 ] || fail "$out lines, exit $rc"
[ "$(nerr)" -eq 1 ] && grep -q "no event" "$err" || fail "not said"

if [ "$fails" -ne 0 ]; then
	echo "reliability: $fails checks failed" >&2
	exit 1
fi
echo "reliability: all checks passed"
