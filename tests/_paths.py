"""Where the repository's files are, for tests at any depth of ``tests/``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
"""The repository root (``fixtures/``, ``docs/``, ``scripts/``, ``examples/`` are under it)."""


def load_script(stem: str) -> ModuleType:
    """``scripts/<stem>.py`` as a module, importable by its helpers as when the script runs.

    ``scripts/`` goes on ``sys.path`` (a script imports the helper module that sits next to it) and
    the module is registered under ``stem`` before it runs (its dataclasses look their module up
    while the class is built). Each call loads the file again.
    """
    scripts = REPO / "scripts"
    if str(scripts) not in sys.path:
        sys.path.insert(0, str(scripts))
    spec = importlib.util.spec_from_file_location(stem, scripts / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[stem] = module
    spec.loader.exec_module(module)
    return module
