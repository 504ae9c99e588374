r"""A case on a FHIR R4 server the user runs (``--groundeval-fhir=URL``).

Each case is loaded as one ``transaction`` Bundle whose resource ids carry a prefix made of the
run id and the case, so two cases (or two runs) on the same server never share an id; references
inside the case are rewritten to the prefixed ids. After the agent stops, what the case holds is
read back by those ids, and everything the case created is removed: ``$expunge`` where the
server's CapabilityStatement lists it (HAPI FHIR), else ``DELETE`` (the server may keep the
deleted versions in its history; :class:`Cleanup` says which was used).

The bearer token comes from the environment (``GROUNDEVAL_FHIR_TOKEN``), never from a case or a
record, and is never put into an error message.

Spec: hl7.org/fhir/R4/http.html (transaction, read, delete), bundle.html (``transaction``
entries, ``urn:uuid`` placeholders), resource.html (``id``: ``[A-Za-z0-9\-\.]{1,64}``).
"""

from __future__ import annotations

import copy
import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

TOKEN_ENV = "GROUNDEVAL_FHIR_TOKEN"
"""Environment variable holding the bearer token for the user's FHIR server (optional)."""

_ID_MAX = 64
_ID_CHARS = re.compile(r"[^A-Za-z0-9\-.]")
_FHIR_JSON = "application/fhir+json"


class FhirServerError(RuntimeError):
    """The FHIR server refused or failed a request (a harness error, not an agent's answer)."""


@dataclass(frozen=True)
class LoadedCase:
    """A case as it sits on the server.

    Attributes:
        base_url: the server's base URL, without a trailing slash.
        prefix: the id prefix of this case on this run.
        ids: original ``(type, id)`` of each loaded resource -> the server's id.
        patient: the patient reference the agent is given (``Patient/<server id>``).
        case_refs: ``Type/<server id>`` -> the reference the case itself used (its ``fullUrl``,
            else ``Type/<original id>``), to read what the agent wrote in the case's own terms.
    """

    base_url: str
    prefix: str
    ids: dict[tuple[str, str], str]
    patient: str
    case_refs: dict[str, str] = field(default_factory=dict)

    def as_case_resource(self, resource: dict[str, Any]) -> dict[str, Any]:
        """A resource read from the server, in the case's terms.

        References to the case's resources become what the case wrote, and the server's own
        ``id`` and ``meta`` (versionId, lastUpdated: http.html#create) are removed, so it scores
        as the same answer given as a file.
        """

        def back(node: Any) -> Any:
            if isinstance(node, dict):
                out = {k: back(v) for k, v in node.items()}
                ref = node.get("reference")
                if isinstance(ref, str):
                    tail = ref.split("/_history/")[0].removeprefix(self.base_url + "/")
                    out["reference"] = self.case_refs.get(tail, ref)
                return out
            if isinstance(node, list):
                return [back(item) for item in node]
            return node

        out: dict[str, Any] = back(copy.deepcopy(resource))
        out.pop("id", None)
        out.pop("meta", None)
        return out


@dataclass
class Cleanup:
    """What removing a case did.

    Attributes:
        method: ``"$expunge"`` or ``"DELETE"``.
        removed: ``Type/id`` of each resource removed.
    """

    method: str
    removed: list[str] = field(default_factory=list)


def case_prefix(run_id: str, case_id: str) -> str:
    """The id prefix of one case on one run: ``ge-<run>-<case>-`` with FHIR id characters only.

    Raises:
        ValueError: the prefix leaves no room for a resource id within 64 characters.
    """
    prefix = _ID_CHARS.sub("-", f"ge-{run_id}-{case_id}")[:40] + "-"
    if len(prefix) >= _ID_MAX - 8:
        raise ValueError(f"case prefix {prefix!r} is too long for a FHIR id (64 characters)")
    return prefix


def _server_id(prefix: str, original: str) -> str:
    tail = _ID_CHARS.sub("-", original)
    return (prefix + tail)[:_ID_MAX]


