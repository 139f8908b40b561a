#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Check flight-recorder snapshots (docs/record.md, "Snapshots"): each a valid trace, holding the newest events.
"""usage: snapcheck.py SNAPSHOT-DIR...   (in the order they were taken)

Every traced thread logs sequence numbers (seqwriter's `w0`, or the
in-process test's), one thread per process, each pinned to one CPU so
that all its events are in one ring. For each snapshot:
  - babeltrace2 reads it with nothing on stderr (no torn or damaged packet);
  - per thread, the sequence numbers are strictly contiguous: a run
    n, n+1, ..., m with no gap and no duplicate (packets are whole and
    the kept ones are the newest run of one ring);
  - per thread, m (the newest) is >= the previous snapshot's m.
A snapshot the writers lapped entirely (a loaded machine) holds no
event of a thread: valid, but at most a quarter of them may be so.
Exit status 1 with the first problem on stderr.
"""
import re
import subprocess
import sys

EV = re.compile(r'pid = (\d+), tid = (\d+).*\{ w0 = (0x[0-9A-Fa-f]+|\d+) \}')


def main():
    last = {}
    checked = empty = 0
    for d in sys.argv[1:]:
        p = subprocess.run(['babeltrace2', d], capture_output=True, text=True)
        if p.returncode or p.stderr.strip():
            sys.exit(f'{d}: babeltrace2 failed or warned: {p.stderr.strip()[:300]}')
        seqs = {}
        for line in p.stdout.splitlines():
            if ' strata:' in line:
                continue
            m = EV.search(line)
            if m:
                seqs.setdefault((m[1], m[2]), []).append(int(m[3], 0))
        if not seqs:
            empty += 1
        for who, s in seqs.items():
            # babeltrace2 merges by time: one thread's events keep their order
            if s != list(range(s[0], s[0] + len(s))):
                bad = next(i for i in range(1, len(s)) if s[i] != s[i - 1] + 1)
                sys.exit(f'{d}: thread {who}: not one contiguous run: '
                         f'... {s[bad - 1]}, {s[bad]} ... ({len(s)} events)')
            if s[-1] < last.get(who, -1):
                sys.exit(f'{d}: thread {who}: newest event {s[-1]} is older '
                         f'than the previous snapshot\'s {last[who]}')
            last[who] = s[-1]
        checked += 1
    if empty * 4 > checked or not last:
        sys.exit(f'{empty} of {checked} snapshots hold no event')
    print(f'snapcheck: {checked} snapshots valid, newest events each time '
          f'({len(last)} threads; {empty} lapped, empty)')


main()
