"""--groundeval-fhir=URL against a real HAPI FHIR server: load, read back, score, clean up."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from groundeval.fhir.remote_server import FhirServer, FhirServerError, case_prefix, to_transaction
from groundeval.tasks.write.task import WriteTask
from tests._write_answers import statement_from_truth
from tests.fhir_server.conftest import RECORD, record

ROOT = Path(__file__).resolve().parents[2]


def _hapi() -> FhirServer:
    url = os.environ.get("GROUNDEVAL_HAPI_URL")
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but GROUNDEVAL_HAPI_URL is unset: .ci/run must start HAPI FHIR (scripts/hapi_fhir.sh)")
        pytest.skip("GROUNDEVAL_HAPI_URL is unset: start HAPI FHIR with scripts/hapi_fhir.sh start")
    return FhirServer(url, token="")


def test_transaction_ids_differ_across_runs_and_cases_and_references_follow() -> None:
    bundle = record()
    one, map_one = to_transaction(bundle, case_prefix("run-a", "case-1"))
    two, map_two = to_transaction(bundle, case_prefix("run-b", "case-1"))
    three, _ = to_transaction(bundle, case_prefix("run-a", "case-2"))
    ids = [{e["request"]["url"] for e in b["entry"]} for b in (one, two, three)]
    assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    assert all(e["request"]["method"] == "PUT" and len(e["resource"]["id"]) <= 64 for e in one["entry"])
    # every reference left points at a resource of the same transaction
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("reference"), str):
                refs.append(node["reference"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(one)
    assert refs and set(refs) <= ids[0]
    patient = next(e for e in bundle["entry"] if e["resource"]["resourceType"] == "Patient")
    key = f"Patient/{patient['resource']['id']}"
    assert map_one[key] != map_two[key]


def test_a_loaded_case_reads_back_identically_and_is_expunged() -> None:
    server = _hapi()
    bundle = record()
    loaded = server.load_case(bundle, case_prefix(uuid.uuid4().hex[:8], RECORD.stem[:12]))
    try:
        back = server.read_back(loaded)
        transaction, _ = to_transaction(bundle, loaded.prefix)
        sent = {f"{e['resource']['resourceType']}/{e['resource']['id']}": e["resource"] for e in transaction["entry"]}
        assert len(back) == len(bundle["entry"])
        for resource in back.values():
            resource = dict(resource)
            resource.pop("meta")
            assert resource == sent[f"{resource['resourceType']}/{resource['id']}"]
    finally:
        cleanup = server.cleanup(loaded)
    assert cleanup.method == "$expunge"  # HAPI FHIR lists $expunge in its CapabilityStatement
    assert server.read_back(loaded) == {}
    status, history = server.request("GET", f"{loaded.patient}/_history")
    assert status in (404, 410) or not (history or {}).get("entry")  # expunged: no versions kept


@pytest.mark.parametrize("case_id", ["amlodipine-two-half-strength-tablets", "acetaminophen-two-to-four-times-prn"])
def test_the_write_tasks_statement_read_back_from_hapi_scores_as_from_the_file(case_id: str) -> None:
    server = _hapi()
    task = WriteTask()
    case = task.load_case(ROOT / "fixtures" / "write" / f"{case_id}.json")
    truth = task.truth(case)
    answer = statement_from_truth(truth)
    bundle = {
        "resourceType": "Bundle",
        "type": "collection",
        "entry": [
            {
                "fullUrl": truth["patient"]["reference"],
                "resource": {"resourceType": "Patient", "id": truth["patient"]["reference"].removeprefix("urn:uuid:")},
            },
        ],
    }
    loaded = server.load_case(bundle, case_prefix(uuid.uuid4().hex[:8], case_id[:16]))
    written: list[str] = []
    try:
        # the agent writes against the server: its subject is the server's patient
        on_server = json.loads(json.dumps(answer).replace(truth["patient"]["reference"], loaded.patient))
        status, created = server.request("POST", "MedicationStatement", on_server)
        assert status == 201 and created is not None
        written.append(f"MedicationStatement/{created['id']}")
        found = server.written_by_agent(loaded, "MedicationStatement")
        assert [r["id"] for r in found] == [created["id"]]
        from_server = task.score(case, truth, task.parse(case, json.dumps(loaded.as_case_resource(found[0]))))
        from_file = task.score(case, truth, task.parse(case, json.dumps(answer)))
        assert from_server == from_file
        assert from_file.outcome == "passed"
    finally:
        server.cleanup(loaded, written)


def test_an_unreachable_server_is_a_harness_error_naming_the_url_not_the_token() -> None:
    server = FhirServer("http://127.0.0.1:9/fhir", token="secret-token-value", timeout=5)
    with pytest.raises(FhirServerError) as err:
        server.request("GET", "metadata")
    assert "127.0.0.1:9" in str(err.value) and "secret-token-value" not in str(err.value)
