"""Case records and run records: the typed results every output is read from.

The runner builds one ``CaseRecord`` per case, once; the run record (``RunRecord``, one versioned
JSON file per run under ``runs/``) is assembled from them, and the terminal summary, junit
properties and LangSmith read the finished records, never recompute them.

A run record holds what is needed to audit or re-score a run without re-running the agent:
settings, package versions, fixture hashes, and per case the prompt hash, the conversation (the
prompt and every message, ``groundeval.records.conversation``), raw output (capped at
``MAX_RAW_OUTPUT_CHARS``, with its full length and hash), parsed answer, truth, scores, latency,
usage and error. Cases are appended to ``<run_id>.partial.jsonl`` as they finish, so an
interrupted run keeps its finished cases; the final ``<run_id>.json`` is written atomically at the
end and the partial file removed (``groundeval.records.run_writer``). Every string was cleaned by
``groundeval.redaction.clean`` when the record was built (secrets redacted, lone surrogates and
control characters replaced).
"""

from __future__ import annotations

import platform
import secrets
from datetime import UTC, datetime
from functools import cache
from importlib import metadata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from groundeval.records.conversation import Conversation
from groundeval.records.outcomes import Outcome
from groundeval.scoring import Direction, Metric

__all__ = [
    "MAX_RAW_OUTPUT_CHARS",
    "SCHEMA_VERSION",
    "Aggregate",
    "CaseRecord",
    "CaseTrials",
    "Counterfactual",
    "ErrorInfo",
    "FigureInterval",
    "PassAtK",
    "RunRecord",
    "TrialStats",
    "TwinPair",
    "fixtures_of",
    "new_run_id",
    "package_versions",
]

SCHEMA_VERSION = 2
MAX_RAW_OUTPUT_CHARS = 200_000
"""Longest raw answer kept in a case record, characters; longer ones keep their length and hash."""
PACKAGES = (
    "groundeval", "pytest", "pytest-xdist", "anthropic", "openai", "langgraph", "langchain",
    "langchain-anthropic", "healthchain", "fhir.resources", "pydantic", "langsmith",
)


class ErrorInfo(BaseModel):
    """Why a case did not end in a scored answer.

    Attributes:
        type: The exception class name.
        message: Its message (cleaned).
        details: JSON-safe facts (status code, request id, ``model_calls``, ``last_tool``, ...).
        traceback: The formatted traceback for ``agent_error``/``harness_error``, else None.
    """

    model_config = ConfigDict(frozen=True)

    type: str
    message: str
    details: dict[str, Any] = Field(default_factory=dict)
    traceback: str | None = None


