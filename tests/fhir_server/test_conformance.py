"""FHIR R4 REST conformance: the same assertions against the sandbox and a real HAPI FHIR server.

Each expectation is computed from the packaged record, and each assertion cites the spec page it
checks (hl7.org/fhir/R4/http.html, search.html, bundle.html, operationoutcome.html,
patient-operation-everything.html). Where HAPI FHIR departs from a SHOULD, FRICTION.md says so.
"""

from __future__ import annotations

import urllib.parse
from datetime import datetime
from typing import Any

import pytest

from tests.fhir_server.conftest import Target, record

PATIENT_PARAM = {
    "MedicationRequest": "patient",
    "Condition": "patient",
    "AllergyIntolerance": "patient",
    "Observation": "patient",
    "Immunization": "patient",
}


def _resources(rtype: str) -> list[dict[str, Any]]:
    return [e["resource"] for e in record()["entry"] if e["resource"]["resourceType"] == rtype]


def _search_all(target: Target, query: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """All matches of a search, following ``next`` links (search.html#paging), and the pages."""
    status, page = target.server.request("GET", query)
    assert status == 200, (query, page)
    pages = [page]
    matches: list[dict[str, Any]] = []
    while True:
        assert page is not None and page["resourceType"] == "Bundle" and page["type"] == "searchset"
        matches += [e["resource"] for e in page.get("entry", []) if e.get("search", {}).get("mode", "match") == "match"]
        nxt = [link["url"] for link in page.get("link", []) if link["relation"] == "next"]
        if not nxt:
            return matches, pages
        status, page = target.server.request("GET", nxt[0])
        assert status == 200
        pages.append(page)


def _ids(resources: list[dict[str, Any]]) -> set[str]:
    return {r["id"] for r in resources}


def _expected(target: Target, rtype: str, keep: Any) -> set[str]:
    return {target.sid(rtype, r["id"]) for r in _resources(rtype) if keep(r)}


def _q(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def _is_outcome(body: dict[str, Any] | None) -> bool:
    return bool(body) and body.get("resourceType") == "OperationOutcome" and bool(body.get("issue"))  # type: ignore[union-attr]


def test_metadata_is_an_r4_capability_statement(target: Target) -> None:
    # http.html#capabilities: GET [base]/metadata returns the CapabilityStatement.
    status, body = target.server.request("GET", "metadata")
    assert status == 200 and body is not None
    assert body["resourceType"] == "CapabilityStatement"
    assert body["fhirVersion"].startswith("4.0")


@pytest.mark.parametrize(
    "rtype",
    ["Patient", "MedicationRequest", "Medication", "Condition", "AllergyIntolerance", "Observation", "Immunization"],
)
def test_read_returns_the_resource(target: Target, rtype: str) -> None:
    # http.html#read: GET [type]/[id] returns 200 and the resource.
    original = _resources(rtype)[0]
    status, body = target.server.request("GET", f"{rtype}/{target.sid(rtype, original['id'])}")
    assert status == 200 and body is not None
    assert body["resourceType"] == rtype and body["id"] == target.sid(rtype, original["id"])
    for key in ("code", "status", "clinicalStatus", "vaccineCode", "medicationCodeableConcept", "birthDate"):
        if key in original:
            assert body[key] == original[key], key


def test_read_of_an_unknown_id_is_404_with_an_operation_outcome(target: Target) -> None:
    # http.html#read: an unknown resource is 404 Not Found; operationoutcome.html: errors carry one.
    status, body = target.server.request("GET", "Observation/ge-no-such-id-000")
    assert status == 404
    assert _is_outcome(body)


def test_an_unknown_resource_type_is_404_with_an_operation_outcome(target: Target) -> None:
    # http.html#read / #search: "404 Not Found - resource type not supported".
    status, body = target.server.request("GET", "NoSuchType/x")
    assert status == 404
    assert _is_outcome(body)
    status, body = target.server.request("GET", "NoSuchType?_id=x")
    assert status == 404
    assert _is_outcome(body)


def test_an_unknown_search_parameter_with_strict_handling_is_400(target: Target) -> None:
    # search.html#errors: with Prefer: handling=strict an unknown parameter is an error (400).
    import json
    import urllib.error
    import urllib.request

    url = f"{target.server.base_url}/Observation?no-such-param=1"
    req = urllib.request.Request(url, headers={"Accept": "application/fhir+json", "Prefer": "handling=strict"})
    if target.server._token:
        req.add_header("Authorization", f"Bearer {target.server._token}")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            status, body = resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        status, body = err.code, json.loads(err.read())
    assert status == 400
    assert _is_outcome(body)


@pytest.mark.parametrize("rtype", sorted(PATIENT_PARAM))
def test_patient_search_returns_each_resource_of_the_patient(target: Target, rtype: str) -> None:
    # search.html (reference parameters): patient=Patient/[id]; subject= for Observation/Condition.
    expected = _expected(target, rtype, lambda r: True)
    found, _ = _search_all(target, f"{rtype}?patient={_q(target.patient)}")
    assert _ids(found) == expected
    if rtype in ("Observation", "Condition", "MedicationRequest"):
        found, _ = _search_all(target, f"{rtype}?subject={_q(target.patient)}")
        assert _ids(found) == expected


def test_status_and_intent_tokens(target: Target) -> None:
    # search.html#token: status=[code]; MedicationRequest intent=[code].
    for status_code in {r["status"] for r in _resources("MedicationRequest")}:
        expected = _expected(target, "MedicationRequest", lambda r, s=status_code: r["status"] == s)
        found, _ = _search_all(target, f"MedicationRequest?patient={_q(target.patient)}&status={status_code}")
        assert _ids(found) == expected, status_code
    expected = _expected(target, "MedicationRequest", lambda r: r["intent"] == "order")
    found, _ = _search_all(target, f"MedicationRequest?patient={_q(target.patient)}&intent=order")
    assert _ids(found) == expected
    found, _ = _search_all(target, f"MedicationRequest?patient={_q(target.patient)}&intent=plan")
    assert _ids(found) == _expected(target, "MedicationRequest", lambda r: r["intent"] == "plan")


@pytest.mark.parametrize("rtype", ["Condition", "AllergyIntolerance"])
def test_clinical_status_token(target: Target, rtype: str) -> None:
    # search.html#token on clinicalStatus (a CodeableConcept).
    for code in ("active", "resolved", "inactive"):
        expected = _expected(
            target, rtype, lambda r, c=code: r.get("clinicalStatus", {}).get("coding", [{}])[0].get("code") == c
        )
        found, _ = _search_all(target, f"{rtype}?patient={_q(target.patient)}&clinical-status={code}")
        assert _ids(found) == expected, code


@pytest.mark.parametrize(
    ("rtype", "param", "element"),
    [
        ("Observation", "code", "code"),
        ("Condition", "code", "code"),
        ("MedicationRequest", "code", "medicationCodeableConcept"),
        ("Medication", "code", "code"),
        ("AllergyIntolerance", "code", "code"),
        ("Immunization", "vaccine-code", "vaccineCode"),
    ],
)
def test_code_token_with_system(target: Target, rtype: str, param: str, element: str) -> None:
    # search.html#token: [system]|[code] matches a Coding with that system and code; |[code] and
    # [code] alone match on code.
    withs = [r for r in _resources(rtype) if element in r]
    if not withs:
        pytest.skip(f"the record has no {rtype}.{element}")
    coding = withs[0][element]["coding"][0]
    system, code = coding["system"], coding["code"]

    def has(r: dict[str, Any], sys: str | None) -> bool:
        return any(
            c.get("code") == code and (sys is None or c.get("system") == sys)
            for c in r.get(element, {}).get("coding", [])
        )

    scope = "" if rtype == "Medication" else f"patient={_q(target.patient)}&"
    found, _ = _search_all(target, f"{rtype}?{scope}{param}={_q(f'{system}|{code}')}")
    assert _ids(found) >= _expected(target, rtype, lambda r: has(r, system))
    if rtype != "Medication":
        assert _ids(found) == _expected(target, rtype, lambda r: has(r, system))
    found, _ = _search_all(target, f"{rtype}?{scope}{param}={_q('http://example.org/not-a-system|' + code)}")
    assert not (_ids(found) & _expected(target, rtype, lambda r: True))


@pytest.mark.parametrize("rtype", ["Observation", "Condition"])
def test_category_token(target: Target, rtype: str) -> None:
    categories = {c["code"] for r in _resources(rtype) for cat in r.get("category", []) for c in cat["coding"]}
    for code in sorted(categories):
        expected = _expected(
            target, rtype, lambda r, k=code: any(c["code"] == k for cat in r.get("category", []) for c in cat["coding"])
        )
        found, _ = _search_all(target, f"{rtype}?patient={_q(target.patient)}&category={code}")
        assert _ids(found) == expected, code


def _instant(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@pytest.mark.parametrize("prefix", ["eq", "lt", "le", "gt", "ge"])
def test_date_prefixes_on_observation(target: Target, prefix: str) -> None:
    # search.html#prefix and #date: a dateTime with seconds and a zone is an instant; eq matches
    # the same instant, lt/le/gt/ge compare instants.
    observations = [r for r in _resources("Observation") if "effectiveDateTime" in r]
    times = sorted({r["effectiveDateTime"] for r in observations}, key=_instant)
    pivot = times[len(times) // 2]
    ops = {
        "eq": lambda a, b: a == b,
        "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b,
        "gt": lambda a, b: a > b,
        "ge": lambda a, b: a >= b,
    }
    expected = _expected(
        target,
        "Observation",
        lambda r: "effectiveDateTime" in r and ops[prefix](_instant(r["effectiveDateTime"]), _instant(pivot)),
    )
    found, _ = _search_all(target, f"Observation?patient={_q(target.patient)}&date={prefix}{_q(pivot)}")
    assert _ids(found) == expected


def test_a_malformed_date_is_400_even_when_no_resource_of_the_type_exists(target: Target) -> None:
    # search.html#errors: a parameter value the server cannot process is 400, whatever the store holds;
    # the record holds no MedicationStatement, so there is nothing to match the value against.
    status, body = target.server.request("GET", f"MedicationStatement?patient={target.patient}&effective=ge2020-13-45")
    assert status == 400
    assert _is_outcome(body)


def test_id_search(target: Target) -> None:
    # search.html#id: _id=[id].
    original = _resources("Condition")[1]
    found, _ = _search_all(target, f"Condition?_id={target.sid('Condition', original['id'])}")
    assert _ids(found) == {target.sid("Condition", original["id"])}


def test_count_pages_with_next_links_and_total(target: Target) -> None:
    # search.html#count and #paging; bundle.html: Bundle.total is the number of matches (all pages).
    expected = _expected(target, "Observation", lambda r: True)
    found, pages = _search_all(target, f"Observation?patient={_q(target.patient)}&_count=7")
    assert len(pages) == -(-len(expected) // 7)
    assert all(len([e for e in p.get("entry", [])]) <= 7 for p in pages)
    assert [r["id"] for r in found] and _ids(found) == expected and len(found) == len(expected)
    totals = {p["total"] for p in pages if "total" in p}
    assert totals <= {len(expected)}
    _, pages = _search_all(target, f"Observation?patient={_q(target.patient)}&_count=7&_total=accurate")
    assert pages[0]["total"] == len(expected)


def test_sort_by_date(target: Target) -> None:
    # search.html#sort: _sort=date ascending, _sort=-date descending.
    found, _ = _search_all(target, f"Observation?patient={_q(target.patient)}&_sort=date&_count=100")
    stamps = [_instant(r["effectiveDateTime"]) for r in found]
    assert stamps == sorted(stamps)
    found, _ = _search_all(target, f"Observation?patient={_q(target.patient)}&_sort=-date&_count=100")
    stamps = [_instant(r["effectiveDateTime"]) for r in found]
    assert stamps == sorted(stamps, reverse=True)


def test_include_medication(target: Target) -> None:
    # search.html#include: _include=MedicationRequest:medication adds the referenced Medication
    # with search.mode "include".
    with_ref = [r for r in _resources("MedicationRequest") if "medicationReference" in r]
    assert with_ref, "the record must have a MedicationRequest.medicationReference"
    status, page = target.server.request(
        "GET", f"MedicationRequest?patient={_q(target.patient)}&_include=MedicationRequest:medication&_count=100"
    )
    assert status == 200 and page is not None
    included = {e["resource"]["id"] for e in page["entry"] if e["resource"]["resourceType"] == "Medication"}
    modes = {e["search"]["mode"] for e in page["entry"] if e["resource"]["resourceType"] == "Medication"}
    assert included == _expected(target, "Medication", lambda r: True)
    assert modes == {"include"}


def test_patient_everything(target: Target) -> None:
    # patient-operation-everything.html: the patient and every resource in its compartment.
    status, page = target.server.request("GET", f"{target.patient}/$everything?_count=500")
    assert status == 200 and page is not None
    got: set[tuple[str, str]] = set()
    while True:
        got |= {(e["resource"]["resourceType"], e["resource"]["id"]) for e in page.get("entry", [])}
        nxt = [link["url"] for link in page.get("link", []) if link["relation"] == "next"]
        if not nxt:
            break
        status, page = target.server.request("GET", nxt[0])
    compartment = {(rt, sid) for (rt, _), sid in target.ids.items() if rt != "Medication"}
    assert compartment <= got


def test_create_then_update(target: Target) -> None:
    # http.html#create: POST [type] -> 201 and a Location; http.html#update: PUT [type]/[id] -> 200.
    statement = {
        "resourceType": "MedicationStatement",
        "status": "active",
        "medicationCodeableConcept": {
            "coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "197361"}]
        },
        "subject": {"reference": target.patient},
    }
    status, body = target.server.request("POST", "MedicationStatement", statement)
    assert status == 201 and body is not None
    new_id = body["id"]
    statement.update(id=new_id, status="stopped")
    status, body = target.server.request("PUT", f"MedicationStatement/{new_id}", statement)
    assert status == 200 and body is not None and body["status"] == "stopped"
    status, body = target.server.request("GET", f"MedicationStatement/{new_id}")
    assert status == 200 and body is not None and body["status"] == "stopped"
    found, _ = _search_all(target, f"MedicationStatement?patient={_q(target.patient)}")
    assert new_id in _ids(found)
    status, _ = target.server.request("DELETE", f"MedicationStatement/{new_id}")
    assert status in (200, 204)
