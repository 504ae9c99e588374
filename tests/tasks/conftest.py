"""Fixtures shared by the task tests: the raw Synthea bundles, read once for the fixture scripts' builds."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from groundeval.datasets import read_bundles

RawBundle = tuple[Path, bytes, dict[str, Any]]
"""What ``groundeval.datasets.read_bundles`` yields per file: its path, its bytes, its JSON."""


@pytest.fixture(scope="session")
def raw_bundles(synthea_dir: Path) -> dict[Path, RawBundle]:
    """Every raw Synthea bundle read once by ``read_bundles``: path -> (path, bytes, JSON).

    Each fixture script (``scripts/make_*.py``) parses all of them (about 35 MB of JSON) to build;
    the tests of several scripts share this one reading instead. The scripts trim or copy what
    they read and never change it.
    """
    return {path: (path, raw, bundle) for path, raw, bundle in read_bundles(sorted(synthea_dir.glob("*.json")))}


@pytest.fixture(scope="session")
def cached_read_bundles(raw_bundles: dict[Path, RawBundle]) -> Callable[[Iterable[Path]], Iterator[RawBundle]]:
    """A stand-in for ``read_bundles`` that serves the raw bundles from ``raw_bundles``.

    A file not among them (another directory) is read as ``read_bundles`` reads it.
    """

    def read(files: Iterable[Path]) -> Iterator[RawBundle]:
        for path in files:
            if path in raw_bundles:
                yield raw_bundles[path]
            else:
                yield from read_bundles([path])

    return read
