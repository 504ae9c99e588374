"""Output files that cannot be written: written whole or not at all, and one way to name the file and the reason.

A run writes its partial file, its run record and its Markdown summary (the HTML report and a
comparison are written by the CLI). A write that fails (``EFBIG`` past a file-size limit,
``ENOSPC`` on a full disk, ``EACCES`` on a directory made read-only) raises ``OSError``; the writer
attaches the file's path (``named``) and the caller reports it with ``describe`` and decides what
the run does next (``groundeval.plugin.run_end``). A file is replaced through a temporary file
(``replace_whole``) and appended to with a cut-back on failure (``append_whole``), so a failed
write leaves no half-written output behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["append_whole", "describe", "named", "replace_whole", "replace_whole_from"]


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


def replace_whole(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through ``<path>.tmp`` and an atomic rename.

    On a failed write the temporary file is removed and ``path`` keeps what it held before; it
    never holds part of ``text``.

    Raises:
        OSError: What ``write_text`` or the rename raised (``EFBIG``, ``ENOSPC``, ``EACCES``,
            ``EISDIR``, ...), with ``path`` (not the temporary file) as its ``filename``.
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def replace_whole_from(path: Path, chunks: Iterable[str]) -> None:
    """``replace_whole`` of the text ``chunks`` make, written as they come (never held whole in memory).

    Raises:
        OSError: As ``replace_whole``; also what iterating ``chunks`` raised (reading a case back
            from the partial file), with ``path`` as its ``filename``.
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as out:
            for chunk in chunks:
                out.write(chunk)
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    except BaseException:  # a chunk that could not be made (a case line that no longer parses): no half file
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def append_whole(path: str | Path, data: bytes) -> int:
    """Append ``data`` to ``path``; on a failed write, cut the file back to its length before.

    Returns:
        The byte offset in ``path`` where ``data`` starts (one writer per file).

    Raises:
        OSError: What ``open`` or ``write`` raised (``EFBIG``, ``ENOSPC``, ``EACCES``, ...).
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = os.fstat(fd).st_size
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)
    return start
