"""The extraction baseline over FHIR REST answers as the file baseline does, on every packaged case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._paths import REPO

pytest.importorskip("healthchain")

CASES = [p for p in sorted((REPO / "fixtures" / "extraction").glob("*.json")) if not p.stem.startswith("MANIFEST")]


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem[:24])
def test_rest_baseline_answers_as_the_file_baseline(path: Path) -> None:
    from fhir.resources.R4B.bundle import Bundle

    from groundeval.agents.baselines.extraction import medication_list
    from groundeval.agents.baselines.extraction_rest import rest_medication_list
    from groundeval.fhir.remote_server import FhirServer
    from groundeval.fhir.sandbox import FhirSandbox, new_token

    bundle = json.loads(path.read_text())
    patient = next(
        f"Patient/{e['resource']['id']}" for e in bundle["entry"] if e["resource"]["resourceType"] == "Patient"
    )
    token = new_token()
    with FhirSandbox(bundle, token=token, patient=patient) as box:
        over_rest = rest_medication_list(FhirServer(box.base_url, token=token), patient)
        log = box.access_log
    assert json.loads(over_rest) == json.loads(medication_list(Bundle.model_validate(bundle), "active"))
    assert all(e.method == "GET" and e.status == 200 and not e.refused for e in log)
