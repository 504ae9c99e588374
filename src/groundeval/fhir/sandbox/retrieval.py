"""Retrieval figures from a sandbox's access log: what the agent fetched against what the truth used.

As FHIR-AgentBench scores retrieval (the resources an agent retrieved compared with those the
answer needs): precision and recall over ``Type/id`` references, and the calls that fetched
nothing the truth used. ``/metadata`` is not a retrieval and is left out. A figure with an empty
denominator is None, never 1.0: an agent that fetches nothing has no precision to boast of, and
its recall is 0 whenever the truth used anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from groundeval.fhir.sandbox.server import AccessLogEntry

__all__ = ["Retrieval", "retrieval"]


@dataclass(frozen=True, slots=True)
class Retrieval:
    """Retrieval figures of one case.

    Attributes:
        calls: Requests made, ``/metadata`` excluded.
        fetched: Distinct resources returned by successful reads and searches.
        used: Distinct resources the truth used.
        hits: ``fetched`` resources that are in ``used``.
        precision: ``hits / fetched``, None when nothing was fetched.
        recall: ``hits / used``, None when the truth used nothing.
        wasted_calls: Calls that returned no resource the truth used (errors and refusals included).
        refused: Calls refused for a wrong token (401) or another patient (403).
        writes: Successful POST, PUT or DELETE calls.
    """

    calls: int
    fetched: int
    used: int
    hits: int
    precision: float | None
    recall: float | None
    wasted_calls: int
    refused: int
    writes: int


def retrieval(log: Iterable[AccessLogEntry], used: Iterable[str]) -> Retrieval:
    """Score a case's access log against the resources its truth used.

    Args:
        log: The sandbox's access log (``FhirSandbox.access_log``).
        used: ``Type/id`` of each resource the truth was derived from.

    Returns:
        The case's ``Retrieval``.
    """
    wanted = set(used)
    calls = [e for e in log if e.path != "metadata"]
    reads = [e for e in calls if e.method == "GET" and 200 <= e.status < 300]
    fetched = {ref for e in reads for ref in e.returned}
    hits = fetched & wanted
    wasted = sum(1 for e in calls if not (e.method == "GET" and 200 <= e.status < 300 and set(e.returned) & wanted))
    return Retrieval(
        calls=len(calls),
        fetched=len(fetched),
        used=len(wanted),
        hits=len(hits),
        precision=len(hits) / len(fetched) if fetched else None,
        recall=len(hits) / len(wanted) if wanted else None,
        wasted_calls=wasted,
        refused=sum(1 for e in calls if e.refused),
        writes=sum(1 for e in calls if e.method in ("POST", "PUT", "DELETE") and 200 <= e.status < 300),
    )
