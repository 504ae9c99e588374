"""The FHIR sandbox behaves as the R4 spec says (http.html, search.html, operationoutcome.html)."""

from __future__ import annotations

import json
import threading
from typing import Any
from urllib.parse import quote

import pytest

from groundeval.fhir.sandbox import FhirSandbox, serve
from groundeval.fhir.sandbox.params import COMMON, PARAMS
from tests._paths import REPO
from tests.fhir.sandbox._client import call

RX = "http://www.nlm.nih.gov/research/umls/rxnorm"
LOINC = "http://loinc.org"
PID = "p1"


def _mr(
    id_: str, code: str, status: str, authored: str, *, intent: str = "order", med_ref: str | None = None
) -> dict[str, Any]:
    res: dict[str, Any] = {
        "resourceType": "MedicationRequest",
        "id": id_,
        "status": status,
        "intent": intent,
        "subject": {"reference": f"urn:uuid:{PID}"},
        "authoredOn": authored,
    }
    if med_ref:
        res["medicationReference"] = {"reference": f"urn:uuid:{med_ref}"}
    else:
        res["medicationCodeableConcept"] = {"coding": [{"system": RX, "code": code}]}
    return res


def _obs(id_: str, code: str, when: str, category: str = "laboratory") -> dict[str, Any]:
    return {
        "resourceType": "Observation",
        "id": id_,
        "status": "final",
        "category": [
            {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/observation-category", "code": category}]}
        ],
        "code": {"coding": [{"system": LOINC, "code": code}]},
        "subject": {"reference": f"urn:uuid:{PID}"},
        "effectiveDateTime": when,
    }


RECORD: list[dict[str, Any]] = [
    {"fullUrl": f"urn:uuid:{PID}", "resource": {"resourceType": "Patient", "id": PID}},
    {
        "fullUrl": "urn:uuid:m1",
        "resource": {
            "resourceType": "Medication",
            "id": "m1",
            "status": "active",
            "code": {"coding": [{"system": RX, "code": "999"}]},
        },
    },
    *(
        {"fullUrl": f"urn:uuid:{r['id']}", "resource": r}
        for r in (
            _mr("mr1", "111", "active", "2020-01-15"),
            _mr("mr2", "222", "stopped", "2019-06-01"),
            _mr("mr3", "333", "active", "2021-03-10T08:30:00Z", intent="plan"),
            _mr("mr4", "", "completed", "2018-02-02", med_ref="m1"),
            _obs("o1", "4548-4", "2020-01-01T10:00:00Z"),
            _obs("o2", "4548-4", "2020-06-01T10:00:00Z"),
            _obs("o3", "8480-6", "2021-01-01T10:00:00Z", category="vital-signs"),
            {
                "resourceType": "Condition",
                "id": "c1",
                "subject": {"reference": f"urn:uuid:{PID}"},
                "clinicalStatus": {
                    "coding": [{"system": "http://terminology.hl7.org/CodeSystem/condition-clinical", "code": "active"}]
                },
                "code": {"coding": [{"system": "http://snomed.info/sct", "code": "44054006"}]},
                "onsetDateTime": "2010-05-05",
            },
            {
                "resourceType": "Condition",
                "id": "c2",
                "subject": {"reference": f"urn:uuid:{PID}"},
                "clinicalStatus": {
                    "coding": [
                        {"system": "http://terminology.hl7.org/CodeSystem/condition-clinical", "code": "resolved"}
                    ]
                },
                "code": {"coding": [{"system": "http://snomed.info/sct", "code": "10509002"}]},
                "onsetDateTime": "2015-01-01",
            },
            {
                "resourceType": "AllergyIntolerance",
                "id": "a1",
                "patient": {"reference": f"urn:uuid:{PID}"},
                "clinicalStatus": {"coding": [{"code": "active"}]},
                "category": ["medication"],
                "code": {"coding": [{"system": RX, "code": "7980"}]},
            },
            {
                "resourceType": "Immunization",
                "id": "i1",
                "status": "completed",
                "patient": {"reference": f"urn:uuid:{PID}"},
                "vaccineCode": {"coding": [{"system": "http://hl7.org/fhir/sid/cvx", "code": "140"}]},
                "occurrenceDateTime": "2020-10-10T09:00:00Z",
            },
        )
    ),
]


@pytest.fixture
def sandbox() -> Any:
    with FhirSandbox(RECORD, token="tok", patient=f"Patient/{PID}") as box:
        yield box


def _ids(bundle: dict[str, Any], mode: str = "match") -> list[str]:
    return [e["resource"]["id"] for e in bundle.get("entry", []) if e["search"]["mode"] == mode]


def test_metadata_lists_exactly_the_supported_types_and_parameters(sandbox: FhirSandbox) -> None:
    status, cap, headers = call(f"{sandbox.base_url}/metadata", token=None)
    assert status == 200 and headers["Content-Type"].startswith("application/fhir+json")
    assert cap["resourceType"] == "CapabilityStatement" and cap["fhirVersion"] == "4.0.1"
    by_type = {r["type"]: r for r in cap["rest"][0]["resource"]}
    for type_, params in PARAMS.items():
        assert {p["name"] for p in by_type[type_]["searchParam"]} == {*params, *COMMON}
    assert by_type["MedicationRequest"]["searchInclude"] == ["MedicationRequest:medication"]
    assert {i["code"] for i in by_type["MedicationStatement"]["interaction"]} == {
        "read",
        "search-type",
        "create",
        "update",
        "delete",
    }
    assert {i["code"] for i in by_type["Patient"]["interaction"]} == {"read", "search-type"}


def test_read_rewrites_bundle_references_and_gives_an_etag(sandbox: FhirSandbox) -> None:
    status, res, headers = call(f"{sandbox.base_url}/MedicationRequest/mr1")
    assert status == 200 and res["subject"] == {"reference": f"Patient/{PID}"}
    assert headers["ETag"] == 'W/"1"' and res["meta"]["versionId"] == "1"


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("MedicationRequest/nope", 404, "not-found"),
        ("Encounter/x", 404, "not-supported"),
        ("MedicationRequest?bogus=1", 400, "not-supported"),
        ("MedicationRequest?_include=Observation:subject", 400, "not-supported"),
        ("Observation?date=notadate", 400, "invalid"),
        ("Observation?_count=-1", 400, "invalid"),
        ("Observation?_sort=bogus", 400, "not-supported"),
        ("Observation?code:text=x", 400, "not-supported"),
    ],
)
def test_errors_are_operation_outcomes_with_the_spec_status(
    sandbox: FhirSandbox, path: str, status: int, code: str
) -> None:
    got, body, _ = call(f"{sandbox.base_url}/{path}")
    assert got == status
    assert body["resourceType"] == "OperationOutcome" and body["issue"][0]["code"] == code


