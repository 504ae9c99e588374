"""Pieces every task needs once: patient lookup, case ids, pydantic error text, wrong-task hints.

Public helpers for task authors (re-exported at the ``groundeval`` top level)::

    find_patient(bundle, source) -> (Patient dict, entry fullUrl or None)
    patient_case_id(patient, path, digest, case_ids="name") -> "Liz_Conn-27c911c6"
    describe_validation_error(exc, entries=None, limit=None) -> "where: problem; ..."
    wrong_task_error(data, path, this_task) -> DatasetError | None
    validate_entries(bundle, resource_types, path) -> None  (FHIR R4B shape check)

Each lives where it belongs and is re-exported here: ``find_patient`` in
``groundeval.clinical.medication_list``, ``case_id_from_stem`` in ``groundeval.datasets``, the
validation helpers (and the whole-Bundle check, ``check_bundle``) in ``groundeval.fhir.validation``.
``case_files`` lives in ``groundeval.tasks.base``; FHIR coding by system in
``groundeval.fhir.bundle.codings_by_system``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from groundeval.clinical.medication_list import find_patient
from groundeval.datasets import case_id_from_stem, slug
from groundeval.errors import DatasetError
from groundeval.fhir.validation import describe_validation_error, validate_entries

__all__ = [
    "case_id_from_stem",
    "describe_validation_error",
    "find_bundle_file",
    "find_patient",
    "patient_case_id",
    "validate_entries",
    "wrong_task_error",
]


def patient_case_id(patient: Mapping[str, Any], path: Path, digest: str, case_ids: str = "name") -> str:
    """The case id of a one-patient file, from its file name (never from ``Patient.name``).

    Args:
        patient: The Patient resource (unused; kept so tasks need not change their call).
        path: The case file.
        digest: The file's SHA-256 (unused).
        case_ids: ``"name"``: the file stem with a trailing UUID cut to its first 8 characters
            (``Liz_Conn_27c911c6-f045-....json`` -> ``Liz_Conn_27c911c6``), as the built-in tasks
            name their cases; ``"file"``: the whole stem, made an identifier (``slug``).
    """
    del patient, digest
    if case_ids == "file":
        return slug(path.stem)
    return case_id_from_stem(path.stem)


def wrong_task_error(data: Mapping[str, Any], path: Path, this_task: str) -> DatasetError | None:
    """A ``DatasetError`` naming the other task(s) whose format ``data`` is, or None.

    Asks every task class the registry knows (built-in and entry-point tasks, see
    ``groundeval.tasks.task_classes``) whether it ``claims`` the data; only called when a file
    is not this task's format, so the imports cost nothing on good data.
    """
    from groundeval.tasks import task_classes

    others = []
    for name, cls in task_classes().items():
        claims = getattr(cls, "claims", None)
        if name != this_task and callable(claims) and claims(data):
            others.append(name)
    if not others:
        return None
    first, rest = others[0], others[1:]
    also = f" (or {', '.join(rest)})" if rest else ""
    return DatasetError(
        str(path), f"this is a case of the {first} task{also}, not of the {this_task} task; run it with "
        f"--groundeval-task={first}",
    )


def find_bundle_file(case_path: Path, name: str, field: str, hint: str) -> Path:
    """The patient Bundle file a case names, looked up in three places.

    Next to the case file, then in a sibling ``extraction/`` directory (a user's own
    ``cases/<task>`` + ``cases/extraction`` layout), then among the packaged extraction fixtures.

    Args:
        case_path: The case file that names the Bundle.
        name: The Bundle's file name as the case gives it.
        field: The case's field that named it, for the message (``patient.fixture``).
        hint: How to fix the case, appended to the message.

    Returns:
        The resolved path.

    Raises:
        DatasetError: No such file in any of those places; the message lists them.
    """
    from groundeval.datasets import default_data_dir

    places = [case_path.parent, case_path.parent.parent / "extraction", default_data_dir("extraction")]
    found = next((d / name for d in places if (d / name).is_file()), None)
    if found is None:
        searched = ", ".join(str(d) for d in places)
        raise DatasetError(str(case_path), f"{field} {name!r} not found (searched {searched}); {hint}")
    return found.resolve()
