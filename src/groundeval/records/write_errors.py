"""Output files that cannot be written: one way to name the file and the reason.

A run writes its partial file, its run record and its Markdown summary (the HTML report and a
comparison are written by the CLI). A write that fails (``EFBIG`` past a file-size limit,
``ENOSPC`` on a full disk, ``EACCES`` on a directory made read-only) raises ``OSError``; the writer
attaches the file's path (``named``) and the caller reports it with ``describe`` and decides what
the run does next (``groundeval.plugin.run_end``).
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["describe", "named"]


@contextmanager
def named(path: str | Path) -> Iterator[None]:
    """Re-raise an ``OSError`` that has no file name (a failed ``write``) with ``path`` as its file name.

    Raises:
        OSError: The same errno and reason, with ``filename`` set.
    """
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def describe(exc: OSError, path: str | Path | None = None) -> str:
    """``could not write runs/x.json: File too large (EFBIG)``: the file, the reason, the errno name."""
    where = exc.filename if exc.filename is not None else path
    reason = exc.strerror or str(exc)
    code = errno.errorcode.get(exc.errno, "") if isinstance(exc.errno, int) else ""
    return f"could not write {where}: {reason}" + (f" ({code})" if code else "")
