"""FHIR REST tools for a tool-using agent: search, read, create and update against one case's FHIR server.

Four LangChain tools, built per case by :func:`make_rest_tools` from the case's ``FhirEndpoint``
(base URL, patient reference, bearer token), over fhirpy's synchronous client
(``fhirpy.SyncFHIRClient``, on ``requests``):

* ``fhir_search(resource_type, params=None, max_resources=100)``: ``GET [base]/[type]?params``
  (https://hl7.org/fhir/R4/http.html#search), following the searchset's ``next`` links
  (https://hl7.org/fhir/R4/search.html#count) until the last page or ``max_resources``
  resources;
* ``fhir_read(resource_type, resource_id)``: ``GET [base]/[type]/[id]`` (http.html#read);
* ``fhir_create(resource)``: ``POST [base]/[type]`` (http.html#create), the write task only;
* ``fhir_update(resource)``: ``PUT [base]/[type]/[id]`` (http.html#update), the write task only.

Every tool returns a JSON-safe dict, as the in-process read tools do (``fhir.read_tools``), so the
tool-call trace has the same shape: ``{"ok": true, ...}``, or ``{"ok": false, "status", "error",
"issues"}`` when the server answered 4xx/5xx (``status`` the HTTP status; ``issues`` the
OperationOutcome's ``severity``/``code``/``diagnostics``, https://hl7.org/fhir/R4/operationoutcome.html).
A refused request is the model's to read and handle, never an exception into the agent loop.
A server that cannot be reached at all (connection refused, no answer within ``timeout_s``) is
``InfraError``: the case ends as ``infra_error``, it is not shown to the model.

The bearer token is sent as ``Authorization: Bearer <token>`` on every request and appears in no
result, error or log line (``_scrub`` removes it from any text a tool returns, as a second guard).
fhirpy is imported on first use (the ``fhir-client`` extra).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from groundeval.agent_io import FhirEndpoint
from groundeval.errors import InfraError
from groundeval.extras import require_extra

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

__all__ = ["MAX_RESOURCES", "READ_REST_TOOLS", "WRITE_REST_TOOLS", "RestTools", "make_rest_tools"]

READ_REST_TOOLS: tuple[str, ...] = ("fhir_search", "fhir_read")
"""The read tools, in the order :func:`make_rest_tools` returns them."""

WRITE_REST_TOOLS: tuple[str, ...] = ("fhir_create", "fhir_update")
"""Offered after ``READ_REST_TOOLS`` on a task that writes (the write task)."""

MAX_RESOURCES = 1000
"""The most resources one ``fhir_search`` call gathers over its pages, whatever the model asks for."""

DEFAULT_TIMEOUT_S = 60.0
"""Seconds one HTTP request may take before the server counts as unreachable."""


def _issues(body: str) -> list[dict[str, Any]]:
    """The OperationOutcome issues (``severity``, ``code``, ``diagnostics``) in a response body, or []."""
    try:
        data = json.loads(body)
    except ValueError:
        return []
    if not isinstance(data, Mapping) or data.get("resourceType") != "OperationOutcome":
        return []
    return [{k: i[k] for k in ("severity", "code", "diagnostics") if k in i}
            for i in data.get("issue") or [] if isinstance(i, Mapping)]


class RestTools:
    """The REST tools' implementations over one case's FHIR endpoint (plain methods, JSON-safe dicts out).

    Args:
        endpoint: The case's FHIR base URL, patient and bearer token (``AgentRequest.fhir``).
        case_id: For messages.
        timeout_s: Seconds one HTTP request may take (``requests``' timeout).

    Raises:
        ConfigError: fhirpy is not installed (the ``fhir-client`` extra).
    """

    def __init__(self, endpoint: FhirEndpoint, case_id: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        require_extra("fhir-client", "fhirpy", "the FHIR REST tools")
        from fhirpy import SyncFHIRClient

        self.base_url = endpoint.base_url.rstrip("/")
        self.patient = endpoint.patient
        self.case_id = case_id
        self._token = endpoint.token
        self._statuses: list[int] = []  # each response's status, as the requests hook sees it
        self.client = SyncFHIRClient(
            self.base_url,
            authorization=f"Bearer {endpoint.token}" if endpoint.token else None,
            requests_config={"timeout": timeout_s, "hooks": {"response": [self._seen]}},
        )

    def _seen(self, response: Any, *args: Any, **kwargs: Any) -> None:
        self._statuses.append(int(response.status_code))

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "[token]") if self._token else text

    def _call(self, what: str, fn: Callable[[], Any]) -> tuple[Any, dict[str, Any] | None]:
        """Run one request; ``(data, None)``, or ``(None, error dict)`` when the server refused it.

        Raises:
            InfraError: The server could not be reached or did not answer in time.
        """
        import requests
        from fhirpy.base.exceptions import BaseFHIRError

        before = len(self._statuses)
        try:
            return fn(), None
        except BaseFHIRError as exc:
            status = self._statuses[-1] if len(self._statuses) > before else None
            body = self._scrub(exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc))
            issues = _issues(body)
            parsed = getattr(exc, "resource", None)
            if isinstance(parsed, Mapping):  # fhirpy parsed the OperationOutcome
                issues = _issues(json.dumps(parsed)) or issues
            text = "; ".join(str(i.get("diagnostics") or i.get("code")) for i in issues) or body[:500]
            return None, {"ok": False, "status": status, "error": f"{what} answered {status}: {text}",
                          "issues": issues}
        except requests.RequestException as exc:
            raise InfraError(
                f"{self.case_id}: the case's FHIR server {self.base_url} could not be reached during {what} "
                f"({type(exc).__name__}: {self._scrub(str(exc))})",
                details={"base_url": self.base_url, "request": what},
            ) from None

    def search(self, resource_type: str, params: Mapping[str, Any] | None = None,
               max_resources: int = 100) -> dict[str, Any]:
        """``GET [base]/[resource_type]?params``, the ``next`` pages followed.

        Args:
            resource_type: A FHIR resource type, e.g. ``"MedicationRequest"``.
            params: Search parameters, name -> value (a list repeats the parameter: AND), e.g.
                ``{"patient": "Patient/1", "status": "active", "_include": "MedicationRequest:medication"}``.
            max_resources: Stop following ``next`` once this many resources were gathered (1 to
                ``MAX_RESOURCES``).

        Returns:
            ``{"ok": true, "resource_type", "total" (the server's ``Bundle.total`` or None),
            "count", "pages", "complete", "entries": [{"fullUrl", "search_mode", "resource"}]}``;
            ``complete`` is false when pages were left (narrow the search or raise
            ``max_resources``). ``{"ok": false, ...}`` when the server refused a page.

        Raises:
            InfraError: The server could not be reached.
        """
        name = resource_type.strip() if isinstance(resource_type, str) else ""
        if not name:
            return {"ok": False, "error": "resource_type is empty; give a FHIR type such as 'MedicationRequest'"}
        limit = max(1, min(int(max_resources), MAX_RESOURCES))
        query = {str(k): ([str(x) for x in v] if isinstance(v, list | tuple) else str(v))
                 for k, v in (params or {}).items()}
        bundle, error = self._call(f"GET {name}", lambda: self.client.execute(name, method="get", params=query))
        entries: list[dict[str, Any]] = []
        pages = 0
        total = None
        while bundle is not None:
            pages += 1
            total = bundle.get("total", total)
            for entry in bundle.get("entry") or []:
                item: dict[str, Any] = {"resource": dict(entry.get("resource") or {})}
                if entry.get("fullUrl"):
                    item = {"fullUrl": str(entry["fullUrl"]), **item}
                mode = (entry.get("search") or {}).get("mode")
                if mode:
                    item["search_mode"] = mode
                entries.append(item)
            link = next((lk.get("url") for lk in bundle.get("link") or [] if lk.get("relation") == "next"), None)
            if not link or len(entries) >= limit:
                break
            bundle, error = self._call(f"GET {name} (next page)", functools.partial(self._page, link))
        if error is not None:
            return error
        complete = bundle is not None and not any(lk.get("relation") == "next" for lk in bundle.get("link") or [])
        return {"ok": True, "resource_type": name, "total": total, "count": len(entries), "pages": pages,
                "complete": complete, "entries": json.loads(json.dumps(entries, default=str))}

    def _page(self, url: str) -> Any:
        """``GET`` a searchset's ``next`` link (fhirpy refuses a URL outside the base URL)."""
        return self.client.execute(url, method="get")

    def read(self, resource_type: str, resource_id: str) -> dict[str, Any]:
        """``GET [base]/[resource_type]/[resource_id]``.

        Returns:
            ``{"ok": true, "resource"}`` or ``{"ok": false, "status", "error", "issues"}`` (404 for
            an unknown id, 410 for a deleted one).

        Raises:
            InfraError: The server could not be reached.
        """
        kind = resource_type.strip() if isinstance(resource_type, str) else ""
        ident = resource_id.strip() if isinstance(resource_id, str) else ""
        if "/" in ident and not kind:
            kind, _, ident = ident.partition("/")
        if not kind or not ident:
            return {"ok": False, "error": "give resource_type and resource_id, e.g. 'Medication' and '123'"}
        data, error = self._call(f"GET {kind}/{ident}",
                                 lambda: self.client.execute(f"{kind}/{ident}", method="get"))
        return error or {"ok": True, "resource": json.loads(json.dumps(data, default=str))}

    def _write(self, resource: Any, method: str) -> dict[str, Any]:
        if isinstance(resource, str):
            try:
                resource = json.loads(resource)
            except ValueError as exc:
                return {"ok": False, "error": f"resource is not JSON: {exc}"}
        if not isinstance(resource, Mapping) or not resource.get("resourceType"):
            return {"ok": False, "error": "resource must be a FHIR resource as a JSON object with a resourceType"}
        kind = str(resource["resourceType"])
        if method == "put" and not resource.get("id"):
            return {"ok": False, "error": "fhir_update needs the resource's id (PUT [base]/[type]/[id])"}
        path = kind if method == "post" else f"{kind}/{resource['id']}"
        data, error = self._call(f"{method.upper()} {path}",
                                 lambda: self.client.execute(path, method=method, data=dict(resource)))
        status = self._statuses[-1] if self._statuses else None
        return error or {"ok": True, "status": status, "resource": json.loads(json.dumps(data, default=str))}

    def create(self, resource: Any) -> dict[str, Any]:
        """``POST [base]/[resourceType]`` with ``resource`` (its ``id``, if any, is the server's to replace).

        Returns:
            ``{"ok": true, "status" (201), "resource" (as stored, with its new id)}`` or the error dict
            (422 with the OperationOutcome's issues for an invalid resource).

        Raises:
            InfraError: The server could not be reached.
        """
        return self._write(resource, "post")

    def update(self, resource: Any) -> dict[str, Any]:
        """``PUT [base]/[resourceType]/[id]`` with ``resource``.

        Returns:
            ``{"ok": true, "status", "resource"}`` or the error dict.

        Raises:
            InfraError: The server could not be reached.
        """
        return self._write(resource, "put")


_DESCRIPTIONS = {
    "fhir_search": (
        "Search the patient's FHIR R4 server: GET [base]/{resource_type}?{params}. params maps FHIR search "
        "parameter names to values, e.g. {\"patient\": \"Patient/123\", \"status\": \"active\", \"_include\": "
        "\"MedicationRequest:medication\"} or {\"patient\": \"Patient/123\", \"code\": \"http://loinc.org|4548-4\", "
        "\"_sort\": \"-date\"}; a list value repeats the parameter. Pages are followed up to max_resources. "
        "Returns {ok, total, count, complete, entries: [{fullUrl, search_mode, resource}]}, or {ok: false, "
        "status, error, issues} with the server's OperationOutcome when it refuses the search."
    ),
    "fhir_read": (
        "Read one resource: GET [base]/{resource_type}/{resource_id} (e.g. 'Medication', 'abc'). Returns "
        "{ok, resource}, or {ok: false, status, error, issues} (404 when there is no such resource)."
    ),
    "fhir_create": (
        "Create a resource on the FHIR server: POST [base]/{resourceType} with the resource as FHIR R4 JSON. "
        "Returns {ok, status, resource} with the id the server gave it, or {ok: false, status, error, issues} "
        "with the server's OperationOutcome (422 when the resource is invalid: fix it and create again)."
    ),
    "fhir_update": (
        "Replace a resource on the FHIR server: PUT [base]/{resourceType}/{id} with the whole resource (id "
        "included) as FHIR R4 JSON. Returns {ok, status, resource} or {ok: false, status, error, issues}."
    ),
}


def _guarded(fn: Callable[..., dict[str, Any]], scrub: Callable[[str], str]) -> Callable[..., dict[str, Any]]:
    """Any exception but ``InfraError`` becomes an error value (the agent loop must not see it)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return fn(*args, **kwargs)
        except InfraError:
            raise
        except Exception as exc:
            return {"ok": False, "error": scrub(f"{type(exc).__name__}: {exc}")}

    return run


def make_rest_tools(
    endpoint: FhirEndpoint, case_id: str, *, writes: bool = False, timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[BaseTool]:
    """The FHIR REST tools for one case, as LangChain ``StructuredTool`` objects.

    Args:
        endpoint: The case's FHIR endpoint (``AgentRequest.fhir``).
        case_id: For messages.
        writes: Also offer ``fhir_create`` and ``fhir_update`` (the write task).
        timeout_s: Seconds one HTTP request may take.

    Returns:
        ``fhir_search``, ``fhir_read`` (and ``fhir_create``, ``fhir_update`` with ``writes``), in
        that order. Each returns a dict (see the module docstring).

    Raises:
        ConfigError: fhirpy or LangChain is not installed.
    """
    from langchain_core.tools import StructuredTool

    impl = RestTools(endpoint, case_id, timeout_s)

    def fhir_search(resource_type: str, params: dict[str, str | list[str]] | None = None,
                    max_resources: int = 100) -> dict[str, Any]:
        return impl.search(resource_type, params, max_resources)

    def fhir_read(resource_type: str, resource_id: str) -> dict[str, Any]:
        return impl.read(resource_type, resource_id)

    def fhir_create(resource: dict[str, Any]) -> dict[str, Any]:
        return impl.create(resource)

    def fhir_update(resource: dict[str, Any]) -> dict[str, Any]:
        return impl.update(resource)

    chosen: list[Callable[..., dict[str, Any]]] = [fhir_search, fhir_read]
    if writes:
        chosen += [fhir_create, fhir_update]
    return [StructuredTool.from_function(_guarded(fn, impl._scrub), name=fn.__name__,
                                         description=_DESCRIPTIONS[fn.__name__]) for fn in chosen]
