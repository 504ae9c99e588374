"""``baseline-write``: a rule-based write agent (no model), the offline default's honest floor.

It reads the note between ``<note>`` and ``</note>`` in the prompt, applies explicit patterns,
and calls the same tool functions the LangGraph agent gets (``hc_tools.lookup_rxnorm`` ->
``build_medication_statement`` -> ``validate_medication_statement``), recording each call in the
trace. The patterns:

* **drug**: the sentence holding the first ``<number> mg|mcg|micrograms|g`` is the catalog query
  (else the whole note); the top-ranked match is used. With no match, the word before the
  strength is written as ``medicationCodeableConcept.text`` and no code is given.
* **dose** (only when a schedule, a tablet count or as-needed use is written, since a strength
  alone names a product, not a dose): the first amount, times a tablet count written next to
  it ("2 tablets", "two 200 mg tablets"); a count range right after it ("50 mg tablets: 1-2
  tablets") is a dose range; ``mcg``/micrograms become UCUM ``ug``.
* **schedule**: "N to M times a day" (frequency N, frequencyMax M), every N to M hours (period N,
  periodMax M), every N hours, every other day, once/twice/three/four times a day (and
  BID/TID/QID), daily, every morning/evening, nightly, at bedtime.
* **as needed**: "as needed", "if needed", "when needed", "PRN".
* **status**, first rule that matches: never took/started = not-taken; on hold/held = on-hold;
  a plan to start = intended; discontinued/stopped = stopped; finished/completed = completed;
  otherwise active.

It cannot tell an instruction embedded in the note from clinical text, resolve brands absent
from the catalog, or read "two of them": it is meant to miss some cases.

``naive-write`` is the negative control: for every note the same statement, valid R4B, with the
patient's reference, status ``active``, the drug named only as "medication" and one tablet once a
day. It reads nothing, so every dimension rate it earns is what a constant answer earns (README,
"The write-and-validate task").
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents.base import AgentConfig
from groundeval.agents.baselines import no_model_calls
from groundeval.errors import AgentError
from groundeval.extras import NeedsExtra

__all__ = ["BaselineWriteAgent", "NaiveWriteAgent", "read_note"]

_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_COUNT = r"(?P<count>\d+|one|two|three|four|five|six)"
_AMOUNT_RE = re.compile(r"(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>mg|mcg|micrograms?|g)\b", re.IGNORECASE)
_FORM = r"(?:tablets?|tabs?|capsules?|caps?)"
_COUNT_AFTER_RE = re.compile(rf"^\s*{_FORM}?[\s,:]*{_COUNT}\s+{_FORM}\b", re.IGNORECASE)
_COUNT_BEFORE_RE = re.compile(rf"\b{_COUNT}\s+$", re.IGNORECASE)
_TO = r"\s*(?:-|\u2013|to)\s*"
_COUNT_RANGE_RE = re.compile(
    rf"^\s*{_FORM}?[\s,:]*(?P<low>\d+|one|two|three|four){_TO}(?P<high>\d+|two|three|four|five|six)\s+{_FORM}\b",
    re.IGNORECASE,
)
_TIMES_RANGE_RE = re.compile(
    rf"\b(?P<low>\d+|one|two|three|four){_TO}(?P<high>\d+|two|three|four|five|six) times (?:a|per) day\b",
    re.IGNORECASE,
)
_EVERY_RANGE_RE = re.compile(rf"\bevery (?P<low>\d+){_TO}(?P<high>\d+) hours?\b", re.IGNORECASE)
_UNITS = {"mg": "mg", "g": "g", "mcg": "ug", "microgram": "ug", "micrograms": "ug"}
_SCHEDULES: tuple[tuple[re.Pattern[str], tuple[int, float, str] | None], ...] = (
    (re.compile(r"\bevery (\d+) hours?\b|\bq(\d+)h\b", re.IGNORECASE), None),
    (re.compile(r"\bevery other day\b", re.IGNORECASE), (1, 2, "d")),
    (re.compile(r"\b(four times (a|per) day|four times daily|qid)\b", re.IGNORECASE), (4, 1, "d")),
    (re.compile(r"\b(three times (a|per) day|three times daily|tid)\b", re.IGNORECASE), (3, 1, "d")),
    (re.compile(r"\b(twice (a|per) day|twice daily|two times (a|per) day|bid)\b", re.IGNORECASE), (2, 1, "d")),
    (
        re.compile(
            r"\b(once (a|per) day|once daily|daily|every (morning|evening|night)|each "
            r"(morning|evening)|nightly|at bedtime)\b",
            re.IGNORECASE,
        ),
        (1, 1, "d"),
    ),
)
_PRN_RE = re.compile(r"\b(as needed|if needed|when needed|prn)\b", re.IGNORECASE)
_STATUSES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "not-taken",
        re.compile(
            r"\bnever (took|taken|started|filled|picked)\b|\b(has|had) not taken\b"
            r"|\bdid not take\b|\bnot taking\b",
            re.IGNORECASE,
        ),
    ),
    ("on-hold", re.compile(r"\bon hold\b|\bheld\b|\bpaused\b", re.IGNORECASE)),
    ("intended", re.compile(r"\bplan\b[^.]*\b(start|begin)\b|\bwill (start|begin)\b", re.IGNORECASE)),
    ("stopped", re.compile(r"\bdiscontinued\b|\bstopped\b", re.IGNORECASE)),
    ("completed", re.compile(r"\bcompleted\b|\bfinished\b", re.IGNORECASE)),
)
_SENTENCE_RE = re.compile(r"(?:[^.;:]|\.(?=\d))+")  # a decimal point does not end a sentence


def read_note(prompt_user: str) -> str:
    """Return the note between ``<note>`` and ``</note>``, or the whole text when unmarked."""
    start, end = prompt_user.find("<note>"), prompt_user.rfind("</note>")
    if start == -1 or end <= start:
        return prompt_user.strip()
    return prompt_user[start + len("<note>") : end].strip()


def _count(word: str | None) -> int:
    if word is None:
        return 1
    return int(word) if word.isdigit() else _NUMBERS[word.lower()]


def _schedule(note: str) -> tuple[int, float, str] | None:
    ranged = _TIMES_RANGE_RE.search(note)
    if ranged is not None:
        return _count(ranged["low"]), 1, "d"
    every = _EVERY_RANGE_RE.search(note)
    if every is not None:
        return 1, float(every["low"]), "h"
    for pattern, value in _SCHEDULES:
        match = pattern.search(note)
        if match is None:
            continue
        if value is None:
            hours = next(g for g in match.groups() if g)
            return 1, float(hours), "h"
        return value
    return None


def _status(note: str) -> str:
    for status, pattern in _STATUSES:
        if pattern.search(note):
            return status
    return "active"


class _Calls:
    """Calls the tool functions and records each call as a trace entry."""

    def __init__(self) -> None:
        self.trace: list[dict[str, Any]] = []

    def __call__(self, name: str, fn: Callable[[], Any], record_args: dict[str, Any]) -> Any:
        try:
            result = fn()
        except Exception as exc:  # errors are values, as for a model agent
            result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        ok = not (isinstance(result, dict) and result.get("ok") is False)
        self.trace.append({"tool": name, "args": record_args, "result": result, "ok": ok})
        return result


class BaselineWriteAgent(NeedsExtra):
    """Writes the MedicationStatement with regular expressions and the FHIR tools (no model)."""

    thread_safe = True
    """Safe to call from several threads at once (``--groundeval-concurrency`` defaults to 4)."""

    network_calls = False
    """Never makes a network call: the first call of a process need not go alone."""

    name = "baseline-write"
    tool_transport = "inprocess"
    """It calls the tool functions itself (``groundeval.agents.base.check_tool_transport``)."""
    needs_extra = ("healthchain", "healthchain")
    tasks: frozenset[str] = frozenset({"write"})
    model: str | None = None

    def __init__(self, config: AgentConfig | None = None) -> None:
        """Check that HealthChain is installed (nothing to configure).

        Raises:
            ConfigError: HealthChain is not installed (the ``healthchain`` extra).
        """
        self.check_config(config or AgentConfig())
        self._catalog: Any = None

    def warmup(self) -> None:
        """Import the tools (HealthChain, fhir.resources) and load the catalog before timing."""
        import groundeval.tasks.write.tools  # noqa: F401
        from groundeval.terminology import Catalog

        if self._catalog is None:
            self._catalog = Catalog.load()

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the statement JSON and the trace of tool calls.

        Raises:
            AgentError: The request context has no ``patient_reference``.
        """
        from groundeval.tasks.write.tools import (
            build_medication_statement,
            lookup_rxnorm,
            validate_medication_statement,
        )
        from groundeval.terminology import Catalog

        reference = request.context.get("patient_reference")
        if not isinstance(reference, str) or not reference:
            raise AgentError(f"{request.case_id}: no patient_reference in the request context")
        if self._catalog is None:
            self._catalog = Catalog.load()
        note = read_note(request.prompt.user)
        calls = _Calls()
        amount = _AMOUNT_RE.search(note)
        sentence = note
        if amount is not None:
            sentence = next(
                (s.group() for s in _SENTENCE_RE.finditer(note) if s.start() <= amount.start() < s.end()),
                note,
            )
        query = " ".join(sentence.split())
        found = calls("lookup_rxnorm", lambda: lookup_rxnorm(self._catalog, query), {"query": query})
        top = found[0] if isinstance(found, list) and found else None
        args: dict[str, Any] = {"status": _status(note), "patient_reference": reference}
        schedule, prn = _schedule(note), bool(_PRN_RE.search(note))
        if amount is not None:
            after = note[amount.end() :]
            counts = _COUNT_RANGE_RE.match(after)
            count = (
                None if counts else (_COUNT_AFTER_RE.match(after) or _COUNT_BEFORE_RE.search(note[: amount.start()]))
            )
            if schedule is not None or prn or count is not None or counts is not None:
                strength = float(amount["value"])
                low = _count(counts["low"]) if counts else _count(count["count"] if count else None)
                args.update(dose_value=round(strength * low, 6), dose_unit=_UNITS[amount["unit"].lower()])
                if counts is not None:
                    args["dose_max"] = round(strength * _count(counts["high"]), 6)
                if schedule is not None:
                    args.update(frequency=schedule[0], period=schedule[1], period_unit=schedule[2])
                    times = _TIMES_RANGE_RE.search(note)
                    if times is not None:
                        args["frequency_max"] = _count(times["high"])
                    every = _EVERY_RANGE_RE.search(note)
                    if every is not None and times is None:
                        args["period_max"] = float(every["high"])
                if prn:
                    args["as_needed"] = True
        if top is not None:
            args.update(rxcui=top["rxcui"], display=top["display"])
        else:  # not in the catalog: name the drug, invent no code
            words = note[: amount.start()].split() if amount is not None else []
            name = words[-1] if words else "unknown medication"
            args.update(rxcui=None, display=None, medication_text=name.strip(",.;:"))
        built = calls("build_medication_statement", lambda: build_medication_statement(**args), dict(args))
        if not isinstance(built, dict) or built.get("ok") is False:
            raise AgentError(f"{request.case_id}: the builder refused the arguments: {built}")
        resource = copy.deepcopy(built)  # the trace keeps what the builder returned
        report = calls(
            "validate_medication_statement",
            lambda: validate_medication_statement(resource),
            {"resource": resource},
        )
        return AgentResult(
            usage=no_model_calls(),
            text=json.dumps(resource, ensure_ascii=False),
            trace=calls.trace,
            meta={"tool_calls": len(calls.trace), "valid": bool(report.get("ok"))},
        )


