"""A recording proxy in front of the user's FHIR server: the case's token, its patient, and an access log.

Under ``--groundeval-fhir=URL`` the agent is not given the user's server itself but this proxy on
127.0.0.1, which forwards each request to the server (with the server's own token, from the
environment) and answers with the server's reply, after three checks the sandbox also makes:

* the request carries the case's bearer token (else 401, ``WWW-Authenticate: Bearer``, RFC 6750);
* it names no other patient (``patient``/``subject`` parameters, ``Patient/[id]`` reads and
  ``$everything``), and the reply holds no resource of another patient's compartment (a search
  without ``patient=`` on a shared server would return other cases' records): else 403;
* every request is logged as ``AccessLogEntry`` (the sandbox's), with the resources it returned.

Links and ``Location`` headers in replies are rewritten from the server's base to the proxy's, so
paging goes through the proxy too. Standard library only (``http.server`` and ``urllib``), as the
sandbox, for the same reasons (``fhir.sandbox.server``).
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from groundeval.fhir.sandbox.params import PATIENT_PARAMS
from groundeval.fhir.sandbox.server import AccessLogEntry
from groundeval.fhir.sandbox.store import patient_of

__all__ = ["RecordingProxy"]

_FHIR_JSON = "application/fhir+json; charset=utf-8"
_MAX_BODY = 5_000_000


def _outcome(status: int, code: str, text: str) -> bytes:
    body = {"resourceType": "OperationOutcome",
            "issue": [{"severity": "error", "code": code, "diagnostics": text}]}
    return json.dumps(body).encode()


def _returned(body: Any) -> list[dict[str, Any]]:
    if not isinstance(body, dict):
        return []
    if body.get("resourceType") == "Bundle":
        entries = [e for e in body.get("entry") or [] if isinstance(e, dict)]
        return [e["resource"] for e in entries if isinstance(e.get("resource"), dict)]
    if body.get("resourceType") not in (None, "OperationOutcome"):
        return [body]
    return []


class RecordingProxy:
    """One case's proxy to the user's FHIR server (see the module docstring).

    Args:
        upstream: The server's base URL (no trailing slash).
        upstream_token: The server's own bearer token, or None.
        token: The case's bearer token the agent must send.
        patient: ``Patient/<server id>`` the case may read.
        as_case_ref: Maps a server ``Type/id`` to the case's ``Type/id`` for the log.
        timeout: Seconds for each forwarded request.
    """

    def __init__(
        self, upstream: str, *, upstream_token: str | None, token: str, patient: str,
        as_case_ref: Callable[[str], str], timeout: float = 60.0,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.log: list[AccessLogEntry] = []
        self.written: list[tuple[str, str]] = []  # (interaction, server Type/id)
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Silence http.server's stderr log; the access log is kept as data."""

            def _send(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", _FHIR_JSON)
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _record(self, path: str, query: list[tuple[str, str]], status: int, returned: tuple[str, ...] = (),
                        refused: str | None = None) -> None:
                with proxy._lock:
                    proxy.log.append(AccessLogEntry(self.command, path, tuple(query), status, returned, refused))

            def _refuse(self, path: str, query: list[tuple[str, str]], status: int, text: str) -> None:
                refused = "token" if status == 401 else "patient"
                self._record(path, query, status, refused=refused)
                headers = {"WWW-Authenticate": 'Bearer realm="groundeval"'} if status == 401 else None
                self._send(status, _outcome(status, "login" if status == 401 else "forbidden", text), headers)

            def _other_patient(self, path: str, query: list[tuple[str, str]]) -> str | None:
                segments = path.split("/")
                if segments[0] == "Patient" and len(segments) >= 2 and f"Patient/{segments[1]}" != patient:
                    return f"Patient/{segments[1]}"
                for key, value in query:
                    name = key.partition(":")[0]
                    for alt in value.split(","):
                        if name in PATIENT_PARAMS:
                            ref = alt if "/" in alt else f"Patient/{alt}"
                            ref = "/".join(ref.rstrip("/").split("/")[-2:])
                            if ref != patient:
                                return ref
                        elif segments[0] == "Patient" and name == "_id" and f"Patient/{alt}" != patient:
                            return f"Patient/{alt}"
                return None

            def _handle(self) -> None:
                parts = urlsplit(self.path)
                path = parts.path.strip("/")
                query = parse_qsl(parts.query, keep_blank_values=True)
                if path != "fhir" and not path.startswith("fhir/"):
                    self._record(path, query, 404)
                    self._send(404, _outcome(404, "not-found", f"Not a FHIR endpoint: /{path}"))
                    return
                path = path[len("fhir"):].strip("/")
                if path != "metadata" and self.headers.get("Authorization", "") != f"Bearer {token}":
                    self._refuse(path, query, 401, "A valid bearer token is required (Authorization: Bearer TOKEN)")
                    return
                other = self._other_patient(path, query)
                if other is not None:
                    self._refuse(path, query, 403, f"This token grants access to {patient} only, not {other}")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                if length > _MAX_BODY:
                    self._record(path, query, 413)
                    self._send(413, _outcome(413, "too-costly", f"Request body over {_MAX_BODY} bytes"))
                    return
                body = self.rfile.read(length) if length else None
                status, data, headers = proxy._forward(self.command, path, parts.query, body)
                try:
                    parsed = json.loads(data) if data.strip() else None
                except ValueError:
                    parsed = None
                resources = _returned(parsed)
                owners = {o for r in resources if (o := patient_of(r)) is not None and o != patient}
                if owners and self.command == "GET":
                    self._refuse(path, query, 403, f"The reply holds data of another patient ({sorted(owners)[0]}); "
                                 f"search with patient={patient}")
                    return
                refs = tuple(dict.fromkeys(
                    as_case_ref(f"{r.get('resourceType')}/{r.get('id')}") for r in resources if r.get("id")))
                if self.command in ("POST", "PUT", "DELETE") and 200 <= status < 300:
                    target = next((f"{r.get('resourceType')}/{r.get('id')}" for r in resources if r.get("id")), None)
                    if target is None and headers.get("Location"):
                        tail = headers["Location"].split("/_history/")[0].rstrip("/").split("/")
                        target = "/".join(tail[-2:])
                    if target is None and self.command != "POST":
                        target = path
                    if target is not None:
                        interaction = {"POST": "create", "PUT": "update", "DELETE": "delete"}[self.command]
                        with proxy._lock:
                            proxy.written.append((interaction, target))
                self._record(path, query, status, refs)
                local = proxy.base_url
                out = data.replace(proxy.upstream.encode(), local.encode())
                kept = {k: v.replace(proxy.upstream, local) for k, v in headers.items() if k in ("Location", "ETag")}
                self._send(status, out, kept)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        self._upstream_token = upstream_token
        self._timeout = timeout
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/fhir"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="groundeval-fhir-proxy", daemon=True)

    def _forward(self, method: str, path: str, query: str, body: bytes | None) -> tuple[int, bytes, dict[str, str]]:
        url = f"{self.upstream}/{path}" + (f"?{query}" if query else "")
        headers = {"Accept": "application/fhir+json"}
        if body is not None:
            headers["Content-Type"] = "application/fhir+json"
        if self._upstream_token:
            headers["Authorization"] = f"Bearer {self._upstream_token}"
        req = urllib.request.Request(url, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                return resp.status, resp.read(), dict(resp.headers.items())
        except urllib.error.HTTPError as err:
            return err.code, err.read(), dict(err.headers.items())
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            return 502, _outcome(502, "transient", f"the FHIR server could not be reached: {err}"), {}

    def start(self) -> None:
        """Serve from a daemon thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def entries(self) -> list[AccessLogEntry]:
        """A copy of the access log, oldest first."""
        with self._lock:
            return list(self.log)
