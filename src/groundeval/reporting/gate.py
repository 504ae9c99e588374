"""The regression gate: which cases passed in the baseline and fail now (trials: Fisher exact test).

Two kinds of case fail the gate, and every output keeps them apart:

* **regressed**: passed in the baseline, counted now and failed (one trial each), or with trials a
  pass-rate drop with one-sided Fisher exact p <= 0.05;
* **lost**: had a verdict in the baseline (a counted trial, passed or not) and has none now:
  every trial of it is excluded (``agent_error``, ``harness_error``, ``infra_error``,
  ``invalid_case``, ... see ``groundeval.records.outcomes``) or ``not_run``, or its case file is among the
  current run's collection errors (it could not be read: outcome ``collection_error``). An agent
  must not clear the gate, or raise its pass rate, by crashing on the cases it would fail, and a
  case file broken in a pull request must not pass CI, so a lost case fails the gate like a
  regression, named with its outcomes. A changed case file (fixture SHA-256) stops only the
  comparison of verdicts, never the lost check: a file edited into an ``invalid_case`` is lost.

A run whose pass rate dropped beyond noise fails the gate too: the paired bootstrap interval of
the per-case pass-rate differences lies wholly below 0 (with trials, per-case Fisher tests on 3
trials can flag only 3/3 -> 0/3, so a run-wide drop of flaky cases is caught here). So does one
whose ``record_sensitivity`` (``--groundeval-counterfactual``) dropped beyond noise, by the same
rule over the twins judged in both runs.

An incomplete current run (``RunRecord.complete`` false) fails the gate too: its cases that never
ran cannot be shown not to have regressed. So does any collection error of the current run
(``RunRecord.collection_errors``: a case file that could not be read), each named on its own line,
whether or not the baseline had the case.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from groundeval.records.run_record import CaseRecord, RunRecord
from groundeval.reporting.cases import EPS, CaseValues, case_values, record_values
from groundeval.reporting.stats import ALPHA, Interval, fisher_one_sided

__all__ = [
    "UNREADABLE", "BaselineGate", "CaseGate", "CaseLost", "GateResult", "collection_error_lines", "gate_case",
    "invalid_case_lines",
    "lost_case", "lost_outcomes", "unreadable_files",
]

UNREADABLE = "collection_error"
"""The outcome a lost case is named with when its case file is among the current run's collection errors."""


@dataclass(frozen=True, slots=True)
class CaseGate:
    """The gate's verdict on one case.

    Attributes:
        case_id: The case id.
        baseline_passes: Passing counted trials in the baseline (of ``baseline_trials``).
        baseline_trials: Counted trials in the baseline.
        current_passes: Passing counted trials now.
        current_trials: Counted trials now.
        p_value: One-sided Fisher exact p-value when either side has more than one trial, else None
            (one sample each: passed before and not now is a regression).
        verdict: ``regressed``, ``improved`` or ``unchanged``.
    """

    case_id: str
    baseline_passes: int
    baseline_trials: int
    current_passes: int
    current_trials: int
    p_value: float | None
    verdict: Literal["regressed", "improved", "unchanged"]

    def text(self) -> str:
        """``Liz_Conn-ee9f8dd8: passed 1/1 -> 0/1`` (plus ``p=0.050`` with trials)."""
        p = "" if self.p_value is None else (
            " (Fisher p<0.001)" if self.p_value < 0.001 else f" (Fisher p={self.p_value:.3f})")
        return (
            f"{self.case_id}: passed {self.baseline_passes}/{self.baseline_trials} -> "
            f"{self.current_passes}/{self.current_trials}{p}"
        )


