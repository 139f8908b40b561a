#!/bin/sh
# SPDX-License-Identifier: MIT
# strata locks with kernel events beside (record --locks -k): the futex cross-check and the longest holds' switches.
. "$(dirname "$0")/../kernel/common.sh"
kernel_test_require
exec python3 "$(dirname "$0")/locks_test.py" kernel "$@"
