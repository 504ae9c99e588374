"""One case's resources, held in memory: what a sandbox serves and what an agent wrote.

A store is built from the case's resources (deep-copied, so the case is never changed) and lives
only as long as its sandbox: every case starts from its own record and what one case writes is
gone when its sandbox stops.
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["ResourceStore", "Write", "patient_of"]

_PATIENT_ELEMENTS = ("subject", "patient")


@dataclass(frozen=True, slots=True)
class Write:
    """One create or update the sandbox accepted.

    Attributes:
        interaction: ``create``, ``update`` or ``delete`` (http.html interaction names).
        reference: ``Type/id`` of the resource written.
    """

    interaction: str
    reference: str


def _rewrite(value: Any, by_urn: dict[str, str]) -> Any:
    """``value`` with every ``reference`` that is a Bundle ``fullUrl`` rewritten to ``Type/id``."""
    if isinstance(value, dict):
        out = {k: _rewrite(v, by_urn) for k, v in value.items()}
        ref = out.get("reference")
        if isinstance(ref, str) and ref in by_urn:
            out["reference"] = by_urn[ref]
        return out
    if isinstance(value, list):
        return [_rewrite(v, by_urn) for v in value]
    return value


def patient_of(resource: dict[str, Any]) -> str | None:
    """The ``Patient/id`` a resource belongs to (its Patient compartment), or None.

    A Patient belongs to itself; another resource to its ``subject`` or ``patient`` reference
    (compartmentdefinition-patient.html, restricted to the served types).
    """
    if resource.get("resourceType") == "Patient":
        return f"Patient/{resource.get('id')}"
    for element in _PATIENT_ELEMENTS:
        ref = (resource.get(element) or {}).get("reference") if isinstance(resource.get(element), dict) else None
        if isinstance(ref, str) and ref.startswith("Patient/"):
            return ref
    return None


class ResourceStore:
    """The resources of one case, by type and id, safe to use from the server's threads.

    Args:
        resources: A Bundle, or resources as dicts (each with ``resourceType`` and ``id``), or Bundle entries
            (``{"fullUrl": ..., "resource": ...}``). References to an entry's ``fullUrl``
            (Synthea's ``urn:uuid:...``) are rewritten to ``Type/id``, as a server does when it
            processes a transaction (http.html "Transaction Processing Rules").

    Raises:
        TypeError: ``resources`` is a path, text or None rather than parsed JSON, or holds a non-object.
        ValueError: A resource without ``resourceType`` or ``id``, or two with the same ``Type/id``.
    """

    def __init__(self, resources: Iterable[dict[str, Any]] | dict[str, Any]) -> None:
        if isinstance(resources, (str, bytes, Path)) or resources is None:
            raise TypeError(
                f"serve the parsed JSON (a Bundle dict or a list of resources), not {type(resources).__name__} "
                f"{str(resources)[:80]!r}: pass json.loads(Path(...).read_text())"
            )
        if isinstance(resources, dict):  # a whole Bundle
            if resources.get("resourceType") != "Bundle":
                what = resources.get("resourceType")
                raise ValueError(
                    "serve a Bundle or a list of resources, not "
                    + (f"a {what}" if what else "a JSON object without resourceType")
                )
            resources = list(resources.get("entry") or [])
        if not all(isinstance(r, dict) for r in resources):
            raise TypeError("serve a Bundle or a list of resources: every item must be a JSON object (a dict)")
        entries = [(r.get("fullUrl"), r["resource"]) if "resource" in r else (None, r) for r in resources]
        by_urn: dict[str, str] = {}
        for full_url, res in entries:
            if not res.get("resourceType") or not res.get("id"):
                raise ValueError(f"a served resource needs resourceType and id; got {str(res)[:120]}")
            if full_url:
                by_urn[full_url] = f"{res['resourceType']}/{res['id']}"
        self._lock = threading.Lock()
        self._by_type: dict[str, dict[str, dict[str, Any]]] = {}
        self._order: list[str] = []
        self.writes: list[Write] = []
        self._deleted: set[str] = set()
        now = _now()
        for _, res in entries:
            res = _rewrite(copy.deepcopy(res), by_urn)
            meta = res.setdefault("meta", {})
            meta.setdefault("versionId", "1")
            meta.setdefault("lastUpdated", now)
            key = f"{res['resourceType']}/{res['id']}"
            if res["id"] in self._by_type.get(res["resourceType"], {}):
                raise ValueError(f"two served resources are {key}")
            self._by_type.setdefault(res["resourceType"], {})[res["id"]] = res
            self._order.append(key)

    def get(self, type_: str, id_: str) -> dict[str, Any] | None:
        """The resource ``type_/id_`` (a copy), or None."""
        with self._lock:
            res = self._by_type.get(type_, {}).get(id_)
            return copy.deepcopy(res) if res is not None else None

    def is_deleted(self, type_: str, id_: str) -> bool:
        """Whether ``type_/id_`` was deleted (a read then gets 410 Gone, http.html "read")."""
        with self._lock:
            return f"{type_}/{id_}" in self._deleted

    def delete(self, type_: str, id_: str) -> bool:
        """Remove ``type_/id_`` (http.html "delete"); False when there was no such resource."""
        with self._lock:
            if self._by_type.get(type_, {}).pop(id_, None) is None:
                return False
            self._deleted.add(f"{type_}/{id_}")
            self.writes.append(Write("delete", f"{type_}/{id_}"))
            return True

    def all_of(self, type_: str) -> list[dict[str, Any]]:
        """Every resource of ``type_`` (copies), in load then write order."""
        with self._lock:
            return [copy.deepcopy(r) for r in self._by_type.get(type_, {}).values()]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        with self._lock:
            snapshot = [copy.deepcopy(r) for rs in self._by_type.values() for r in rs.values()]
        return iter(snapshot)

    def create(self, resource: dict[str, Any]) -> dict[str, Any]:
        """Store a new resource under a server-assigned id (http.html "create"); returns it."""
        res = copy.deepcopy(resource)
        res["id"] = str(uuid.uuid4())
        res["meta"] = {**(res.get("meta") or {}), "versionId": "1", "lastUpdated": _now()}
        with self._lock:
            self._by_type.setdefault(res["resourceType"], {})[res["id"]] = res
            self.writes.append(Write("create", f"{res['resourceType']}/{res['id']}"))
        return copy.deepcopy(res)

    def update(self, resource: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Store ``resource`` under its own id (http.html "update", update as create allowed).

        Returns:
            The stored resource and whether it was created (True) rather than replaced.
        """
        res = copy.deepcopy(resource)
        with self._lock:
            old = self._by_type.setdefault(res["resourceType"], {}).get(res["id"])
            version = int((old or {}).get("meta", {}).get("versionId", "0")) + 1
            res["meta"] = {**(res.get("meta") or {}), "versionId": str(version), "lastUpdated": _now()}
            self._by_type[res["resourceType"]][res["id"]] = res
            self._deleted.discard(f"{res['resourceType']}/{res['id']}")
            self.writes.append(Write("update", f"{res['resourceType']}/{res['id']}"))
        return copy.deepcopy(res), old is None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
