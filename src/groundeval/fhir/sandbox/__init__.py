"""A FHIR R4 server per case: groundeval's test double of a FHIR server, on 127.0.0.1.

The public entry point is ``serve(resources, *, token, patient=None)``, a context manager that
yields the base URL (``http://127.0.0.1:PORT/fhir``) of a server holding ``resources``; the
``FhirSandbox`` class does the same and also exposes the access log and what was written.

What it serves (the CapabilityStatement at ``GET [base]/metadata`` lists exactly this):
``read`` and ``search-type`` on Patient, Medication, MedicationRequest, Condition,
AllergyIntolerance, Observation and Immunization (``params.PARAMS``), ``_count``, ``_sort``,
``_include=MedicationRequest:medication``, searchset Bundles with ``total`` and ``next`` links,
``Patient/[id]/$everything``, and ``create``/``update`` for the clinical types. Behaviour and
status codes follow hl7.org/fhir/R4 http.html, search.html, bundle.html, operationoutcome.html
and patient-operation-everything.html (each module cites its page).

Library choice: resources are served as the case's plain dicts (the truth code reads the same
dicts, so served and scored data cannot differ) and a write is parsed with fhir.resources' R4B
model of its type before it is stored. Neither fhir.resources nor HealthChain parses FHIR search
parameters or serves the REST API (HealthChain's gateway is a client and a CDS Hooks/SOAP
gateway, not a FHIR server), so the search semantics are implemented here, from search.html.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from groundeval.fhir.sandbox.capability import capability_statement
from groundeval.fhir.sandbox.server import AccessLogEntry, SandboxServer
from groundeval.fhir.sandbox.store import ResourceStore, Write

__all__ = ["AccessLogEntry", "FhirSandbox", "Write", "capability_statement", "new_token", "serve"]


def new_token() -> str:
    """A fresh random bearer token (URL-safe, 32 bytes of entropy)."""
    return secrets.token_urlsafe(32)


class FhirSandbox:
    """One case's FHIR server: start it, hand ``base_url`` and ``token`` to the agent, stop it.

    Args:
        resources: A Bundle, or resources (dicts with ``resourceType`` and ``id``), or Bundle
            entries. Deep-copied: the caller's dicts are never changed.
        token: The bearer token requests must carry; None serves without one.
        patient: ``Patient/id`` the token grants (requests for another patient are 403), or None.

    Raises:
        ValueError: A resource without ``resourceType``/``id``, or a duplicated ``Type/id``.
    """

    def __init__(
        self, resources: Iterable[dict[str, Any]] | dict[str, Any], *, token: str | None, patient: str | None = None
    ) -> None:
        self.token = token
        self.patient = patient
        self.store = ResourceStore(resources)
        self._server = SandboxServer(self.store, token=token, patient=patient)

    @property
    def base_url(self) -> str:
        """The FHIR base, ``http://127.0.0.1:PORT/fhir``."""
        return self._server.base_url

    @property
    def access_log(self) -> list[AccessLogEntry]:
        """Every request answered so far, oldest first (``/metadata`` included)."""
        return self._server.log

    @property
    def refused(self) -> list[AccessLogEntry]:
        """The requests refused for a wrong token (401) or another patient (403)."""
        return [e for e in self._server.log if e.refused]

    @property
    def writes(self) -> list[Write]:
        """Every create and update accepted, in order."""
        return list(self.store.writes)

    def __enter__(self) -> FhirSandbox:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()


@contextmanager
def serve(
    resources: Iterable[dict[str, Any]] | dict[str, Any], *, token: str | None, patient: str | None = None
) -> Iterator[str]:
    """Serve ``resources`` as a FHIR R4 server on 127.0.0.1 for the ``with`` block.

    Args:
        resources: As ``FhirSandbox``.
        token: The bearer token requests must carry (``Authorization: Bearer TOKEN``), or None.
        patient: ``Patient/id`` the token is scoped to, or None.

    Yields:
        The base URL, ``http://127.0.0.1:PORT/fhir``; the server stops (and its state is gone)
        when the block exits.
    """
    with FhirSandbox(resources, token=token, patient=patient) as sandbox:
        yield sandbox.base_url
