"""Isolation for groundeval's own tests."""

from __future__ import annotations

import http.cookiejar  # noqa: F401

import pytest
import requests  # noqa: F401
import scipy.stats  # noqa: F401

# The three imports above load, before any pytester run, modules that cannot be imported twice in
# one process (numpy's C extension) or that break when re-imported beside live objects (requests'
# cookie jars): pytester's in-process runs drop every module first imported inside them.


@pytest.fixture(autouse=True)
def _no_langsmith_streaming(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never stream the suite's own pytester runs to a developer's LangSmith account.

    Tests of the streaming itself set ``LANGSMITH_API_KEY`` (and a local endpoint) explicitly.
    """
    for name in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _lean_pytest_subprocesses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the pytest runs the suite starts (pytester, xdist workers) free of unrelated cost.

    LangSmith's and anyio's pytest plugins load in every pytest process of this environment and
    none of our tests uses them; and ``PYTHONDONTWRITEBYTECODE=1`` (set on these machines) makes
    every subprocess and xdist worker recompile groundeval and its dependencies. Neither changes
    what a test checks.
    """
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:langsmith_plugin -p no:anyio")
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