class CaseRecord(BaseModel):
    """One case's result, built once by the runner.

    ``truth``, ``parsed`` and ``details`` are shaped by the task (JSON); ``metrics`` holds the
    scorer's primitive per-case metrics (the task's ``metric_names``); everything else has the
    same shape for every task.

    Attributes:
        case_id: The case's id (the pytest item name).
        run_id: The run's id.
        nodeid: The pytest node id (``groundeval/<task>::<case_id>``).
        source: The case file's name, or None for a case that never ran.
        fixture_sha256: Hex SHA-256 of the case file's bytes, hashed once at load.
        outcome: See ``groundeval.records.outcomes.POLICY``.
        counted: True when the case counts in the run's means.
        answered: True when the agent gave a parseable answer.
        raw_output_chars: Length of the full raw answer, characters.
        raw_output_sha256: Hex SHA-256 of the full raw answer (UTF-8), when it was capped.
        latency_s: Wall time of the agent call, seconds.
        started_at: When the agent call started, ISO-8601 UTC (None when no call was made).
        attempts: Model calls made, retries included.
        usage: Tokens (``input_tokens``, ...) and ``cost_usd`` (USD, None when unpriced).
        trace: Tool calls in order, each ``{"tool", "args", "result", "ok"}``.
        worker: The xdist worker id that ran the case (``gw0``), or None when serial.
        trial: 0-based trial index under ``--groundeval-trials`` (0 without it).
        cached: True when the agent result came from ``--groundeval-cache`` or a replayed run.
        batch: True when the model request went through a provider batch API
            (``--groundeval-batch``); ``usage.cost_usd`` is then at the batch rate and
            ``usage.standard_cost_usd`` what the same call costs without batching.
        capped: What was cut to a sample (``groundeval.records.caps``), by its path, with its
            full length: each list of ``parsed``, ``details`` and ``error.details`` longer than
            ``MAX_LISTED`` items (``details.extra`` -> items), each string there longer than
            ``MAX_CHARS`` characters (``parsed[0].display`` -> characters), a
            ``message``/``error.message`` longer than ``MAX_LISTED`` lines (``message`` -> lines)
            and each of its kept lines longer than ``MAX_CHARS`` (``message[0]`` -> characters).
            Empty when nothing was. A conversation's cuts are named ``conversation.messages``
            (messages), ``conversation.messages[i].content`` (characters) and
            ``conversation.messages[i].tool_calls...`` (``groundeval.records.conversation``).
        conversation: What the agent was sent and every message that came back, with each
            model call's timing and usage (``groundeval.records.conversation.Conversation``); the
            prompt is kept whole, or by reference under ``--groundeval-conversation=reference``.
            None for a case the agent was never called on, and in records written before it.
    """

    model_config = ConfigDict(frozen=True)

    case_id: str
    nodeid: str
    run_id: str
    task: str
    agent: str
    outcome: Outcome
    counted: bool
    answered: bool = False
    source: str | None = None
    fixture_sha256: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    model: str | None = None
    prompt_sha256: str | None = None
    raw_output: str | None = None
    raw_output_chars: int | None = None
    raw_output_sha256: str | None = None
    parsed: Any = None
    format_ok: bool | None = None
    parse_error: str | None = None
    truth: Any = None
    metrics: dict[str, Metric] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)
    message: str = ""
    latency_s: float | None = None
    started_at: str | None = None
    attempts: int | None = None
    usage: dict[str, Metric] = Field(default_factory=dict)
    trace: list[dict[str, Any]] = Field(default_factory=list)
    agent_meta: dict[str, Any] = Field(default_factory=dict)
    error: ErrorInfo | None = None
    worker: str | None = None
    trial: int = 0
    cached: bool = False
    batch: bool = False
    capped: dict[str, int] = Field(default_factory=dict)
    conversation: Conversation | None = None


class FigureInterval(BaseModel):
    """A 95% confidence interval of a headline figure (rules: ``groundeval.records.trial_stats``).

    Attributes:
        value: The point estimate: the pooled mean over every counted trial that has the value
            (the Aggregate's own figure, e.g. ``pass_rate``), or for pass@k/pass^k the mean over cases.
        low: Lower bound, same units as ``value``.
        high: Upper bound.
        cases: The cases it is over (those with at least one counted trial that has the value).
        method: ``wilson`` (the Wilson score interval of a proportion, k of n cases), ``wilson-cases``
            (the same at a pooled rate whose k is not whole: widened to the whole numbers either
            side), ``bootstrap-bca`` or ``bootstrap-percentile`` (a cluster bootstrap over cases;
            percentile when BCa was degenerate); ``exact`` (zero width) only in records written
            before the Wilson rule.
    """

    model_config = ConfigDict(frozen=True)

    value: float
    low: float
    high: float
    cases: int
    method: Literal["wilson", "wilson-cases", "bootstrap-bca", "bootstrap-percentile", "exact"]

    def text(self, digits: int = 3) -> str:
        """``[0.612, 0.904]``."""
        return f"[{self.low:.{digits}f}, {self.high:.{digits}f}]"


class PassAtK(BaseModel):
    """pass@k and pass^k at one k, averaged over the cases with at least k counted trials.

    Attributes:
        k: Trials drawn.
        pass_at_k: Mean over cases of ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021, eq. 1): the
            chance that at least one of k trials passes. None when no case has k counted trials.
        pass_hat_k: Mean over cases of ``C(c, k) / C(n, k)`` (pass^k, Yao et al. 2024): the chance
            that all k trials pass. None when no case has k counted trials.
        cases: Cases averaged (n >= k); n is a case's counted trials, c its passing ones.
        pass_at_k_interval: Bootstrap interval over cases (headline k only), else None.
        pass_hat_k_interval: Likewise for pass^k.
    """

    model_config = ConfigDict(frozen=True)

    k: int
    pass_at_k: float | None
    pass_hat_k: float | None
    cases: int
    pass_at_k_interval: FigureInterval | None = None
    pass_hat_k_interval: FigureInterval | None = None


