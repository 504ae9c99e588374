"""The site RxNorm catalog, its parser, ranked search, the max-dose table and UCUM helpers."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from groundeval.errors import DatasetError
from groundeval.terminology import (
    BRAND_INGREDIENTS,
    Catalog,
    Ingredient,
    find_max_dose,
    format_strength,
    load_max_daily_doses,
    parse_display,
    rxnorm_unit_to_ucum,
    to_mg,
    ucum_problem,
)
from tests._paths import REPO, load_script

ROOT = REPO
SCRIPT = ROOT / "scripts" / "make_terminology.py"
TERMINOLOGY = ROOT / "fixtures" / "terminology"
RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog.load()


def _script() -> ModuleType:
    return load_script(SCRIPT.stem)


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


# --- parsing -------------------------------------------------------------------------------


def test_every_catalog_entry_is_its_display_parsed(catalog: Catalog) -> None:
    assert len(catalog) >= 70
    for entry in catalog:
        parsed = parse_display(entry.display, entry.rxcui)
        assert parsed == dataclasses.replace(entry, aliases=()), entry.display


def test_every_catalog_entry_parse_agrees_with_its_display_text(catalog: Catalog) -> None:
    for entry in catalog:
        text = _norm(entry.display)
        assert entry.rxcui.isdigit(), entry
        assert entry.ingredients, entry.display
        brand_first = entry.display.split()[0] in BRAND_INGREDIENTS
        for ing in entry.ingredients:
            assert ing.name == ing.name.lower()
            if brand_first:
                assert ing.name in BRAND_INGREDIENTS[entry.display.split()[0]]
            else:
                assert ing.name in text, (ing, entry.display)
            if ing.strength is not None:
                assert ing.unit is not None
                assert format_strength(ing.strength) in text, (ing, entry.display)
                if not brand_first:
                    assert f"{format_strength(ing.strength)} {ing.unit.lower()}" in text
        for part in (entry.dose_form, entry.brand, entry.quantity, entry.qualifier):
            if part is not None:
                assert _norm(part) in text, (part, entry.display)
        if entry.release == "ER":
            assert "extended release" in text
        elif entry.release is not None:
            assert re.match(rf"^(\S+ )?(\S+ ML )?{entry.release.lower()} ", text), entry.display
        if not brand_first:
            assert _norm(entry.render()) == text, entry.display


@pytest.mark.parametrize(
    ("display", "ingredients", "form", "release", "brand", "quantity"),
    [
        ("24 HR Metoprolol Succinate 100 MG Extended Release Oral Tablet",
         [("metoprolol succinate", 100.0, "MG")], "Extended Release Oral Tablet", "24 HR", None,
         None),
        ("Acetaminophen 325 MG Oral Tablet [Tylenol]", [("acetaminophen", 325.0, "MG")],
         "Oral Tablet", None, "Tylenol", None),
        ("1 ML Epinephrine 1 MG/ML Injection", [("epinephrine", 1.0, "MG/ML")], "Injection", None,
         None, "1 ML"),
        ("Acetaminophen 300 MG / Hydrocodone Bitartrate 5 MG Oral Tablet",
         [("acetaminophen", 300.0, "MG"), ("hydrocodone bitartrate", 5.0, "MG")], "Oral Tablet",
         None, None, None),
        ("Abuse-Deterrent 12 HR Oxycodone Hydrochloride 10 MG Extended Release Oral Tablet "
         "[Oxycontin]", [("oxycodone hydrochloride", 10.0, "MG")], "Extended Release Oral Tablet",
         "12 HR", "Oxycontin", None),
        ("Levothyroxine Sodium 0.075 MG Oral Tablet", [("levothyroxine sodium", 0.075, "MG")],
         "Oral Tablet", None, None, None),
        ("Aspirin", [("aspirin", None, None)], None, None, None, None),
        ("Clonazepam [Klonopin]", [("clonazepam", None, None)], None, None, "Klonopin", None),
        ("Hydrochlorothiazide 25 MG", [("hydrochlorothiazide", 25.0, "MG")], None, None, None,
         None),
        ("Lasix 40mg", [("furosemide", 40.0, "MG")], None, None, "Lasix", None),
        ("Errin 28 Day Pack", [("norethindrone", None, None)], "28 Day Pack", None, "Errin", None),
        ("Levora 0.15/30 28 Day Pack",
         [("levonorgestrel", None, None), ("ethinyl estradiol", None, None)], "28 Day Pack", None,
         "Levora", None),
        ("NuvaRing 0.12/0.015 MG per 24HR 21 Day Vaginal System",
         [("etonogestrel", 0.12, "MG/24HR"), ("ethinyl estradiol", 0.015, "MG/24HR")],
         "21 Day Vaginal System", None, "NuvaRing", None),
        ("72 HR Fentanyl 0.025 MG/HR Transdermal System", [("fentanyl", 0.025, "MG/HR")],
         "Transdermal System", "72 HR", None, None),
    ],
)
def test_parse_display_examples(
    display: str,
    ingredients: list[tuple[str, float | None, str | None]],
    form: str | None,
    release: str | None,
    brand: str | None,
    quantity: str | None,
) -> None:
    entry = parse_display(display, "1")
    assert [(i.name, i.strength, i.unit) for i in entry.ingredients] == ingredients
    assert (entry.dose_form, entry.release, entry.brand, entry.quantity) == (
        form, release, brand, quantity)


def test_units_and_routes() -> None:
    assert Ingredient("x", 1.0, "MCG").ucum_unit == "ug"
    assert Ingredient("x", 1.0, "UNT/ML").ucum_unit == "U/mL"
    assert Ingredient("x", None, None).ucum_unit is None
    assert parse_display("albuterol 0.83 MG/ML Inhalation Solution").route == "inhalation"
    assert parse_display("Ibuprofen 200 MG Oral Tablet").route == "oral"
    assert parse_display("Hydrochlorothiazide 25 MG").route is None


# --- catalog file and search ---------------------------------------------------------------


def test_catalog_keeps_display_variants_and_excludes_allergen_only_codes(catalog: Catalog) -> None:
    aspirin = catalog.get(" 243670 ")
    assert aspirin is not None
    assert {aspirin.display, *aspirin.aliases} == {
        "Aspirin 81 MG Oral Tablet", "aspirin 81 MG Oral Tablet"}
    assert catalog.get("1191") is None  # "Aspirin" appears only as an AllergyIntolerance code
    data = json.loads((TERMINOLOGY / "rxnorm_catalog.json").read_text())
    assert [e["rxcui"] for e in data["excluded"]] == ["1191"]


def test_catalog_load_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="cannot read"):
        Catalog.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"entries": [{"rxcui": "1", "display": "x"}]}))
    with pytest.raises(DatasetError, match="invalid catalog entry"):
        Catalog.load(bad)
    entry: dict[str, Any] = {"rxcui": "1", "display": "x", "ingredients": [], "dose_form": None,
             "release": None, "brand": None}
    bad.write_text(json.dumps({"entries": [entry, entry]}))
    with pytest.raises(DatasetError, match="RxCUI 1 appears twice"):
        Catalog.load(bad)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Tylenol", ["209387", "313782"]),  # brand product, then the generic of its ingredient
        ("metoprolol", ["866924"]),  # no modifier: immediate release first
        ("metoprolol 25 mg", ["866924"]),
        ("metoprolol 100", ["866412", "866414"]),  # strength beats release; generic before brand
        ("metoprolol er", ["866412", "866414", "866924"]),
        ("24 hr metoprolol succinate", ["866412"]),
        ("toprol xl 100", ["866414", "866412"]),
        ("levothyroxine 75 mcg", ["966222"]),  # 75 mcg == 0.075 MG
        ("amlodipine 5mg", ["197361", "308136"]),
        ("ibuprofen 200 mg tablet", ["310965"]),
        ("acetaminophen", ["313782", "313820", "209387"]),  # single-ingredient before combos
        ("acetaminophen chewable", ["313820"]),
        ("hctz 25", ["310798", "316049"]),  # a product with a dose form first
        ("Lasix", ["315971"]),
        ("furosemide", ["315971"]),
    ],
)
def test_search_ranking(catalog: Catalog, query: str, expected: list[str]) -> None:
    got = [m.entry.rxcui for m in catalog.rank(query)]
    assert got[: len(expected)] == expected, [(m.entry.display, m.score) for m in catalog.rank(query)]


def test_search_with_no_match_or_other_system_is_empty(catalog: Catalog) -> None:
    assert catalog.rank("zzzz") == []
    assert catalog.rank("") == []
    assert catalog.rank("25 mg") == []
    assert catalog.search("Tylenol", system="http://loinc.org") == []


def test_catalog_implements_healthchain_terminology_lookup(catalog: Catalog) -> None:
    from healthchain.terminology import Coding, TerminologyLookup
    from healthchain.tools import FHIRToolkit

    assert isinstance(catalog, TerminologyLookup)
    hits = catalog.search("Tylenol", system=RXNORM)
    assert isinstance(hits[0], Coding)
    assert hits[0].model_dump() == {
        "code": "209387", "display": "Acetaminophen 325 MG Oral Tablet [Tylenol]", "system": RXNORM}
    kit = FHIRToolkit(lookup=catalog)
    result = kit.run_tool("lookup_code", {"query": "metoprolol 25 mg"})
    assert result[0]["code"] == "866924"


# --- max daily doses -------------------------------------------------------------------------


def test_max_dose_table_covers_catalog_ingredients_and_cites_sources(catalog: Catalog) -> None:
    table = load_max_daily_doses()
    data = json.loads((TERMINOLOGY / "max_daily_doses.json").read_text())
    assert sorted(data["ingredients"]) == sorted(k[0] for k in table)
    assert len(table) >= 20
    names = {i.name for e in catalog for i in e.ingredients}
    for (ingredient, route), row in table.items():
        assert ingredient in names, f"{ingredient} is not a catalog ingredient"
        assert route in {"oral", "inhalation"}
        assert len(row.source) > 40
        assert ("DailyMed" in row.source) or ("CFR" in row.source)
        assert (row.mg_per_day is None) == (row.reason is not None)
    assert table[("acetaminophen", "oral")].mg_per_day == 4000
    assert table[("ibuprofen", "oral")].mg_per_day == 3200
    assert table[("metoprolol tartrate", "oral")].mg_per_day == 450
    assert table[("metoprolol succinate", "oral")].mg_per_day == 400
    assert table[("levothyroxine sodium", "oral")].mg_per_day is None
    assert "mcg" in (table[("levothyroxine sodium", "oral")].reason or "")


def test_every_ceiling_row_holds_for_the_release_of_each_catalog_product_it_judges(catalog: Catalog) -> None:
    from groundeval.terminology.doses import row_applies

    table = load_max_daily_doses()
    judged = 0
    for entry in catalog:
        if len(entry.ingredients) != 1:
            continue
        row = find_max_dose(table, entry.ingredients[0].name, entry.route)
        if row is not None:
            assert row_applies(row, entry) is None, row_applies(row, entry)
            judged += 1
    assert judged >= 30
    memantine = table[("memantine hydrochloride", "oral")]  # the catalog's memantine is an oral solution (IR)
    assert (memantine.release, memantine.mg_per_day) == ("immediate", 20) and "NAMENDA" in memantine.source
    assert table[("metoprolol succinate", "oral")].release == "extended"
    er = next(e for e in catalog if e.rxcui == "866412")  # 24 HR metoprolol succinate ER
    wrong = replace(memantine, ingredient="metoprolol succinate")
    assert "is for immediate-release products; 866412" in (row_applies(wrong, er) or "")


def test_a_write_case_whose_ceiling_row_is_for_another_release_is_refused_at_load(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import groundeval.tasks.write.task as write

    table = dict(load_max_daily_doses())
    table[("metoprolol succinate", "oral")] = replace(table[("metoprolol succinate", "oral")], release="immediate")
    monkeypatch.setattr(write, "_max_doses", lambda: table)
    with pytest.raises(DatasetError, match=r"is for immediate-release products; \d+ '24 HR metoprolol succinate.*"
                                           r"add the label's ceiling for that form, or correct 'release'"):
        write.WriteTask().load_case(ROOT / "fixtures" / "write" / "toprol-xl-brand.json")


def test_find_max_dose_falls_back_to_the_only_route() -> None:
    table = load_max_daily_doses()
    hctz = parse_display("Hydrochlorothiazide 25 MG")
    assert hctz.route is None
    row = find_max_dose(table, hctz.ingredients[0].name, hctz.route)
    assert row is not None and row.mg_per_day == 100
    assert find_max_dose(table, "Ibuprofen", "oral") is table[("ibuprofen", "oral")]
    assert find_max_dose(table, "ibuprofen", "topical") is None


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"ingredient": "x", "route": "oral", "release": "any", "mg_per_day": None, "source": "s"}, "needs a reason"),
        ({"ingredient": "x", "route": "oral", "release": "any", "mg_per_day": -1, "source": "s"}, "is not > 0"),
        ({"ingredient": "x", "route": "oral", "release": "any", "mg_per_day": "10", "source": "s"}, "is not > 0"),
        ({"ingredient": "x", "route": "oral", "release": "any", "mg_per_day": 10}, "non-empty ingredient"),
        ({"ingredient": "x", "route": "oral", "mg_per_day": 10, "source": "s"}, "release None is not one of"),
    ],
)
def test_max_dose_table_rejects_bad_rows(tmp_path: Path, row: dict[str, object], message: str) -> None:
    path = tmp_path / "doses.json"
    path.write_text(json.dumps({"rows": [row]}))
    with pytest.raises(DatasetError, match=message):
        load_max_daily_doses(path)


def test_max_dose_table_rejects_duplicates(tmp_path: Path) -> None:
    row = {"ingredient": "X", "route": "oral", "release": "any", "mg_per_day": 1, "source": "s"}
    path = tmp_path / "doses.json"
    path.write_text(json.dumps({"rows": [row, {**row, "ingredient": "x"}]}))
    with pytest.raises(DatasetError, match="duplicate"):
        load_max_daily_doses(path)


# --- UCUM ----------------------------------------------------------------------------------


def test_to_mg() -> None:
    assert to_mg(400, "mg") == 400
    assert to_mg(1, "g") == 1000
    assert to_mg(75, "ug") == pytest.approx(0.075)
    assert to_mg(500, "ng") == pytest.approx(0.0005)
    for unit in ("mcg", "MG", "tablet", "mL", None):
        assert to_mg(1, unit) is None


def test_ucum_problem_flags_non_ucum_spellings() -> None:
    for unit in ("mg", "ug", "g", "mL", "{tablet}", "U"):
        assert ucum_problem(unit) is None, unit
    problem = ucum_problem("mcg")
    assert problem is not None and "'ug'" in problem[1]
    problem = ucum_problem("MG")
    assert problem is not None and "'mg'" in problem[1]
    problem = ucum_problem("tablets")
    assert problem is not None and "{tablet}" in problem[1]
    assert ucum_problem(None) is not None
    assert rxnorm_unit_to_ucum("MCG") == "ug"
    assert rxnorm_unit_to_ucum("FOO") is None


# --- make_terminology.py -------------------------------------------------------------------


def test_make_terminology_is_deterministic_and_committed_file_is_current(
    synthea_dir: Path, tmp_path: Path, fixture_script: Callable[[str], ModuleType]
) -> None:
    """Built under two string-hash seeds, both give the committed file byte for byte.

    Once in a fresh interpreter with a fixed ``PYTHONHASHSEED``, once here by ``--check`` under this
    process's seed: random, or when ``PYTHONHASHSEED`` is set, a value the child's differs from.
    """
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    subprocess.run(
        [sys.executable, str(SCRIPT), "--source", str(synthea_dir), "--out", str(tmp_path)],
        check=True, env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, cwd=ROOT,
    )
    assert (tmp_path / "rxnorm_catalog.json").read_bytes() == (TERMINOLOGY / "rxnorm_catalog.json").read_bytes()
    script = fixture_script(SCRIPT.stem)  # its build reads the session's raw bundles
    assert script.main(["--source", str(synthea_dir), "--check"]) == 0


def test_make_terminology_check_reports_a_stale_file(synthea_dir: Path, tmp_path: Path) -> None:
    script = _script()
    source = tmp_path / "source"  # three bundles are enough to build, check and go stale
    source.mkdir()
    for bundle in sorted(synthea_dir.glob("*.json"), key=lambda p: p.stat().st_size)[:3]:
        (source / bundle.name).symlink_to(bundle)
    synthea_dir, tmp_path = source, tmp_path / "out"
    tmp_path.mkdir()
    assert script.main(["--source", str(synthea_dir), "--out", str(tmp_path), "--check"]) == 1
    assert script.main(["--source", str(synthea_dir), "--out", str(tmp_path)]) == 0
    assert script.main(["--source", str(synthea_dir), "--out", str(tmp_path), "--check"]) == 0
    target = tmp_path / "rxnorm_catalog.json"
    text = target.read_text(encoding="utf-8")
    assert '"display": "' in text
    target.write_text(text.replace('"display": "', '"display": "Stale ', 1), encoding="utf-8")
    assert script.main(["--source", str(synthea_dir), "--out", str(tmp_path), "--check"]) == 1


def test_catalog_facts_name_the_file_source_and_snapshot() -> None:
    facts = Catalog.load().facts
    assert facts["file"] == "rxnorm_catalog.json" and len(facts["sha256"]) == 64
    assert facts["snapshot_date"] == "2025-08-18" and facts["source"].startswith("Synthea")
    assert facts["entries"] == len(Catalog.load())
    memory = Catalog([]).facts
    assert memory["file"] == "<memory>" and memory["snapshot_date"] is None and memory["entries"] == 0
