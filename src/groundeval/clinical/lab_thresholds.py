"""The guideline threshold table of the labs task: loading it, and checking it at load.

The table lives in ``fixtures/terminology/lab_thresholds.json`` (``THRESHOLDS_FILE``). Each test
row names a LOINC code, its UCUM unit, the units a result may carry, the tolerance of its
direction, its categories from low to high, an optional critical limit, and the guideline,
edition and section it comes from. A blood pressure panel has one row with two components
(systolic 8480-6, diastolic 8462-4), each with its own bands, combined by the guideline's
"higher category" rule.

Bounds: a category holds the values ``v`` with ``low <= v < high`` (low inclusive, high
exclusive; a missing bound is unbounded). ``load_thresholds`` refuses a table whose categories
are not ordered, overlap, leave a gap, do not reach both ends, repeat a name, whose units are not
legal UCUM or not convertible to the row's unit, or whose rows lack a source.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundeval.datasets import default_data_dir, load_json
from groundeval.errors import DatasetError
from groundeval.terminology.ucum import convert, ucum_grammar_error

__all__ = [
    "THRESHOLDS_FILE",
    "Band",
    "Limit",
    "Measure",
    "TestRow",
    "Thresholds",
    "default_thresholds",
    "load_thresholds",
]

THRESHOLDS_FILE = "lab_thresholds.json"
"""The table's file name in the packaged ``terminology`` fixtures."""

_LIMIT_KEYS = ("below", "at_or_below", "above", "at_or_above")


@dataclass(frozen=True, slots=True)
class Band:
    """One category: the values ``v`` with ``low <= v < high`` (None: unbounded)."""

    name: str
    low: float | None
    high: float | None

    def holds(self, value: float) -> bool:
        """True when ``low <= value < high``."""
        return (self.low is None or value >= self.low) and (self.high is None or value < self.high)


@dataclass(frozen=True, slots=True)
class Limit:
    """A critical limit: a value beyond any of the given bounds is critical.

    Attributes:
        below: Critical when ``v < below``.
        at_or_below: Critical when ``v <= at_or_below``.
        above: Critical when ``v > above``.
        at_or_above: Critical when ``v >= at_or_above``.
    """

    below: float | None = None
    at_or_below: float | None = None
    above: float | None = None
    at_or_above: float | None = None

    def hit(self, value: float) -> bool:
        """True when ``value`` is beyond one of the bounds."""
        return ((self.below is not None and value < self.below)
                or (self.at_or_below is not None and value <= self.at_or_below)
                or (self.above is not None and value > self.above)
                or (self.at_or_above is not None and value >= self.at_or_above))

    def describe(self, unit: str) -> str:
        """The limit in words: ``"< 2.5 or >= 6.5 mmol/L"``."""
        signs = {"below": "<", "at_or_below": "<=", "above": ">", "at_or_above": ">="}
        parts = [f"{signs[key]} {_num(getattr(self, key))}" for key in _LIMIT_KEYS if getattr(self, key) is not None]
        return f"{' or '.join(parts)} {unit}"


@dataclass(frozen=True, slots=True)
class Measure:
    """What is classified: a test's value, or one component of a panel (systolic, diastolic)."""

    loinc: str
    name: str
    bands: tuple[Band, ...]
    critical: Limit | None

    def category(self, value: float) -> str:
        """The name of the band holding ``value`` (the bands cover every number)."""
        return next(b.name for b in self.bands if b.holds(value))


@dataclass(frozen=True, slots=True)
class TestRow:
    """One test of the table.

    Attributes:
        loinc: The test's LOINC code (``Observation.code``).
        name: A short name for prompts and messages.
        unit: The UCUM unit the bands are in.
        accepted_units: UCUM units a result may carry (converted to ``unit``).
        molar_mass: g/mol for substance <-> mass concentrations, or None.
        tolerance: Smallest change, in ``unit``, that is ``up``/``down``.
        measures: One ``Measure`` (loinc = the test's), or one per component of a panel.
        order: Category names from low to high (a panel's combined scale).
        source: ``cite_as`` (a short name without thresholds, for prompts), ``guideline``,
            ``edition``, ``section`` (with the thresholds), ``citation``.
        critical_source: Where the critical limit comes from, or None.
        critical_label: The critical range named without its numbers (for prompts), or None.
        note: Caveats shown in the docs.
    """

    loinc: str
    name: str
    unit: str
    accepted_units: tuple[str, ...]
    molar_mass: float | None
    tolerance: float
    measures: tuple[Measure, ...]
    order: tuple[str, ...]
    source: Mapping[str, str]
    critical_source: str | None
    critical_label: str | None
    note: str | None

    @property
    def is_panel(self) -> bool:
        """True for a panel whose value has components (blood pressure)."""
        return len(self.measures) > 1 or self.measures[0].loinc != self.loinc

    def to_unit(self, value: float, unit: str) -> float | None:
        """``value`` in ``unit`` converted to the row's unit; None when ``unit`` is not accepted."""
        if unit not in self.accepted_units:
            return None
        return value if unit == self.unit else convert(value, unit, self.unit, molar_mass_g_per_mol=self.molar_mass)

    def combine(self, categories: Sequence[str]) -> str:
        """The higher of the components' categories (on ``order``); the one category of a single test."""
        return max(categories, key=self.order.index)


