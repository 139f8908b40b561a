#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build with ASan+UBSan and with TSan, and run the tests that exercise the producer.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

run() {
	local dir=$1 san=$2 labels=$3
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DSTRATA_SANITIZE="$san" \
		-DSTRATA_STRESS_EVENTS=50000 -DSTRATA_BENCH=OFF >/dev/null
	cmake --build "$dir" -j"$jobs" >/dev/null
	# Stress (signals, migrations, losses, overwrite), the babeltrace2
	# round trips and the unit tests under both; under ASan also the
	# session daemon (crash salvage), the reliability tests but the fork
	# ones, the kernel source, the reader (damaged traces: test_damage,
	# reliability.sh) and strata-gen (its parser on every error case, the
	# generated code run); under TSan the fork tests.
	(cd "$dir" && ctest --output-on-failure -j"$jobs" -L "$labels" ${4:+-LE "$4"} ${5:+-E "$5"})
}

# halt_on_error: a sanitizer report fails the test, not only a crash.
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
echo "== AddressSanitizer + UndefinedBehaviorSanitizer"
# The fork tests apart, below.
# The repeated tests (accounting, killstop, crash, record-salvage) run 8
# times each here: ASan makes each run ~5x slower, and the counts they
# check are the normal build's job; CI stays within its 30 minutes.
# Not reliability-backlog: its first half wants 200 children, started
# together while the recorder is stopped for 2 s, to join within their
# 3 s of patience; ASan's start-up (~5x slower processes on 2 cores)
# leaves ~10 % of them past it, counted as unrecorded, as designed.
# Of the kernel tests, which run one at a time (20-90 s each under ASan),
# kernel-record and kernel-babeltrace2 cover the kernel source's code; the
# others check analyses' numbers, the normal build's job, and kernel-keepup
# the reader's speed, which ASan's slowdown defeats (it lost 20 % here).
STRATA_TEST_RUNS=8 RECORD_KILLS=8 \
	run build-asan "address,undefined" 'stress|integration|unit|record|kernel|reliability|reader|gen' 'fork|soak' \
	'^reliability-backlog$|^kernel-(breakdown|align|restore|switches|daemon|scope|schedlat|keepup)$'
# The fork tests, 25 runs each (100 take 1 minute here), with LeakSanitizer
# off: in a fork child of a multi-threaded process its exit-time check
# still counts the parent's threads and hangs suspending them ("Running
# thread ... was not suspended"; 5 of 25 fork-loop runs hung). Under ASan
# (as under TSan) a fork child goes without its session helper thread
# (lib/client.c, client_fork_helper(): one created in the atfork handler
# hung in the runtime). Memory errors are still checked.
(export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=0
 cd build-asan && STRATA_FORK_RUNS=25 ctest --output-on-failure -j"$jobs" -L fork)
echo "== ThreadSanitizer"
# A traced process under TSan takes about half a second to start: 25 runs
# of each fork test instead of 100 (tests/reliability/forks.sh).
STRATA_FORK_RUNS=25 run build-tsan thread 'stress|integration|unit|fork'
