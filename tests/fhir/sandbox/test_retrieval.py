"""Retrieval figures from the sandbox's access log."""

from __future__ import annotations

from groundeval.fhir.sandbox import FhirSandbox
from groundeval.fhir.sandbox.retrieval import retrieval
from tests.fhir.sandbox._client import call

RECORD = [
    {"resourceType": "Patient", "id": "p1"},
    *({"resourceType": "Condition", "id": f"c{i}", "subject": {"reference": "Patient/p1"}} for i in range(4)),
]


def test_precision_recall_and_wasted_calls_come_from_the_log() -> None:
    with FhirSandbox(RECORD, token="tok", patient="Patient/p1") as box:
        call(f"{box.base_url}/metadata", token=None)  # not a retrieval
        call(f"{box.base_url}/Condition?patient=p1")  # all four conditions: two used
        call(f"{box.base_url}/Patient/p1")  # nothing the truth used: wasted
        call(f"{box.base_url}/Patient/p2")  # refused: wasted
        call(
            f"{box.base_url}/Condition",
            method="POST",
            body={"resourceType": "Condition", "subject": {"reference": "Patient/p1"}},
        )
        got = retrieval(box.access_log, {"Condition/c0", "Condition/c1", "Observation/o9"})
    assert (got.calls, got.fetched, got.used, got.hits) == (4, 5, 3, 2)
    assert got.precision == 2 / 5 and got.recall == 2 / 3
    assert (got.wasted_calls, got.refused, got.writes) == (3, 1, 1)


def test_an_agent_that_fetches_nothing_has_no_precision_and_zero_recall() -> None:
    with FhirSandbox(RECORD, token="tok") as box:
        got = retrieval(box.access_log, {"Condition/c0"})
    assert got.precision is None and got.recall == 0.0 and got.calls == 0
