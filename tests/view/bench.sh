#!/bin/sh
# SPDX-License-Identifier: MIT
# Measure strata view on a big trace: first paint and zoom in Chromium, the server's RSS (docs/view.md, "Speed").
# usage: bench.sh BUILD [TRACE]   (no TRACE: the example recorded with 10 M events)
# STRATA_VIEW_ARGS=--no-cache: measure without the model cache (docs/view.md, "The cache");
# with --wait too: the URL once the model is built, as before "Serve at once".
# STRATA_BENCH_PAINT_ONLY=1: the first paints only (coarse and full), no zoom.
# Not part of ctest: it takes minutes and wants a quiet machine.
set -eu
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
trace=${2:-$build/tests/view/bench-trace}
if ! [ -d "$trace" ]; then
	# 2 M jobs of 5 events; enough packets that none is lost
	STRATA_PACKETS=512 STRATA_OUTPUT=$trace "$build/examples/workers" 4 2000000 >/dev/null
fi
mods=$build/tests/view/node
[ -d "$mods/node_modules/playwright-core" ] ||
	{ echo "bench.sh: run ctest -R view-browser first (it installs the test tools)" >&2; exit 1; }
cp "$here/bench_view.mjs" "$mods/"
"$build/src/cli/strata" info "$trace" | sed -n '2p;5,6p'
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
node "$mods/bench_view.mjs" "$build/src/cli/strata" "$trace"
