"""Resuming an interrupted run (``--groundeval-resume``): what it finished, and whether this run may continue it.

An interrupted run leaves either its run record (``<run id>.json`` with ``complete: false``: Ctrl-C,
SIGTERM, ``-x``, a stop) or, when it was killed (SIGKILL, out of memory, a lost machine), its
partial file (``<run id>.partial.jsonl``: a header line with the run's id, start and settings,
``records.run_writer``, then one whole case record a line). Either is read here, one line or one
case at a time, into ``Interrupted``: the run's identity and settings, and which of its cases
have a final outcome.

A final outcome is a verdict on the agent's answer (``records.outcomes.COUNTED``) or an
``invalid_case`` (the case file's fault: running it again gives the same). The others, ``not_run``
and the errors (``infra_error``, ``agent_error``, ``worker_crashed``, ...), run again. A
finished case is kept only while its case file still hashes as it did
(``CaseRecord.fixture_sha256``); otherwise it runs again too.

The resumed run takes the interrupted run's id and start time (so its twins are ordered by the
same seed, and its record is the one run it continues), and must have the same settings: those
``IDENTITY_SETTINGS`` name; concurrency, workers and the pass-rate threshold may differ.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundeval.records.outcomes import COUNTED
from groundeval.records.run_record import CaseRecord

__all__ = ["IDENTITY_SETTINGS", "KEPT", "Interrupted", "ResumeError", "differences", "finished", "read_interrupted"]

IDENTITY_SETTINGS: tuple[str, ...] = (
    "task_spec", "agent_spec", "limit", "shard", "task_options", "agent_options", "trials", "counterfactual",
    "twin_seed", "models", "conversation",
)
"""``RunRecord.settings`` keys that must be equal for a run to continue another (plus its model and data dir)."""

_OPTION_OF = {
    "task_spec": "--groundeval-task", "agent_spec": "--groundeval-agent", "limit": "--groundeval-limit",
    "shard": "--groundeval-shard", "trials": "--groundeval-trials", "counterfactual": "--groundeval-counterfactual",
    "twin_seed": "--groundeval-twin-seed", "conversation": "--groundeval-conversation",
    "models": "--groundeval-model", "model": "--groundeval-model", "data_dir": "--groundeval-data-dir",
}

KEPT = COUNTED | {"invalid_case"}
"""Outcomes a resumed run keeps: final ones."""


def finished(record: CaseRecord) -> bool:
    """True when ``record`` has a final outcome (``KEPT``): a resumed run keeps it."""
    return record.outcome in KEPT


class ResumeError(ValueError):
    """Not an interrupted run's record or partial file, or it cannot be continued; the message says which."""


@dataclass
class Interrupted:
    """What a resumed run needs of the run it continues.

    Attributes:
        path: The file read.
        run_id: The interrupted run's id.
        task: Its task name.
        started_at: When it started, ISO-8601 UTC.
        settings: Its ``RunRecord.settings`` (from the record, or the partial file's header).
        model: Its model id, or None.
        data_dir: Its case directory.
        complete: True when the record says every case ran (nothing to resume).
    """

    path: Path
    run_id: str
    task: str
    started_at: str
    settings: dict[str, Any]
    model: str | None
    data_dir: str
    complete: bool = False

    def cases(self) -> Iterator[CaseRecord]:
        """Every case record the file holds, read one at a time (the whole records, in file order).

        Raises:
            ResumeError: A line or the record no longer parses.
        """
        for case, _ in self.spans():
            yield case

    def spans(self) -> Iterator[tuple[CaseRecord, tuple[int, int] | None]]:
        """Each case record with the (byte offset, length) of its line in a partial file (None in a run record).

        A last line cut by a kill (no newline) is not a case: it is left out, and
        ``whole_end`` is where the whole lines end.

        Raises:
            ResumeError: A line or the record no longer parses.
        """
        if self.path.name.endswith(".jsonl"):
            yield from self._partial_spans()
        else:
            for case in _record_cases(self.path):
                yield case, None

    whole_end: int = 0
    """Bytes of the partial file that are whole lines (set once ``spans`` has been read through)."""

    def _partial_spans(self) -> Iterator[tuple[CaseRecord, tuple[int, int] | None]]:
        with self.path.open("rb") as f:
            offset = len(f.readline())  # the header
            for number, line in enumerate(f, start=2):
                if not line.endswith(b"\n"):  # cut by a kill: the case did not finish writing
                    break
                try:
                    case = CaseRecord.model_validate_json(line)
                except ValueError as exc:
                    raise ResumeError(f"{self.path}, line {number}: not a case record ({type(exc).__name__})") from None
                yield case, (offset, len(line))
                offset += len(line)
            self.whole_end = offset


