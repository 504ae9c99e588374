"""Reading the summary task's case files: one patient's trimmed FHIR Bundle each.

``read_case`` is what collection needs (JSON, a Bundle, exactly one Patient: cheap); the costly
R4B check is ``fhir.validation.check_bundle`` with ``OBSERVATION_CODES`` (the whole Bundle with
``fhir.resources``, and Observation statuses against their value set), run just before a case.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from groundeval.datasets import Case, case_id_from_stem, load_json
from groundeval.errors import DatasetError
from groundeval.tasks.summary.record import resources

__all__ = ["has_record", "read_case"]


def has_record(data: Mapping[str, Any]) -> bool:
    """True for a Bundle holding Conditions or MedicationRequests (a summary case's shape, for hints)."""
    return data.get("resourceType") == "Bundle" and any(
        True for kind in ("Condition", "MedicationRequest") for _ in resources(data, kind))


def read_case(path: Path) -> Case:
    """Read one case file: a Bundle with exactly one Patient.

    Raises:
        DatasetError: Not JSON, not a Bundle, or not exactly one Patient; the message names the file and the fix.
    """
    bundle, digest = load_json(path)
    if bundle.get("resourceType") != "Bundle" or not isinstance(bundle.get("entry", []), list):
        raise DatasetError(str(path), f"not a FHIR Bundle (resourceType {bundle.get('resourceType')!r}); a summary "
                           "case is one patient's Bundle (make them with scripts/make_summary.py)")
    patients = list(resources(bundle, "Patient"))
    if len(patients) != 1:
        raise DatasetError(str(path), f"{len(patients)} Patient resources; a summary case holds exactly one patient")
    counts = {kind: sum(1 for _ in resources(bundle, kind))
              for kind in ("Condition", "MedicationRequest", "AllergyIntolerance", "Observation")}
    return Case(case_id=case_id_from_stem(path.stem), source=path, sha256=digest, data=bundle,
                meta={"patient_id": str(patients[0].get("id")), **{k.lower() + "s": v for k, v in counts.items()}})