@dataclass(frozen=True, slots=True, eq=False)
class Thresholds:
    """The loaded table.

    Attributes:
        tests: The rows, in file order (the order the prompt lists them).
        counted_statuses: ``Observation.status`` codes whose results count.
        all_statuses: Every code of the R4 ObservationStatus value set.
        min_age_years: Youngest age, in years, the categories apply to.
        path: The file read.
        sha256: Its SHA-256.
        version: ``table_version``.
        raw: The file's JSON (for the docs and the prompt's citations).
    """

    tests: tuple[TestRow, ...]
    counted_statuses: frozenset[str]
    all_statuses: frozenset[str]
    min_age_years: int
    path: Path
    sha256: str
    version: str
    raw: Mapping[str, Any]

    def test(self, loinc: str) -> TestRow:
        """The row of ``loinc``.

        Raises:
            KeyError: No such test.
        """
        return next(t for t in self.tests if t.loinc == loinc)

    @property
    def facts(self) -> dict[str, str]:
        """``{"file", "sha256", "version"}`` for the run record."""
        return {"file": self.path.name, "sha256": self.sha256, "version": self.version}


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class _Reader:
    """Reads one table file; every problem is a ``DatasetError`` naming the file and the row."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, problem: str) -> DatasetError:
        return DatasetError(str(self.path), f"{where}: {problem}")

    def bands(self, where: str, raw: object) -> tuple[Band, ...]:
        if not isinstance(raw, list) or not raw:
            raise self.fail(where, "'categories' must be a non-empty list, from low to high")
        bands = []
        for n, item in enumerate(raw):
            if not isinstance(item, dict) or not _text(item.get("name")):
                raise self.fail(f"{where}.categories[{n}]", "each category needs a 'name'")
            for key in ("low", "high"):
                if item.get(key) is not None and not _number(item[key]):
                    raise self.fail(f"{where}.categories[{n}]", f"{key} {item[key]!r} is not a number")
            bands.append(Band(str(item["name"]), item.get("low"), item.get("high")))
        names = [b.name for b in bands]
        if len(set(names)) != len(names):
            raise self.fail(where, f"a category name repeats: {names}")
        if bands[0].low is not None or bands[-1].high is not None:
            raise self.fail(where, "the categories must cover every value: the first has no low, the last no high")
        for band, after in itertools.pairwise(bands):
            if band.high is None or after.low is None:
                raise self.fail(where, f"{band.name!r} and {after.name!r}: only the first may lack low, the last high")
            if band.high != after.low:
                kind = "overlap" if after.low < band.high else "leave a gap"
                raise self.fail(where, f"{band.name!r} ends at {_num(band.high)} and {after.name!r} starts at "
                                f"{_num(after.low)}: they {kind}; each high must equal the next low")
        for band in bands:
            if band.low is not None and band.high is not None and not band.low < band.high:
                raise self.fail(where, f"{band.name!r}: low {_num(band.low)} is not below high {_num(band.high)}")
        return tuple(bands)

    def limit(self, where: str, raw: object) -> Limit | None:
        if raw is None:
            return None
        if not isinstance(raw, dict) or not raw or set(raw) - set(_LIMIT_KEYS):
            raise self.fail(where, f"'critical' must be an object with some of {', '.join(_LIMIT_KEYS)}")
        if not all(_number(v) for v in raw.values()):
            raise self.fail(where, f"'critical' bounds must be numbers, got {raw}")
        return Limit(**{k: float(v) for k, v in raw.items()})

    def unit(self, where: str, unit: object) -> str:
        if not _text(unit):
            raise self.fail(where, "'unit' must be a UCUM code")
        assert isinstance(unit, str)
        error = ucum_grammar_error(unit)
        if error is not None:
            raise self.fail(where, f"unit {unit!r} is not UCUM ({error})")
        return unit

    def row(self, n: int, raw: object) -> TestRow:
        where = f"tests[{n}]"
        if not isinstance(raw, dict) or not _text(raw.get("loinc")) or not _text(raw.get("name")):
            raise self.fail(where, "each test needs 'loinc' and 'name'")
        where = f"tests[{n}] ({raw['loinc']})"
        unit = self.unit(where, raw.get("unit"))
        accepted = raw.get("accepted_units")
        if not isinstance(accepted, list) or unit not in accepted:
            raise self.fail(where, f"'accepted_units' must be a list that includes the unit {unit!r}")
        molar = raw.get("molar_mass_g_per_mol")
        if molar is not None and not (_number(molar) and molar > 0):
            raise self.fail(where, f"molar_mass_g_per_mol {molar!r} is not a positive number")
        for other in accepted:
            self.unit(where, other)
            if convert(1.0, other, unit, molar_mass_g_per_mol=molar) is None:
                raise self.fail(where, f"accepted unit {other!r} does not convert to {unit!r} through UCUM"
                                + ("" if molar else " (a substance concentration needs molar_mass_g_per_mol)"))
        tolerance = raw.get("tolerance")
        if not (isinstance(tolerance, int | float) and _number(tolerance) and tolerance > 0):
            raise self.fail(where, f"tolerance {tolerance!r} must be a positive number in {unit}")
        source = raw.get("source")
        cited = ("cite_as", "guideline", "edition", "section")
        if not isinstance(source, dict) or not all(_text(source.get(k)) for k in cited):
            raise self.fail(where, "'source' must give cite_as, the guideline, edition and section")
        components = raw.get("components")
        if components is None:
            bands = self.bands(where, raw.get("categories"))
            measures: tuple[Measure, ...] = (
                Measure(str(raw["loinc"]), str(raw["name"]), bands, self.limit(where, raw.get("critical"))),
            )
            order = tuple(b.name for b in bands)
        else:
            order_raw = raw.get("category_order")
            if raw.get("combine") != "higher" or not isinstance(order_raw, list) or not order_raw:
                raise self.fail(where, "a panel needs 'combine': 'higher' and 'category_order', low to high")
            order = tuple(str(c) for c in order_raw)
            if not isinstance(components, list) or not components:
                raise self.fail(where, "'components' must be a non-empty list")
            found = []
            for k, comp in enumerate(components):
                cwhere = f"{where}.components[{k}]"
                if not isinstance(comp, dict) or not _text(comp.get("loinc")) or not _text(comp.get("name")):
                    raise self.fail(cwhere, "each component needs 'loinc' and 'name'")
                bands = self.bands(cwhere, comp.get("categories"))
                names = [b.name for b in bands]
                if not set(names) <= set(order) or names != sorted(names, key=order.index):
                    raise self.fail(cwhere, f"categories {names} must be names of category_order {list(order)}, "
                                    "in that order")
                found.append(Measure(str(comp["loinc"]), str(comp["name"]), bands,
                                     self.limit(cwhere, comp.get("critical"))))
            measures = tuple(found)
        if any(m.critical for m in measures) and not (_text(raw.get("critical_source"))
                                                      and _text(raw.get("critical_label"))):
            raise self.fail(where, "a critical limit needs its 'critical_source' and 'critical_label'")
        return TestRow(
            loinc=str(raw["loinc"]), name=str(raw["name"]), unit=unit, accepted_units=tuple(accepted),
            molar_mass=float(molar) if molar is not None else None, tolerance=float(tolerance), measures=measures,
            order=order, source={k: str(v) for k, v in source.items()},
            critical_source=raw.get("critical_source"), critical_label=raw.get("critical_label"), note=raw.get("note"),
        )


def load_thresholds(path: Path) -> Thresholds:
    """Read and check a threshold table (see the module docstring for the checks).

    Args:
        path: The JSON file (``fixtures/terminology/lab_thresholds.json`` for the packaged one).

    Returns:
        The checked ``Thresholds``.

    Raises:
        DatasetError: The file is unreadable, or a check fails; the message names the file, the
            row and the bad value.
    """
    data, digest = load_json(path)
    reader = _Reader(path)
    if data.get("schema_version") != 1:
        raise reader.fail("schema_version", f"{data.get('schema_version')!r} is not 1")
    statuses = data.get("statuses") or {}
    counted, not_counted = statuses.get("counted"), statuses.get("not_counted")
    if not isinstance(counted, list) or not isinstance(not_counted, list) or set(counted) & set(not_counted):
        raise reader.fail("statuses", "'counted' and 'not_counted' must be disjoint lists of status codes")
    age = (data.get("population") or {}).get("min_age_years")
    if not isinstance(age, int) or isinstance(age, bool) or age < 0:
        raise reader.fail("population.min_age_years", f"{age!r} is not a whole number of years")
    rows = data.get("tests")
    if not isinstance(rows, list) or not rows:
        raise reader.fail("tests", "must be a non-empty list")
    tests = tuple(reader.row(n, raw) for n, raw in enumerate(rows))
    codes = [t.loinc for t in tests] + [m.loinc for t in tests if t.is_panel for m in t.measures]
    if len(set(codes)) != len(codes):
        raise reader.fail("tests", f"a LOINC code repeats: {codes}")
    return Thresholds(
        tests=tests, counted_statuses=frozenset(counted), all_statuses=frozenset(counted) | frozenset(not_counted),
        min_age_years=age, path=path, sha256=digest, version=str(data.get("table_version") or ""), raw=data,
    )


@functools.cache
def default_thresholds() -> Thresholds:
    """The packaged table (``THRESHOLDS_FILE`` in the ``terminology`` fixtures), read once per process.

    Raises:
        DatasetError: The packaged table fails its checks.
    """
    return load_thresholds(default_data_dir("terminology") / THRESHOLDS_FILE)
