"""The site's RxNorm catalog: loading, lookup by RxCUI, ranked free-text search.

``Catalog`` implements HealthChain's ``TerminologyLookup`` protocol
(``healthchain.terminology.base``: ``search(text, system=None) -> list[Coding]``), so it can be
passed as ``FHIRToolkit(lookup=catalog)``. HealthChain is imported only inside ``search``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundeval.datasets import default_data_dir, load_json
from groundeval.errors import DatasetError
from groundeval.terminology.rxnorm import BRAND_INGREDIENTS, CatalogEntry, Ingredient
from groundeval.terminology.systems import RXNORM_SYSTEM, RXNORM_SYSTEMS
from groundeval.terminology.ucum import to_mg

if TYPE_CHECKING:
    from healthchain.terminology import Coding  # noqa: TID251  # for types only, never imported at run time

__all__ = ["CATALOG_FILE", "Catalog", "Match"]

CATALOG_FILE = "rxnorm_catalog.json"

_SPLIT_RE = re.compile(r"(?<=\d)(?=[a-z])|(?<=[a-z])(?=\d)")
_TOKEN_RE = re.compile(r"\d+(?:\.\d+)?|[a-z][a-z0-9\-]*")
_UNITS = {"mg": "mg", "mcg": "ug", "ug": "ug", "g": "g", "gm": "g", "ml": "mL", "unt": "U"}
_RELEASE_WORDS = frozenset({"er", "xr", "xl", "sr", "cr", "la", "extended", "release"})
_HOUR_WORDS = frozenset({"hr", "hour", "hours", "h"})
_STOP = frozenset(
    {"of", "the", "a", "and", "with", "take", "takes", "taking", "po", "by", "mouth", "daily",
     "once", "twice", "bid", "tid", "qid", "qd", "prn", "per", "day", "times", "every", "as",
     "needed", "for"}
)
#: Common prescription abbreviations for ingredients (ISMP list of error-prone abbreviations
#: discourages them in orders, but notes still carry them).
_ABBREVIATIONS = {"apap": "acetaminophen", "asa": "aspirin", "hctz": "hydrochlorothiazide"}
_ALIASES = {"tab": "tablet", "tabs": "tablet", "tablets": "tablet", "cap": "capsule",
            "caps": "capsule", "capsules": "capsule", "inj": "injection"}


@dataclass(frozen=True, slots=True)
class Match:
    """One ranked search result.

    Attributes:
        entry: The catalog entry.
        score: Sort key, larger is better; only the order is meaningful.
        why: Short reasons (``"name"``, ``"strength"``, ``"release"``, ``"brand"``).
    """

    entry: CatalogEntry
    score: tuple[int, ...]
    why: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Query:
    words: tuple[str, ...]
    amounts: tuple[tuple[float, str | None], ...]  # (number, UCUM unit or None)
    release: str | None  # "ER" (any), "12 HR", "24 HR", or None


def _tokens(text: str) -> list[str]:
    text = _SPLIT_RE.sub(" ", text.lower())
    return _TOKEN_RE.findall(text)


def _parse_query(text: str) -> _Query:
    toks = _tokens(text)
    words: list[str] = []
    amounts: list[tuple[float, str | None]] = []
    release: str | None = None
    i = 0
    while i < len(toks):
        tok = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if tok[0].isdigit():
            if nxt in _HOUR_WORDS:
                release = f"{float(tok):g} HR"
                i += 2
                continue
            amounts.append((float(tok), _UNITS.get(nxt)))
            i += 2 if nxt in _UNITS else 1
            continue
        if tok in _RELEASE_WORDS:
            release = release or "ER"
        elif tok not in _STOP and tok not in _UNITS:
            words.append(_ABBREVIATIONS.get(tok) or _ALIASES.get(tok, tok))
        i += 1
    return _Query(tuple(words), tuple(amounts), release)


def _word_hit(token: str, words: Iterable[str]) -> bool:
    return any(w == token or (len(token) >= 3 and w.startswith(token)) for w in words)


def _amount_hit(amount: tuple[float, str | None], ingredients: tuple[Ingredient, ...]) -> bool:
    value, unit = amount
    for ing in ingredients:
        if ing.strength is None:
            continue
        same = abs(ing.strength - value) < 1e-9
        ucum = ing.ucum_unit or ""
        if same and (unit is None or ucum == unit or ucum.startswith(f"{unit}/")):
            return True
        have, want = to_mg(ing.strength, ucum), to_mg(value, unit)
        if have is not None and want is not None and abs(have - want) < 1e-9:
            return True
    return False


class Catalog:
    """An immutable set of RxNorm concepts with ranked search.

    Args:
        entries: Catalog entries; RxCUIs must be unique.

    Raises:
        DatasetError: Two entries share an RxCUI.
    """

    def __init__(
        self, entries: Iterable[CatalogEntry], *, source: str = "<memory>", facts: dict[str, Any] | None = None
    ) -> None:
        self._entries = tuple(entries)
        self._facts = {"file": source, "sha256": None, "source": None, "snapshot_date": None, **(facts or {})}
        self._facts["entries"] = len(self._entries)
        self._by_code: dict[str, CatalogEntry] = {}
        for entry in self._entries:
            if entry.rxcui in self._by_code:
                raise DatasetError(source, f"RxCUI {entry.rxcui} appears twice; keep one entry")
            self._by_code[entry.rxcui] = entry
        self._brands: dict[str, tuple[str, ...]] = {
            b.lower(): names for b, names in BRAND_INGREDIENTS.items()
        }
        for entry in self._entries:
            if entry.brand:
                self._brands.setdefault(
                    entry.brand.lower(), tuple(i.name for i in entry.ingredients)
                )

    @classmethod
    def load(cls, path: Path | None = None) -> Catalog:
        """Read a catalog written by ``scripts/make_terminology.py``.

        Args:
            path: The JSON file; default ``rxnorm_catalog.json`` in the packaged
                ``terminology`` fixtures (``groundeval.datasets.default_data_dir``).

        Raises:
            DatasetError: The file is missing, not JSON, or an entry lacks a field or has a
                wrongly typed one (the message names the entry).
        """
        from pydantic import TypeAdapter, ValidationError

        path = path or default_data_dir("terminology") / CATALOG_FILE
        data, digest = load_json(path)
        raw = data.get("entries")
        if not isinstance(raw, list):
            raise DatasetError(str(path), "no 'entries' list; regenerate with make_terminology.py")
        try:
            entries = TypeAdapter(list[CatalogEntry]).validate_python(raw)
        except ValidationError as exc:
            raise DatasetError(str(path), f"invalid catalog entry: {exc}") from exc
        facts = {
            "file": path.name, "sha256": digest, "source": data.get("source"),
            "snapshot_date": data.get("snapshot_date"), "generator": data.get("generator"),
        }
        return cls(entries, source=str(path), facts=facts)

    @property
    def facts(self) -> dict[str, Any]:
        """Where the catalog comes from, JSON-safe (a copy).

        Keys: ``file`` (name), ``sha256`` (of the file), ``source`` and ``snapshot_date`` (as
        ``make_terminology.py`` wrote them; None when absent), ``generator``, ``entries`` (count).
        """
        return dict(self._facts)

    @property
    def entries(self) -> tuple[CatalogEntry, ...]:
        """All entries, in file order."""
        return self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[CatalogEntry]:
        return iter(self._entries)

    def get(self, rxcui: str) -> CatalogEntry | None:
        """Return the entry for an RxCUI (surrounding spaces ignored), or ``None``."""
        return self._by_code.get(rxcui.strip())

    def rank(self, text: str) -> list[Match]:
        """Rank entries against free text.

        An entry is a candidate when a query word starts an ingredient or brand word (``"metop"``
        finds metoprolol; ``"Tylenol"`` finds the Tylenol product and, lower, generic
        acetaminophen). Candidates are ordered by: ingredient/brand words matched; strengths
        matched (``"75 mcg"`` matches ``0.075 MG``); release modifier agreement (``"ER"``,
        ``"24 hr"``; no modifier in the query prefers immediate release); fewer ingredients the
        query does not name (single-ingredient before combinations); a dose form present (a
        product before a bare "Hydrochlorothiazide 25 MG"); other display words matched
        (``"chewable"``); branded when a brand was named, generic otherwise; shorter display;
        RxCUI. Abbreviations APAP, ASA and HCTZ are expanded.

        Returns:
            Matches, best first; empty when no ingredient or brand word matches.
        """
        query = _parse_query(text)
        if not query.words:
            return []
        out: list[Match] = []
        for entry in self._entries:
            match = self._score(entry, query)
            if match is not None:
                out.append(match)
        out.sort(key=lambda m: (tuple(-s for s in m.score), len(m.entry.display), m.entry.rxcui))
        return out

    def _score(self, entry: CatalogEntry, query: _Query) -> Match | None:
        names = {w for ing in entry.ingredients for w in _tokens(ing.name)}
        brand = set(_tokens(entry.brand)) if entry.brand else set()
        other = set(_tokens(entry.display)) | {w for a in entry.aliases for w in _tokens(a)}
        direct = via_brand = other_hits = brand_named = 0
        for word in query.words:
            if _word_hit(word, names | brand):
                direct += 1
                brand_named += _word_hit(word, brand)
            elif any(
                _word_hit(word, [b]) and set(ings) & {i.name for i in entry.ingredients}
                for b, ings in self._brands.items()
            ):
                via_brand += 1
            elif _word_hit(word, other):
                other_hits += 1
        if direct + via_brand == 0:
            return None
        strength = sum(_amount_hit(a, entry.ingredients) for a in query.amounts)
        extra = sum(
            not any(_word_hit(w, _tokens(i.name)) for w in query.words) for i in entry.ingredients
        )
        if query.release is None:
            release = 0 if entry.release is None else -1
        elif query.release == "ER":
            release = 1 if entry.release is not None else -1
        else:
            release = 1 if entry.release == query.release else -1
        prefer_brand = 1 if (brand_named > 0) == (entry.brand is not None) else 0
        why = tuple(
            label
            for label, on in (("name", direct), ("brand", brand_named or via_brand),
                              ("strength", strength), ("release", release > 0))
            if on
        )
        has_form = int(entry.dose_form is not None)
        score = (direct, via_brand, strength, release, -extra, has_form, other_hits, prefer_brand)
        return Match(entry, score, why)

    def search(self, text: str, system: str | None = None) -> list[Coding]:
        """Search the catalog (HealthChain ``TerminologyLookup.search``).

        Args:
            text: Free text such as ``"metoprolol 25 mg"``, ``"Tylenol"``, ``"toprol xl 100"``.
            system: Restrict to this code system URI; any non-RxNorm system gives ``[]``.

        Returns:
            ``healthchain.terminology.Coding`` objects (code, display, system), best first
            (see :meth:`rank` for the order).
        """
        from groundeval._healthchain import terminology

        Coding = terminology().Coding  # the HealthChain class, imported through the accessor

        if system is not None and system.strip() not in RXNORM_SYSTEMS:
            return []
        return [
            Coding(code=m.entry.rxcui, display=m.entry.display, system=RXNORM_SYSTEM)
            for m in self.rank(text)
        ]

    def describe(self, entry: CatalogEntry) -> dict[str, Any]:
        """Return a JSON-safe summary of an entry: rxcui, display, system and parsed parts."""
        return {
            "rxcui": entry.rxcui,
            "display": entry.display,
            "system": RXNORM_SYSTEM,
            "ingredients": [
                {"name": i.name, "strength": i.strength, "unit": i.unit} for i in entry.ingredients
            ],
            "dose_form": entry.dose_form,
            "release": entry.release,
            "brand": entry.brand,
        }
