#!/bin/sh
# SPDX-License-Identifier: MIT
# libstrata-reader and `strata print` against babeltrace2 on one large trace; prints a markdown table.
# usage: bench/reader_bench.sh BUILD_DIR [TRACE [NEVENTS]]
#   BUILD_DIR  a configured and built strata tree (strata-cli, strata-reader_static)
#   TRACE      trace to read; generated there (NEVENTS, default 50000000) if absent
set -eu
build=${1:?usage: reader_bench.sh BUILD_DIR [TRACE [NEVENTS]]}
trace=${2:-${TMPDIR:-/tmp}/strata-reader-bench}
nev=${3:-50000000}
src=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/reader_bench
strata=$build/src/cli/strata

${CC:-cc} -O2 -I"$src/include" "$src/bench/reader_bench.c" \
	"$build/src/reader/libstrata-reader.a" -o "$bin"
[ -d "$trace" ] || "$bin" gen "$trace" "$nev" 4 >&2
cat "$trace"/ust/*/cpu* > /dev/null   # page cache warm for every reader

secs() { # run a command, print its wall time in seconds
	s=$(date +%s.%N); "$@" > /dev/null 2>&1; e=$(date +%s.%N)
	echo "$e - $s" | bc -l
}
rate() { echo "scale=2; $1 / $2 / 1000000" | bc -l; }

n=$("$bin" decode "$trace" | sed -n 's/^decode: \([0-9]*\) events.*/\1/p')
size=$(du -sh "$trace" | cut -f1)
t_dec=$(secs "$bin" decode "$trace")
t_txt=$(secs sh -c "'$strata' print '$trace' > /dev/null")
seek=$("$bin" seek "$trace" 1000 | sed 's/^seek: //')
if command -v babeltrace2 > /dev/null; then
	b_dec=$(secs babeltrace2 -o dummy "$trace")
	b_txt=$(secs sh -c "babeltrace2 '$trace' > /dev/null")
	bd=$(rate "$n" "$b_dec"); bt=$(rate "$n" "$b_txt")
else
	bd=n/a; bt=n/a
fi
echo "Trace: $trace, $n events, $size, $(nproc) CPUs on $(uname -m)"
echo
echo "| measure | strata | babeltrace2 |"
echo "| --- | ---: | ---: |"
echo "| full decode (M events/s) | $(rate "$n" "$t_dec") | $bd |"
echo "| text listing to /dev/null (M events/s) | $(rate "$n" "$t_txt") | $bt |"
echo "| seek to a random time | $seek | n/a |"
