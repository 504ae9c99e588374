"""Remember which case files passed their costly checks, so each file is checked once.

A task's ``check_case`` (``fhir.validation.check_bundle``: FHIR R4B validation of the whole Bundle
and the codes the truth reads) is a pure function of the file's bytes and of the code that checks
them. Every built-in task's ``check_case`` goes through ``check_once``, the one memo of such verdicts.
It costs about 5 ms per extraction case plus about 0.3 s to import the R4B models, paid by the
process that runs the case, when the case is about to run (never at collection). In one process
a file's bytes are checked once, whatever the run (every trial after the first, and every later
run in the same process, as ``pytest.main`` called again or pytester's in-process runs, reuses
the verdict; the code that checks cannot change under a running process). With a cache directory
set (the plugin uses pytest's cache, ``.pytest_cache/d/groundeval-checked``), a file whose SHA-256
passed the same check under the same versions of groundeval, fhir.resources and pydantic, and the
same source of groundeval's task modules (so an edited checkout never reuses a stale verdict), is
not checked again in later runs or other xdist workers either: only an empty marker file is
written, never data. Without a directory (``-p no:cacheprovider``, or library use) every file is
checked once per process. Only a pass is remembered: a file that failed is checked again.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from functools import cache
from importlib import metadata
from pathlib import Path

__all__ = ["check_once", "is_checked", "mark_checked", "use_directory"]

_DIRECTORY: list[Path] = []
_PASSED: set[tuple[str, str]] = set()  # (check, sha256) that passed in this process


def use_directory(directory: Path | None) -> None:
    """Set (or, with None, clear) the directory that holds the markers; this process's verdicts are kept."""
    _DIRECTORY[:] = [directory] if directory is not None else []


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
    """True when a file with these bytes passed ``check`` in this process, or earlier under the same code versions."""
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


def check_once(check: str, sha256: str, run: Callable[[], None], *, remember: bool = True) -> None:
    """Run ``run`` (a case file's costly check) unless a file with these bytes already passed ``check``.

    Every task's ``check_case`` goes through here, so each file is checked once whatever task reads it.

    Args:
        check: The check's name (``fhir.validation.check_name``: one name per check, shared by the
            tasks that run the same check on the same bytes).
        sha256: The checked file's SHA-256.
        run: The check; raises on a failure (nothing is then remembered).
        remember: False for data that is not the file's bytes (a counterfactual twin's changed
            Bundle): its pass says nothing of the file, so it is not recorded.

    Raises:
        Exception: Whatever ``run`` raised (a ``DatasetError`` for a bad file).
    """
    if is_checked(check, sha256):
        return
    run()
    if remember:
        mark_checked(check, sha256)
