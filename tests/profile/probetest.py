# SPDX-License-Identifier: MIT
"""What the function-probe tests of tests/profile share: a fresh work
directory, the failures, collected so that one run says them all, and
commands that must succeed."""
import os
import shutil
import subprocess
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


def run(args):
    """A command's stdout; exits with its stderr when it fails."""
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode:
        sys.exit("%s exited %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def done(summary):
    """Exit 1 after any failure, else print the summary."""
    if failures:
        sys.exit(1)
    print(summary)
