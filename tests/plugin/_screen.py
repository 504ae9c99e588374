"""A minimal terminal: what a screen shows after a stream with the few ANSI controls the status line uses."""

from __future__ import annotations

import re

CONTROL = re.compile(r"\x1b\[([0-9;]*)([A-Za-z])")


def render(stream: str) -> list[str]:
    """The screen's rows after ``stream``: printable text, ``\\r``, ``\\n``, erase line (K), cursor up (A),
    cursor to column (G); colours (m) are dropped. Rows are right-stripped; no scrolling limit."""
    rows: list[list[str]] = [[]]
    r = c = 0
    i = 0
    while i < len(stream):
        ch = stream[i]
        match = CONTROL.match(stream, i)
        if match:
            arg, cmd = match.group(1), match.group(2)
            n = int(arg) if arg.isdigit() else 1
            if cmd == "K":
                rows[r] = [] if arg == "2" else rows[r][:c]
            elif cmd == "A":
                r = max(0, r - n)
            elif cmd == "G":
                c = n - 1
            i = match.end()
            continue
        if ch == "\r":
            c = 0
        elif ch == "\n":
            r, c = r + 1, 0
            while len(rows) <= r:
                rows.append([])
        else:
            row = rows[r]
            row.extend(" " * (c - len(row)))
            if c < len(row):
                row[c] = ch
            else:
                row.append(ch)
            c += 1
        i += 1
    return ["".join(row).rstrip() for row in rows]
