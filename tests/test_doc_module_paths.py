"""Every module path the docs and docstrings name exists (issue 32: docstrings named modules long gone).

Two spellings are checked: a full ``groundeval.x.y`` path anywhere in the docs pages, the README
and the package's sources, and a short path written in double backticks in a docstring whose first
part is one of the package's own parts (``tasks.reconcile.truth``, ``models.retry.call_with_retries``).
A path resolves when its longest importable module prefix exists and the rest are attributes of it.
"""

from __future__ import annotations

import importlib
import importlib.util
import re

from tests._paths import REPO

SRC = REPO / "src" / "groundeval"
PARTS = sorted(p.stem for p in SRC.iterdir()
               if not p.name.startswith("_") and (p.suffix == ".py" or (p / "__init__.py").exists()))
FULL = re.compile(r"\bgroundeval(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
SHORT = re.compile(r"``((?:" + "|".join(PARTS) + r")(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?:\(\))?``")
NOT_MODULES = (".yml", ".yaml", ".json", ".toml", ".md", ".py", ".resources")  # file names, and fhir.resources


def resolves(dotted: str) -> bool:
    """True when ``dotted`` is a module, or a module followed by attributes it has."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            spec = importlib.util.find_spec(module_name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        found: object = importlib.import_module(module_name)
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def _named() -> set[tuple[str, str]]:
    """``(file, dotted path)`` for every path named."""
    named: set[tuple[str, str]] = set()
    pages = [*sorted((REPO / "docs").rglob("*.md")), REPO / "README.md"]
    sources = sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)
    for path in [*pages, *sources]:
        text = path.read_text(encoding="utf-8")
        found = set(FULL.findall(text))
        if path.suffix == ".py":
            found |= {f"groundeval.{short}" for short in SHORT.findall(text)}
        named |= {(str(path.relative_to(REPO)), name.rstrip(".")) for name in found}
    return {(f, n) for f, n in named if not n.endswith(NOT_MODULES) and not n.startswith("groundeval.fhir.resources")}


def test_the_scan_finds_paths_and_can_fail() -> None:
    named = _named()
    assert len(named) > 100  # the docs name many modules: the scan reads them
    assert resolves("groundeval.models.retry.call_with_retries")
    assert not resolves("groundeval.agents._retry.call_with_retries")  # the kind of name this test exists for


def test_every_module_path_named_in_the_docs_and_docstrings_exists() -> None:
    missing = sorted(f"{where}: {name}" for where, name in _named() if not resolves(name))
    assert not missing, "\n".join(missing)
