#!/bin/sh
# SPDX-License-Identifier: MIT
# Test (a): strata breakdown of a thread with known behaviour matches its ground truth.
. "$(dirname "$0")/common.sh"
kernel_test_require
exec python3 "$(dirname "$0")/breakdown_test.py" "$@"
