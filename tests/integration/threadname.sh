#!/bin/sh
# SPDX-License-Identifier: MIT
# A thread is named from its first event (issue 26, item 15): eight threads
# that live a few microseconds each are named in strata info, in the
# embedded mode with its guardian and with the in-process consumer.
set -eu
bin=$1 work=$2
strata=$bin/src/cli/strata
prog=$bin/tests/integration/threadname
rm -rf "$work" && mkdir -p "$work"
unset STRATA_SESSION STRATA_MAJORS STRATA_ENABLE STRATA_GUARD
for guard in 1 0; do
	STRATA_GUARD=$guard STRATA_OUTPUT=$work/t$guard "$prog"
	"$strata" info "$work/t$guard" >"$work/info$guard"
	n=$(grep -cE ' short-[0-7] +1 ' "$work/info$guard" || true)
	[ "$n" = 8 ] || { echo "STRATA_GUARD=$guard: $n of 8 short-lived threads named:"; cat "$work/info$guard"; exit 1; }
done
echo "threadname: 8 of 8 short-lived threads named, with and without the guardian"
