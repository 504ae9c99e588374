"""The rule-based baselines over FHIR REST: each reads the record only through the case's FHIR server.

Each applies the same rules as its file baseline (``baseline``, ``baseline-labs``,
``baseline-reconcile``, ``baseline-summary``, ``baseline-write``) to what it fetched with the
searches an integrator would write (search.html), the pages followed to the end:

* ``baseline-rest`` (extraction): ``MedicationRequest?patient=&status=active&_include=
  MedicationRequest:medication`` (``extraction_rest``);
* ``baseline-labs-rest``: ``Observation?patient=``;
* ``baseline-reconcile-rest``: ``MedicationRequest?patient=&_include=MedicationRequest:medication``
  (every status: reconciling needs the stopped ones too);
* ``baseline-summary-rest``: ``Condition``, ``MedicationRequest`` (with ``_include``),
  ``AllergyIntolerance`` and ``Observation`` searches for the patient;
* ``baseline-write-rest``: reads the Patient, builds the statement as ``baseline-write`` does and
  creates it with ``POST [base]/MedicationStatement`` (http.html "create").

Each also reads ``Patient/[id]``. So where a REST baseline and its file baseline disagree on a case,
the server (sandbox or the user's) served the record differently from the file. They declare
``record_access = "fhir"`` and run only under ``--groundeval-fhir``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, ClassVar
from urllib.parse import quote

from groundeval.agent_io import AgentRequest, AgentResult, Prompt
from groundeval.agents.base import AgentConfig
from groundeval.agents.baselines import no_model_calls
from groundeval.agents.baselines.extraction_rest import rest_medication_list, search_all
from groundeval.errors import AgentError
from groundeval.extras import NeedsExtra
from groundeval.fhir.remote_server import FhirServer, FhirServerError

__all__ = [
    "BaselineLabsRestAgent",
    "BaselineReconcileRestAgent",
    "BaselineRestAgent",
    "BaselineSummaryRestAgent",
    "BaselineWriteRestAgent",
    "fetched_bundle",
]


def _server(request: AgentRequest) -> tuple[FhirServer, str]:
    endpoint = request.fhir
    if endpoint is None:
        raise AgentError(f"{request.case_id}: no request.fhir: run with --groundeval-fhir=sandbox (or a URL)")
    return FhirServer(endpoint.base_url, token=endpoint.token, timeout=60.0), endpoint.patient


def fetched_bundle(server: FhirServer, patient: str, searches: tuple[str, ...]) -> dict[str, Any]:
    """A collection Bundle of the Patient and every resource ``searches`` found (each followed to its last page).

    Args:
        server: The case's FHIR server.
        patient: ``Patient/<id>``.
        searches: Search queries below the base with ``{patient}`` for the escaped reference,
            e.g. ``"Observation?patient={patient}&_count=100"``.

    Raises:
        AgentError: A read or search was refused or failed, or the server could not be reached.
    """
    try:
        status, me = server.request("GET", patient)
        if status != 200 or me is None:
            raise AgentError(f"FHIR read {patient} answered {status}")
        entries = [{"fullUrl": f"{server.base_url}/{patient}", "resource": me}]
        seen = {patient}
        for query in searches:
            for entry in search_all(server, query.format(patient=quote(patient, safe=""))):
                res = entry.get("resource") or {}
                ref = f"{res.get('resourceType')}/{res.get('id')}"
                if ref not in seen:
                    seen.add(ref)
                    entries.append({"fullUrl": f"{server.base_url}/{ref}", "resource": res})
    except FhirServerError as exc:
        raise AgentError(str(exc)) from exc
    return {"resourceType": "Bundle", "type": "collection", "entry": entries}


class _RestBaseline:
    """What the REST baselines share: no model, thread-safe, reads over FHIR."""

    thread_safe = True
    """Safe to call from several threads at once: each case has its own server."""

    network_calls = False
    """Calls only the case's loopback sandbox (or the user's server): no model API."""

    record_access = "fhir"
    """Reads the record over FHIR REST at ``request.fhir`` (``agents.base.check_record_access``)."""

    model: str | None = None
    name: str = ""
    tasks: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, config: AgentConfig | None = None) -> None:
        del config  # nothing to configure


class BaselineRestAgent(NeedsExtra, _RestBaseline):
    """``baseline`` (extraction) reading the record over FHIR REST (HealthChain's ``get_medications``)."""

    name = "baseline-rest"
    tasks = frozenset({"extraction"})
    needs_extra = ("healthchain", "healthchain")

    def __init__(self, config: AgentConfig | None = None) -> None:
        self.check_config(config or AgentConfig())

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the active medication list; raises ``AgentError`` when the server refuses or fails."""
        server, patient = _server(request)
        try:
            return AgentResult(text=rest_medication_list(server, patient), usage=no_model_calls())
        except FhirServerError as exc:
            raise AgentError(str(exc)) from exc


class BaselineLabsRestAgent(_RestBaseline):
    """``baseline-labs`` reading the patient's Observations over FHIR REST."""

    name = "baseline-labs-rest"
    tasks = frozenset({"labs"})

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the labs answer; raises ``AgentError`` when the server refuses or fails."""
        from groundeval.agents.baselines.labs import labs_answer

        server, patient = _server(request)
        bundle = fetched_bundle(server, patient, ("Observation?patient={patient}&_count=100",))
        as_file = dataclasses.replace(request, prompt=Prompt(request.prompt.system, json.dumps(bundle)))
        return AgentResult(text=json.dumps(labs_answer(as_file), ensure_ascii=False), usage=no_model_calls())


class BaselineReconcileRestAgent(_RestBaseline):
    """``baseline-reconcile`` reading the patient's MedicationRequests over FHIR REST."""

    name = "baseline-reconcile-rest"
    tasks = frozenset({"reconcile"})

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the reconciliation; raises ``AgentError`` when the server refuses or fails."""
        from groundeval.agents.baselines.reconcile import reconcile_answer

        server, patient = _server(request)
        bundle = fetched_bundle(
            server, patient, ("MedicationRequest?patient={patient}&_include=MedicationRequest:medication&_count=100",))
        user = f"{json.dumps(bundle)}\n\n{request.prompt.user}"  # the Bundle first, then the report as given
        as_file = dataclasses.replace(request, prompt=Prompt(request.prompt.system, user))
        return AgentResult(text=json.dumps(reconcile_answer(as_file), ensure_ascii=False),
                           usage=no_model_calls())


class BaselineSummaryRestAgent(_RestBaseline):
    """``baseline-summary`` reading the patient's problems, medications, allergies and results over FHIR REST."""

    name = "baseline-summary-rest"
    tasks = frozenset({"summary"})

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the summary text; raises ``AgentError`` when the server refuses or fails."""
        from groundeval.agents.baselines.summary import summary_text

        server, patient = _server(request)
        bundle = fetched_bundle(server, patient, (
            "Condition?patient={patient}&_count=100",
            "MedicationRequest?patient={patient}&_include=MedicationRequest:medication&_count=100",
            "AllergyIntolerance?patient={patient}&_count=100",
            "Observation?patient={patient}&_count=100",
        ))
        return AgentResult(text=summary_text(bundle), usage=no_model_calls())


class BaselineWriteRestAgent(NeedsExtra, _RestBaseline):
    """``baseline-write`` creating its MedicationStatement on the case's FHIR server."""

    name = "baseline-write-rest"
    tasks = frozenset({"write"})
    needs_extra = ("healthchain", "healthchain")

    def __init__(self, config: AgentConfig | None = None) -> None:
        from groundeval.agents.baselines.write import BaselineWriteAgent

        self._writer = BaselineWriteAgent(config)

    def warmup(self) -> None:
        """The file baseline's warm-up (HealthChain, the catalog)."""
        self._writer.warmup()

    def run(self, request: AgentRequest) -> AgentResult:
        """Read the Patient, build the statement, create it; return the created resource and the trace.

        Raises:
            AgentError: The server refused the read or the create, or could not be reached.
        """
        server, patient = _server(request)
        try:
            status, me = server.request("GET", patient)
            if status != 200 or me is None:
                raise AgentError(f"FHIR read {patient} answered {status}")
            built = self._writer.run(dataclasses.replace(
                request, context={**request.context, "patient_reference": patient}))
            resource = json.loads(built.text)
            status, created = server.request("POST", "MedicationStatement", resource)
        except FhirServerError as exc:
            raise AgentError(str(exc)) from exc
        if status not in (200, 201) or created is None:
            raise AgentError(f"FHIR create MedicationStatement answered {status}: {str(created)[:300]}")
        return AgentResult(text=json.dumps(created, ensure_ascii=False), trace=built.trace, meta=built.meta,
                           usage=no_model_calls())
