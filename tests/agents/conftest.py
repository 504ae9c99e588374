"""Offline doubles for the model-backed agents: the scripted Anthropic HTTP API (``tests/_fakes``) and a fake clock.

The Claude agent is exercised through the real ``anthropic`` SDK; only its HTTP transport is
replaced (``httpx2.MockTransport``), so request building, response parsing and the SDK's error
classes are the real ones. No test here may sleep for real: ``time.sleep`` is replaced by a
function that fails the test, and agents get a recording ``sleep`` instead.
"""

from __future__ import annotations

import time

import pytest

from tests._fakes.fake_anthropic import FAKE_KEY, ScriptedAPI, api_error, message

# The fake Anthropic API lives in tests/_fakes/fake_anthropic.py; these names stay importable from
# here (``from .conftest import ScriptedAPI``) for the agent tests written against this file.
__all__ = ["FAKE_KEY", "ScriptedAPI", "api_error", "message"]


@pytest.fixture(autouse=True)
def _no_real_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(seconds: float) -> None:
        raise AssertionError(f"a test tried to sleep {seconds} s for real")

    monkeypatch.setattr(time, "sleep", refuse)


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fake ``ANTHROPIC_API_KEY`` (never valid anywhere)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    return FAKE_KEY


@pytest.fixture
def sleeps() -> list[float]:
    """Records the waits an agent asked for (pass ``sleeps.append`` as its ``sleep``)."""
    return []
