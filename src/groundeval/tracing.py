"""Run records: one versioned JSON file per run under ``runs/``.

A run record holds everything needed to audit or re-score a run without re-running the agent:
settings, package versions, fixture hashes, and per case the prompt hash, raw output, parsed
answer, truth, scores, latency, usage and error. Cases are appended to ``<run_id>.partial.jsonl``
as they finish, so an interrupted run keeps its finished cases; the final ``<run_id>.json`` is
written atomically at the end and the partial file removed.

No environment variable values are stored. As a second guard, the value of every variable whose
name looks like a secret (``*KEY``, ``*TOKEN``, ``*SECRET``, ``*PASSWORD``, ``*CREDENTIALS``)
is replaced by ``[REDACTED]`` wherever it appears in the file.
"""

from __future__ import annotations

import json
import os
import platform
import re
import secrets
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SCHEMA_VERSION", "CaseRecord", "RunRecord", "RunWriter", "new_run_id", "package_versions"]

SCHEMA_VERSION = 1
PACKAGES = (
    "groundeval", "pytest", "pytest-xdist", "anthropic", "langgraph", "langchain",
    "langchain-anthropic", "healthchain", "fhir.resources", "pydantic", "langsmith",
)
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$", re.IGNORECASE)


class CaseRecord(BaseModel):
    """One case's record; task-specific fields (truth, metrics, details) are kept as given."""

    model_config = ConfigDict(extra="allow")

    case_id: str
    nodeid: str
    source: str
    fixture_sha256: str
    outcome: str
    agent: str
    model: str | None = None
    latency_s: float | None = None
    error: dict[str, Any] | None = None


class RunRecord(BaseModel):
    """A whole run (``schema_version`` 1)."""

    schema_version: Literal[1] = 1
    run_id: str
    task: str
    agent: str
    model: str | None
    started_at: str
    finished_at: str | None = None
    duration_s: float | None = None
    complete: bool = False
    exit_status: int | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    python: str = Field(default_factory=platform.python_version)
    packages: dict[str, str] = Field(default_factory=dict)
    data_dir: str = ""
    fixtures: list[dict[str, str]] = Field(default_factory=list)
    collection_errors: list[dict[str, str]] = Field(default_factory=list)
    cases: list[CaseRecord] = Field(default_factory=list)
    aggregate: dict[str, Any] = Field(default_factory=dict)


def new_run_id(now: datetime | None = None) -> str:
    """Return a sortable, unique run id such as ``20261129T113000Z-3f9a1c``."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def package_versions() -> dict[str, str]:
    """Installed versions of groundeval and its main dependencies (missing ones are skipped)."""
    found: dict[str, str] = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def redact(text: str) -> str:
    """Replace the value of every secret-looking environment variable found in ``text``."""
    for name, value in os.environ.items():
        if value and len(value) >= 8 and _SECRET_NAME.search(name) and value in text:
            text = text.replace(value, "[REDACTED]")
    return text


class RunWriter:
    """Writes one run's record incrementally and then atomically.

    Args:
        out_dir: Directory for run records (created if missing).
        run_id: The run's id; files are ``<run_id>.partial.jsonl`` and ``<run_id>.json``.
    """

    def __init__(self, out_dir: Path, run_id: str) -> None:
        self.out_dir = out_dir
        self.path = out_dir / f"{run_id}.json"
        self.partial = out_dir / f"{run_id}.partial.jsonl"

    def append(self, case: dict[str, Any]) -> None:
        """Append one finished case to the partial file (flushed at once)."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        line = redact(json.dumps(case, ensure_ascii=False, default=str))
        with self.partial.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def finish(self, record: RunRecord) -> Path:
        """Write the complete record atomically, remove the partial file, return the path."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        text = redact(record.model_dump_json(indent=2))
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        tmp.replace(self.path)
        self.partial.unlink(missing_ok=True)
        return self.path