class CaseTrials(BaseModel):
    """One case's trials and its case-level verdict.

    Attributes:
        case_id: The case id.
        trials: Records of the case (trials), excluded and not-run ones included.
        counted: Counted trials (n): excluded and not-run trials are left out.
        passes: Counted trials that passed (c).
        outcomes: Each trial's outcome, by trial index.
        passed: True when ``passes >= min_pass_rate * counted`` (all counted trials without
            ``--groundeval-min-pass-rate``); None when no trial was counted (not judged).
    """

    model_config = ConfigDict(frozen=True)

    case_id: str
    trials: int
    counted: int
    passes: int
    outcomes: list[str] = Field(default_factory=list)
    passed: bool | None = None


class TrialStats(BaseModel):
    """Statistics over cases and their repeated trials (``groundeval.records.trial_stats``), computed once.

    With one trial per case this still holds the intervals over cases, and pass@1 equals the
    mean pass rate over cases.

    Attributes:
        k: The most trials any case has (``--groundeval-trials``; 1 without it).
        cases: Distinct case ids.
        intervals: Figure name (``pass_rate``, ``answer_rate``, ``macro_f1``, ``coding_pass_rate``,
            ...) -> its interval; figures that are not a mean of a per-case value (micro means,
            counts, usage) have none.
        interval_method: How the intervals were computed (one line, for reports).
        pass_k: pass@k and pass^k for k = 1..``k``; the last entry is the headline.
        min_pass_rate: ``--groundeval-min-pass-rate`` R, or None when not given.
        cases_judged: Cases with at least one counted trial.
        cases_passed: Judged cases whose verdict is passed.
        cases_failed: Ids of judged cases whose verdict is not passed.
        per_case: Every case's trials and verdict, in record order.
    """

    model_config = ConfigDict(frozen=True)

    k: int = 1
    cases: int = 0
    intervals: dict[str, FigureInterval] = Field(default_factory=dict)
    interval_method: str = ""
    pass_k: list[PassAtK] = Field(default_factory=list)
    min_pass_rate: float | None = None
    cases_judged: int = 0
    cases_passed: int = 0
    cases_failed: list[str] = Field(default_factory=list)
    per_case: list[CaseTrials] = Field(default_factory=list)

    @property
    def headline(self) -> PassAtK | None:
        """pass@k and pass^k at k = ``k`` (None when nothing was counted)."""
        return self.pass_k[-1] if self.pass_k else None


class TwinPair(BaseModel):
    """A counterfactual twin and its original (``groundeval.records.sensitivity``), one per twin trial.

    Attributes:
        twin: The twin's case id (``<case_id>[cf-<kind>]``).
        of: The original's case id.
        trial: The trial both answers come from.
        kind: The perturbation.
        effect: How it moved the truth: ``drops``, ``adds``, ``replaces`` or ``same``.
        change: What was changed in the record, one line.
        tracks_record: True when both answers match their own truth on the probed items (the answer
            changed exactly as the truth did); None when the pair is not judged (either side excluded
            or not run).
        kept_original_answer: True when the twin's answer on the probed items is the original's
            answer (for a twin whose truth changed: the signature of answering from priors); None
            when not judged.
        why: Why the pair is not judged or not tracked; empty when tracked.
        order: When the twin's agent call started: ``first_call`` when no other call about the same
            subject (the case's patient: its original, its other twins, the patient's other cases,
            any trial) had started before it, ``later_call`` otherwise; None when the pair is not
            judged or a side's start is not known.
    """

    model_config = ConfigDict(frozen=True)

    twin: str
    of: str
    trial: int = 0
    kind: str
    effect: str
    change: str = ""
    tracks_record: bool | None = None
    kept_original_answer: bool | None = None
    why: str = ""
    order: Literal["first_call", "later_call"] | None = None


