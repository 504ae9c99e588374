"""Fixtures shared by the task tests: the raw Synthea bundles, read once for the fixture scripts' builds."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from groundeval.datasets import read_bundles
from tests._paths import load_script

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


@pytest.fixture(scope="session")
def fixture_script(cached_read_bundles: Callable[[Iterable[Path]], Iterator[RawBundle]]) -> Callable[[str], ModuleType]:
    """A loader of ``scripts/<stem>.py`` as a module (``tests._paths.load_script``) whose
    ``read_bundles`` is ``cached_read_bundles``: its builds read the session's one reading."""

    def load(stem: str) -> ModuleType:
        module = load_script(stem)
        module.read_bundles = cached_read_bundles  # type: ignore[attr-defined]
        return module

    return load


@pytest.fixture(scope="session")
def built_script(fixture_script: Callable[[str], ModuleType], synthea_dir: Path) -> Callable[[str], ModuleType]:
    """A loader of ``scripts/<stem>.py`` (as ``fixture_script``) that builds from the raw bundles once.

    The module's ``build(source)`` then returns that one build for ``synthea_dir`` (the tests of its
    ``--check`` and ``--out`` compare it with files) and builds anew from any other source.
    """
    made: dict[str, ModuleType] = {}

    def load(stem: str) -> ModuleType:
        if stem not in made:
            module = fixture_script(stem)
            build = module.build
            outputs = build(synthea_dir)
            module.build = lambda source: outputs if Path(source) == synthea_dir else build(source)  # type: ignore[attr-defined]
            made[stem] = module
        return made[stem]

    return load
