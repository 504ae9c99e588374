"""The labs threshold table: the packaged one loads, a broken one is refused at load, naming the row."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from groundeval.clinical.lab_thresholds import THRESHOLDS_FILE, default_thresholds, load_thresholds
from groundeval.errors import DatasetError
from groundeval.terminology.ucum import convert
from tests._paths import REPO

TABLE = REPO / "fixtures" / "terminology" / THRESHOLDS_FILE
RAW: dict[str, Any] = json.loads(TABLE.read_text(encoding="utf-8"))


def test_the_packaged_table_loads_with_a_cited_source_for_every_row() -> None:
    table = default_thresholds()
    assert [t.loinc for t in table.tests] == ["4548-4", "2339-0", "18262-6", "39156-5", "85354-9", "6298-4", "33914-3"]
    for row in table.tests:
        assert all(row.source[k].strip() for k in ("cite_as", "guideline", "edition", "section", "citation"))
        for measure in row.measures:
            assert measure.bands[0].low is None and measure.bands[-1].high is None
    assert table.counted_statuses == {"final", "amended", "corrected"}
    assert table.all_statuses == {"registered", "preliminary", "final", "amended", "corrected", "cancelled",
                                  "entered-in-error", "unknown"}
    assert table.facts == {"file": THRESHOLDS_FILE, "sha256": table.sha256, "version": RAW["table_version"]}


@pytest.mark.parametrize(("loinc", "value", "category"), [
    ("4548-4", 5.69, "normal"), ("4548-4", 5.7, "prediabetes"), ("4548-4", 6.49, "prediabetes"),
    ("4548-4", 6.5, "diabetes"), ("2339-0", 126, "diabetes"), ("18262-6", 190, "very_high"),
    ("39156-5", 18.49, "underweight"), ("39156-5", 30, "obese_class_1"), ("6298-4", 5.5, "mild_hyperkalemia"),
    ("6298-4", 2.49, "severe_hypokalemia"), ("33914-3", 60, "G2"), ("33914-3", 59.9, "G3a"),
])
def test_a_value_on_a_threshold_belongs_to_the_higher_band(loinc: str, value: float, category: str) -> None:
    (measure,) = default_thresholds().test(loinc).measures
    assert measure.category(value) == category


def test_blood_pressure_takes_the_higher_component_category_and_crisis_bounds_are_exclusive() -> None:
    row = default_thresholds().test("85354-9")
    systolic, diastolic = row.measures
    assert row.combine([systolic.category(128), diastolic.category(78)]) == "elevated"
    assert row.combine([systolic.category(118), diastolic.category(80)]) == "stage_1"
    assert systolic.critical is not None and diastolic.critical is not None
    assert not systolic.critical.hit(180) and systolic.critical.hit(181) and diastolic.critical.hit(121)
    assert row.is_panel and not default_thresholds().test("6298-4").is_panel


def test_units_convert_through_ucum_and_only_the_accepted_ones() -> None:
    glucose, a1c, egfr = (default_thresholds().test(c) for c in ("2339-0", "4548-4", "33914-3"))
    assert glucose.to_unit(7.0, "mmol/L") == pytest.approx(126.1092)
    assert egfr.to_unit(87.0, "mL/min") == 87.0  # a UCUM annotation is unity
    assert a1c.to_unit(48.0, "mmol/mol") is None  # UCUM alone would say 4.8 %: not accepted for 4548-4
    assert convert(48.0, "mmol/mol", "%") == pytest.approx(4.8)
    assert glucose.to_unit(7.0, "mmol/l") is None and convert(1.0, "mmHg", "mm[Hg]") is None  # UCUM is case-sensitive
    assert convert(126.0, "mg/dL", "mmol/L") is None  # mass vs substance needs a molar mass
    assert convert(37.0, "Cel", "[degF]") == pytest.approx(98.6)


def _mutate(fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    data = copy.deepcopy(RAW)
    fn(data)
    return data


def _band(test: int, band: int, **values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["tests"][test]["categories"][band].update(values)


BROKEN: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("gap", _band(0, 1, low=5.8), r"tests\[0\] \(4548-4\): 'normal' ends at 5.7 and 'prediabetes' starts at 5.8: "
     "they leave a gap"),
    ("overlap", _band(0, 2, low=6.4), "'prediabetes' ends at 6.5 and 'diabetes' starts at 6.4: they overlap"),
    ("unordered", lambda d: d["tests"][0]["categories"].reverse(), "must cover every value"),
    ("not covering", lambda d: d["tests"][0]["categories"][0].update(low=0), "must cover every value"),
    ("empty band", lambda d: d["tests"][0]["categories"][1].update(low=6.5, high=6.5) or
     d["tests"][0]["categories"][0].update(high=6.5), "low 6.5 is not below high 6.5"),
    ("repeated name", _band(0, 2, name="normal"), "a category name repeats"),
    ("no section", lambda d: d["tests"][3]["source"].pop("section"), r"tests\[3\] \(39156-5\): 'source' must give"),
    ("not UCUM", lambda d: d["tests"][4].update(unit="mmHg", accepted_units=["mmHg"]), "unit 'mmHg' is not UCUM"),
    ("no molar mass", lambda d: d["tests"][1].pop("molar_mass_g_per_mol"),
     "accepted unit 'mmol/L' does not convert to 'mg/dL' through UCUM \\(a substance concentration needs"),
    ("no tolerance", lambda d: d["tests"][5].update(tolerance=0), "tolerance 0 must be a positive number"),
    ("critical without source", lambda d: d["tests"][5].pop("critical_source"), "needs its 'critical_source'"),
    ("component off the scale", lambda d: d["tests"][4]["components"][1]["categories"][1].update(name="crisis"),
     "must be names of category_order"),
    ("status twice", lambda d: d["statuses"]["not_counted"].append("final"), "must be disjoint"),
    ("repeated code", lambda d: d["tests"][6].update(loinc="4548-4"), "a LOINC code repeats"),
]


@pytest.mark.parametrize(("broken", "match"), [(b[1], b[2]) for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_a_broken_table_is_refused_at_load_naming_the_file_and_the_row(
    tmp_path: Path, broken: Callable[[dict[str, Any]], None], match: str
) -> None:
    path = tmp_path / "table.json"
    path.write_text(json.dumps(_mutate(broken)), encoding="utf-8")
    with pytest.raises(DatasetError, match=match) as info:
        load_thresholds(path)
    assert info.value.path == str(path)