class Counterfactual(BaseModel):
    """Record sensitivity over a run's counterfactual twins (``--groundeval-counterfactual``), computed once.

    Attributes:
        twins: Twins (each once, whatever its trials), excluded and not-run ones included.
        judged: Pairs judged (twin and original both counted; one per trial).
        tracked: Judged pairs whose answer changed as the truth did.
        record_sensitivity: The order-robust share of the judged twins whose truth changed (effect
            not ``same``) that were tracked: the lower of ``first_call`` and ``later_call``, with
            that order's Wilson interval; None unless both orders have a judged twin.
        first_call: The share over the twins whose call was the first about their subject
            (``TwinPair.order``), with its interval; None when there is none.
        later_call: The share over the other twins, with its interval; None when there is none.
        orders: Which order each order-robust figure was taken from (``first_call`` or
            ``later_call``): ``""`` for ``record_sensitivity``, a perturbation for ``by_kind``.
        by_kind: The same order-robust share per perturbation (``same`` kinds included), each with
            its interval (a kind without judged twins in both orders has none).
        effects: Perturbation -> its effect.
        twin_counts: Twin outcome -> number of twin records.
        not_judged: Why twins had no judged trial -> number of such twins: the twin's outcome
            (``agent_error``) when the twin was not counted, else ``original <outcome>``
            (``original missing`` when the original did not run).
        twin_pass_rate: Twins passed / twins counted (None when none is counted).
        pairs: Every twin with its verdict, in record order.
    """

    model_config = ConfigDict(frozen=True)

    twins: int = 0
    judged: int = 0
    tracked: int = 0
    record_sensitivity: FigureInterval | None = None
    first_call: FigureInterval | None = None
    later_call: FigureInterval | None = None
    orders: dict[str, str] = Field(default_factory=dict)
    by_kind: dict[str, FigureInterval] = Field(default_factory=dict)
    effects: dict[str, str] = Field(default_factory=dict)
    twin_counts: dict[str, int] = Field(default_factory=dict)
    not_judged: dict[str, int] = Field(default_factory=dict)
    twin_pass_rate: float | None = None
    pairs: list[TwinPair] = Field(default_factory=list)


class Aggregate(BaseModel):
    """Run-level figures, computed once from the case records.

    With ``--groundeval-trials`` every case record is one trial, so ``cases``, ``counts``,
    ``counted``, ``excluded`` and the rates count trials; ``trials`` holds the per-case view.

    Attributes:
        selected: Cases selected for the run (after ``-k``/``--groundeval-limit``).
        cases: Case records (not-run cases included).
        counts: Outcome -> number of cases.
        counted: Cases counted in the means (scored answers and agent-behaviour failures).
        excluded: Cases excluded from the means (errors, ``invalid_case``), not-run ones left out.
        not_run: Selected cases that never ran.
        pass_rate: Passed / counted (None when nothing is counted).
        pass_rate_ran: Passed / every case that ran, errors included (None when none ran): a
            figure an agent cannot raise by crashing on the cases it would fail. ``invalid_case``
            and ``not_run`` never count as ran (``OutcomeRule.agent_ran``, ``groundeval.records.scope.ran``).
        answer_rate: Cases with a parseable answer / counted (None when nothing is counted).
        metrics: The task's aggregate over the counted cases (micro/macro means, counts).
        usage: Token totals and ``cost_usd`` (USD; None when any case's cost is unknown). With
            cached answers these are the original calls' tokens and cost, not this run's.
        cached: Cases whose agent result came from ``--groundeval-cache`` or a replayed run record
            (no model call was made for them).
        trials: Per-case passes out of K, 95% intervals, pass@k, pass^k and the case verdicts
            (``groundeval.records.trial_stats``); None in records written before it existed.
        statements: The sentences every output prints beside the figures, written once by
            ``aggregate.summarize`` (``groundeval.records.scope.statements``): ``scope`` (what the
            pass rate covers), ``pass_k_scope`` (which cases pass@k leaves out) and ``cases_scope``
            (which cases have no verdict); empty in records written before they were stored.
        counterfactual: Record sensitivity over the counterfactual twins
            (``groundeval.records.sensitivity``); None without ``--groundeval-counterfactual``. The
            twins are left out of every other figure here (counts, rates, ``metrics`` and ``trials``
            are over the original cases), except that ``metrics`` and ``trials.intervals`` also hold
            ``record_sensitivity``, ``record_sensitivity[<kind>]`` and ``twin_pass_rate``, so that
            every output and comparison shows them like the task's own figures.
    """

    selected: int = 0
    cases: int = 0
    counts: dict[str, int] = Field(default_factory=dict)
    counted: int = 0
    excluded: int = 0
    not_run: int = 0
    pass_rate: float | None = None
    pass_rate_ran: float | None = None
    answer_rate: float | None = None
    metrics: dict[str, Metric] = Field(default_factory=dict)
    usage: dict[str, Metric] = Field(default_factory=dict)
    cached: int = 0
    trials: TrialStats | None = None
    statements: dict[str, str] = Field(default_factory=dict)
    counterfactual: Counterfactual | None = None


