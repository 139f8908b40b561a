# SPDX-License-Identifier: MIT
"""What the function-probe tests of tests/profile share: a fresh work
directory and the failures, collected so that one run says them all."""
import os
import shutil
import sys

failures = []


def workdir(path):
    """path, emptied and made."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def fail(msg):
    print("FAIL:", msg)
    failures.append(msg)


def done(summary):
    """Exit 1 after any failure, else print the summary."""
    if failures:
        sys.exit(1)
    print(summary)