def test_unknown_parameter_is_ignored_with_a_warning_under_lenient_handling(sandbox: FhirSandbox) -> None:
    status, bundle, _ = call(f"{sandbox.base_url}/Observation?bogus=1", headers={"Prefer": "handling=lenient"})
    assert status == 200 and bundle["total"] == 3
    (outcome,) = [e for e in bundle["entry"] if e["search"]["mode"] == "outcome"]
    assert outcome["resource"]["issue"][0]["severity"] == "warning"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (f"MedicationRequest?patient={PID}", {"mr1", "mr2", "mr3", "mr4"}),
        (f"MedicationRequest?subject=Patient/{PID}&status=active", {"mr1", "mr3"}),
        ("MedicationRequest?status=active,stopped", {"mr1", "mr2", "mr3"}),
        ("MedicationRequest?intent=plan", {"mr3"}),
        (f"MedicationRequest?code={quote(RX + '|222')}", {"mr2"}),
        ("MedicationRequest?code=111", {"mr1"}),
        ("MedicationRequest?code=http://other|111", set()),
        ("MedicationRequest?authoredon=ge2020-01-15", {"mr1", "mr3"}),
        ("MedicationRequest?authoredon=lt2020", {"mr2", "mr4"}),
        ("MedicationRequest?authoredon=2021-03", {"mr3"}),
        ("MedicationRequest?_id=mr1,mr2", {"mr1", "mr2"}),
        ("Observation?date=gt2020-01-01", {"o2", "o3"}),
        ("Observation?date=le2020-01-01", {"o1"}),
        ("Observation?date=ge2020&date=lt2021", {"o1", "o2"}),
        ("Observation?date=eq2020-06", {"o2"}),
        ("Observation?category=vital-signs", {"o3"}),
        (f"Observation?code={quote(LOINC + '|4548-4')}&patient={PID}", {"o1", "o2"}),
        ("Condition?clinical-status=active", {"c1"}),
        ("Condition?onset-date=lt2012", {"c1"}),
        ("AllergyIntolerance?category=medication&clinical-status=active", {"a1"}),
        ("Immunization?vaccine-code=140&date=2020-10-10", {"i1"}),
        (f"Patient?_id={PID}", {PID}),
        ("Medication?code=999", {"m1"}),
        ("Observation?status:not=final", set()),
    ],
)
def test_search_parameters(sandbox: FhirSandbox, query: str, expected: set[str]) -> None:
    status, bundle, _ = call(f"{sandbox.base_url}/{query}")
    assert status == 200 and bundle["type"] == "searchset"
    assert set(_ids(bundle)) == expected and bundle["total"] == len(expected)


