"""Isolation for groundeval's own tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_langsmith_streaming(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never stream the suite's own pytester runs to a developer's LangSmith account.

    Tests of the streaming itself set ``LANGSMITH_API_KEY`` (and a local endpoint) explicitly.
    """
    for name in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"):
        monkeypatch.delenv(name, raising=False)
