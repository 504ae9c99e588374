"""Labs task: interpret a patient's latest laboratory results and vital signs against cited guideline thresholds.

Each case (``fixtures/labs/*.json``, made by ``scripts/make_labs.py``) is one patient's FHIR Bundle:
the Patient and the Observations of the tests in the threshold table
(``fixtures/terminology/lab_thresholds.json``, ``clinical.lab_thresholds``). The agent sees the
Bundle (``prompt``; ``context`` has it as ``"bundle"`` for tool-using agents, whose read tools
include ``get_observations``) and answers a JSON list, one entry per test the prompt names
(``tasks.labs.prompt.ANSWER_FORMAT``); the truth is derived at ``truth`` time from the same Bundle
and the table (``clinical.lab_truth``); ``tasks.labs.scorer`` scores it.

Option ``thresholds_in_prompt`` (default false): give the categories' bounds and the critical limits
in the prompt (the task then measures whether a model applies a given table), or only the category
names and their sources (whether it knows the guidelines). The run record carries the option and
the table's file, SHA-256 and version (``run_facts``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from groundeval import check_cache
from groundeval.agent_io import Prompt
from groundeval.clinical.lab_thresholds import Thresholds, default_thresholds
from groundeval.clinical.lab_truth import labs_truth
from groundeval.datasets import Case
from groundeval.fhir.validation import OBSERVATION_CODES, check_bundle, check_name
from groundeval.options import TaskOption, boolean
from groundeval.parsing import extract_json
from groundeval.scoring import Parsed
from groundeval.tasks.base import BaseTask
from groundeval.tasks.labs.cases import has_observations, read_case
from groundeval.tasks.labs.prompt import system_prompt, user_prompt
from groundeval.tasks.labs.scorer import METRIC_NAMES, LabsScorer

__all__ = ["LABS_OPTIONS", "LAB_READ_TOOLS", "LabsTask"]

LABS_OPTIONS: tuple[TaskOption, ...] = (
    TaskOption(
        "thresholds_in_prompt", boolean, False,
        "Labs: give the guideline thresholds and critical limits in the prompt (true), or only the category "
        "names and their sources, so the model must know the guidelines (false).", "true|false",
    ),
)

LAB_READ_TOOLS: tuple[str, ...] = ("get_resources", "resolve_reference", "lookup_code", "get_observations")
"""The read-only FHIR tools a tool-using agent gets over a Bundle holding Observations
(``groundeval.fhir.read_tools``: the three of extraction and reconcile, and ``get_observations``)."""


@functools.cache
def _system(table: Thresholds, thresholds_in_prompt: bool) -> str:
    return system_prompt(table, thresholds_in_prompt)


def _is_answer(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) and "loinc" in item for item in value)


def _direction_shape(value: object) -> bool:
    """A direction is a string, JSON null, or (a panel's) an object of strings or nulls."""
    if isinstance(value, Mapping):
        return all(v is None or isinstance(v, str) for v in value.values())
    return value is None or isinstance(value, str)


@dataclass(frozen=True, slots=True)
class LabsTask(BaseTask):
    """The result-interpretation task.

    Attributes:
        thresholds_in_prompt: Give the thresholds in the prompt (default False).
    """

    name: ClassVar[str] = "labs"
    default_agent: ClassVar[str] = "claude"
    options: ClassVar[tuple[TaskOption, ...]] = LABS_OPTIONS
    tools: ClassVar[tuple[str, ...]] = LAB_READ_TOOLS
    bundle_in_context: ClassVar[bool] = True
    thresholds_in_prompt: bool = False
    scorer: Any = field(init=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scorer", LabsScorer(default_thresholds()))

    @property
    def table(self) -> Thresholds:
        """The threshold table (the packaged one)."""
        table: Thresholds = self.scorer.table
        return table

    @property
    def metric_names(self) -> tuple[str, ...]:
        """Every per-case metric (``tasks.labs.scorer.METRIC_NAMES``)."""
        return METRIC_NAMES

    @classmethod
    def claims(cls, data: Mapping[str, Any]) -> bool:
        """A FHIR Bundle holding Observations is a labs case (for other tasks' wrong-task hints)."""
        return has_observations(data)

    def load_case(self, path: Path) -> Case:
        """Read a Bundle with exactly one Patient; the R4B check and the truth wait for the case to run.

        Raises:
            DatasetError: Invalid JSON, not a Bundle, or not exactly one Patient.
        """
        return read_case(path)

    def check_case(self, case: Case) -> None:
        """The whole Bundle as FHIR R4B and every Observation status in its value set (``fhir.validation``).

        Checked once per file's bytes (``check_cache.check_once``; shared with the summary task's check).

        Raises:
            DatasetError: The first problems, located, with the fix.
        """
        check_cache.check_once(check_name(OBSERVATION_CODES), case.sha256,
                               lambda: check_bundle(case.data, case.source, OBSERVATION_CODES),
                               remember="counterfactual" not in case.meta)

    def prompt(self, case: Case) -> Prompt:
        """System: rules, tests (with thresholds if asked), format, worked example; user: the Bundle."""
        bundle = json.dumps(case.data, ensure_ascii=False, separators=(",", ":"), check_circular=False)
        return Prompt(system=_system(self.table, self.thresholds_in_prompt), user=user_prompt(bundle))

    def context(self, case: Case) -> dict[str, Any]:
        """``{"bundle": <the case's Bundle>}`` for tool-using agents (the loaded dict; agents must not edit it).

        Not copied, as for extraction: the runner derives the truth before the agent runs.
        """
        return {"bundle": case.data}

    def fhir_record(self, case: Case) -> dict[str, Any]:
        """The Bundle served under ``--groundeval-fhir`` (``tasks.fhir_mode``): the case's own."""
        return dict(case.data)

    def fhir_prompt(self, case: Case) -> Prompt:
        """The system prompt as ever; the user turn says where the record is served, then the format."""
        from groundeval.tasks.fhir_record import FHIR_READ_NOTE
        from groundeval.tasks.labs.prompt import ANSWER_FORMAT

        del case
        return Prompt(system=_system(self.table, self.thresholds_in_prompt),
                      user=f"{FHIR_READ_NOTE}\n\nAnswer format: {ANSWER_FORMAT}")

    def fhir_used(self, case: Case, truth: Any) -> list[str]:
        """The Patient (its birth date decides the adult rules) and the Observations the truth read.

        Each test's latest result and the previous one (its trend).

        A blood pressure read from separate systolic and diastolic Observations names both (``"A + B"``).
        """
        from groundeval.tasks.fhir_record import patient_of_record

        used = set(patient_of_record(case.data))
        for test in truth["tests"]:
            for obs in (test.get("observation"), (test.get("previous") or {}).get("observation")):
                for one in obs.split(" + ") if isinstance(obs, str) else ():  # a panel read from two: "A + B"
                    used.add(one if "/" in one else f"Observation/{one}")
        return sorted(used)

    def truth(self, case: Case) -> dict[str, Any]:
        """``{"tests": [entry...]}`` (``clinical.lab_truth.labs_truth``).

        Raises:
            DatasetError: An Observation the truth reads is malformed (status, effective[x], unit).
        """
        return labs_truth(case.data, self.table, str(case.source))

    def parse(self, case: Case, raw: str) -> Parsed:
        """Parse a JSON array of ``{"loinc", "value", "unit", "date", "category", "direction", "critical"}``."""
        parsed = extract_json(raw, "[", _is_answer, [])
        items, malformed = [], []
        for item in parsed.value:
            code = item.get("loinc")
            items.append({
                "loinc": None if code is None else str(code).strip(),
                **{key: item.get(key) for key in ("value", "unit", "date", "category", "direction", "critical")},
            })
            if not _direction_shape(item.get("direction")):
                malformed.append(f"{code}: direction {json.dumps(item.get('direction'))}")
        if malformed:
            more = f" (+{len(malformed) - 3} more)" if len(malformed) > 3 else ""
            error = ("malformed entries (a direction is a string, null, or for blood pressure an object of "
                     f"strings): {'; '.join(malformed[:3])}{more}")
            return Parsed(value=items, format_ok=False, error="; ".join(e for e in (parsed.error, error) if e),
                          found=parsed.found)
        return Parsed(value=items, format_ok=parsed.format_ok, error=parsed.error, found=parsed.found)

    def run_facts(self) -> dict[str, Any]:
        """``{"thresholds": {"file", "sha256", "version"}}`` for the run record."""
        return {"thresholds": self.table.facts}
