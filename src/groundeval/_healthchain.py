"""Import HealthChain without letting it rewrap the process's standard streams.

``import healthchain`` runs ``colorama.init(autoreset=True)`` (``healthchain/utils/logger.py``),
which replaces ``sys.stdout`` and ``sys.stderr`` with colorama wrappers for the rest of the
process; under pytest that wraps the capture streams of whichever test imported it first.
Every HealthChain import in groundeval goes through this module (:func:`module`, :func:`fhir`,
:func:`terminology`), which does the import and puts the streams back; ruff's banned-api rule
(TID251, ``pyproject.toml``) refuses a direct ``import healthchain`` anywhere else in ``src``.
HealthChain's ``ColorFormatter`` still adds ANSI codes to the ``healthchain`` loggers' records
(visible in ``caplog``); groundeval calls the helpers with ``warn=False`` so they do not log.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

__all__ = ["fhir", "import_healthchain", "module", "terminology"]

_LOCK = threading.RLock()


def module(name: str) -> ModuleType:
    """Import the HealthChain module ``name`` (e.g. ``"healthchain.fhir"``), keeping stdout/stderr.

    Raises:
        ImportError: HealthChain is not installed (the ``healthchain`` extra; callers check it with
            ``groundeval.extras.require_extra`` before any case, so this is a last resort).
    """
    with _LOCK:  # threads (--groundeval-concurrency) must neither see a half-imported module nor
        # race on swapping the streams back
        loaded = sys.modules.get(name)
        if loaded is not None and not getattr(getattr(loaded, "__spec__", None), "_initializing", False):
            return loaded
        out, err = sys.stdout, sys.stderr
        try:
            return importlib.import_module(name)
        finally:
            sys.stdout, sys.stderr = out, err


def fhir() -> ModuleType:
    """``healthchain.fhir`` (``get_resources``, ``get_medications``, ``create_*``, ``validate_resource``)."""
    return module("healthchain.fhir")


def terminology() -> ModuleType:
    """``healthchain.terminology`` (``Coding``, ``TerminologyLookup``)."""
    return module("healthchain.terminology")


def import_healthchain() -> None:
    """Import ``healthchain.fhir`` and ``healthchain.terminology`` once, keeping stdout/stderr.

    Raises:
        ImportError: HealthChain is not installed (the ``healthchain`` extra).
    """
    fhir()
    terminology()
