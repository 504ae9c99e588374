"""Reading the labs task's case files: one patient's FHIR Bundle each.

``read_case`` is what collection needs (the JSON, a Bundle, exactly one Patient: cheap, it runs
in every process for every file); the costly check run just before a case is
``fhir.validation.check_bundle`` with ``OBSERVATION_CODES`` (the whole Bundle as FHIR R4B, and
``Observation.status`` against the R4 value set, a required binding the models do not enforce).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from groundeval.datasets import Case, case_id_from_stem, load_json
from groundeval.errors import DatasetError

__all__ = ["has_observations", "read_case"]

def _resources(bundle: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [e["resource"] for e in bundle.get("entry") or []
            if isinstance(e, Mapping) and isinstance(e.get("resource"), Mapping)]


def has_observations(data: Mapping[str, Any]) -> bool:
    """True for a FHIR Bundle holding at least one Observation entry."""
    return data.get("resourceType") == "Bundle" and isinstance(data.get("entry"), list) and any(
        r.get("resourceType") == "Observation" for r in _resources(data))


def read_case(path: Path) -> Case:
    """Read one case file: a Bundle with exactly one Patient.

    Raises:
        DatasetError: Not JSON, not a Bundle, or not exactly one Patient; the message names the
            file and the fix.
    """
    bundle, digest = load_json(path)
    if bundle.get("resourceType") != "Bundle" or not isinstance(bundle.get("entry", []), list):
        raise DatasetError(str(path), f"not a FHIR Bundle (resourceType {bundle.get('resourceType')!r}); a labs case "
                           "is one patient's Bundle with its Patient and Observations")
    patients = [r for r in _resources(bundle) if r.get("resourceType") == "Patient"]
    if len(patients) != 1:
        raise DatasetError(str(path), f"the Bundle holds {len(patients)} Patient resources; a labs case holds "
                           "exactly one patient's record")
    observations = sum(r.get("resourceType") == "Observation" for r in _resources(bundle))
    meta = {"patient_id": str(patients[0].get("id") or ""), "observations": observations}
    return Case(case_id=case_id_from_stem(path.stem), source=path, sha256=digest, data=bundle, meta=meta)
