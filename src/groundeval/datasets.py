"""Eval cases and where they come from.

A ``Case`` is one unit of evaluation: one patient bundle for the extraction task, one clinical
note for the write task. Tasks build cases from files; this module holds the shared pieces:
the ``Case`` record, hashing, JSON loading with file-named errors, and the location of the
fixtures shipped with the package.

A file in the data directory that matches a task's pattern but is not a readable regular file
(a dangling symlink, a symlink loop, a directory named ``x.json``, a FIFO, a socket, a device)
is a ``DatasetError`` naming it, found with ``os.stat`` before anything is opened: it becomes a
collection error, never a crash, and never a hang (opening a FIFO for reading blocks until a
writer appears). Each file is read once, at load; ``Case.sha256`` is the hash of those bytes, so
nothing needs to read a case file again (the run record takes the hash from the case).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from groundeval.errors import DatasetError

__all__ = [
    "Case",
    "case_id_from_stem",
    "default_data_dir",
    "load_json",
    "read_bundles",
    "read_case_bytes",
    "sha256_file",
    "slug",
]


@dataclass(frozen=True, slots=True, eq=False)
class Case:
    """One eval case.

    Attributes:
        case_id: Stable, readable identifier used as the pytest item name
            (e.g. ``"Liz_Conn-27c911c6"``); unique within a dataset.
        source: The file the case was read from.
        sha256: Hex SHA-256 of the file's bytes.
        data: The parsed content (a Bundle dict for extraction, a case dict for write).
        meta: Task-specific facts shown in the run record (patient id, counts).
    """

    case_id: str
    source: Path
    sha256: str
    data: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def read_case_bytes(path: Path) -> bytes:
    """Read a case file's bytes, refusing anything that is not a readable regular file.

    The file is checked with ``os.stat`` (following symlinks) before it is opened, so a FIFO
    is never opened (which would block) and a directory is never read.

    Raises:
        DatasetError: A dangling symlink, a symlink loop, no permission, or a directory, FIFO,
            socket or device; the message names the kind and the fix.
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            problem = "it is a symlink loop (the links point at each other); remove or fix the link"
        elif exc.errno == errno.ENOENT and path.is_symlink():
            problem = f"it is a symlink to {os.readlink(path)!r}, which does not exist; fix or remove the link"
        else:
            problem = f"cannot read the file ({exc.strerror}); fix its permissions or remove it"
        raise DatasetError(str(path), problem) from None
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
        raise DatasetError(
            str(path), f"it is {kind}, not a case file; move it out of the data directory or rename it"
        )
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DatasetError(str(path), f"cannot read the file ({exc.strerror})") from None


def sha256_file(path: Path) -> str:
    """Return the hex SHA-256 of a file's bytes.

    Raises:
        DatasetError: The file is not a readable regular file (see ``read_case_bytes``).
    """
    return hashlib.sha256(read_case_bytes(path)).hexdigest()


class _NotJSONConstant(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity`` in a file: Python's ``json`` reads them, JSON has no such literal."""

    def __init__(self, literal: str) -> None:
        super().__init__(literal)
        self.literal = literal

    def problem(self, text: str) -> str:
        found = re.search(rf"(?<![\w.\"]){re.escape(self.literal)}(?![\w\"])", text)
        where = ""
        if found is not None:
            line = text.count("\n", 0, found.start()) + 1
            where = f" at line {line} column {found.start() - text.rfind(chr(10), 0, found.start())}"
        return (
            f"{self.literal}{where} is not JSON (JSON has no NaN or Infinity literal, and FHIR decimals are "
            "finite numbers); write the measured number, or leave the element out when there is no value"
        )


def _not_json_constant(literal: str) -> Any:
    raise _NotJSONConstant(literal)


def load_json(path: Path) -> tuple[dict[str, Any], str]:
    """Read a JSON object from ``path``, once.

    Args:
        path: A UTF-8 JSON file; a leading UTF-8 byte order mark is accepted.

    Returns:
        ``(object, sha256)``: the object and the hex SHA-256 of the file's bytes as read.

    Raises:
        DatasetError: The file is not a readable regular file, not UTF-8, not JSON (a ``NaN`` or
            ``Infinity`` literal included: Python reads them, JSON has none), or not a JSON object.
    """
    raw = read_case_bytes(path)
    try:
        data = json.loads(raw.decode("utf-8-sig"), parse_constant=_not_json_constant)
    except _NotJSONConstant as exc:
        raise DatasetError(str(path), exc.problem(raw.decode("utf-8-sig"))) from None
    except UnicodeDecodeError as exc:
        raise DatasetError(str(path), "the file is not UTF-8 text; save it as UTF-8") from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(
            str(path),
            f"invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg}); "
            "fix the file or move it out of the data directory",
        ) from exc
    except RecursionError:
        raise DatasetError(str(path), "the JSON nests too deeply to be read; this is not a case file") from None
    if not isinstance(data, dict):
        raise DatasetError(
            str(path), f"expected a JSON object, got {type(data).__name__}; a case file holds one case "
            "(a FHIR Bundle, or a case object): move other JSON files out of the data directory",
        )
    return data, hashlib.sha256(raw).hexdigest()


def read_bundles(files: Iterable[Path]) -> Iterator[tuple[Path, bytes, dict[str, Any]]]:
    """Yield ``(path, raw bytes, parsed JSON)`` for each file holding a Bundle, in order.

    Used by the fixture scripts over raw Synthea exports; files that are not a Bundle are skipped
    with a note on stderr.
    """
    for path in files:
        raw = path.read_bytes()
        data = json.loads(raw)
        if data.get("resourceType") != "Bundle":
            print(f"skipping {path.name}: not a Bundle", file=sys.stderr)
            continue
        yield path, raw, data


_SLUG_RE = re.compile(r"[^A-Za-z0-9]+")


def slug(text: str) -> str:
    """Turn free text into an identifier fragment: ASCII letters and digits joined by ``_``."""
    return _SLUG_RE.sub("_", text).strip("_") or "case"


_UUID_TAIL = re.compile(r"^(?P<head>.*?)(?P<uuid>[0-9a-fA-F]{8})(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")


def case_id_from_stem(stem: str) -> str:
    """The built-in tasks' case id: the file stem, with a trailing UUID cut to its first 8 characters.

    ``Liz_Conn_27c911c6-f045-4ffa-af5d-6eba57ac94b2`` -> ``Liz_Conn_27c911c6``: the id is a prefix
    of the file name, so ``-k`` on any part of it selects the case. Characters outside
    ``[A-Za-z0-9_.-]`` become ``_``; an empty result is ``"case"``.
    """
    match = _UUID_TAIL.match(stem)
    short = f"{match['head']}{match['uuid']}" if match else stem
    return re.sub(r"[^A-Za-z0-9_.\-]+", "_", short).strip("_") or "case"


def default_data_dir(task: str) -> Path:
    """Return the directory of the fixtures shipped for ``task``.

    An installed wheel carries them as ``groundeval/_fixtures/<task>``; a source checkout
    (editable install) reads ``fixtures/<task>`` at the repository root.

    Args:
        task: A task name such as ``"extraction"``.

    Returns:
        The directory path (it may not exist if the task ships no fixtures).
    """
    packaged = Path(str(resources.files("groundeval"))) / "_fixtures" / task
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "fixtures" / task
