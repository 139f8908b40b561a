#!/bin/sh
# SPDX-License-Identifier: MIT
# Golden test: the header for CASE must equal GOLDEN byte for byte, whatever the path and the working directory.
# usage: golden.sh STRATA_GEN CASE.strata GOLDEN.h [strata-gen options]
# STRATA_UPDATE_GOLDEN=1 rewrites GOLDEN instead.
set -eu
gen=$1
src=$2
golden=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$gen" "$@" -o "$tmp/a.h" "$src"
# Again from elsewhere, by a relative path, to stdout: same bytes.
(cd "$(dirname "$src")" && "$gen" "$@" -o - "./$(basename "$src")") >"$tmp/b.h"
if [ "${STRATA_UPDATE_GOLDEN:-0}" = 1 ]; then
	cp "$tmp/a.h" "$golden"
fi
cmp "$tmp/a.h" "$tmp/b.h"
if ! cmp -s "$golden" "$tmp/a.h"; then
	diff -u "$golden" "$tmp/a.h" || true
	echo "golden: $(basename "$golden") differs (STRATA_UPDATE_GOLDEN=1 to accept)" >&2
	exit 1
fi
