"""The recording proxy (``--groundeval-fhir=URL``) in front of a sandbox standing in for the user's server."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from groundeval.fhir.recording_proxy import RecordingProxy
from groundeval.fhir.sandbox import FhirSandbox
from tests._paths import REPO

RECORD = REPO / "fixtures/summary/Tama137_Schamberger479_9311ccc6-c1d0-ccae-d783-09d5d41709d4.json"


def _call(url: str, token: str | None, method: str = "GET", body: dict[str, Any] | None = None) -> tuple[int, Any]:
    headers = {"Accept": "application/fhir+json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data, headers["Content-Type"] = json.dumps(body).encode(), "application/fhir+json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


@pytest.fixture
def proxied() -> Iterator[tuple[RecordingProxy, FhirSandbox, str]]:
    bundle = json.loads(RECORD.read_text())
    patient = next(f"Patient/{e['resource']['id']}" for e in bundle["entry"] if e["resource"]["resourceType"] == "Patient")
    # the upstream holds two patients, as a shared server does; its own token is not the case's
    other = {"resourceType": "Patient", "id": "someone-else"}
    other_obs = {"resourceType": "Observation", "id": "theirs", "status": "final", "code": {"text": "x"},
                 "subject": {"reference": "Patient/someone-else"}}
    with FhirSandbox([*bundle["entry"], other, other_obs], token="upstream-token") as upstream:
        proxy = RecordingProxy(upstream.base_url, upstream_token="upstream-token", token="case-token",
                               patient=patient, as_case_ref=lambda ref: f"case:{ref}")
        proxy.start()
        try:
            yield proxy, upstream, patient
        finally:
            proxy.stop()


def test_the_proxy_checks_the_case_token_and_patient_and_logs_every_call(
    proxied: tuple[RecordingProxy, FhirSandbox, str],
) -> None:
    proxy, upstream, patient = proxied
    base = proxy.base_url
    assert base.startswith("http://127.0.0.1:")
    assert _call(f"{base}/{patient}", None)[0] == 401
    assert _call(f"{base}/{patient}", "upstream-token")[0] == 401  # the server's own token is not the case's
    assert _call(f"{base}/Observation?patient=Patient/someone-else", "case-token")[0] == 403
    assert _call(f"{base}/Patient/someone-else", "case-token")[0] == 403
    assert _call(f"{base}/Observation/theirs", "case-token")[0] == 403  # the reply would hold another patient's data
    status, page = _call(f"{base}/Observation?patient={patient}&_count=5", "case-token")
    assert status == 200 and len(page["entry"]) == 5
    nxt = next(link["url"] for link in page["link"] if link["relation"] == "next")
    assert nxt.startswith(base)  # paging goes through the proxy
    assert _call(nxt, "case-token")[0] == 200
    body = {"resourceType": "MedicationStatement", "status": "active", "subject": {"reference": patient},
            "medicationCodeableConcept": {"text": "aspirin"}}
    status, created = _call(f"{base}/MedicationStatement", "case-token", "POST", body)
    assert status == 201
    assert proxy.written == [("create", f"MedicationStatement/{created['id']}")]
    log = proxy.entries()
    assert [e.status for e in log] == [401, 401, 403, 403, 403, 200, 200, 201]
    assert [e.refused for e in log][:5] == ["token", "token", "patient", "patient", "patient"]
    assert len(log[5].returned) == 5 and all(r.startswith("case:Observation/") for r in log[5].returned)
    assert not any(e.refused for e in upstream.access_log)  # the proxy sent the server its own token, never the case's
