"""Derive the labs task's cases from raw Synthea bundles: one per patient, plus named variants.

Usage::

    uv run python scripts/make_labs.py [--source DIR] [--out DIR] [--check]

Reads every ``*.json`` Bundle in ``--source`` (default ``../shared/data/synthea``) and writes to
``--out`` (default ``fixtures/labs``):

* ``<same file name>``: the Patient and every Observation whose code carries a LOINC code of the
  threshold table (``fixtures/terminology/lab_thresholds.json``), each resource unchanged, in
  source order. Everything else is dropped (the task asks about nothing else). Synthea writes no
  ``referenceRange``, no ``interpretation`` and only ``final`` Observations.
* ``variant-<name>--<case id>.json``: one real patient, trimmed the same way, with one named
  change that makes a truth rule decide the case (``VARIANTS``: a value on a threshold, a result in
  mmol/L, a later result that is ``entered-in-error`` or ``preliminary``, a ``cancelled`` latest
  result, two results on one date told apart by ``issued``, a blood pressure whose diastolic decides
  the stage, a result with its laboratory's ``referenceRange``, critical potassium and blood pressure,
  a test whose only result does not count, blood pressure as separate systolic and diastolic
  Observations, a panel with only a critical systolic, two results whose UTC offsets order them
  against their dates as written). Each variant declares what the truth of its test must
  be afterwards; the build stops if the truth code disagrees. New ids are UUIDv5 of the variant and
  the Observation id, so output is deterministic.
* ``MANIFEST.json``: per file, its source and SHA-256s, and per variant the rule, the changed
  Observations and the truth before and after for its test.

``--check`` writes nothing: it rebuilds everything in memory, compares byte for byte with the
committed files, lists stray files the script does not make, and exits 1 on any difference.
JSON is written with one-space indentation, UTF-8, and a final newline.
"""

from __future__ import annotations

import copy
import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fixture_files

