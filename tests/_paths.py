"""Where the repository's files are, for tests at any depth of ``tests/``."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
"""The repository root (``fixtures/``, ``docs/``, ``scripts/``, ``examples/`` are under it)."""
