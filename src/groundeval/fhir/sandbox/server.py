"""The sandbox's HTTP layer: routing, the bearer token, the patient scope and the access log.

Interactions and status codes follow the R4 spec's http.html: ``read`` (200, 404 for an unknown
type or id), ``search-type`` (GET, 200 with a searchset Bundle), ``create`` (POST, 201 with a
``Location`` of ``[base]/[type]/[id]/_history/[vid]``), ``update`` (PUT, 200, or 201 when it
creates; 400 when the body's id differs from the URL's), ``delete`` (200 with an
OperationOutcome; a later read is 410 Gone), ``capabilities`` (``GET /metadata``), 405 for an
interaction not supported; every error body is an OperationOutcome
(operationoutcome.html). A request without the case's bearer token is 401 (with
``WWW-Authenticate: Bearer``, RFC 6750); a request for another patient's data is 403. Both are
refused, logged and counted.

Why the standard library's ``ThreadingHTTPServer`` rather than starlette + uvicorn: a sandbox is
started and stopped once per case, from a worker thread of the executor, at any concurrency;
``http.server`` binds port 0 and serves from a thread in milliseconds, with no event loop per case
and no dependency outside the core install (starlette and uvicorn arrive only with HealthChain's
extra, and anyio's pytest plugin would then load in every user's pytest run). The sandbox's
work per request is a dict walk, so an async server buys nothing here.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from groundeval.fhir.sandbox.capability import WRITABLE, capability_statement
from groundeval.fhir.sandbox.outcome import FhirHttpError, operation_outcome
from groundeval.fhir.sandbox.params import PATIENT_PARAMS, RESOURCE_TYPES
from groundeval.fhir.sandbox.search import everything, search
from groundeval.fhir.sandbox.store import ResourceStore, patient_of

__all__ = ["AccessLogEntry", "SandboxServer"]

FHIR_JSON = "application/fhir+json; charset=utf-8"
_MAX_BODY = 5_000_000


@dataclass(frozen=True, slots=True)
class AccessLogEntry:
    """One request the sandbox answered.

    Attributes:
        method: ``GET``, ``POST``, ``PUT``...
        path: The path below the base (``Observation``, ``Patient/123``), query excluded.
        query: The query's (name, value) pairs.
        status: The HTTP status returned.
        returned: ``Type/id`` of every resource in the response (a read's one, a Bundle's entries).
        refused: ``token`` (401) or ``patient`` (403) when the request was refused, else None.
    """

    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    status: int
    returned: tuple[str, ...] = ()
    refused: str | None = None


@dataclass
class _State:
    store: ResourceStore
    token: str | None
    patient: str | None
    base_url: str = ""
    log: list[AccessLogEntry] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _validate(resource: dict[str, Any]) -> None:
    """Parse ``resource`` with fhir.resources' R4B model of its type.

    R4B differs from R4 in none of the elements these types carry. Raises ``FhirHttpError`` 422
    (http.html: the content violates the resource's rules) with the validation errors.
    """
    from fhir.resources.R4B import get_fhir_model_class
    from pydantic import ValidationError

    try:
        get_fhir_model_class(resource["resourceType"]).model_validate(resource)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise FhirHttpError(422, "processing", f"{resource['resourceType']} is not valid FHIR: {problems}") from exc


class _Handler(BaseHTTPRequestHandler):
    state: _State  # set on the per-sandbox subclass
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence http.server's stderr log; the access log is kept as data."""

    # -- plumbing -------------------------------------------------------------------------------
    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", FHIR_JSON)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _record(
        self,
        path: str,
        query: list[tuple[str, str]],
        status: int,
        returned: tuple[str, ...] = (),
        refused: str | None = None,
    ) -> None:
        with self.state.lock:
            self.state.log.append(AccessLogEntry(self.command, path, tuple(query), status, returned, refused))

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        path = parts.path.strip("/")
        query = parse_qsl(parts.query, keep_blank_values=True)
        try:
            if path != "fhir" and not path.startswith("fhir/"):
                raise FhirHttpError(
                    404, "not-found", f"Not a FHIR endpoint: /{path}; the base is {self.state.base_url}"
                )
            path = path[len("fhir") :].strip("/")
            if path == "metadata" and self.command == "GET":
                self._record(path, query, 200)
                self._send(200, capability_statement(self.state.base_url))
                return
            self._check_token()
            status, body, headers, returned = self._route(path, query)
        except FhirHttpError as err:
            refused = {401: "token", 403: "patient"}.get(err.status)
            headers = {"WWW-Authenticate": 'Bearer realm="groundeval"'} if err.status == 401 else None
            self._record(path, query, err.status, refused=refused)  # logged before the client can read
            self._send(err.status, err.outcome(), headers)
            return
        self._record(path, query, status, returned)
        self._send(status, body, headers)

    def _check_token(self) -> None:
        if self.state.token is None:
            return
        if self.headers.get("Authorization", "") != f"Bearer {self.state.token}":
            raise FhirHttpError(401, "login", "A valid bearer token is required (Authorization: Bearer TOKEN)")

    def _check_patient(self, ref: str | None) -> None:
        own = self.state.patient
        if own is not None and ref is not None and ref != own:
            raise FhirHttpError(403, "forbidden", f"This token grants access to {own} only, not {ref}")

    def _body(self, type_: str) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            raise FhirHttpError(413, "too-costly", f"Request body over {_MAX_BODY} bytes")
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except ValueError as exc:
            raise FhirHttpError(400, "structure", f"The body is not JSON: {exc}") from exc
        if not isinstance(body, dict) or body.get("resourceType") != type_:
            raise FhirHttpError(
                400,
                "invalid",
                f"The body must be a {type_} resource "
                f"(got resourceType {body.get('resourceType') if isinstance(body, dict) else None!r})",
            )
        return body

    # -- interactions ---------------------------------------------------------------------------
    def _route(
        self, path: str, query: list[tuple[str, str]]
    ) -> tuple[int, dict[str, Any], dict[str, str] | None, tuple[str, ...]]:
        segments = path.split("/") if path else []
        if not segments:
            raise FhirHttpError(405, "not-supported", "Batch/transaction at the base is not supported")
        type_ = segments[0]
        if type_ not in RESOURCE_TYPES and type_ not in WRITABLE:
            raise FhirHttpError(
                404,
                "not-supported",
                f"Unknown resource type {type_!r}; this server supports "
                f"{', '.join(sorted({*RESOURCE_TYPES, *WRITABLE}))}",
            )
        state = self.state
        if self.command == "GET" and len(segments) == 1:
            if type_ not in RESOURCE_TYPES:
                raise FhirHttpError(405, "not-supported", f"search-type is not supported on {type_}")
            self._check_search_scope(type_, query)
            lenient = "handling=lenient" in self.headers.get("Prefer", "")
            result = search(state.store, type_, query, base_url=state.base_url, lenient=lenient)
            return 200, result.bundle, None, result.returned
        if self.command == "GET" and len(segments) == 2:
            if type_ == "Patient":
                self._check_patient(f"Patient/{segments[1]}")
            res = state.store.get(type_, segments[1])
            if res is None and state.store.is_deleted(type_, segments[1]):
                raise FhirHttpError(410, "deleted", f"Resource {type_}/{segments[1]} was deleted")
            if res is None:
                raise FhirHttpError(404, "not-found", f"Resource {type_}/{segments[1]} is not known")
            self._check_patient(patient_of(res))
            return 200, res, {"ETag": f'W/"{res["meta"]["versionId"]}"'}, (f"{type_}/{segments[1]}",)
        if self.command == "GET" and len(segments) == 3 and type_ == "Patient" and segments[2] == "$everything":
            self._check_patient(f"Patient/{segments[1]}")
            if state.store.get("Patient", segments[1]) is None:
                raise FhirHttpError(404, "not-found", f"Resource Patient/{segments[1]} is not known")
            result = everything(state.store, segments[1], query, base_url=state.base_url)
            return 200, result.bundle, None, result.returned
        if self.command == "POST" and len(segments) == 1:
            return self._write(type_, None)
        if self.command == "PUT" and len(segments) == 2:
            return self._write(type_, segments[1])
        if self.command == "DELETE" and len(segments) == 2 and type_ in WRITABLE:
            res = state.store.get(type_, segments[1])
            if res is None:
                raise FhirHttpError(404, "not-found", f"Resource {type_}/{segments[1]} is not known")
            self._check_patient(patient_of(res))
            state.store.delete(type_, segments[1])
            done = operation_outcome("informational", f"Deleted {type_}/{segments[1]}", "information")
            return 200, done, None, ()
        raise FhirHttpError(405, "not-supported", f"{self.command} /{path} is not a supported interaction")

    def _check_search_scope(self, type_: str, query: list[tuple[str, str]]) -> None:
        for key, value in query:
            name = key.partition(":")[0]
            for alt in value.split(","):
                if name in PATIENT_PARAMS:
                    ref = alt if "/" in alt else f"Patient/{alt}"
                    self._check_patient("/".join(ref.rstrip("/").split("/")[-2:]))
                elif type_ == "Patient" and name == "_id":
                    self._check_patient(f"Patient/{alt}")

    def _write(self, type_: str, id_: str | None) -> tuple[int, dict[str, Any], dict[str, str], tuple[str, ...]]:
        if type_ not in WRITABLE:
            raise FhirHttpError(405, "not-supported", f"{'update' if id_ else 'create'} is not supported on {type_}")
        body = self._body(type_)
        if id_ is not None and body.get("id") != id_:
            raise FhirHttpError(
                400, "invalid", f"The body's id {body.get('id')!r} must equal the URL's id {id_!r} (http.html update)"
            )
        self._check_patient(patient_of(body))
        _validate(body)
        if id_ is None:
            stored, created = self.state.store.create(body), True
        else:
            stored, created = self.state.store.update(body)
        ref = f"{type_}/{stored['id']}"
        vid = stored["meta"]["versionId"]
        headers = {"Location": f"{self.state.base_url}/{ref}/_history/{vid}", "ETag": f'W/"{vid}"'}
        return (201 if created else 200), stored, headers, (ref,)

    def do_GET(self) -> None:
        """Answer a GET (read, search, $everything, metadata)."""
        self._handle()

    def do_POST(self) -> None:
        """Answer a POST (create)."""
        self._handle()

    def do_PUT(self) -> None:
        """Answer a PUT (update)."""
        self._handle()

    def do_DELETE(self) -> None:
        """Answer a DELETE (delete; 405 on a type that is not writable)."""
        self._handle()

    def do_PATCH(self) -> None:
        """PATCH is not supported: 405."""
        self._handle()


class SandboxServer:
    """A running HTTP server for one store on 127.0.0.1 (an ephemeral port).

    Args:
        store: The case's resources.
        token: The bearer token every request but ``/metadata`` must carry, or None for none.
        patient: ``Patient/id`` the token grants, or None for no patient scope.
    """

    def __init__(self, store: ResourceStore, *, token: str | None, patient: str | None) -> None:
        self._state = _State(store, token, patient)
        handler = type("SandboxHandler", (_Handler,), {"state": self._state})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._state.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/fhir"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="groundeval-fhir-sandbox",
            daemon=True,
        )

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/fhir``."""
        return self._state.base_url

    @property
    def log(self) -> list[AccessLogEntry]:
        """A copy of the access log, oldest first."""
        with self._state.lock:
            return list(self._state.log)

    def start(self) -> None:
        """Serve from a daemon thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
