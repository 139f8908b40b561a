#!/bin/sh
# SPDX-License-Identifier: MIT
# strata view's page in Debian's headless Chromium, driven by playwright-core from the npm lockfile.
# usage: browser.sh STRATA PYTHON WORKDIR [WORKERS [MESSAGES [SLOWLOG [SPIN]]]]
# With WORKERS (examples/workers), also the demo's trace (make demo), shot as
# WORKDIR/browser/demo.png; STRATA_UPDATE_SCREENSHOT=1 copies it to docs/view.png.
# With WORKERS, also marked events and a selection's statistics (mark_browser.mjs).
# With SLOWLOG (tests/reader/slowlog), the live page on a trace being recorded.
# With SPIN (tests/profile/spin.c), a sample's call chain in the details.
# Exit 77 (skipped) only when chromium or node is missing: scripts/deps.sh test installs them.
set -u
strata=$1
py=$2
work=$3/browser
workers=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/common.sh"
chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "view-browser: SKIP: no $chromium (apt-get install chromium)"; exit 77; }
command -v node >/dev/null && command -v npm >/dev/null ||
	{ echo "view-browser: SKIP: no node or npm (apt-get install nodejs npm)"; exit 77; }
rm -rf "$work"
mkdir -p "$work"

# the test tools, from the lockfile, beside the build; never a browser
# download (playwright-core has none), and again only when the lock changed
mods=$3/node
if ! cmp -s "$root/package-lock.json" "$mods/package-lock.json" ||
   ! [ -d "$mods/node_modules/playwright-core" ]; then
	rm -rf "$mods"
	mkdir -p "$mods"
	cp "$root/package.json" "$root/package-lock.json" "$mods/"
	(cd "$mods" && npm ci --no-audit --no-fund --ignore-scripts >npm.log 2>&1) ||
		{ cat "$mods/npm.log" >&2; echo "view-browser: npm ci failed" >&2; exit 1; }
fi
cp "$here/browser_test.mjs" "$here/live_browser.mjs" "$here/building_browser.mjs" \
	"$here/mark_browser.mjs" "$here/chromium.mjs" "$mods/"

"$py" "$here/gen_view.py" "$work/trace" >/dev/null || exit 1
# an activity rule: the jobs paired by their job field (browser_test.mjs)
view_start "$strata" "$work/trace" "$work/view" \
	--activity 'jobs=work:job_begin..work:job_end,by=job' || exit 1
CHROMIUM=$chromium node "$mods/browser_test.mjs" "$view_url" "$work/view.png"
rc=$?
view_stop || { echo "view-browser: Ctrl-C did not stop the server" >&2; rc=1; }

# served at once (docs/view.md, "Serve at once"): the build held back by
# the tests' knob until the page has shown its coarse paint and banner
# (building_browser.mjs then creates the file), then the full paint
rm -f "$work/building.hold"
view_wait='' STRATA_VIEW_TEST_HOLD=$work/building.hold view_start "$strata" "$work/trace" \
	"$work/building-view" --no-cache || exit 1
CHROMIUM=$chromium node "$mods/building_browser.mjs" "$view_url" "$work/building.png" \
	"$work/building.hold" || rc=1
view_stop || { echo "view-browser: Ctrl-C did not stop the server" >&2; rc=1; }

# message arrows: tests/view/messages.c's trace (flows_test.py checks them
# one by one against the program's account)
messages=${5:-}
if [ -n "$messages" ]; then
	STRATA_OUTPUT=$work/messages "$messages" 20 >/dev/null || exit 1
	view_start "$strata" "$work/messages" "$work/messages-view" || exit 1
	CHROMIUM=$chromium node "$mods/browser_test.mjs" "$view_url" "" flows 20 || rc=1
	view_stop || { echo "view-browser: Ctrl-C did not stop the server" >&2; rc=1; }
fi

# damage: a recording whose biggest stream is cut inside a packet, its
# ranges drawn on their CPU's row (browser_test.mjs's damage mode)
if [ -n "$workers" ]; then
	"$strata" record -o "$work/damaged" -- "$workers" 3 50000 >/dev/null 2>&1 ||
		{ echo "view-browser: strata record of workers failed" >&2; exit 1; }
	"$py" - "$work/damaged" <<'EOF' || exit 1
