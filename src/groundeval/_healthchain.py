"""Import HealthChain without letting it rewrap the process's standard streams.

``import healthchain`` runs ``colorama.init(autoreset=True)`` (``healthchain/utils/logger.py``),
which replaces ``sys.stdout`` and ``sys.stderr`` with colorama wrappers for the rest of the
process; under pytest that wraps the capture streams of whichever test imported it first.
:func:`import_healthchain` does the first import and puts the streams back. HealthChain's
``ColorFormatter`` still adds ANSI codes to the ``healthchain`` loggers' records (visible in
``caplog``); groundeval calls the helpers with ``warn=False`` so they do not log.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["import_healthchain"]


def import_healthchain() -> None:
    """Import ``healthchain.fhir`` and ``healthchain.terminology`` once, keeping stdout/stderr.

    Raises:
        ImportError: HealthChain is not installed (it is a groundeval dependency).
    """
    if "healthchain.fhir" in sys.modules and "healthchain.terminology" in sys.modules:
        return
    out, err = sys.stdout, sys.stderr
    try:
        importlib.import_module("healthchain.fhir")
        importlib.import_module("healthchain.terminology")
    finally:
        sys.stdout, sys.stderr = out, err