from groundeval.clinical.lab_thresholds import default_thresholds
from groundeval.clinical.lab_truth import LOINC_SYSTEM, labs_truth, results_by_test
from groundeval.datasets import read_bundles

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "synthea"
DEFAULT_OUT = ROOT / "fixtures" / "labs"
MANIFEST = "MANIFEST.json"
NAMESPACE = uuid.UUID("0b6c1e7a-3f5d-4c2b-9a8e-6c6162730a01")  # fixed: ids never change between runs
RANGE_MEANING = "http://terminology.hl7.org/CodeSystem/referencerange-meaning"
JSON = dict[str, Any]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def render(bundle: JSON) -> bytes:
    return (json.dumps(bundle, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _table_codes() -> set[str]:
    return {t.loinc for t in default_thresholds().tests}


def trim(bundle: JSON) -> JSON:
    """A copy of the Bundle keeping the Patient and the Observations of the table's tests."""
    codes = _table_codes()

    def keep(resource: JSON) -> bool:
        if resource.get("resourceType") == "Patient":
            return True
        if resource.get("resourceType") != "Observation":
            return False
        return any(c.get("system") == LOINC_SYSTEM and c.get("code") in codes
                   for c in (resource.get("code") or {}).get("coding") or [])

    out = dict(bundle)
    out["entry"] = [e for e in bundle.get("entry", []) if keep(e.get("resource", {}))]
    return out


def case_id(stem: str) -> str:
    """The file stem with a trailing UUID cut to 8 characters (as the task names its cases)."""
    from groundeval.datasets import case_id_from_stem

    return case_id_from_stem(stem)


# -- variants ------------------------------------------------------------------------------------


def _latest(bundle: JSON, loinc: str) -> JSON:
    """The latest counted Observation of a test (the truth's own ordering), as the entry dict."""
    counted, _ = results_by_test(bundle, default_thresholds(), "variant")[loinc]
    if not counted:
        raise SystemExit(f"no counted {loinc} result to change")
    ident = counted[-1].observation.split("/", 1)[1]
    return next(e for e in bundle["entry"] if e["resource"].get("id") == ident)


def _clone(bundle: JSON, entry: JSON, name: str, *, before: bool = False) -> JSON:
    """A copy of ``entry`` with a new id, inserted after it (or before it)."""
    new = copy.deepcopy(entry)
    ident = str(uuid.uuid5(NAMESPACE, f"{name}:{entry['resource']['id']}"))
    new["fullUrl"] = f"urn:uuid:{ident}"
    new["resource"]["id"] = ident
    at = bundle["entry"].index(entry)
    bundle["entry"].insert(at if before else at + 1, new)
    return new


def _later(entry: JSON, days: int) -> None:
    """Move an Observation ``days`` days later (effectiveDateTime and issued keep their times)."""
    from datetime import datetime, timedelta

    res = entry["resource"]
    for key in ("effectiveDateTime", "issued"):
        moment = datetime.fromisoformat(res[key])
        res[key] = (moment + timedelta(days=days)).isoformat(timespec="milliseconds" if key == "issued" else "seconds")


def _set_value(entry: JSON, value: float, unit: str | None = None) -> None:
    quantity = entry["resource"]["valueQuantity"]
    quantity["value"] = value
    if unit is not None:
        quantity["unit"] = quantity["code"] = unit


def _set_bp(entry: JSON, systolic: int, diastolic: int) -> None:
    for comp in entry["resource"]["component"]:
        code = comp["code"]["coding"][0]["code"]
        comp["valueQuantity"]["value"] = {"8480-6": systolic, "8462-4": diastolic}[code]


def _on_threshold(bundle: JSON, name: str) -> list[str]:
    entry = _latest(bundle, "4548-4")
    _set_value(entry, 6.5)
    return [entry["resource"]["id"]]


def _glucose_mmol(bundle: JSON, name: str) -> list[str]:
    entry = _latest(bundle, "2339-0")
    _set_value(entry, 7.0, "mmol/L")
    return [entry["resource"]["id"]]


def _later_not_counted(loinc: str, status: str, value: float) -> Callable[[JSON, str], list[str]]:
    def apply(bundle: JSON, name: str) -> list[str]:
        entry = _latest(bundle, loinc)
        new = _clone(bundle, entry, name)
        _later(new, 3)
        new["resource"]["status"] = status
        _set_value(new, value)
        return [new["resource"]["id"]]
    return apply


def _status(loinc: str, status: str) -> Callable[[JSON, str], list[str]]:
    def apply(bundle: JSON, name: str) -> list[str]:
        entry = _latest(bundle, loinc)
        entry["resource"]["status"] = status
        return [entry["resource"]["id"]]
    return apply


def _same_date(bundle: JSON, name: str) -> list[str]:
    """Two potassium results on the latest date, date only; the one issued later sits first in the Bundle."""
    from datetime import datetime, timedelta

    entry = _latest(bundle, "6298-4")
    new = _clone(bundle, entry, name, before=True)
    day = entry["resource"]["effectiveDateTime"][:10]
    for item in (entry, new):
        item["resource"]["effectiveDateTime"] = day
    issued = datetime.fromisoformat(entry["resource"]["issued"]) + timedelta(hours=2)
    new["resource"]["issued"] = issued.isoformat(timespec="milliseconds")
    _set_value(new, 5.7)
    return [entry["resource"]["id"], new["resource"]["id"]]


def _bp(systolic: int, diastolic: int) -> Callable[[JSON, str], list[str]]:
    def apply(bundle: JSON, name: str) -> list[str]:
        entry = _latest(bundle, "85354-9")
        _set_bp(entry, systolic, diastolic)
        return [entry["resource"]["id"]]
    return apply


def _reference_range(bundle: JSON, name: str) -> list[str]:
    entry = _latest(bundle, "6298-4")
    _set_value(entry, 5.3)
    bound = {"system": "http://unitsofmeasure.org", "code": "mmol/L", "unit": "mmol/L"}
    entry["resource"]["referenceRange"] = [{
        "low": {"value": 3.5, **bound}, "high": {"value": 5.1, **bound},
        "type": {"coding": [{"system": RANGE_MEANING, "code": "normal", "display": "Normal Range"}]},
        "text": "3.5-5.1 mmol/L",
    }]
    return [entry["resource"]["id"]]


def _potassium(value: float) -> Callable[[JSON, str], list[str]]:
    def apply(bundle: JSON, name: str) -> list[str]:
        entry = _latest(bundle, "6298-4")
        _set_value(entry, value)
        return [entry["resource"]["id"]]
    return apply


def _moved(entry: JSON, days: int, clock: str) -> str:
    """``entry``'s effective date moved ``days`` later, at ``clock`` (``"T23:30:00-05:00"``)."""
    from datetime import date, timedelta

    day = date.fromisoformat(entry["resource"]["effectiveDateTime"][:10]) + timedelta(days=days)
    return f"{day.isoformat()}{clock}"


def _separate_bp(systolic: int, diastolic: int) -> Callable[[JSON, str], list[str]]:
    """Three days after the latest panel, the blood pressure as two Observations (8480-6, 8462-4), no panel."""
    def apply(bundle: JSON, name: str) -> list[str]:
        panel = _latest(bundle, "85354-9")
        made = []
        for code, value in (("8462-4", diastolic), ("8480-6", systolic)):  # each inserted right after the panel
            comp = next(c for c in panel["resource"]["component"] if c["code"]["coding"][0]["code"] == code)
            new = _clone(bundle, panel, f"{name}:{code}")
            res = new["resource"]
            del res["component"]
            res["code"] = copy.deepcopy(comp["code"])
            res["valueQuantity"] = {**comp["valueQuantity"], "value": value}
            _later(new, 3)
            made.append(res["id"])
        return made[::-1]
    return apply


def _systolic_only(systolic: int) -> Callable[[JSON, str], list[str]]:
    """Three days after the latest panel, a panel with its systolic component only."""
    def apply(bundle: JSON, name: str) -> list[str]:
        new = _clone(bundle, _latest(bundle, "85354-9"), name)
        _later(new, 3)
        res = new["resource"]
        res["component"] = [c for c in res["component"] if c["code"]["coding"][0]["code"] == "8480-6"]
        res["component"][0]["valueQuantity"]["value"] = systolic
        return [res["id"]]
    return apply


def _by_offset(bundle: JSON, name: str) -> list[str]:
    """Two later potassium results: 01:00 UTC on day 8 (4.0), and 23:30-05:00 on day 7 (5.8), which is
    04:30 UTC on day 8: the later instant, though its date as written is the earlier."""
    entry = _latest(bundle, "6298-4")
    night = _clone(bundle, entry, f"{name}:utc")
    evening = _clone(bundle, entry, f"{name}:offset")
    night["resource"]["effectiveDateTime"] = _moved(entry, 8, "T01:00:00+00:00")
    evening["resource"]["effectiveDateTime"] = _moved(entry, 7, "T23:30:00-05:00")
    for item, value in ((night, 4.0), (evening, 5.8)):
        item["resource"]["issued"] = item["resource"]["effectiveDateTime"]
        _set_value(item, value)
    return [night["resource"]["id"], evening["resource"]["id"]]


@dataclass(frozen=True)
class Variant:
    """One named change to one real patient, and what the truth of its test must be afterwards."""

    name: str
    source: str  # file-name prefix of the raw Synthea bundle
    loinc: str  # the test the change is about
    apply: Callable[[JSON, str], list[str]]
    expect: JSON  # truth fields of that test after the change
    rule: str
    same_truth: bool = False  # the change must leave the test's truth as it was (a result that does not count)


VARIANTS: tuple[Variant, ...] = (
    Variant("on-threshold-hba1c", "Demarcus108", "4548-4", _on_threshold,
            {"value_in_unit": 6.5, "category": "diabetes"},
            "a value exactly on a threshold falls in the higher category (bands are [low, high))"),
    Variant("unit-glucose-mmol", "Delores12", "2339-0", _glucose_mmol,
            {"value": 7.0, "recorded_unit": "mmol/L", "value_in_unit": 126.1092, "category": "diabetes"},
            "a value in another unit is converted through UCUM (mmol/L glucose through its molar mass)"),
    Variant("status-entered-in-error", "Travis723", "6298-4", _later_not_counted("6298-4", "entered-in-error", 6.9),
            {"value": 4.9, "critical": False}, "a later entered-in-error result does not count", same_truth=True),
    Variant("status-preliminary", "Moises22", "4548-4", _later_not_counted("4548-4", "preliminary", 7.4),
            {"value": 6.27, "category": "prediabetes"}, "a later preliminary result does not count", same_truth=True),
    Variant("status-cancelled", "Janene3", "18262-6", _status("18262-6", "cancelled"),
            {"date": "2021-01-29"}, "a cancelled latest result does not count: the one before it is the latest"),
    Variant("same-date", "Emory494", "6298-4", _same_date,
            {"value": 5.7, "category": "mild_hyperkalemia", "direction": "up", "date": "2024-11-10"},
            "two results on the same date without a time: the one issued later is the latest"),
    Variant("bp-diastolic-decides", "Gordon377", "85354-9", _bp(118, 92),
            {"category": "stage_2", "value": {"8480-6": 118.0, "8462-4": 92.0}},
            "blood pressure is the higher of its systolic and diastolic categories"),
    Variant("reference-range", "Jayson808", "6298-4", _reference_range,
            {"value": 5.3, "category": "high", "category_basis": "reference_range"},
            "the laboratory's own referenceRange takes precedence over the guideline table"),
    Variant("critical-potassium", "Theodore876", "6298-4", _potassium(6.8),
            {"category": "severe_hyperkalemia", "critical": True}, "potassium at or above 6.5 mmol/L is critical"),
    Variant("critical-bp", "Herschel574", "85354-9", _bp(186, 124),
            {"category": "stage_2", "critical": True}, "blood pressure above 180/120 mm[Hg] is critical"),
    Variant("bp-separate-observations", "Delores12", "85354-9", _separate_bp(142, 88),
            {"value": {"8480-6": 142, "8462-4": 88}, "category": "stage_2"},
            "blood pressure stored as separate systolic and diastolic Observations is one reading"),
    Variant("critical-bp-systolic-only", "Demarcus108", "85354-9", _systolic_only(186),
            {"value": {"8480-6": 186}, "category": "stage_2", "critical": True, "direction": {"8480-6": "up"}},
            "a systolic above 180 alone decides the category and the crisis (ACC/AHA: SBP > 180 and/or DBP > 120)"),
    Variant("latest-by-offset", "Bobbie849", "6298-4", _by_offset,
            {"value": 5.8, "direction": "up", "category": "mild_hyperkalemia"},
            "results are ordered as instants with their UTC offsets: 23:30-05:00 is after 01:00 UTC the next day"),
    Variant("only-result-excluded", "Liz_Conn", "18262-6", _status("18262-6", "entered-in-error"),
            {"result": False, "category": "no_result", "value": None},
            "a test whose only result does not count has no result"),
)


def _summary(truth: JSON, loinc: str) -> JSON:
    entry = next(e for e in truth["tests"] if e["loinc"] == loinc)
    keys = ("result", "value", "recorded_unit", "value_in_unit", "date", "category", "category_basis", "direction",
            "critical")
    return {k: entry.get(k) for k in keys}


def _verify(variant: Variant, before: JSON, after: JSON) -> None:
    wrong = {k: (after.get(k), v) for k, v in variant.expect.items() if after.get(k) != v}
    if wrong:
        raise SystemExit(f"variant {variant.name}: truth of {variant.loinc} is not as declared "
                         f"(got, declared): {wrong}")
    if (before == after) != variant.same_truth:
        raise SystemExit(f"variant {variant.name}: the change {'changes' if variant.same_truth else 'leaves'} the "
                         f"truth of {variant.loinc} {'although it should not' if variant.same_truth else 'as it was'}")


def build(source: Path) -> dict[str, bytes]:
    """Return file name -> bytes for every case file and the manifest."""
    files = sorted(source.glob("*.json"))
    if not files:
        raise SystemExit(f"no *.json bundles in {source}; pass --source DIR")
    table = default_thresholds()
    raws = {p.name: (p, raw, bundle) for p, raw, bundle in read_bundles(files)}
    outputs: dict[str, bytes] = {}
    fixtures, variants = [], []
    for name, (path, raw, bundle) in raws.items():
        data = render(trim(bundle))
        outputs[name] = data
        truth = labs_truth(json.loads(data), table, name)
        fixtures.append({
            "fixture": name, "case_id": case_id(path.stem), "source": name, "source_sha256": sha256(raw),
            "fixture_sha256": sha256(data), "source_bytes": len(raw), "fixture_bytes": len(data),
            "observations": sum(e["resource"]["resourceType"] == "Observation" for e in json.loads(data)["entry"]),
            "tests_with_result": sum(e["result"] for e in truth["tests"]),
        })
    for variant in VARIANTS:
        matches = [n for n in raws if n.startswith(variant.source + "_")]
        if len(matches) != 1:
            raise SystemExit(f"variant {variant.name}: no single source {variant.source}_*.json in {source}")
        path, raw, bundle = raws[matches[0]]
        base = trim(bundle)
        changed = copy.deepcopy(base)
        ids = variant.apply(changed, variant.name)
        before = _summary(labs_truth(base, table, path.name), variant.loinc)
        after = _summary(labs_truth(changed, table, variant.name), variant.loinc)
        _verify(variant, before, after)
        file = f"variant-{variant.name}--{case_id(path.stem)}.json"
        data = render(changed)
        outputs[file] = data
        variants.append({
            "fixture": file, "case_id": case_id(Path(file).stem), "variant": variant.name, "rule": variant.rule,
            "loinc": variant.loinc, "observations_changed": ids, "source": path.name, "source_sha256": sha256(raw),
            "fixture_sha256": sha256(data), "fixture_bytes": len(data), "truth_before": before, "truth_after": after,
        })
    manifest = {
        "generator": "scripts/make_labs.py",
        "thresholds": table.facts,
        "kept": "Patient, and Observations whose code has a LOINC code of the threshold table",
        "fixtures": fixtures,
        "variants": variants,
    }
    outputs[MANIFEST] = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return outputs


def main(argv: list[str] | None = None) -> int:
    """Write (or, with --check, verify) the cases; returns the exit status."""
    return fixture_files.main(
        argv, doc=__doc__, default_source=DEFAULT_SOURCE, default_out=DEFAULT_OUT, build=build, pattern="*.json",
        what=lambda n: f"{n} case files ({len(VARIANTS)} variants) and {MANIFEST}",
        against=" (bytes, and each variant's declared truth)",
    )


if __name__ == "__main__":
    raise SystemExit(main())
