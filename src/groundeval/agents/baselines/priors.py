"""``priors``: a control agent that answers from what it remembers, never from the case's record.

It stands for an agent that answers from priors that happen to match the record: a model that
has seen these patients before, or that guesses a diabetic's metformin. Built from the packaged
extraction fixtures (``groundeval.datasets.default_data_dir("extraction")``), it remembers each
patient's usual medications: those active in most of that patient's fixture files (a real
patient and its variants), by the task's own truth code. On a case it reads the Patient's ``id``
out of the Bundle, and nothing else, and answers that patient's remembered list; a patient it
has never seen gets the medication most patients take.

So it passes most original cases and fails the counterfactual twins whose truth changed
(``--groundeval-counterfactual``): a pass rate near the baseline's and a ``record_sensitivity``
near 0. That contrast is what the twins are for: a pass rate cannot tell reading from remembering.
"""

from __future__ import annotations

import functools
import json
from collections import Counter, defaultdict
from typing import Any

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents.base import AgentConfig
from groundeval.agents.baselines import no_model_calls

__all__ = ["PriorsExtractionAgent", "remembered_lists"]


@functools.cache
def remembered_lists() -> tuple[dict[str, list[dict[str, str]]], list[dict[str, str]]]:
    """What the agent remembers of the packaged fixtures.

    Returns:
        ``(by patient id: [{"rxnorm_code", "display"}, ...], the population's most common one)``:
        per patient the medications active in more than half of its fixture files (first RxCUI,
        its first display), and the one medication active for the most patients.
    """
    from groundeval.clinical.medication_list import find_patient, medication_truth
    from groundeval.datasets import default_data_dir, load_json
    from groundeval.tasks.base import case_files

    files: Counter[str] = Counter()
    seen: dict[str, Counter[str]] = defaultdict(Counter)
    displays: dict[str, str] = {}
    for path in case_files(default_data_dir("extraction")):
        bundle, _ = load_json(path)
        patient, _ = find_patient(bundle, str(path))
        pid = str(patient.get("id"))
        files[pid] += 1
        meds, _ = medication_truth(bundle, str(path))
        for med in meds:
            if med["codes"]:
                code = med["codes"][0]
                seen[pid][code] += 1
                displays.setdefault(code, (med["displays"].get(code) or [""])[0])
    by_patient = {
        pid: [{"rxnorm_code": c, "display": displays[c]} for c, n in sorted(seen[pid].items()) if n * 2 > files[pid]]
        for pid in files
    }
    popular = Counter(code for meds in by_patient.values() for code in {m["rxnorm_code"] for m in meds})
    common = [{"rxnorm_code": code, "display": displays[code]} for code, _ in popular.most_common(1)]
    return by_patient, common


def _patient_id(request: AgentRequest) -> str | None:
    """The Patient's ``id`` in the case's Bundle (``context["bundle"]``): the one thing it reads."""
    bundle: Any = request.context.get("bundle")
    entries = bundle.get("entry") if isinstance(bundle, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        resource = entry.get("resource") if isinstance(entry, dict) else None
        if isinstance(resource, dict) and resource.get("resourceType") == "Patient":
            return str(resource.get("id"))
    return None


class PriorsExtractionAgent:
    """Answers each patient's remembered medications without reading the record (a control; no model)."""

    name = "priors"
    tasks: frozenset[str] = frozenset({"extraction"})
    model: str | None = None
    thread_safe = True
    """Safe to call from several threads at once (``--groundeval-concurrency`` defaults to 4)."""

    network_calls = False
    """Never makes a network call: the first call of a process need not go alone."""

    def __init__(self, config: AgentConfig | None = None) -> None:
        """Nothing to configure; the memory is built on first use."""
        del config

    def warmup(self) -> None:
        """Read the packaged fixtures into memory before the first case is timed."""
        remembered_lists()

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the remembered list of the case's patient (or the population's most common drug)."""
        by_patient, common = remembered_lists()
        pid = _patient_id(request)
        answer = by_patient.get(pid, common) if pid is not None else common
        return AgentResult(usage=no_model_calls(), text=json.dumps(answer, ensure_ascii=False))
