#!/bin/sh
# SPDX-License-Identifier: MIT
# The kernel's streams followed live: strata view --live's thread states, strata print --follow.
. "$(dirname "$0")/common.sh"
kernel_test_require
exec python3 "$(dirname "$0")/viewlive_test.py" "$@"
