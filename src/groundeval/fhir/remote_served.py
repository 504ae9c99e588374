"""One case served by the user's FHIR server (``--groundeval-fhir=URL``): load, proxy, read back, clean up.

``served_on_server`` is the URL half of ``fhir.serving.FhirServingAgent``: the record is loaded as
one transaction under ids of the case's own (``remote_server.FhirServer.load_case``), the agent
reaches it through a ``RecordingProxy`` (the case's token and patient, an access log), and when the
agent stops, what it created or updated is read back in the case's own terms and everything the
case created is removed (``$expunge`` where the server lists it, else ``DELETE``: ``cleanup`` says
which). The server's own token comes from ``GROUNDEVAL_FHIR_TOKEN`` and is never recorded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from groundeval.agent_io import FhirEndpoint
from groundeval.errors import RunStopError

__all__ = ["served_on_server"]


@contextmanager
def served_on_server(
    url: str, tag: str, case_id: str, record: Mapping[str, Any], patient: str,
) -> Iterator[tuple[FhirEndpoint, Any]]:
    """Load ``record`` onto the server at ``url``, yield the proxy's endpoint and ``finish() -> Served``.

    Args:
        url: The user's FHIR base URL.
        tag: This call's unique part of the ids (process tag and counter).
        case_id: The case (part of the ids, and of messages).
        record: The Bundle to load.
        patient: ``Patient/<id>`` as the case holds it (the facts speak of it, not of the server id).

    Raises:
        RunStopError: The server cannot be reached or refused the case's transaction.
    """
    import os

    from groundeval.fhir.recording_proxy import RecordingProxy
    from groundeval.fhir.remote_server import TOKEN_ENV, FhirServer, FhirServerError, case_prefix
    from groundeval.fhir.sandbox import new_token
    from groundeval.fhir.serving import Served

    server = FhirServer(url)
    try:
        loaded = server.load_case(dict(record), case_prefix(tag, case_id))
    except (FhirServerError, ValueError) as exc:
        raise RunStopError(
            f"{case_id}: --groundeval-fhir={url}: the case could not be loaded: {exc}; check that the server is up "
            f"and accepts transactions, and {TOKEN_ENV} if it needs a token"
        ) from exc
    back = {f"{rtype}/{sid}": f"{rtype}/{orig}" for (rtype, orig), sid in loaded.ids.items()}
    token = new_token()
    proxy = RecordingProxy(url, upstream_token=os.environ.get(TOKEN_ENV), token=token, patient=loaded.patient,
                           as_case_ref=lambda ref: back.get(ref, ref))
    done: list[Served] = []

    def finish() -> Served:
        if done:
            return done[0]
        proxy.stop()
        written, extra, writes = [], [], []
        for interaction, ref in proxy.written:
            writes.append([interaction, back.get(ref, ref)])
            if ref not in back and ref not in extra:
                extra.append(ref)
        for ref in dict.fromkeys(ref for interaction, ref in proxy.written if interaction != "delete"):
            try:
                status, body = server.request("GET", ref)
            except FhirServerError:
                continue
            if status == 200 and body:
                written.append(loaded.as_case_resource(body))
        try:
            cleanup: str | None = server.cleanup(loaded, extra).method
        except FhirServerError as exc:
            cleanup = f"failed: {exc}"
        calls = [[e.method, _target(e.path, e.query), e.status, list(e.returned), e.refused] for e in proxy.entries()]
        done.append(Served("server", patient, calls, writes, written, cleanup))
        return done[0]

    try:
        proxy.start()
    except OSError as exc:
        server.cleanup(loaded)
        raise RunStopError(f"{case_id}: the recording proxy for {url} could not start: {exc}") from exc
    try:
        yield FhirEndpoint(base_url=proxy.base_url, patient=loaded.patient, token=token), finish
    finally:
        finish()


def _target(path: str, query: tuple[tuple[str, str], ...]) -> str:
    from urllib.parse import urlencode

    return f"{path}?{urlencode(query)}" if query else path