@dataclass(frozen=True, slots=True)
class CaseLost:
    """A case that had a verdict in the baseline and has none now (excluded, not run or unreadable).

    Attributes:
        case_id: The case id.
        baseline_passes: Passing counted trials in the baseline (0 when it failed there).
        baseline_trials: Counted trials in the baseline.
        outcomes: The current run's outcomes of the case, in trial order (all excluded or ``not_run``);
            ``("collection_error",)`` when its case file could not be read (``UNREADABLE``).
        file_changed: True when the case file's SHA-256 differs from the baseline's.
        collection_error: The current run's collection-error node id of its case file, or None.
    """

    case_id: str
    baseline_passes: int
    baseline_trials: int
    outcomes: tuple[str, ...]
    file_changed: bool = False
    collection_error: str | None = None

    @property
    def outcome(self) -> str:
        """The current outcomes, distinct, joined: ``agent_error`` or ``agent_error, not_run``."""
        return ", ".join(dict.fromkeys(self.outcomes))

    def text(self) -> str:
        """``Liz_Conn-ee9f8dd8: passed 1/1 -> no verdict (agent_error)``, plus why (file changed or unreadable)."""
        why = self.outcome
        if self.collection_error is not None:
            why += f": its case file could not be read ({self.collection_error})"
        elif self.file_changed:
            why += "; the case file changed"
        return f"{self.case_id}: passed {self.baseline_passes}/{self.baseline_trials} -> no verdict ({why})"


def lost_case(a: CaseValues, b: CaseValues) -> CaseLost | None:
    """The ``CaseLost`` when ``a`` (baseline) has a counted trial and ``b`` (current) has none.

    Whether the case file changed (fixture SHA-256) does not matter: it is recorded in ``file_changed``.
    """
    if a.counted and not b.counted:
        changed = bool(a.fixture_sha256 and b.fixture_sha256 and a.fixture_sha256 != b.fixture_sha256)
        return CaseLost(a.case_id, a.passes, a.counted, b.outcomes, file_changed=changed)
    return None


def unreadable_files(record: RunRecord) -> dict[str, str]:
    """Case file name -> collection-error node id, for the files of ``record`` that could not be read.

    A collection error's node id is ``groundeval/<task>::<file name>`` (``plugin.items.BadCaseFile``).
    """
    out: dict[str, str] = {}
    for error in record.collection_errors:
        nodeid = error.get("nodeid", "")
        name = nodeid.rsplit("::", 1)[-1].rsplit("/", 1)[-1]
        if name:
            out[name] = nodeid
    return out


def collection_error_lines(record: RunRecord) -> tuple[str, ...]:
    """``groundeval/extraction::Liz.json: <first line of the message>``, one per collection error of ``record``."""
    lines = []
    for error in record.collection_errors:
        message = (error.get("message") or "").strip().splitlines()
        lines.append(f"{error.get('nodeid', '?')}: {message[0] if message else 'could not be collected'}")
    return tuple(lines)


def invalid_case_lines(record: RunRecord) -> tuple[str, ...]:
    """``groundeval/extraction::Liz: invalid_case: <problem> (file: ...)``, one per case whose file failed its checks.

    A case with several trials is one line (its first trial's node id without the ``[trial-i]``).
    """
    seen: dict[str, str] = {}
    for case in record.cases:
        if case.outcome == "invalid_case" and case.case_id not in seen:
            nodeid = case.nodeid.split("[trial-", 1)[0]
            seen[case.case_id] = f"{nodeid}: {(case.message or 'invalid_case').splitlines()[0]}"
    return tuple(seen.values())


def gate_case(a: CaseValues, b: CaseValues) -> CaseGate:
    """The verdict on one case counted in both runs (A the baseline, B the current run)."""
    ra, rb = a.passes / a.counted, b.passes / b.counted
    p: float | None = None
    if a.counted == 1 and b.counted == 1:
        verdict: Literal["regressed", "improved", "unchanged"] = (
            "regressed" if ra > rb else "improved" if rb > ra else "unchanged"
        )
    else:
        if rb < ra:
            p = fisher_one_sided(a.passes, a.counted, b.passes, b.counted)
            verdict = "regressed" if p <= ALPHA + EPS else "unchanged"
        elif ra < rb:
            p = fisher_one_sided(b.passes, b.counted, a.passes, a.counted)
            verdict = "improved" if p <= ALPHA + EPS else "unchanged"
        else:
            verdict = "unchanged"
    return CaseGate(a.case_id, a.passes, a.counted, b.passes, b.counted, p, verdict)


