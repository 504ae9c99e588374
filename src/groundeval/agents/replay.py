"""The replay agent (``--groundeval-agent=replay:RUN.json``): re-score a previous run's raw outputs.

No model is called: each case's answer is the ``raw_output`` its record holds in the run record
``RUN.json`` (``groundeval.records.run_record.RunRecord``), with that case's ``usage``, ``trace``,
``attempts`` and agent facts, so a scorer or parser change can be measured on the same answers,
and CI without an API key can still evaluate a model's recorded answers. Every replayed result has
``cached=True``, and carries its recorded replies (the conversation's prompt is this run's own).
Cases are matched by ``(case_id, trial)``; a counterfactual twin, which an agent is
asked under its original's case id, is told from its original by the prompt's SHA-256 (the record
is in the prompt), or when the prompts are the same (a tool-mode prompt without the record) by the
request's context, compared with the context of each candidate derived again from its case file.

What a recorded case replays as:

* an answer (``passed``/``partial``/``failed``, a ``no_answer`` that the parser found nothing in,
  or a ``harness_error`` that had an answer): its ``raw_output`` as the answer text, parsed and
  scored anew;
* an agent-behaviour failure (``no_answer`` from an ``AgentError``, ``truncated``, ``agent_loop``,
  ``refusal``): the same error class with its message and details, so a ``TruncatedError``
  replays as a ``TruncatedError``;
* anything else (no case in the record, no answer recorded: ``infra_error``, ``not_run``, ...),
  or an answer longer than the record kept (``raw_output`` capped at ``MAX_RAW_OUTPUT_CHARS``;
  scoring the cut text as if whole would be wrong): ``ReplayCaseError`` naming the case, outcome
  ``agent_error`` (a pytest error, excluded from the means: a missing answer is not a wrong one).

``check_cases`` (called by the plugin on every process before the first case) refuses a record of
another task, and a record whose case files changed since (``CaseRecord.fixture_sha256`` against
the current file's SHA-256) unless ``allow_changed``; with it, changed cases are flagged
(``fixture_changed: true`` in the case's ``agent_meta`` or error details, and a junit property).
A prompt that changed since the recorded run (``prompt_sha256``) is flagged ``prompt_changed``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.errors import ConfigError, GroundevalError
from groundeval.records.outcomes import SCORED
from groundeval.records.trial_ids import split_twin

if TYPE_CHECKING:
    from groundeval.agents.base import AgentConfig
    from groundeval.records.run_record import CaseRecord, RunRecord

__all__ = ["ReplayAgent", "ReplayCaseError", "load_run_record"]

BEHAVIOUR_CLASSES = {
    "no_answer": "AgentError", "truncated": "TruncatedError", "agent_loop": "AgentLoopError", "refusal": "RefusalError",
}
"""Outcome of an agent-behaviour failure -> the groundeval error class it replays as (when the
recorded class is an agent's own ``AgentError`` subclass, the one its outcome stands for)."""
BEHAVIOUR_OUTCOMES = frozenset(BEHAVIOUR_CLASSES)


class ReplayCaseError(GroundevalError):
    """A case cannot be replayed: not in the record, no answer recorded, or its answer was capped.

    Not an ``AgentError``: the outcome is ``agent_error`` (excluded from the means).
    """


def load_run_record(path: Path) -> RunRecord:
    """Read a run record file.

    Raises:
        ConfigError: The file is missing, unreadable, or not a run record of this schema version.
    """
    from pydantic import ValidationError

    from groundeval.records.run_record import RunRecord

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"--groundeval-agent=replay:{path}: cannot read the run record ({exc.strerror or exc}); "
            "give the path of a runs/<run_id>.json file"
        ) from None
    try:
        return RunRecord.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "the file"
        raise ConfigError(
            f"--groundeval-agent=replay:{path}: not a groundeval run record (schema_version 2): {where}: "
            f"{first.get('msg')}; give a runs/<run_id>.json file written by this groundeval version"
        ) from None


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ReplayAgent:
    """Answers each case with the raw output a previous run recorded for it; no model call.

    Args:
        config: The agent settings (unused: the recorded answers were made with the record's).
        record: Path of the run record (``runs/<run_id>.json``).

    Attributes:
        name: The recorded run's agent name (its answers are that agent's).
        model: The recorded run's model id.
        changed: Case ids whose case file changed since the recorded run (set by ``check_cases``).

    Raises:
        ConfigError: No record was named, or it cannot be read as a run record.
    """

    thread_safe = True
    """Safe to call from several threads at once (``--groundeval-concurrency`` defaults to 4)."""

    network_calls = False
    """Never makes a network call: the first call of a process need not go alone."""

    provider_model = None
    """A replay calls no model (``agents.base.Agent``)."""

    def __init__(self, config: AgentConfig | None = None, *, record: str | Path | None = None) -> None:
        if record is None or not str(record).strip():
            raise ConfigError("the replay agent needs a run record: --groundeval-agent=replay:runs/<run_id>.json")
        self.path = Path(record).expanduser().resolve()
        self.record = load_run_record(self.path)
        self.name: str = self.record.agent
        self.model: str | None = self.record.model
        self.cases: dict[tuple[str, int], list[CaseRecord]] = {}
        for c in self.record.cases:  # a case and its counterfactual twins share the id an agent is asked under
            self.cases.setdefault((split_twin(c.case_id)[0], c.trial), []).append(c)
        self.changed: frozenset[str] = frozenset()
        self._task: Any = None
        self._files: dict[str, Path] = {}

    @classmethod
    def from_argument(cls, argument: str, config: AgentConfig | None = None) -> ReplayAgent:
        """Build from the text after ``replay:`` in the agent spec (the record's path)."""
        return cls(config, record=argument)

    def check_cases(self, task: Any, data_dir: Path, *, allow_changed: bool = False) -> None:
        """Refuse a record of another task or of changed case files; remember which changed.

        Only files named by a record case (``CaseRecord.source``) that are still in ``data_dir``
        are hashed.

        Args:
            task: The task of the current run (its ``name`` and ``case_files``).
            data_dir: The current run's data directory.
            allow_changed: Replay cases whose file changed, flagged, instead of refusing.

        Raises:
            ConfigError: The record is of another task, or (without ``allow_changed``) a case
                file's SHA-256 differs from the one recorded; the message names the files and fix.
        """
        from groundeval.datasets import sha256_file

        where = f"--groundeval-agent=replay:{self.path}"
        if self.record.task != task.name:
            raise ConfigError(
                f"{where}: the record is of the {self.record.task!r} task, this run is {task.name!r}; replay a "
                f"record of the {task.name} task"
            )
        files = {p.name: p for p in task.case_files(data_dir)}
        hashes: dict[str, str] = {}
        changed: dict[str, str] = {}  # case_id -> source
        for case in self.record.cases:
            if not case.source or not case.fixture_sha256 or case.source not in files:
                continue
            if case.source not in hashes:
                hashes[case.source] = sha256_file(files[case.source])
            if hashes[case.source] != case.fixture_sha256:
                changed[case.case_id] = case.source
        if changed and not allow_changed:
            sources = sorted(set(changed.values()))
            shown = ", ".join(sources[:3]) + (f" and {len(sources) - 3} more" if len(sources) > 3 else "")
            raise ConfigError(
                f"{where}: {len(sources)} case file(s) changed since that run ({shown}): their recorded answers "
                "were given for other data; run the agent again, or pass --groundeval-replay-allow-changed to "
                "re-score them anyway (each is flagged fixture_changed)"
            )
        self.changed = frozenset(changed)
        self._task, self._files = task, files

    def _find(self, request: AgentRequest) -> CaseRecord | None:
        """The recorded case ``request`` asks for: the case itself, or one of its counterfactual twins."""
        family = self.cases.get((request.case_id, request.trial), [])
        if len(family) <= 1:
            return family[0] if family else None
        sha = _sha256(request.prompt.text)
        same = [r for r in family if r.prompt_sha256 == sha]
        if len(same) == 1:
            return same[0]
        if self._task is None:
            return None
        for rec in same or family:  # same prompt (no record in it): tell them apart by the context
            path = self._files.get(rec.source or "")
            if path is None:
                continue
            case = self._task.load_case(path)
            kind = split_twin(rec.case_id)[1]
            made = case if kind is None else self._task.counterfactual(case, kind)
            if made is not None and self._task.context(made) == request.context:
                return rec
        return None

    def _flags(self, rec: CaseRecord, request: AgentRequest) -> dict[str, Any]:
        flags: dict[str, Any] = {"replay_of": self.record.run_id}
        if rec.case_id in self.changed:
            flags["fixture_changed"] = True
        if rec.prompt_sha256 and rec.prompt_sha256 != _sha256(request.prompt.text):
            flags["prompt_changed"] = True
        return flags

    def run(self, request: AgentRequest) -> AgentResult:
        """The recorded answer for ``request`` (``cached=True``), or the recorded agent-behaviour failure.

        Raises:
            AgentError: The case's recorded agent-behaviour failure, as its own class (marked cached).
            ReplayCaseError: The case is not in the record, has no recorded answer, or its answer
                was capped in the record.
        """
        rec = self._find(request)
        if rec is None:
            trial = f" trial {request.trial}" if request.trial else ""
            raise ReplayCaseError(
                f"{request.case_id}{trial}: not in the replayed run record {self.path} "
                f"({len(self.record.cases)} cases); "
                "replay a run that ran this case, or deselect it (-k)"
            )
        flags = self._flags(rec, request)
        error = rec.error
        if rec.outcome in BEHAVIOUR_OUTCOMES and error is not None:
            from groundeval.agents.result_cache import rebuild_error

            details: dict[str, Any] = {**error.details, **flags}
            if rec.raw_output is not None:
                details["partial_text"] = rec.raw_output
            if rec.trace:
                details["trace"] = rec.trace
            if rec.conversation is not None:
                details["messages"] = [m.model_dump() for m in rec.conversation.replies]
            known = error.type if error.type in BEHAVIOUR_CLASSES.values() else BEHAVIOUR_CLASSES[rec.outcome]
            raise rebuild_error(known, error.message, rec.attempts, details)
        answered = rec.outcome in SCORED or rec.outcome in BEHAVIOUR_OUTCOMES or rec.outcome == "harness_error"
        if rec.raw_output is None or not answered:
            raise ReplayCaseError(
                f"{request.case_id}: no answer recorded in {self.path} (outcome {rec.outcome} there); "
                "nothing to re-score"
            )
        if rec.raw_output_sha256 is not None or (rec.raw_output_chars or 0) > len(rec.raw_output):
            raise ReplayCaseError(
                f"{request.case_id}: the recorded answer was {rec.raw_output_chars} characters and the record kept "
                f"only the first {len(rec.raw_output)}; re-scoring the cut text would be wrong, so this case "
                "cannot be replayed"
            )
        return AgentResult(
            text=rec.raw_output, model=rec.model, usage=dict(rec.usage), attempts=rec.attempts or 0,
            trace=list(rec.trace), meta={**rec.agent_meta, **flags}, cached=True,
            messages=[] if rec.conversation is None else [m.model_dump() for m in rec.conversation.replies],
        )
