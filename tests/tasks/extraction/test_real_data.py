"""Ground truth, fixtures and the baseline agents on the real Synthea bundles."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from groundeval.agent_io import AgentRequest
from groundeval.agents.base import Agent
from groundeval.agents.baselines.extraction import BaselineExtractionAgent, NaiveExtractionAgent
from groundeval.clinical.medication_list import TruthMedication, active_medications
from groundeval.execution.call import call_agent
from groundeval.scoring import Parsed
from groundeval.tasks.extraction.task import ExtractionTask
from tests._paths import REPO

ROOT = REPO
TASK = ExtractionTask()
RawBundle = tuple[Path, bytes, dict[str, Any]]
"""A raw bundle as ``read_bundles`` yields it (the ``raw_bundles`` fixture, tests/tasks/conftest.py)."""


def _fixtures(directory: Path) -> list[Path]:
    """Every packaged case: the real patients and the variants."""
    return TASK.case_files(directory)


def _real(directory: Path) -> list[Path]:
    """The trimmed real patients only (scripts/make_fixtures.py), without the variants."""
    return [p for p in TASK.case_files(directory) if not p.name.startswith("variant-")]


@pytest.fixture(scope="module")
def raw_truths(raw_bundles: dict[Path, RawBundle]) -> dict[str, list[TruthMedication]]:
    """Raw bundle file name -> the truth derived from the raw bundle, each derived once."""
    return {path.name: active_medications(bundle, path.name) for path, _, bundle in raw_bundles.values()}


def test_truth_from_every_trimmed_fixture_equals_truth_from_its_raw_bundle(
    raw_truths: dict[str, list[TruthMedication]], extraction_fixtures: Path
) -> None:
    assert len(raw_truths) >= 12
    for name, expected in raw_truths.items():
        fixture = extraction_fixtures / name
        assert fixture.is_file(), f"no fixture for {name}; run scripts/make_fixtures.py"
        assert active_medications(json.loads(fixture.read_bytes()), fixture.name) == expected, name


def test_truth_counts_match_the_independent_inventory(
    synthea_dir: Path, raw_truths: dict[str, list[TruthMedication]]
) -> None:
    """INVENTORY.txt's actRx column (distinct active RxNorm codes) was computed by another script."""
    inventory = (synthea_dir / "INVENTORY.txt").read_text()
    names = re.findall(r"^  (\S+\.json)$", inventory, re.M)
    rows = [line.split() for line in inventory.splitlines()[1:] if line.strip() and ".." in line.split()[0]]
    assert len(names) == len(rows) >= 12
    for name, row in zip(names, rows, strict=True):
        act_rx = int(row[10])
        meds = raw_truths[name]
        assert sum(len(m["codes"]) for m in meds) == act_rx, name


@pytest.fixture(scope="module")
def make_fixtures(fixture_script: Callable[[str], ModuleType]) -> ModuleType:
    """``scripts/make_fixtures.py`` as a module, reading the session's raw bundles."""
    return fixture_script("make_fixtures")


def test_make_fixtures_is_deterministic_and_committed_fixtures_are_current(
    make_fixtures: ModuleType, synthea_dir: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert make_fixtures.main(["--source", str(synthea_dir), "--check"]) == 0, capsys.readouterr().err
    assert "checked 25 fixtures and MANIFEST.json" in capsys.readouterr().out


def test_manifest_records_hashes_sizes_and_counts(extraction_fixtures: Path) -> None:
    manifest = json.loads((extraction_fixtures / "MANIFEST.json").read_text())
    rows = {r["fixture"]: r for r in manifest["fixtures"]}
    assert set(rows) == {p.name for p in _real(extraction_fixtures)}
    for name, row in rows.items():
        data = (extraction_fixtures / name).read_bytes()
        assert row["fixture_sha256"] == hashlib.sha256(data).hexdigest()
        assert row["fixture_bytes"] == len(data) < row["source_bytes"]
        assert row["active_medications"] == len(active_medications(json.loads(data), name))


def test_fixture_selection_covers_the_required_situations(extraction_fixtures: Path) -> None:
    counts, deceased, references, overlap, generations = [], 0, 0, 0, set()
    for path in _real(extraction_fixtures):
        case = TASK.load_case(path)
        truth = TASK.truth(case)
        counts.append(len(truth["medications"]))
        deceased += bool(case.meta["deceased"])
        requests = [e["resource"] for e in case.data["entry"] if e["resource"]["resourceType"] == "MedicationRequest"]
        references += any("medicationReference" in r for r in requests)
        active = {c for m in truth["medications"] for c in m["codes"]}
        overlap += bool(active & set(truth["inactive_codes"]))
        patient = next(e["resource"] for e in case.data["entry"] if e["resource"]["resourceType"] == "Patient")
        generations.add("v2.4" in patient["text"]["div"])
    assert len(counts) >= 12
    assert 0 in counts and max(counts) >= 13 and set(range(1, 4)) <= set(counts)
    assert deceased >= 1 and references >= 1 and overlap >= 1 and generations == {True, False}


def _answer(agent: Agent, path: Path) -> tuple[dict[str, Any], Parsed]:
    case = TASK.load_case(path)
    prompt = TASK.prompt(case)
    result = call_agent(agent, AgentRequest(case_id=case.case_id, task="extraction", prompt=prompt)).result
    return TASK.truth(case), TASK.parse(case, result.text)


def test_baseline_agent_is_perfect_on_every_real_fixture(extraction_fixtures: Path) -> None:
    agent = BaselineExtractionAgent()  # the variants: tests/tasks/extraction/test_variants.py
    for path in _real(extraction_fixtures):
        truth, parsed = _answer(agent, path)
        score = TASK.score(None, truth, parsed)  # type: ignore[arg-type]
        assert score.outcome == "passed", f"{path.name}: {score.message}"


def test_naive_agent_loses_precision_on_real_fixtures(extraction_fixtures: Path) -> None:
    agent = NaiveExtractionAgent()
    precisions = []
    for path in _real(extraction_fixtures):
        truth, parsed = _answer(agent, path)
        score = TASK.score(None, truth, parsed)  # type: ignore[arg-type]
        assert score.metrics["fn"] == 0, path.name  # it lists everything, so it misses nothing
        precisions.append(score.metrics["precision"])
    assert sum(isinstance(p, float) and p < 1.0 for p in precisions) >= 5