@dataclass(frozen=True, slots=True)
class GateResult:
    """The regression gate: which cases passed in the baseline and fail now.

    A case regressed when it passed in the baseline and does not pass now (one trial each), or,
    with trials, when its pass rate dropped and the one-sided Fisher exact test gives p <= 0.05.
    A case is lost when it had a verdict in the baseline and every trial of it is now excluded or
    not run, or its case file is a collection error now (no verdict), whether or not the file
    changed. ``pass_rate_interval`` is the paired bootstrap interval of the pass-rate difference
    over the cases both runs counted. Other cases that are not comparable (only in one run, not
    counted in the baseline, counted in both but the case file changed) are listed in
    ``not_compared`` and do not fail the gate. Every collection error of the current run fails it
    (``collection_errors``). A gate that compared no case at all fails too (``nothing_compared``):
    a run that shares no counted case with its baseline, or one of another task, has shown nothing
    about regressions, so it must not pass CI silently.

    Attributes:
        baseline_run_id: The baseline run's id.
        current_run_id: The current run's id.
        cases: Every compared case's verdict, in the current run's order.
        not_compared: case id -> why it was not compared (lost cases are in ``lost`` instead).
        pass_rate_interval: Interval of the mean per-case pass-rate difference, or None.
        problems: Why the runs are not comparable at all (different tasks); then nothing is gated.
        lost: Cases that had a verdict in the baseline and have none now, in the current run's order,
            then those whose case file could not be read.
        incomplete: Why the current run is incomplete (its ``stop_reason``), or None when complete.
        collection_errors: The current run's collection errors, ``<node id>: <message's first line>``
            each (``collection_error_lines``): case files that could not be read.
        invalid_cases: The current run's ``invalid_case`` cases (``invalid_case_lines``): case files
            that failed their checks. Like an unreadable file, each fails the gate, in the baseline
            or not (a broken case file must not pass CI).
        only_in_baseline: How many baseline cases this run does not have at all (their files
            deleted, or not selected with ``-k``/``--groundeval-limit``); said, not gated.
        sensitivity_interval: Interval of the mean per-twin change of ``tracks_record`` over the
            counterfactual twins judged in both runs (``--groundeval-counterfactual``), or None.
        ungated: Why the case verdicts are not gated, or None: a run's task facts say its verdicts
            rest on an unmeasured or unreliable judge (``UNGATED_FACT``). Regressions and a pass-rate
            drop are then shown but do not fail the gate; lost cases, unreadable or invalid case
            files and an incomplete run still do (an agent must not pass by crashing).
        sensitivity_lost: Why the baseline's ``record_sensitivity`` has no counterpart now, or None:
            the current run has no counterfactual twins (it ran without
            ``--groundeval-counterfactual``), or judged none whose truth changed (every one
            excluded). A figure the baseline gated that is missing now fails the gate, as a lost
            case does.
    """

    baseline_run_id: str
    current_run_id: str
    cases: tuple[CaseGate, ...] = ()
    not_compared: dict[str, str] = field(default_factory=dict)
    pass_rate_interval: Interval | None = None
    problems: tuple[str, ...] = ()
    lost: tuple[CaseLost, ...] = ()
    incomplete: str | None = None
    collection_errors: tuple[str, ...] = ()
    invalid_cases: tuple[str, ...] = ()
    only_in_baseline: int = 0
    sensitivity_interval: Interval | None = None
    ungated: str | None = None
    sensitivity_lost: str | None = None

    @property
    def regressed(self) -> tuple[CaseGate, ...]:
        """Cases that regressed."""
        return tuple(c for c in self.cases if c.verdict == "regressed")

    @property
    def improved(self) -> tuple[CaseGate, ...]:
        """Cases that improved."""
        return tuple(c for c in self.cases if c.verdict == "improved")

    @property
    def regression_ids(self) -> frozenset[str]:
        """Ids of the regressed cases (for junit ``regression=true``)."""
        return frozenset(c.case_id for c in self.regressed)

    @property
    def failed(self) -> bool:
        """True when a case regressed or was lost, a case file could not be read, or the current run is incomplete.

        What ``--groundeval-fail-on-regression`` and ``groundeval compare --fail-on-regression`` fail on.
        """
        verdicts = self.ungated is None and bool(self.regressed or self.pass_rate_dropped or self.nothing_compared)
        return bool(verdicts or self.lost or self.incomplete is not None or self.sensitivity_dropped
                    or self.sensitivity_lost is not None or self.collection_errors or self.invalid_cases)

    @property
    def nothing_compared(self) -> bool:
        """True when no case was compared: nothing was shown not to regress (the gate fails)."""
        return not self.cases

    def _nothing_compared_reason(self) -> str:
        if self.problems:
            why = "; ".join(self.problems)
        else:
            parts = [f"{self.only_in_baseline} only in the baseline"] if self.only_in_baseline else []
            if self.not_compared:
                parts.append(f"{len(self.not_compared)} not comparable ({_first_reason(self.not_compared)})")
            if self.lost:
                parts.append(f"{len(self.lost)} lost")
            why = ", ".join(parts) or "neither run has a counted case"
        return (f"0 cases compared with the baseline ({why}): nothing shows that this run did not regress; "
                "compare runs of the same task over the same cases")

    @property
    def pass_rate_dropped(self) -> bool:
        """True when the paired interval of the pass-rate change lies wholly below 0 (beyond noise)."""
        iv = self.pass_rate_interval
        return iv is not None and iv.n >= 2 and iv.high < -EPS

    @property
    def sensitivity_dropped(self) -> bool:
        """True when the paired interval of the ``record_sensitivity`` change lies wholly below 0 (beyond noise)."""
        iv = self.sensitivity_interval
        return iv is not None and iv.n >= 2 and iv.high < -EPS

    def reasons(self) -> list[str]:
        """Why the gate fails, one phrase each (empty when it passes); verdicts only when they are gated."""
        out = []
        gated = self.ungated is None
        if gated and self.regressed:
            out.append(f"{len(self.regressed)} regressed (passed -> not passed)")
        if self.lost:
            out.append(f"{len(self.lost)} lost (a verdict before -> none now: {lost_outcomes(self.lost)})")
        if self.incomplete is not None:
            out.append(f"the current run is incomplete ({self.incomplete})")
        if self.collection_errors:
            out.append(f"{len(self.collection_errors)} case file(s) could not be read (collection errors)")
        if self.invalid_cases:
            out.append(f"{len(self.invalid_cases)} case file(s) failed their checks (invalid_case)")
        if gated and self.pass_rate_dropped and self.pass_rate_interval is not None:
            iv = self.pass_rate_interval
            out.append(f"the pass rate dropped {iv.mean:+.3f}, 95% interval {iv.text()} excludes 0")
        if self.sensitivity_dropped and self.sensitivity_interval is not None:
            iv = self.sensitivity_interval
            out.append(f"record_sensitivity dropped {iv.mean:+.3f}, 95% interval {iv.text()} excludes 0")
        if self.sensitivity_lost is not None:
            out.append(f"record_sensitivity lost: {self.sensitivity_lost}")
        if gated and self.nothing_compared:
            out.append(self._nothing_compared_reason())
        return out

    def ungated_line(self) -> str:
        """Why the verdicts are not gated and what that leaves out, or ``""`` when they are gated.

        ``verdicts not gated: <why>; 20 regressed, pass rate change -0.400 shown, not failing the gate
        (...)``: the one rule of every gate (this one, the run-time gate and ``--groundeval-min-pass-rate``):
        no gate reads verdicts that rest on an uncalibrated or unreliable judge.
        """
        if self.ungated is None:
            return ""
        shown = [f"{len(self.regressed)} regressed"]
        if self.pass_rate_interval is not None:
            shown.append(f"pass rate change {self.pass_rate_interval.mean:+.3f}")
        return (f"verdicts not gated: {self.ungated}; {', '.join(shown)} shown, not failing the gate (no gate "
                "reads verdicts of an uncalibrated or unreliable judge: this gate, the run-time gate and "
                "--groundeval-min-pass-rate alike; lost cases, unreadable or invalid case files and an incomplete "
                "run still fail it)")

    def summary_lines(self) -> list[str]:
        """Lines for the terminal summary: the counts, then one line per regressed and per lost case."""
        if self.problems:
            lines = [f"regression gate: not applied ({'; '.join(self.problems)})"]
            lines += [f"UNREADABLE {e}" for e in self.collection_errors]
            lines += [f"INVALID {e}" for e in self.invalid_cases]
            if self.failed:
                lines.append("regression gate FAILED: " + "; ".join(self.reasons()))
            return lines
        head = (
            f"regressions vs {self.baseline_run_id}: {len(self.regressed)}  lost: {len(self.lost)}"
            f"  improved: {len(self.improved)}  compared: {len(self.cases)}"
        )
        if self.not_compared:
            head += f"  not compared: {len(self.not_compared)}"
        if self.only_in_baseline:
            head += f"  only in the baseline: {self.only_in_baseline} (deleted or not selected; not gated)"
        lines = [head]
        if self.ungated is not None:
            lines.append(self.ungated_line())
        lines += [f"REGRESSED {c.text()}" for c in self.regressed]
        lines += [f"LOST {c.text()}" for c in self.lost]
        lines += [f"UNREADABLE {e}" for e in self.collection_errors]
        lines += [f"INVALID {e}" for e in self.invalid_cases]
        if self.pass_rate_interval is not None:
            iv = self.pass_rate_interval
            lines.append(f"pass rate change {iv.mean:+.3f}, 95% interval {iv.text()} over {iv.n} cases")
        if self.sensitivity_interval is not None:
            iv = self.sensitivity_interval
            lines.append(f"record_sensitivity change {iv.mean:+.3f}, 95% interval {iv.text()} over {iv.n} twins")
        if self.failed:
            lines.append("regression gate FAILED: " + "; ".join(self.reasons()))
        return lines


