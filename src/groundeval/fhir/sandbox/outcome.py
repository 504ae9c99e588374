"""OperationOutcome responses of the sandbox, and the error that carries one.

The status codes and issue codes follow the FHIR R4 spec: http.html ("3.1.0.4 Status codes":
400 bad request or unsupported search parameter, 401/403 authorisation, 404 unknown resource
type or id, 405 unsupported interaction, 409/412 conflicts, 422 unprocessable content) and
operationoutcome.html (``issue.severity`` from ``fatal | error | warning | information``,
``issue.code`` from the IssueType value set: ``not-supported``, ``not-found``, ``invalid``,
``security``, ``login``, ``forbidden``, ``processing``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FhirHttpError", "operation_outcome"]


def operation_outcome(code: str, diagnostics: str, severity: str = "error") -> dict[str, Any]:
    """An R4 OperationOutcome with one issue.

    Args:
        code: An IssueType code (operationoutcome.html), e.g. ``not-found``.
        diagnostics: Human-readable text for ``issue.diagnostics``.
        severity: ``fatal | error | warning | information``.

    Returns:
        The resource as a dict.
    """
    return {
        "resourceType": "OperationOutcome",
        "issue": [{"severity": severity, "code": code, "diagnostics": diagnostics}],
    }


class FhirHttpError(Exception):
    """A request the sandbox answers with an HTTP error status and an OperationOutcome.

    Attributes:
        status: The HTTP status (http.html "Status codes").
        code: The OperationOutcome issue code (operationoutcome.html).
        diagnostics: What went wrong, for the agent to read.
    """

    def __init__(self, status: int, code: str, diagnostics: str) -> None:
        super().__init__(f"{status} {code}: {diagnostics}")
        self.status = status
        self.code = code
        self.diagnostics = diagnostics

    def outcome(self) -> dict[str, Any]:
        """The OperationOutcome body of this error."""
        return operation_outcome(self.code, self.diagnostics)
