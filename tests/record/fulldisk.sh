#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# strata record onto a full disk: one clear error, the program unaffected, a valid trace up to there.
set -euo pipefail
build=$1 work=$2
fail() { echo "fulldisk: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "fulldisk: needs root to mount a small tmpfs; skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work/small"
# 4 MiB: the workers log ~24 MB, so it fills. The consumer writes up to a
# megabyte of packets at once (docs/record.md "Batches"); a batch the disk
# cuts short keeps its whole packets, so some events are readable however
# the writes fall.
mount -t tmpfs -o size=4m tmpfs "$work/small" || { echo "fulldisk: cannot mount a tmpfs; skipped"; exit 77; }
trap 'umount "$work/small" 2>/dev/null || true' EXIT

rc=0
"$build/src/cli/strata" record -o "$work/small/t" -- "$build/examples/workers" 4 100000 \
	>"$work/out" 2>"$work/err" || rc=$?
[ $rc = 0 ] || fail "the program's exit status is $rc: $(cat "$work/err")"
grep -q 'checksum' "$work/err" || fail "the program did not finish: $(cat "$work/err")"
grep -q 'strata: .*trace incomplete: No space left on device' "$work/err" ||
	fail "no clear error line: $(cat "$work/err")"
babeltrace2 "$work/small/t" >"$work/bt" 2>"$work/bt.err" || fail "babeltrace2 failed: $(head -3 "$work/bt.err")"
# What the full disk kept out is reported as discarded (format.md §2).
grep -v 'WARNING: Tracer discarded' "$work/bt.err" | grep -q . && fail "babeltrace2 errors: $(head -3 "$work/bt.err")"
grep -q 'WARNING: Tracer discarded' "$work/bt.err" || fail "babeltrace2 does not report the events not written"
n=$(grep -vc ' strata:' "$work/bt" || true)
[ "$n" -gt 0 ] || fail "nothing readable was written before the disk filled"
echo "fulldisk: OK ($n events readable)"