def _first_reason(not_compared: dict[str, str]) -> str:
    reasons = list(dict.fromkeys(not_compared.values()))
    return reasons[0] + (f", and {len(reasons) - 1} other reason(s)" if len(reasons) > 1 else "")


def lost_outcomes(lost: Sequence[CaseLost]) -> str:
    """``agent_error 27, not_run 2``: how many lost cases have each current outcome (trials pooled)."""
    counts: dict[str, int] = {}
    for case in lost:
        counts[case.outcome] = counts.get(case.outcome, 0) + 1
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


class BaselineGate:
    """Per-case verdicts against a baseline while a run is in progress (for junit ``regression=true``).

    Args:
        baseline: The baseline run record (indexed once).
    """

    def __init__(self, baseline: RunRecord) -> None:
        self.baseline = baseline
        self._values = record_values(baseline)

    def verdict(self, trials: Sequence[CaseRecord]) -> CaseGate | None:
        """The verdict on one case from its trials so far (all with the same ``case_id``).

        Returns:
            The case's ``CaseGate``, or None when it cannot be compared (not in the baseline,
            not counted on either side, or its case file changed).
        """
        if not trials:
            return None
        current = case_values(trials)[trials[0].case_id]
        base = self._values.get(current.case_id)
        if base is None or not base.counted or not current.counted:
            return None
        if base.fixture_sha256 and current.fixture_sha256 and base.fixture_sha256 != current.fixture_sha256:
            return None
        return gate_case(base, current)

    def regressed(self, trials: Sequence[CaseRecord]) -> bool:
        """True when the case regressed (what junit's ``regression=true`` marks)."""
        found = self.verdict(trials)
        return found is not None and found.verdict == "regressed"

    def lost(self, trials: Sequence[CaseRecord]) -> CaseLost | None:
        """The ``CaseLost`` when the case had a verdict in the baseline and none of ``trials`` was counted, else None.

        A changed case file does not stop it (``lost_case``). For the per-case junit property ``lost``.
        """
        if not trials:
            return None
        current = case_values(trials)[trials[0].case_id]
        base = self._values.get(current.case_id)
        if base is None:
            return None
        return lost_case(base, current)
