"""The packaged labs cases: derived by scripts/make_labs.py (``--check``), every truth rule decides one."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from groundeval.tasks.labs import LabsTask
from tests._paths import REPO

ROOT = REPO
CASES = ROOT / "fixtures" / "labs"
DOCS = ROOT / "docs" / "tasks" / "labs.md"
TABLE: dict[str, Any] = json.loads((ROOT / "fixtures" / "terminology" / "lab_thresholds.json").read_text())
TASK = LabsTask()
JSON = dict[str, Any]


@pytest.fixture(scope="module")
def make_labs(built_script: Callable[[str], ModuleType]) -> ModuleType:
    return built_script("make_labs")


def test_check_passes_and_reports_a_stale_and_a_stray_file(
    make_labs: ModuleType, synthea_dir: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert make_labs.main(["--source", str(synthea_dir), "--check"]) == 0
    assert "checked 39 case files (14 variants) and MANIFEST.json" in capsys.readouterr().out
    assert make_labs.main(["--source", str(synthea_dir), "--out", str(tmp_path)]) == 0
    first = sorted(tmp_path.glob("variant-*.json"))[0]
    first.write_text(first.read_text().replace('"final"', '"preliminary"', 1))
    (tmp_path / "hand-made.json").write_text("{}")
    capsys.readouterr()
    assert make_labs.main(["--source", str(synthea_dir), "--out", str(tmp_path), "--check"]) == 1
    out, err = capsys.readouterr()
    assert f"stale or missing: {first}" in err and "not made by this script (delete it): " in err
    assert "1 stale, 1 stray" in out


def _manifest() -> JSON:
    data: JSON = json.loads((CASES / "MANIFEST.json").read_text())
    return data


def test_every_case_file_is_in_the_manifest_and_each_variant_keeps_its_declared_truth() -> None:
    manifest = _manifest()
    rows = {r["fixture"]: r for r in [*manifest["fixtures"], *manifest["variants"]]}
    assert set(rows) == {p.name for p in TASK.case_files(CASES)} and len(manifest["fixtures"]) >= 20
    for variant in manifest["variants"]:
        case = TASK.load_case(CASES / variant["fixture"])
        assert case.case_id == variant["case_id"] and case.sha256 == variant["fixture_sha256"]
        entry = next(e for e in TASK.truth(case)["tests"] if e["loinc"] == variant["loinc"])
        assert {k: entry.get(k) for k in variant["truth_after"]} == variant["truth_after"], variant["variant"]


# -- every rule decides a packaged case: an independent reading of the raw JSON and the table -------------

COUNTED = {"final", "amended", "corrected"}


def _observations(bundle: JSON, code: str) -> Iterator[tuple[int, JSON]]:
    for index, entry in enumerate(bundle["entry"]):
        res = entry["resource"]
        if res["resourceType"] == "Observation" and any(c["code"] == code for c in res["code"]["coding"]):
            yield index, res


def _values(res: JSON, test: JSON) -> dict[str, tuple[float, str]]:
    if "components" not in test:
        q = res.get("valueQuantity") or {}
        return {test["loinc"]: (q["value"], q["code"])} if "value" in q else {}
    return {c["code"]["coding"][0]["code"]: (c["valueQuantity"]["value"], c["valueQuantity"]["code"])
            for c in res.get("component", [])}


def _band(bands: list[JSON], value: float) -> str:
    return next(str(b["name"]) for b in bands if (b.get("low") is None or value >= b["low"])
                and (b.get("high") is None or value < b["high"]))


def _instant(text: str) -> tuple[float, int]:
    """A dateTime with its offset as UTC seconds; a date alone is the start of its day in UTC, before a time."""
    if "T" not in text:
        return datetime.fromisoformat((text + "-01-01")[:10]).replace(tzinfo=UTC).timestamp(), 0
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp(), 1


def _critical(part: JSON, v: float) -> bool:
    lim = part.get("critical") or {}
    return v < lim.get("below", float("-inf")) or v > lim.get("above", float("inf")) or v >= lim.get(
        "at_or_above", float("inf"))


def _readings(bundle: JSON, test: JSON) -> tuple[list[tuple[tuple[Any, ...], JSON, dict[str, Any]]], list[JSON]]:
    """Counted readings, oldest first, as (key, first resource, {values, separate}); and every Observation of the test."""
    parts = test.get("components") or [test]
    found = list(_observations(bundle, test["loinc"]))
    readings = [((*_instant(r["effectiveDateTime"]), r.get("issued", ""), i), r,
                 {"values": _values(r, test), "separate": False})
                for i, r in found if r["status"] in COUNTED and _values(r, test)]
    alone: dict[tuple[float, int], list[tuple[int, JSON, str]]] = {}
    for p in parts if "components" in test else []:
        for i, r in _observations(bundle, p["loinc"]):
            found.append((i, r))
            if r["status"] in COUNTED and "value" in (r.get("valueQuantity") or {}):
                alone.setdefault(_instant(r["effectiveDateTime"]), []).append((i, r, p["loinc"]))
    for when, group in alone.items():
        values = {code: (r["valueQuantity"]["value"], r["valueQuantity"]["code"]) for _, r, code in group}
        readings.append(((*when, "", min(i for i, _, _ in group)), group[0][1], {"values": values, "separate": True}))
    complete = [r for r in readings if len(r[2]["values"]) == len(parts) or any(
        _critical(p, r[2]["values"][p["loinc"]][0]) for p in parts if p["loinc"] in r[2]["values"])]
    return sorted(complete, key=lambda r: r[0]), [r for _, r in found]


def _rule_hits(bundle: JSON) -> set[str]:
    patient = next(e["resource"] for e in bundle["entry"] if e["resource"]["resourceType"] == "Patient")
    born = date.fromisoformat(patient["birthDate"])
    hits: set[str] = set()
    for test in TABLE["tests"]:
        parts = test.get("components") or [test]
        counted, found = _readings(bundle, test)
        if not counted:
            hits.add("no_result")
            continue
        (at, _, _, _), latest, reading = counted[-1]
        day = latest["effectiveDateTime"][:10]
        for res in found:  # a result not counted that would otherwise be the latest
            if res["status"] not in COUNTED and _instant(res["effectiveDateTime"])[0] >= at:
                hits.add(f"status {res['status']}")
        if len(counted) > 1 and counted[-2][1]["effectiveDateTime"][:10] == day and "T" not in str(
                latest["effectiveDateTime"]):
            hits.add("same date, issued")
        if len(counted) > 1 and counted[-2][1]["effectiveDateTime"][:10] > day:
            hits.add("instants with offsets")
        if reading["separate"]:
            hits.add("separate components")
        if len(reading["values"]) < len(parts):
            hits.add("one component decides")
        values = reading["values"]
        units = {u for _, u in values.values()}
        if units != {test["unit"]}:
            hits.add("UCUM conversion")
            continue
        on = date.fromisoformat(day)
        if on.year - born.year - ((on.month, on.day) < (born.month, born.day)) < TABLE["population"]["min_age_years"]:
            hits.add("not_applicable")
            continue
        cats = {p["loinc"]: _band(p["categories"], values[p["loinc"]][0]) for p in parts if p["loinc"] in values}
        if any(values[p["loinc"]][0] in {b.get("low") for b in p["categories"]} for p in parts if p["loinc"] in values):
            hits.add("on a threshold")
        if "components" in test:
            hits.add("component")
            if len(set(cats.values())) > 1:
                hits.add("higher category")
        if any(_critical(p, values[p["loinc"]][0]) for p in parts if p["loinc"] in values):
            hits.add("critical")
        rng = (latest.get("referenceRange") or [{}])[0]
        if rng and "components" not in test:
            v = values[test["loinc"]][0]
            lab = "low" if v < rng["low"]["value"] else "high" if v > rng["high"]["value"] else "normal"
            if lab != cats[test["loinc"]]:
                hits.add("referenceRange")
        if len(counted) > 1:
            prev = counted[-2][2]["values"]
            for p in parts:
                if p["loinc"] in values and p["loinc"] in prev:
                    change = round(values[p["loinc"]][0] - prev[p["loinc"]][0], 9)
                    tol = test["tolerance"]
                    hits.add("direction " + ("up" if change >= tol else "down" if change <= -tol else "stable"))
        else:
            hits.add("direction null")
    return hits


RULES = {
    "status entered-in-error": "entered-in-error", "status preliminary": "preliminary",
    "status cancelled": "cancelled", "same date, issued": "issued", "UCUM conversion": "UCUM",
    "on a threshold": "on a threshold", "component": "8462-4", "higher category": "higher",
    "referenceRange": "referenceRange", "no_result": "no_result", "not_applicable": "not_applicable",
    "critical": "critical", "direction up": "up", "direction down": "down", "direction stable": "stable",
    "direction null": "null", "separate components": "separate 8480-6 and 8462-4 Observations",
    "one component decides": "a diastolic above 120 alone",
    "instants with offsets": "23:30-05:00",
}
"""Each rule and the word docs/tasks/labs.md states it with."""


def test_every_truth_rule_the_docs_state_decides_at_least_one_packaged_case() -> None:
    section = DOCS.read_text(encoding="utf-8").split("## Truth rules", 1)[1].split("\n## ", 1)[0]
    for rule, word in RULES.items():
        assert word in section, f"docs/tasks/labs.md's truth rules no longer state {word!r} ({rule})"
    seen: dict[str, list[str]] = {}
    for path in TASK.case_files(CASES):
        for rule in _rule_hits(json.loads(path.read_bytes())):
            seen.setdefault(rule, []).append(path.name)
    missing = sorted(set(RULES) - set(seen))
    assert not missing, f"rules no packaged case exercises: {missing}"


def test_the_docs_page_cites_every_row_of_the_threshold_table() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for test in TABLE["tests"]:
        assert test["loinc"] in text and test["source"]["edition"] in text, test["loinc"]
        assert test["source"]["citation"] in text, test["source"]["citation"]
    for source in ("valueset-observation-status.html", "EP28-A3c", "493.1253"):
        assert source in text