def test_sort_orders_by_date_both_ways(sandbox: FhirSandbox) -> None:
    _, up, _ = call(f"{sandbox.base_url}/MedicationRequest?_sort=authoredon")
    _, down, _ = call(f"{sandbox.base_url}/MedicationRequest?_sort=-authoredon")
    assert _ids(up) == ["mr4", "mr2", "mr1", "mr3"] and _ids(down) == ["mr3", "mr1", "mr2", "mr4"]


def test_paging_follows_next_links_to_every_match_once(sandbox: FhirSandbox) -> None:
    url: str | None = f"{sandbox.base_url}/Observation?_count=2&_sort=date"
    seen: list[str] = []
    pages = 0
    while url:
        _, bundle, _ = call(url)
        assert bundle["total"] == 3 and len(_ids(bundle)) <= 2
        seen += _ids(bundle)
        pages += 1
        url = next((link["url"] for link in bundle["link"] if link["relation"] == "next"), None)
    assert seen == ["o1", "o2", "o3"] and pages == 2


def test_include_adds_the_referenced_medication_outside_the_total(sandbox: FhirSandbox) -> None:
    _, bundle, _ = call(f"{sandbox.base_url}/MedicationRequest?_include=MedicationRequest:medication&status=completed")
    assert _ids(bundle) == ["mr4"] and _ids(bundle, "include") == ["m1"] and bundle["total"] == 1


def test_everything_returns_the_whole_compartment_and_referenced_medications(sandbox: FhirSandbox) -> None:
    _, bundle, _ = call(f"{sandbox.base_url}/Patient/{PID}/$everything")
    assert bundle["total"] == len(RECORD) and set(_ids(bundle)) == {e["resource"]["id"] for e in RECORD}
    assert _ids(bundle)[0] == PID


def test_a_wrong_token_is_401_and_counted(sandbox: FhirSandbox) -> None:
    for token in (None, "other-case"):
        status, body, headers = call(f"{sandbox.base_url}/Patient/{PID}", token=token)
        assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer")
        assert body["issue"][0]["code"] == "login"
    assert [e.refused for e in sandbox.refused] == ["token", "token"]


@pytest.mark.parametrize(
    "path",
    [
        "Patient/p2",
        "Observation?patient=p2",
        "Observation?subject=Patient/p2",
        "Patient?_id=p2",
        "Patient/p2/$everything",
        f"Condition?patient={PID},p2",
    ],
)
def test_another_patient_is_403_and_counted(sandbox: FhirSandbox, path: str) -> None:
    status, body, _ = call(f"{sandbox.base_url}/{path}")
    assert status == 403 and body["issue"][0]["code"] == "forbidden"
    assert [e.refused for e in sandbox.refused] == ["patient"]


def test_access_log_records_what_each_request_returned(sandbox: FhirSandbox) -> None:
    call(f"{sandbox.base_url}/MedicationRequest?status=stopped")
    call(f"{sandbox.base_url}/Condition/c1")
    log = sandbox.access_log
    assert [(e.method, e.path, e.status, e.returned) for e in log] == [
        ("GET", "MedicationRequest", 200, ("MedicationRequest/mr2",)),
        ("GET", "Condition/c1", 200, ("Condition/c1",)),
    ]
    assert log[0].query == (("status", "stopped"),)


MS = {
    "resourceType": "MedicationStatement",
    "status": "active",
    "subject": {"reference": f"Patient/{PID}"},
    "medicationCodeableConcept": {"coding": [{"system": RX, "code": "111"}]},
}


