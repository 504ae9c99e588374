"""The extraction baseline over FHIR REST: it reads the record only through the case's FHIR server.

The same rules as ``baseline`` (``extraction.medication_list``), fed by one search instead of the
prompt's Bundle: ``GET [base]/MedicationRequest?patient=[id]&status=active&_include=
MedicationRequest:medication`` (search.html), following ``next`` links to the last page, the
match and include entries gathered into a Bundle. So where it and ``baseline`` disagree on a case,
the server (sandbox or HAPI) served the record differently from the file.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from groundeval.agents.baselines.extraction import medication_list
from groundeval.errors import AgentError
from groundeval.fhir.remote_server import FhirServer

__all__ = ["rest_medication_list", "search_all"]

MAX_PAGES = 100
"""Pages followed before the search is taken to be looping (an agent error)."""


def search_all(server: FhirServer, query: str) -> list[dict[str, Any]]:
    """Every entry of a search, following ``next`` links (search.html "Paging").

    Raises:
        AgentError: A page is not a 200 searchset Bundle, or paging does not end in ``MAX_PAGES``.
    """
    url: str | None = query
    entries: list[dict[str, Any]] = []
    for _ in range(MAX_PAGES):
        if url is None:
            return entries
        status, page = server.request("GET", url)
        if status != 200 or page is None or page.get("resourceType") != "Bundle":
            raise AgentError(f"FHIR search {query} answered {status}: {str(page)[:200]}")
        entries += page.get("entry") or []
        url = next((link["url"] for link in page.get("link") or [] if link.get("relation") == "next"), None)
    raise AgentError(f"FHIR search {query} did not end after {MAX_PAGES} pages")


def rest_medication_list(server: FhirServer, patient: str) -> str:
    """The extraction answer for ``patient`` (``Patient/id``), read from ``server``.

    Raises:
        AgentError: The server refused or failed a request.
    """
    from fhir.resources.R4B.bundle import Bundle

    status, me = server.request("GET", patient)
    if status != 200 or me is None:
        raise AgentError(f"FHIR read {patient} answered {status}")
    query = (
        f"MedicationRequest?patient={quote(patient, safe='')}&status=active"
        "&_include=MedicationRequest:medication&_count=100"
    )
    entries = [{"fullUrl": f"{server.base_url}/{patient}", "resource": me}]
    for entry in search_all(server, query):
        res = entry.get("resource") or {}
        entries.append({"fullUrl": f"{server.base_url}/{res.get('resourceType')}/{res.get('id')}", "resource": res})
    return medication_list(
        Bundle.model_validate({"resourceType": "Bundle", "type": "collection", "entry": entries}), "active"
    )
