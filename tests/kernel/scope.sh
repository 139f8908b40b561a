#!/bin/sh
# SPDX-License-Identifier: MIT
# strata breakdown of a record -k trace, whose switches outside the command's tree are dropped, against the kernel's own accounting.
. "$(dirname "$0")/common.sh"
kernel_test_require
exec python3 "$(dirname "$0")/scope_test.py" "$@"
