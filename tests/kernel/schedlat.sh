#!/bin/sh
# SPDX-License-Identifier: MIT
# strata latency --sched against perf sched latency, both recording the same run.
. "$(dirname "$0")/common.sh"
kernel_test_require
if ! perf record -q -a -e sched:sched_switch -o /dev/null -- true >/dev/null 2>&1; then
	echo "SKIP: perf cannot record sched:sched_switch here"
	exit 77
fi
exec python3 "$(dirname "$0")/schedlat_test.py" "$@"
