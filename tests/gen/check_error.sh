#!/bin/sh
# SPDX-License-Identifier: MIT
# Error test: strata-gen must exit 1, print the file's "# expect:" line first, and leave no output behind.
# usage: check_error.sh STRATA_GEN FILE.strata
set -u
gen=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expected=$(sed -n '1s/^# expect: //p' "$src")
fail=0

# An existing header must survive a failed run untouched.
echo old >"$tmp/out.h"
cd "$(dirname "$src")"
"$gen" -o "$tmp/out.h" -d "$tmp/out.d" "$(basename "$src")" 2>"$tmp/stderr"
rc=$?
first=$(head -n 1 "$tmp/stderr")
if [ "$rc" -ne 1 ]; then
	echo "exit status $rc, expected 1"
	fail=1
fi
if [ "$first" != "$expected" ]; then
	echo "got:      $first"
	echo "expected: $expected"
	fail=1
fi
if [ "$(cat "$tmp/out.h")" != old ] || [ -e "$tmp/out.d" ] ||
   [ "$(ls -A "$tmp" | wc -l)" -ne 2 ]; then
	echo "output written despite the error:"
	ls -A "$tmp"
	fail=1
fi
exit $fail