class RunRecord(BaseModel):
    """A whole run (``schema_version`` 2).

    ``complete`` is true only when every selected case has a record of a case that ran.
    ``dropped_calls`` counts agent calls made ahead (``--groundeval-concurrency``) whose items
    never ran because the run stopped, and calls a stop cut off in flight: paid for (or in
    flight), never scored. ``peak_in_flight`` is the concurrency the run reached: the most agent
    calls in flight at once in one process (the most on any worker under pytest-xdist), against
    ``settings.concurrency``, the configured one (None in records written before it existed).

    ``metric_names`` is the task's declared per-case metrics in report order (``Task.metric_names``)
    and ``metric_directions`` which way each is better (``"higher"``, the default for a name not
    listed, ``"lower"`` or ``"none"``: a value such as a dose that is neither better nor worse);
    comparisons and reports read the per-case dimensions from these. Both are empty in records
    written before they existed; readers then take the metric keys the case records carry, in
    first-seen order, all higher-is-better (``groundeval.reporting.cases.dimensions``).
    """

    schema_version: Literal[2] = 2
    run_id: str
    task: str
    agent: str
    model: str | None
    started_at: str
    finished_at: str | None = None
    duration_s: float | None = None
    complete: bool = False
    stop_reason: str | None = None
    exit_status: int | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    task_facts: dict[str, Any] = Field(default_factory=dict)
    python: str = Field(default_factory=platform.python_version)
    packages: dict[str, str] = Field(default_factory=dict)
    data_dir: str = ""
    fixtures: list[dict[str, str]] = Field(default_factory=list)
    collection_errors: list[dict[str, str]] = Field(default_factory=list)
    dropped_calls: int = 0
    peak_in_flight: int | None = None
    metric_names: list[str] = Field(default_factory=list)
    metric_directions: dict[str, Direction] = Field(default_factory=dict)
    cases: list[CaseRecord] = Field(default_factory=list)
    aggregate: Aggregate = Field(default_factory=Aggregate)


def fixtures_of(cases: list[CaseRecord]) -> list[dict[str, str]]:
    """``RunRecord.fixtures`` of a run with these case records: each record's source and SHA-256, sorted by source."""
    return sorted(
        ({"source": c.source, "sha256": c.fixture_sha256} for c in cases if c.source and c.fixture_sha256),
        key=lambda f: f["source"],
    )


def new_run_id(now: datetime | None = None) -> str:
    """Return a sortable, unique run id such as ``20261129T113000Z-3f9a1c``."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def package_versions() -> dict[str, str]:
    """Installed versions of groundeval and its main dependencies (missing ones are skipped).

    Read once per process (a copy is returned): each lookup finds the distribution on ``sys.path``
    and parses its METADATA file, about 10 ms for the twelve packages, and the code a process runs
    is the code it imported, whatever is installed later.
    """
    return dict(_package_versions())


@cache
def _package_versions() -> dict[str, str]:
    found: dict[str, str] = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found
