# SPDX-License-Identifier: MIT
"""The view tests' recordings: a trace used only once its recorder is done with it."""
import os
import shutil
import sys
import time


def wait_done(trace, seconds=30):
    """Whether the recorder finished `trace` within `seconds`: it keeps
    .live at the root until every file is written, which may be after
    the program exits (docs/record.md, "The end of a trace"), and a test
    that reads the trace meanwhile may see fewer events or files."""
    live = os.path.join(trace, ".live")
    for _ in range(int(seconds * 20)):
        if not os.path.exists(live):
            return True
        time.sleep(0.05)
    return not os.path.exists(live)


def fresh_work(base, name):
    """`base`/`name`, emptied: (that folder, its trace path)."""
    work = os.path.join(base, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    return work, os.path.join(work, "trace")


class Checks:
    """Failures collected, each said at once on stderr as `test: FAIL:`."""

    def __init__(self, test):
        self.test, self.failed = test, []

    def __call__(self, ok, what):
        if not ok:
            self.failed.append(what)
            print(f"{self.test}: FAIL:", what, file=sys.stderr)
