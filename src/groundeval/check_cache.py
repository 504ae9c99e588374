"""Remember which case files passed their costly checks, so each file is checked once.

A task's ``check_case`` (FHIR R4B validation of the whole Bundle and the request codes the truth
reads) is a pure function of the file's bytes and of the code that checks them.
It costs about 5 ms per extraction case plus about 0.3 s to import the R4B models, paid by the
process that runs the case, when the case is about to run (never at collection). In one process
a file's bytes are checked once (every trial after the first reuses the verdict). With a cache
directory set (the plugin uses pytest's cache, ``.pytest_cache/d/groundeval-checked``), a file
whose SHA-256 passed the same check under the same versions of groundeval, fhir.resources and
pydantic, and the same source of groundeval's task modules (so an edited checkout never reuses a
stale verdict), is not checked again in later runs or other xdist workers either: only an empty
marker file is written, never data. Without a directory (``-p no:cacheprovider``, or library use)
every file is checked once per run.
"""

from __future__ import annotations

import contextlib
import hashlib
from functools import cache
from importlib import metadata
from pathlib import Path

__all__ = ["is_checked", "mark_checked", "use_directory"]

_DIRECTORY: list[Path] = []
_PASSED: set[tuple[str, str]] = set()  # (check, sha256) that passed in this process, this run


def use_directory(directory: Path | None) -> None:
    """Set (or, with None, clear) the directory that holds the markers; forget this run's verdicts."""
    _DIRECTORY[:] = [directory] if directory is not None else []
    _PASSED.clear()


@cache
def _versions() -> str:
    found = []
    for name in ("groundeval", "fhir.resources", "pydantic"):
        try:
            found.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name}=?")
    code = hashlib.sha256()
    package = Path(__file__).resolve().parent
    sources = [*(package / "tasks").rglob("*.py"), *(package / "fhir").glob("*.py"), package / "datasets.py"]
    for source in sorted(sources):
        with contextlib.suppress(OSError):
            code.update(source.read_bytes())
    found.append(f"code={code.hexdigest()[:16]}")
    return ";".join(found)


def _marker(check: str, sha256: str) -> Path | None:
    if not _DIRECTORY:
        return None
    key = hashlib.sha256(f"{check}|{sha256}|{_versions()}".encode()).hexdigest()
    return _DIRECTORY[0] / key


def is_checked(check: str, sha256: str) -> bool:
    """True when a file with these bytes passed ``check`` in this run, or earlier under the same code versions."""
    if (check, sha256) in _PASSED:
        return True
    marker = _marker(check, sha256)
    return marker is not None and marker.is_file()


def mark_checked(check: str, sha256: str) -> None:
    """Record that a file with these bytes passed ``check`` (a write failure is ignored)."""
    _PASSED.add((check, sha256))
    marker = _marker(check, sha256)
    if marker is not None:
        with contextlib.suppress(OSError):
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
