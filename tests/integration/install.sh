#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install into a scratch prefix; build a program against it with pkg-config and with CMake.
set -euo pipefail
build=$1 work=$2
prefix=$work/prefix
fail() { echo "install: FAIL: $*" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || fail "cmake --install: $(tail -3 "$work/install.log")"

libdir=$(ls -d "$prefix"/lib*/pkgconfig | head -1)
export PKG_CONFIG_PATH=$libdir
flags=$(pkg-config --cflags --libs strata) || fail "pkg-config --cflags --libs strata"
cat >"$work/app.c" <<'C'
#include <strata/strata.h>
int main(void)
{
	for (int i = 0; i < 1000; i++)
		STRATA_EVENT2(3, 1, i, i * 2);
	return 0;
}
C
# shellcheck disable=SC2086
cc -O2 -o "$work/app" "$work/app.c" $flags || fail "compile with pkg-config flags: $flags"
LD_LIBRARY_PATH=${libdir%/pkgconfig} STRATA_OUTPUT="$work/trace" "$work/app"
n=$(babeltrace2 "$work/trace" 2>/dev/null | grep -vc ' strata:' || true)
[ "$n" = 1000 ] || fail "pkg-config build recorded $n of 1000 events"

# The reader library through pkg-config: count the events back.
cat >"$work/count.c" <<'C'
#include <stdio.h>
#include <strata/reader.h>
int main(int argc, char **argv)
{
	struct strata_trace *t;
	if (argc < 2 || strata_trace_open(argv[1], NULL, &t))
		return 1;
	strata_trace_close(t);
	puts("opened");
	return 0;
}
C
rflags=$(pkg-config --cflags --libs strata-reader) || fail "pkg-config strata-reader"
# shellcheck disable=SC2086
cc -O2 -o "$work/count" "$work/count.c" $rflags 2>"$work/count.err" || fail "compile against strata-reader: $(head -3 "$work/count.err")"
[ "$(LD_LIBRARY_PATH=${libdir%/pkgconfig} "$work/count" "$work/trace")" = opened ] || fail "strata-reader could not open the trace"

# CMake: find_package(strata) and strata_add_events() from the install.
mkdir -p "$work/cm"
cat >"$work/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(app C)
find_package(strata REQUIRED)
add_executable(app app.c)
strata_add_events(app ev.strata)
target_link_libraries(app PRIVATE strata::strata)
CM
cat >"$work/cm/ev.strata" <<'EV'
subsystem app 4 "an installed-package test" {
    event tick 1 (u64 n, string what) "tick %{n}: %{what}";
}
EV
cat >"$work/cm/app.c" <<'C'
#include "ev.h"
int main(void)
{
	for (int i = 0; i < 100; i++)
		strata_app_tick((unsigned long long)i, "hello");
	return 0;
}
C
cmake -S "$work/cm" -B "$work/cm/build" -DCMAKE_PREFIX_PATH="$prefix" >"$work/cm.log" 2>&1 || fail "configure: $(tail -5 "$work/cm.log")"
cmake --build "$work/cm/build" >>"$work/cm.log" 2>&1 || fail "build: $(tail -5 "$work/cm.log")"
LD_LIBRARY_PATH=${libdir%/pkgconfig} STRATA_OUTPUT="$work/trace2" "$work/cm/build/app"
n=$(babeltrace2 "$work/trace2" 2>/dev/null | grep -c 'app:tick: .*what = "hello"' || true)
[ "$n" = 100 ] || fail "find_package build recorded $n of 100 events"
# record --locks finds the installed libstrata-locks.so beside bin/
LD_LIBRARY_PATH=${libdir%/pkgconfig} "$prefix/bin/strata" record --locks -o "$work/trace3" -- true \
	2>"$work/locks.err" || fail "installed record --locks: $(head -3 "$work/locks.err")"
echo "install: OK"