def read_interrupted(path: Path) -> Interrupted:
    """Read the run ``path`` holds (a run record or a partial file); its cases are read by ``Interrupted.spans``.

    Raises:
        ResumeError: Not JSON, not a groundeval run record nor partial file (a partial file of a
            groundeval older than the header line), or a malformed case line; the message names
            the file and the fix.
    """
    if path.name.endswith(".jsonl"):
        header = _partial_header(path)
        run = header["run"]
        found = Interrupted(path=path, run_id=str(run["run_id"]), task=str(run["task"]),
                            started_at=str(run["started_at"]), settings=dict(run["settings"]),
                            model=run.get("model"), data_dir=str(run.get("data_dir", "")))
    else:
        found = _record_head(path)
    return found


def differences(before: Interrupted, now: dict[str, Any]) -> list[str]:
    """What differs between the interrupted run's settings and this run's, one phrase each with its option.

    Args:
        before: The interrupted run.
        now: This run's ``RunRecord.settings`` plus ``model`` and ``data_dir`` keys.

    Returns:
        Phrases such as ``--groundeval-trials: 3 then, 1 now``; empty when this run may continue it.
    """
    then = {**before.settings, "model": before.model, "data_dir": before.data_dir}
    found = []
    for key in (*IDENTITY_SETTINGS, "model", "data_dir"):
        if key == "twin_seed" and not now.get("counterfactual"):
            continue
        old, new = then.get(key), now.get(key)
        if key in ("task_options", "agent_options") and isinstance(old, dict) and isinstance(new, dict):
            for name in sorted(set(old) | set(new)):
                if old.get(name) != new.get(name):
                    flag = f"--groundeval-{name.replace('_', '-')}"
                    found.append(f"{flag}: {old.get(name)!r} then, {new.get(name)!r} now")
            continue
        if old != new:
            found.append(f"{_OPTION_OF.get(key, key)}: {old!r} then, {new!r} now")
    return found


def _partial_header(path: Path) -> dict[str, Any]:
    from groundeval.records.run_writer import PARTIAL_HEADER_KEY

    try:
        with path.open("rb") as f:
            first = f.readline()
        header = json.loads(first) if first.strip() else None
    except (OSError, ValueError) as exc:
        raise ResumeError(f"{path}: cannot be read as a partial file ({exc})") from None
    if header is None:
        raise ResumeError(f"{path}: empty: the run ended before its first case finished; start it again")
    if not isinstance(header, dict) or PARTIAL_HEADER_KEY not in header or not isinstance(header.get("run"), dict):
        raise ResumeError(
            f"{path}: its first line is not a groundeval partial file's header (written by groundeval since "
            "--groundeval-resume exists); a run written before it cannot be resumed: start it again"
        )
    return header


def _record_head(path: Path) -> Interrupted:
    """The run record's fields but its cases (the cases are read one at a time by ``_record_cases``)."""
    data = _load_record(path)
    if data.get("schema_version") != 2 or "run_id" not in data:
        raise ResumeError(f"{path}: not a groundeval run record (schema_version 2 with a run_id)")
    return Interrupted(path=path, run_id=str(data["run_id"]), task=str(data.get("task")),
                       started_at=str(data.get("started_at")), settings=dict(data.get("settings") or {}),
                       model=data.get("model"), data_dir=str(data.get("data_dir", "")),
                       complete=bool(data.get("complete")))


def _record_cases(path: Path) -> Iterator[CaseRecord]:
    for case in _load_record(path).get("cases") or []:
        try:
            yield CaseRecord.model_validate(case)
        except ValueError as exc:
            raise ResumeError(f"{path}: a case is not a case record ({type(exc).__name__})") from None


def _load_record(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise ResumeError(f"{path}: cannot be read as a run record ({exc})") from None
    if not isinstance(data, dict):
        raise ResumeError(f"{path}: not a groundeval run record (a JSON {type(data).__name__})")
    return data
