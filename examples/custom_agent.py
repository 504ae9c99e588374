"""A custom agent plugged into groundeval: a "first attempt" reader with a classic blind spot.

Run it::

    PYTHONPATH=examples uv run groundeval --agent custom_agent:CodeableConceptOnlyAgent

It lists active MedicationRequests from ``medicationCodeableConcept`` only, by the exact RxNorm
system URI, and ignores ``subject``, ``intent`` and ``doNotPerform``. On the 25 real Synthea
patients that is enough (Synthea writes ``medicationReference`` only on completed requests, and
every request is an order for the patient), so it passes all of them. The packaged variant cases
(``scripts/make_variants.py``) show its blind spots: it misses drugs named through
``medicationReference`` (bundled or contained Medication) or coded with RxNorm's OID or only as
text (recall drops), and lists a drug that is forbidden (``doNotPerform``), only proposed,
planned or an option, or ordered for a subject URL that is not this patient (precision drops).
"""

from __future__ import annotations

import json

from groundeval import AgentConfig, AgentRequest, AgentResult

RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"


class CodeableConceptOnlyAgent:
    name = "codeable-concept-only"

    def __init__(self, config: AgentConfig) -> None:
        self.model = config.model  # rule-based: no model

    def run(self, request: AgentRequest) -> AgentResult:
        text = request.prompt.user
        bundle, _ = json.JSONDecoder().raw_decode(text, text.index("{"))
        answer, seen = [], set()
        for entry in bundle.get("entry", []):
            resource = entry.get("resource", {})
            if resource.get("resourceType") != "MedicationRequest" or resource.get("status") != "active":
                continue
            for coding in resource.get("medicationCodeableConcept", {}).get("coding", []):
                if coding.get("system") == RXNORM and coding.get("code") not in seen:
                    seen.add(coding["code"])
                    answer.append({"rxnorm_code": coding["code"], "display": coding.get("display", "")})
        return AgentResult(text=json.dumps(answer))
