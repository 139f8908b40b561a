#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compare libstrata.so's ABI with the baseline abi/libstrata.abi (abidiff), or rewrite it.
#
#   scripts/abi-check.sh [LIBSTRATA_SO]            check (ctest -L abi, make check)
#   scripts/abi-check.sh --update [LIBSTRATA_SO]   make the baseline anew (make abi-update)
#
# LIBSTRATA_SO defaults to build/src/libstrata.so; it needs debug info
# (-g: RelWithDebInfo or Debug). The ABI is what libstrata.so exports
# with the types of the public headers (include/strata/), the inline
# fast path's strata_ring_ctl, strata_ring and strata_tls among them
# (reached through strata_rings, strata_tls and strata_reserve_slow):
# every traced binary has them compiled in (include/strata/inline/ring.h,
# "ABI"). Any difference fails, additions included: a change is either a
# mistake or deliberate, and then the baseline is updated in the same
# commit, where review sees it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
baseline=$root/abi/libstrata.abi

update=0
if [ "${1:-}" = --update ]; then
	update=1
	shift
fi
lib=${1:-$root/build/src/libstrata.so}

for tool in abidw abidiff; do
	command -v $tool >/dev/null || {
		echo "abi-check: $tool not found (apt-get install abigail-tools)" >&2
		exit 2
	}
done
[ -e "$lib" ] || { echo "abi-check: $lib: no such file (build first)" >&2; exit 2; }
readelf -S "$lib" 2>/dev/null | grep -q '\.debug_info' || {
	echo "abi-check: $lib has no debug info: build with -g (RelWithDebInfo)" >&2
	exit 2
}

# No locations and no absolute paths (the compilation units' names are
# made relative to the tree): the baseline must not change with the
# checkout's directory or with a comment that moves a declaration.
dump() {
	abidw --headers-dir "$root/include/strata" --drop-private-types \
		--no-corpus-path --no-comp-dir-path --no-show-locs \
		--type-id-style hash --out-file "$2.tmp" "$1"
	sed "s|path='$root/|path='|" "$2.tmp" >"$2"
	rm -f "$2.tmp"
}

if [ $update = 1 ]; then
	mkdir -p "$(dirname "$baseline")"
	dump "$lib" "$baseline"
	echo "abi-check: wrote $baseline from $lib"
	exit 0
fi

[ -e "$baseline" ] || { echo "abi-check: no baseline $baseline (--update)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dump "$lib" "$tmp/current.abi"
# The check covers the inline structs only if abidw took them as public:
# a library built from another tree's headers would have them dropped.
for t in strata_ring_ctl strata_ring strata_tls strata_rsv; do
	grep -q "<class-decl name='$t'" "$tmp/current.abi" || {
		echo "abi-check: struct $t is not in $lib's ABI dump: was it built" \
			"from $root/include?" >&2
		exit 2
	}
done
set +e
abidiff --no-show-locs --harmless "$baseline" "$tmp/current.abi" >"$tmp/diff" 2>&1
rc=$?
set -e
if [ $rc = 0 ]; then
	echo "abi-check: libstrata.so matches abi/libstrata.abi"
	exit 0
fi
cat "$tmp/diff"
# abidiff's status is a bit field: 1 error, 2 usage, 4 ABI change,
# 8 incompatible change.
if [ $((rc & 3)) != 0 ]; then
	echo "abi-check: abidiff failed (status $rc)" >&2
	exit 2
fi
cat >&2 <<EOF
abi-check: libstrata.so's ABI differs from abi/libstrata.abi (abidiff status $rc).
  Unintended: revert it. Deliberate: read include/strata/inline/ring.h, "ABI"
  (what may change, STRATA_RING_VERSION, the SOVERSION), then record it with
  'make abi-update' (scripts/abi-check.sh --update) in the same commit.
EOF
exit 1
