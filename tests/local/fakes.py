"""Helpers for the local agent's tests: a stand-in server that answers with responses recorded from the real one.

``fake_llama_server.py`` takes llama-cpp-python's server flags and serves its endpoints; its
``--model`` file is a JSON plan naming the recorded replies (``recorded/``, written by
``scripts/record_llama_server.py``) and any failure to act out. No real model runs here.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

from groundeval.agents.local import LocalAgent
from groundeval.models.llama_server import read_facts

HERE = Path(__file__).resolve().parent
FAKE_SERVER = HERE / "fake_llama_server.py"
RECORDED = HERE / "recorded"
REAL_LOG = (RECORDED / "server-log.txt").read_text()
REAL_METADATA = read_facts(REAL_LOG).metadata
"""The real SmolLM2 GGUF's metadata, as the real server printed it."""


def recorded(name: str) -> dict[str, Any]:
    """A recorded response: ``{"status", "body", "request"}``."""
    value: dict[str, Any] = json.loads((RECORDED / f"{name}.json").read_text())
    return value


class FakeLocalAgent(LocalAgent):
    """The local agent with the stand-in server as its command."""

    server_command: ClassVar[tuple[str, ...] | None] = (sys.executable, str(FAKE_SERVER))
    server_distribution: ClassVar[str | None] = "pytest"  # any installed distribution: its version is recorded


AGENT_MODULE = f"""
import sys
from groundeval.agents.local import LocalAgent

class FakeLocalAgent(LocalAgent):
    server_command = (sys.executable, {str(FAKE_SERVER)!r})
    server_distribution = "pytest"
"""
"""A module defining the same agent, for runs that name it as ``fake_local:FakeLocalAgent``."""


def write_model(path: Path, **plan: Any) -> Path:
    """A stand-in model file: the plan for the fake server (replies, metadata, failure)."""
    plan.setdefault("metadata", REAL_METADATA)
    path.write_text(json.dumps(plan))
    return path


def server_pid(log: str) -> int:
    """The pid the fake server printed first in its log."""
    found = re.search(r"fake llama server pid (\d+)", log)
    assert found, log
    return int(found.group(1))


def death_signal(log: str) -> int:
    """The signal the fake server asked for on the death of the thread that started it (0: none)."""
    found = re.search(r"parent-death signal (-?\d+)", log)
    assert found, log
    return int(found.group(1))


def gone(pid: int) -> bool:
    """True when no live process has ``pid`` (a zombie awaiting a reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with contextlib.suppress(OSError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0] == "Z"
    return False


def wait_gone(pid: int, bound_s: float = 300.0) -> bool:
    """Poll until ``pid`` is gone; the bound is far above the few seconds a stop takes."""
    deadline = time.monotonic() + bound_s
    while not gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def requests_sent(log: str) -> list[dict[str, Any]]:
    """The chat-completions request bodies the fake server logged."""
    return [json.loads(line.removeprefix("request: ")) for line in log.splitlines() if line.startswith("request: ")]
