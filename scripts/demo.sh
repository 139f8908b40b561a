#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Record the bundled multi-threaded example into a trace and show it.
set -euo pipefail
build=${1:-build}
trace=traces/demo
rm -rf "$trace"
echo "== Recording: STRATA_OUTPUT=$trace $build/examples/workers 4 100000"
STRATA_OUTPUT=$trace "$build/examples/workers" 4 100000
echo
if [ -x "$build/src/cli/strata" ]; then
	echo "== strata info $trace"
	"$build/src/cli/strata" info "$trace"
	echo
	echo "== strata print $trace | head -20"
	# head closes the pipe after 20 lines: strata then ends by SIGPIPE,
	# which is what a listing cut short should do.
	{ "$build/src/cli/strata" print "$trace" || true; } | head -20
else
	echo "== babeltrace2 $trace | head -20"
	{ babeltrace2 "$trace" || true; } | head -20
	echo
	echo "== events per type (babeltrace2)"
	babeltrace2 "$trace" | sed -E 's/^[^)]*\) [^ ]* ([^:]+:[^:]+):.*/\1/' | sort | uniq -c | sort -rn
fi
echo
echo "Trace: $trace ($(du -sh "$trace" | cut -f1)). Open it with babeltrace2 or Trace Compass as is."
if [ -x "$build/src/cli/strata" ] && "$build/src/cli/strata" view --help >/dev/null 2>&1; then
	echo "See it as a timeline: $build/src/cli/strata view $trace"
	echo "  (then open the URL it prints in a browser; Ctrl-C stops it; docs/view.md)"
fi