class NaiveWriteAgent:
    """Negative control: one constant, valid statement for every note (no tools, no reading)."""

    thread_safe = True
    """Safe to call from several threads at once."""

    network_calls = False
    """Never makes a network call: the first call of a process need not go alone."""

    name = "naive-write"
    tasks: frozenset[str] = frozenset({"write"})
    model: str | None = None

    def __init__(self, config: AgentConfig | None = None) -> None:
        del config  # nothing to configure

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the constant statement for the case's patient.

        Raises:
            AgentError: The request context has no ``patient_reference``.
        """
        reference = request.context.get("patient_reference")
        if not isinstance(reference, str) or not reference:
            raise AgentError(f"{request.case_id}: no patient_reference in the request context")
        one_tablet = {"value": 1, "unit": "tablet", "system": "http://unitsofmeasure.org", "code": "{tablet}"}
        statement = {
            "resourceType": "MedicationStatement",
            "status": "active",
            "medicationCodeableConcept": {"text": "medication"},
            "subject": {"reference": reference},
            "dosage": [
                {
                    "timing": {"repeat": {"frequency": 1, "period": 1, "periodUnit": "d"}},
                    "asNeededBoolean": False,
                    "doseAndRate": [{"doseQuantity": one_tablet}],
                }
            ],
        }
        return AgentResult(usage=no_model_calls(), text=json.dumps(statement))