def to_transaction(bundle: dict[str, Any], prefix: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The case's Bundle as a ``transaction`` of ``PUT [type]/[prefixed id]`` entries.

    References to a resource of the case (``urn:uuid:...`` full URLs or ``Type/id``) are rewritten
    to ``Type/<prefixed id>``; a reference to a resource the case does not hold (Synthea's
    Encounter, Practitioner, Organization) cannot be resolved by any server, so it is kept as
    ``display`` text only.

    Args:
        bundle: a FHIR R4 Bundle (any type) whose entries have ``resource.resourceType`` and ``id``.
        prefix: from :func:`case_prefix`.

    Returns:
        The transaction Bundle and the map ``"Type/original id" -> "Type/server id"``.

    Raises:
        ValueError: an entry has no resource id.
    """
    targets: dict[str, str] = {}
    for entry in bundle.get("entry", []):
        resource = entry["resource"]
        rtype, rid = resource["resourceType"], resource.get("id")
        if not rid:
            raise ValueError(f"a {rtype} entry of the case has no id: give every resource an id")
        new = f"{rtype}/{_server_id(prefix, rid)}"
        targets[f"{rtype}/{rid}"] = new
        if entry.get("fullUrl"):
            targets[entry["fullUrl"]] = new
        targets[f"urn:uuid:{rid}"] = new

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            out = {key: rewrite(value) for key, value in node.items()}
            ref = node.get("reference")
            if isinstance(ref, str):
                if ref in targets:
                    out["reference"] = targets[ref]
                elif not ref.startswith("#"):
                    del out["reference"]
                    out.setdefault("display", f"not in the case record: {ref}")
            return out
        if isinstance(node, list):
            return [rewrite(item) for item in node]
        return node

    entries = []
    for entry in bundle.get("entry", []):
        resource = rewrite(copy.deepcopy(entry["resource"]))
        rtype = resource["resourceType"]
        new = targets[f"{rtype}/{resource['id']}"]
        resource["id"] = new.split("/", 1)[1]
        resource.pop("meta", None)
        entries.append({"fullUrl": new, "resource": resource, "request": {"method": "PUT", "url": new}})
    mapping = {k: v for k, v in targets.items() if not k.startswith("urn:uuid:")}
    return {"resourceType": "Bundle", "type": "transaction", "entry": entries}, mapping


class FhirServer:
    """A minimal FHIR R4 REST client for one server (JSON only, bounded timeouts).

    Args:
        base_url: the server's base URL (``http://127.0.0.1:8090/fhir``).
        token: bearer token; defaults to ``$GROUNDEVAL_FHIR_TOKEN`` (none when unset).
        timeout: seconds for each request.
    """

    def __init__(self, base_url: str, *, token: str | None = None, timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._token = token if token is not None else os.environ.get(TOKEN_ENV)
        self._timeout = timeout

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any] | None]:
        """One request; returns the status and the JSON body (None when empty).

        Raises:
            FhirServerError: the server cannot be reached (the URL is named; the token never is).
        """
        url = path if path.startswith("http") else f"{self.base_url}/{path.lstrip('/')}"
        headers = {"Accept": _FHIR_JSON}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = _FHIR_JSON
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read()
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            raise FhirServerError(f"FHIR server {self.base_url} unreachable ({method} {path}): {err}") from None
        return status, (json.loads(raw) if raw.strip() else None)

    def capability_operations(self) -> set[str]:
        """Names of the operations the server's CapabilityStatement lists (system and types)."""
        status, body = self.request("GET", "metadata")
        if status != 200 or not body:
            raise FhirServerError(f"FHIR server {self.base_url}: GET metadata returned {status}")
        names: set[str] = set()
        for rest in body.get("rest", []):
            names.update(op.get("name", "") for op in rest.get("operation", []))
            for resource in rest.get("resource", []):
                names.update(op.get("name", "") for op in resource.get("operation", []))
        return names

    def load_case(self, bundle: dict[str, Any], prefix: str) -> LoadedCase:
        """Load a case as one transaction.

        Raises:
            FhirServerError: the transaction was refused (the OperationOutcome's text is given).
            ValueError: the case has no Patient.
        """
        transaction, mapping = to_transaction(bundle, prefix)
        status, body = self.request("POST", "", transaction)
        if status != 200:
            raise FhirServerError(
                f"FHIR server {self.base_url} refused the case's transaction ({status}): {_outcome_text(body)}"
            )
        patients = [v for k, v in mapping.items() if k.startswith("Patient/")]
        if not patients:
            raise ValueError("the case's Bundle has no Patient: the agent needs a patient reference")
        ids: dict[tuple[str, str], str] = {}
        case_refs: dict[str, str] = {}
        for entry in bundle.get("entry", []):
            rtype, rid = entry["resource"]["resourceType"], entry["resource"]["id"]
            server_ref = mapping[f"{rtype}/{rid}"]
            ids[(rtype, rid)] = server_ref.split("/", 1)[1]
            case_refs[server_ref] = entry.get("fullUrl") or f"{rtype}/{rid}"
        return LoadedCase(self.base_url, prefix, ids, patients[0], case_refs)

    def read_back(self, loaded: LoadedCase) -> dict[str, dict[str, Any]]:
        """Each loaded resource as the server now holds it: ``"Type/original id" -> resource``.

        A resource the server no longer has is absent from the result.
        """
        out: dict[str, dict[str, Any]] = {}
        for (rtype, original), server_id in loaded.ids.items():
            status, body = self.request("GET", f"{rtype}/{server_id}")
            if status == 200 and body:
                out[f"{rtype}/{original}"] = body
        return out

    def written_by_agent(self, loaded: LoadedCase, resource_type: str) -> list[dict[str, Any]]:
        """Resources of ``resource_type`` for the case's patient that the case did not load.

        Searched with ``patient=`` (search.html); all pages are followed.
        """
        loaded_ids = {sid for (rtype, _), sid in loaded.ids.items() if rtype == resource_type}
        found: list[dict[str, Any]] = []
        status, body = self.request("GET", f"{resource_type}?patient={loaded.patient}&_count=100")
        while status == 200 and body:
            for entry in body.get("entry", []):
                resource = entry.get("resource", {})
                if resource.get("id") not in loaded_ids:
                    found.append(resource)
            nxt = [link["url"] for link in body.get("link", []) if link.get("relation") == "next"]
            if not nxt:
                break
            status, body = self.request("GET", nxt[0])
        return found

    def cleanup(self, loaded: LoadedCase, extra: list[str] | None = None) -> Cleanup:
        """Remove what the case loaded and what the agent wrote (``extra``: ``Type/id``).

        Uses ``$expunge`` (instance level, ``expungeDeletedResources``) after ``DELETE`` when the
        server lists the operation, else ``DELETE`` alone. The deletes go as one transaction, so
        references between the case's own resources do not block them (http.html#transaction).

        Raises:
            FhirServerError: the server refused the deletes.
        """
        targets = [f"{rtype}/{sid}" for (rtype, _), sid in loaded.ids.items()] + list(extra or [])
        delete = {
            "resourceType": "Bundle",
            "type": "transaction",
            "entry": [{"request": {"method": "DELETE", "url": target}} for target in targets],
        }
        status, body = self.request("POST", "", delete)
        if status != 200:
            raise FhirServerError(
                f"FHIR server {self.base_url} refused the case's deletes ({status}): {_outcome_text(body)}"
            )
        if "expunge" not in self.capability_operations():
            return Cleanup("DELETE", targets)
        params = {
            "resourceType": "Parameters",
            "parameter": [{"name": "expungeDeletedResources", "valueBoolean": True}],
        }
        for target in targets:
            status, body = self.request("POST", f"{target}/$expunge", params)
            if status != 200:
                raise FhirServerError(
                    f"FHIR server {self.base_url}: $expunge of {target} returned {status}: {_outcome_text(body)}"
                )
        return Cleanup("$expunge", targets)


def _outcome_text(body: dict[str, Any] | None) -> str:
    if not body or body.get("resourceType") != "OperationOutcome":
        return "(no OperationOutcome)"
    return "; ".join(issue.get("diagnostics", issue.get("code", "")) for issue in body.get("issue", []))
