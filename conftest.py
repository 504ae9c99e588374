"""Shared fixtures for groundeval's own test suite (tests/).

This file sits at the repository root so that `pytest --groundeval-task=...` run here and the
unit tests see the same paths; it defines fixtures only, no hooks.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

# Let pytest cache its assertion rewriting of the test modules and of groundeval (a pytest11
# plugin, so rewritten too), and Python its bytecode, even where PYTHONDONTWRITEBYTECODE=1 is set:
# otherwise every run, and each of its xdist workers, parses and rewrites about 100 test modules
# and groundeval's modules again (several CPU-seconds a process). This file is the first conftest
# pytest loads; the pytest runs the suite starts get the same from tests/conftest.py.
sys.dont_write_bytecode = False

ROOT = Path(__file__).resolve().parent
SHARED_SYNTHEA = ROOT.parent / "shared" / "data" / "synthea"
FIXTURES = ROOT / "fixtures"


@pytest.fixture(scope="session")
def synthea_dir() -> Path:
    """The raw Synthea bundles (../shared/data/synthea); skips when absent (a user's clone)."""
    if not any(SHARED_SYNTHEA.glob("*.json")):
        pytest.skip(f"raw Synthea bundles not found in {SHARED_SYNTHEA} (present in CI only)")
    return SHARED_SYNTHEA


@pytest.fixture(scope="session")
def extraction_fixtures() -> Path:
    """The committed, trimmed extraction fixtures."""
    return FIXTURES / "extraction"


@pytest.fixture(scope="session")
def copy_fixtures() -> Callable[[Path, Iterable[str]], Path]:
    """Return ``copy(dest, prefixes)``: copy the extraction fixtures whose names start with each
    prefix (``"Liz_Conn"``) into ``dest`` (created) and return ``dest``."""

    def copy(dest: Path, prefixes: Iterable[str]) -> Path:
        dest.mkdir(parents=True, exist_ok=True)
        for prefix in prefixes:
            (src,) = (FIXTURES / "extraction").glob(f"{prefix}_*.json")
            shutil.copy(src, dest / src.name)
        return dest

    return copy
