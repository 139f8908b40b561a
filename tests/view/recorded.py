# SPDX-License-Identifier: MIT
"""The view tests' recordings: a trace used only once its recorder is done with it."""
import os
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
