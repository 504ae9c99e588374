"""The FHIR servers the conformance tests run against, each holding one packaged record.

Targets: groundeval's sandbox (``groundeval.fhir.sandbox``; skipped until it exists) and a real
HAPI FHIR JPA server at ``$GROUNDEVAL_HAPI_URL`` (started once by ``.ci/run`` through
``scripts/hapi_fhir.sh``; skipped locally when unset, an error under ``CI=true``).
"""

from __future__ import annotations

import json
import os
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from groundeval.fhir.remote_server import FhirServer, LoadedCase, case_prefix

RECORD = (
    Path(__file__).resolve().parents[2]
    / "fixtures/summary/Tama137_Schamberger479_9311ccc6-c1d0-ccae-d783-09d5d41709d4.json"
)


@dataclass
class Target:
    """A FHIR server holding the record: a client, and the record's ids as the server names them."""

    name: str
    server: FhirServer
    ids: dict[tuple[str, str], str]
    patient: str

    def sid(self, rtype: str, original: str) -> str:
        return self.ids[(rtype, original)]


def record() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RECORD.read_text())
    return data


def _hapi() -> Iterator[Target]:
    url = os.environ.get("GROUNDEVAL_HAPI_URL")
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but GROUNDEVAL_HAPI_URL is unset: .ci/run must start HAPI FHIR (scripts/hapi_fhir.sh)")
        pytest.skip("GROUNDEVAL_HAPI_URL is unset: start HAPI FHIR with scripts/hapi_fhir.sh start")
    server = FhirServer(url, token="")
    loaded: LoadedCase = server.load_case(record(), case_prefix(uuid.uuid4().hex[:8], "conformance"))
    try:
        yield Target("hapi", server, loaded.ids, loaded.patient)
    finally:
        server.cleanup(loaded)


def _sandbox() -> Iterator[Target]:
    sandbox = pytest.importorskip("groundeval.fhir.sandbox")
    token = secrets.token_urlsafe(16)
    bundle = record()
    with sandbox.serve(bundle, token=token) as base_url:
        ids = {(e["resource"]["resourceType"], e["resource"]["id"]): e["resource"]["id"] for e in bundle["entry"]}
        patient = next(f"Patient/{i}" for (t, i) in ids if t == "Patient")
        yield Target("sandbox", FhirServer(base_url, token=token), ids, patient)


@pytest.fixture(scope="module", params=["sandbox", "hapi"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """The record on one FHIR server, loaded once per module and removed after it."""
    yield from (_sandbox() if request.param == "sandbox" else _hapi())
