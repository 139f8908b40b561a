#!/bin/sh
# SPDX-License-Identifier: MIT
# Compile test: generated headers build warning-free as C11, gnu11 and C++17, and to nothing under -DSTRATA_DISABLE.
# usage: compile_check.sh STRATA_GEN CC CXX INCLUDE_DIR CASES_DIR USE_C [CFLAGS CXXFLAGS]
# CFLAGS and CXXFLAGS (one word each, space-separated flags) are added to
# the C and the C++ compiles: the strict sets of tests/compile.
set -eu
gen=$1
cc=$2
cxx=$3
inc=$4
cases=$5
use=$6
cflags=${7:-}
cxxflags=${8:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for f in rt main other pad; do
	"$gen" -o "$tmp/$f.h" "$cases/$f.strata"
done
warn="-Wall -Wextra -pedantic -Werror -O2"
# ISO C11 needs POSIX for clock_gettime() in strata/inline/ring.h.
set -- "$cc -x c -std=c11 -D_POSIX_C_SOURCE=200809L $cflags" \
       "$cc -x c -std=gnu11 $cflags" "$cxx -x c++ -std=c++17 $cxxflags"
for compiler in "$@"; do
	for disable in "" -DSTRATA_DISABLE; do
		echo "$compiler $disable"
		$compiler $warn $disable -I"$tmp" -I"$inc" -c "$use" -o "$tmp/use.o"
		if [ -n "$disable" ]; then
			# Nothing of libstrata referenced, nothing registered.
			if nm "$tmp/use.o" | grep -E 'strata_(register|reserve|mask|gen_)'; then
				echo "STRATA_DISABLE left references to libstrata" >&2
				exit 1
			fi
		fi
	done
done