import os
import sys
streams = [os.path.join(d, f) for d, _, fs in os.walk(sys.argv[1]) for f in fs
           if f.startswith("cpu") and not d.endswith("index")]
big = max(streams, key=os.path.getsize)
data = open(big, "rb").read()
open(big, "wb").write(data[:len(data) // 2 + 1234])
EOF
	view_start "$strata" "$work/damaged" "$work/damaged-view" || exit 1
	CHROMIUM=$chromium node "$mods/browser_test.mjs" "$view_url" "" damage || rc=1
	view_stop || { echo "view-browser: Ctrl-C did not stop the server" >&2; rc=1; }
fi

# strata view --live: slowlog's 600 events, 25 ms apart, recorded with the
# live timer while the page follows them (live_browser.mjs)
slowlog=${6:-}
if [ -n "$slowlog" ]; then
	"$strata" record -o "$work/live" --live=50 -- "$slowlog" 600 25 >/dev/null 2>&1 &
	rec=$!
	view_start "$strata" "$work/live" "$work/live-view" --live || exit 1
	CHROMIUM=$chromium node "$mods/live_browser.mjs" "$view_url" || rc=1
	view_stop || { echo "view-browser: Ctrl-C did not stop the server" >&2; rc=1; }
	wait $rec || { echo "view-browser: strata record of slowlog failed" >&2; rc=1; }
fi

# a sample's call chain: spin.c sampled with frame pointers (where perf
# sampling is offered: else said, and left out)
spin=${7:-}
if [ -n "$spin" ]; then
	if "$strata" record --sample --call-graph fp -o "$work/spin" -- "$spin" 2 20 \
		>/dev/null 2>"$work/spin.err" && ! grep -q "sampling off" "$work/spin.err"; then
		view_start "$strata" "$work/spin" "$work/spin-view" --no-cache || exit 1
		CHROMIUM=$chromium node "$mods/browser_test.mjs" "$view_url" "" chain || rc=1
		view_stop || { echo "view-browser: Ctrl-C did not stop the server" >&2; rc=1; }
	else
		echo "view-browser: no call chains checked: $(head -n1 "$work/spin.err")"
	fi
fi
[ -n "$workers" ] || exit $rc

# the virtualised list over 250 000 events, against strata print's
# (browser_test.mjs vlist)
STRATA_OUTPUT=$work/vlist "$workers" 3 50000 >/dev/null || exit 1
i=0
while [ -e "$work/vlist/.live" ] && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
"$strata" print "$work/vlist" --format json >"$work/vlist.json" || exit 1
view_start "$strata" "$work/vlist" "$work/vlist-view" --no-cache || exit 1
CHROMIUM=$chromium node "$mods/browser_test.mjs" "$view_url" "" vlist "$work/vlist.json" || rc=1
# marked and counted against print's counts, a selection's statistics
# against api/stats (mark_browser.mjs)
CHROMIUM=$chromium node "$mods/mark_browser.mjs" "$view_url" "$work/vlist.json" || rc=1
view_stop || { echo "view-browser: Ctrl-C did not stop the server" >&2; rc=1; }

# the README's screenshot: the demo's trace, recorded as scripts/demo.sh
# does, with buffers large enough not to lose events on a loaded machine
STRATA_PACKETS=512 STRATA_OUTPUT=$work/demo "$workers" 4 100000 >/dev/null || exit 1
view_start "$strata" "$work/demo" "$work/demo-view" || exit 1
CHROMIUM=$chromium node "$mods/browser_test.mjs" "$view_url" "$work/demo.png" demo || rc=1
view_stop || { echo "view-browser: Ctrl-C did not stop the server" >&2; rc=1; }
if [ $rc = 0 ] && [ "${STRATA_UPDATE_SCREENSHOT:-}" = 1 ]; then
	cp "$work/demo.png" "$root/docs/view.png"
fi
exit $rc
