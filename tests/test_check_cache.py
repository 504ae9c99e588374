"""Which verdicts of a case file's costly check are kept, and who shares them (``groundeval.check_cache``)."""

from __future__ import annotations

import importlib
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from groundeval import check_cache
from groundeval.tasks.extraction.task import ExtractionTask
from groundeval.tasks.reconcile.task import ReconcileTask
from tests._paths import REPO

FIXTURE = "Ellena683_Allene83_Reilly981_3f7e3cbc-a278-a448-e30a-24ef17ed8c99.json"
PINS_IT = ("as-needed-flip--Ellena683_Allene83_Reilly981_3f7e3cbc.json", "brand-rxcui--Delores12_Cronin387_0d154268.json")


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files ``check_bundle`` validated, as the extraction and reconcile tasks call it; no verdict kept yet."""
    seen: list[str] = []
    for name in ("groundeval.tasks.extraction.task", "groundeval.tasks.reconcile.task"):
        module = importlib.import_module(name)
        real = module.check_bundle

        def counting(bundle: Mapping[str, Any], path: Path, *bindings: Any, real: Callable[..., None] = real) -> None:
            seen.append(path.name)
            real(bundle, path, *bindings)

        monkeypatch.setattr(module, "check_bundle", counting)
    monkeypatch.setattr(check_cache, "_PASSED", set())
    monkeypatch.setattr(check_cache, "_DIRECTORY", [])  # no markers on disk: this process's verdicts only
    return seen


def test_a_fixture_that_passed_for_extraction_is_not_checked_again_for_the_reconcile_cases_that_pin_it(
    checked: list[str], tmp_path: Path
) -> None:
    extraction = ExtractionTask()
    extraction.check_case(extraction.load_case(REPO / "fixtures" / "extraction" / FIXTURE))
    assert checked == [FIXTURE]
    reconcile = ReconcileTask()
    for name in PINS_IT:
        shutil.copy(REPO / "fixtures" / "reconcile" / name, tmp_path / name)
    first, other = (reconcile.load_case(tmp_path / name) for name in PINS_IT)
    reconcile.check_case(first)
    assert checked == [FIXTURE]  # the pinned Bundle's bytes passed: one verdict for both tasks
    reconcile.check_case(other)  # pins another patient's fixture: checked once, then remembered
    reconcile.check_case(other)
    assert checked == [FIXTURE, "Delores12_Cronin387_0d154268-d762-381c-fce8-bb53a10c5c57.json"]


def test_a_twin_reuses_its_files_verdict_and_never_records_one_for_the_file(checked: list[str]) -> None:
    task = ExtractionTask()
    case = task.load_case(REPO / "fixtures" / "extraction" / FIXTURE)
    twin = next(t for kind in task.perturbations if (t := task.counterfactual(case, kind)) is not None)
    task.check_case(twin)
    task.check_case(twin)
    assert checked == [FIXTURE, FIXTURE]  # the twin's changed Bundle was checked, and nothing was recorded
    task.check_case(case)
    task.check_case(twin)
    assert checked == [FIXTURE] * 3  # the file's own check; its twins then reuse that verdict


def test_a_reconcile_twin_reuses_its_pinned_bundles_verdict_and_never_records_one(
    checked: list[str], tmp_path: Path
) -> None:
    task = ReconcileTask()
    name = PINS_IT[0]
    shutil.copy(REPO / "fixtures" / "reconcile" / name, tmp_path / name)
    case = task.load_case(tmp_path / name)
    twin = next(t for kind in task.perturbations if (t := task.counterfactual(case, kind)) is not None)
    assert twin.data["bundle"] != case.data["bundle"] and twin.meta["bundle_sha256"] == case.meta["bundle_sha256"]
    task.check_case(twin)
    task.check_case(twin)
    assert checked == [FIXTURE, FIXTURE]  # the twin's changed Bundle was checked, and nothing was recorded
    task.check_case(case)
    task.check_case(twin)
    assert checked == [FIXTURE] * 3  # the pinned file's own check; its twins then reuse that verdict
