"""The local agent's tests: the fixture that fails a test leaving a server process behind."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest

from .fakes import gone


@pytest.fixture
def live_pids() -> Iterator[list[int]]:
    """Server pids a test started: any still alive at the end fails the test and is killed."""
    pids: list[int] = []
    yield pids
    alive = [pid for pid in pids if not gone(pid)]
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
    assert not alive, f"server processes left behind: {alive}"