def test_create_and_update_follow_http_html(sandbox: FhirSandbox) -> None:
    status, created, headers = call(f"{sandbox.base_url}/MedicationStatement", method="POST", body=MS)
    assert status == 201 and created["meta"]["versionId"] == "1"
    assert headers["Location"] == f"{sandbox.base_url}/MedicationStatement/{created['id']}/_history/1"
    status, updated, _ = call(
        f"{sandbox.base_url}/MedicationStatement/{created['id']}", method="PUT", body={**created, "status": "stopped"}
    )
    assert status == 200 and updated["meta"]["versionId"] == "2" and updated["status"] == "stopped"
    status, _, _ = call(f"{sandbox.base_url}/MedicationStatement/new1", method="PUT", body={**MS, "id": "new1"})
    assert status == 201
    assert [(w.interaction, w.reference.split("/")[0]) for w in sandbox.writes] == [
        ("create", "MedicationStatement"),
        ("update", "MedicationStatement"),
        ("update", "MedicationStatement"),
    ]


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("PUT", "MedicationStatement/a", {**MS, "id": "b"}, 400),
        ("POST", "MedicationStatement", {**MS, "resourceType": "Observation"}, 400),
        ("POST", "MedicationStatement", {key: v for key, v in MS.items() if key != "subject"}, 422),
        ("POST", "MedicationStatement", {**MS, "subject": {"reference": "Patient/p2"}}, 403),
        ("POST", "Patient", {"resourceType": "Patient"}, 405),
        ("DELETE", "Patient/p1", None, 405),
        ("DELETE", "MedicationRequest/nope", None, 404),
    ],
)
def test_bad_writes_are_refused_and_change_nothing(
    sandbox: FhirSandbox, method: str, path: str, body: dict[str, Any] | None, status: int
) -> None:
    got, outcome, _ = call(f"{sandbox.base_url}/{path}", method=method, body=body)
    assert got == status and outcome["resourceType"] == "OperationOutcome"
    assert sandbox.writes == []


def test_serving_never_changes_the_callers_resources() -> None:
    before = json.dumps(RECORD, sort_keys=True)
    with serve(RECORD, token="tok") as base:
        call(f"{base}/MedicationStatement", method="POST", body=MS)
    assert json.dumps(RECORD, sort_keys=True) == before


def test_sixteen_cases_in_flight_never_see_each_others_writes() -> None:
    errors: list[str] = []
    created: dict[int, str] = {}
    barrier = threading.Barrier(16, timeout=30)

    def one_case(n: int) -> None:
        with serve(RECORD, token=f"tok{n}", patient=f"Patient/{PID}") as base:
            body = {**MS, "note": [{"text": f"case {n}"}]}
            status, res, _ = call(f"{base}/MedicationStatement", method="POST", body=body, token=f"tok{n}")
            created[n] = res.get("id", "")
            barrier.wait()  # every case has written before any reads
            for other, id_ in created.items():
                got, read, _ = call(f"{base}/MedicationStatement/{id_}", token=f"tok{n}")
                expected = (200, f"case {n}") if other == n else (404, None)
                if (got, (read.get("note") or [{}])[0].get("text")) != expected:
                    errors.append(f"case {n} read case {other}'s write: {got}")
        with serve(RECORD, token="fresh") as fresh:  # the next case starts from the record alone
            _, everything, _ = call(f"{fresh}/Patient/{PID}/$everything", token="fresh")
            if everything["total"] != len(RECORD) or status != 201:
                errors.append(f"case {n}: status {status}, a fresh sandbox holds {everything['total']}")

    threads = [threading.Thread(target=one_case, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == [] and len(created) == 16 and not any(t.is_alive() for t in threads)


def test_a_synthea_fixture_is_served_whole() -> None:
    bundle = json.loads(next((REPO / "fixtures" / "extraction").glob("*.json")).read_text())
    patient = bundle["entry"][0]["resource"]["id"]
    active = [
        e
        for e in bundle["entry"]
        if e["resource"]["resourceType"] == "MedicationRequest" and e["resource"]["status"] == "active"
    ]
    with serve(bundle["entry"], token="tok", patient=f"Patient/{patient}") as base:
        _, got, _ = call(f"{base}/MedicationRequest?patient={patient}&status=active&_count=500")
    assert got["total"] == len(active) > 0


@pytest.mark.parametrize("given", ["fixtures/x.json", None, ["not a resource"]])
def test_a_path_or_anything_but_parsed_json_is_refused_with_the_fix(given: object) -> None:
    from groundeval.fhir.sandbox.store import ResourceStore

    with pytest.raises(TypeError, match=r"Bundle|parsed JSON"):
        ResourceStore(given)  # type: ignore[arg-type]


def test_a_json_object_that_is_no_bundle_is_named() -> None:
    from groundeval.fhir.sandbox.store import ResourceStore

    with pytest.raises(ValueError, match="not a JSON object without resourceType"):
        ResourceStore({})
