"""A case's tools, as the task's request context calls for them (shared by every way tools are handed over).

The in-process LangGraph agents and the per-case MCP server (``groundeval.mcp_server``) build the same
LangChain tools here, so a tool's name, description and JSON schema are the same whichever way an agent
reaches it:

* ``context["bundle"]`` (a FHIR Bundle: extraction, reconcile, labs): the read-only tools of
  ``fhir.read_tools.make_read_tools`` over that Bundle;
* else ``context["patient_reference"]`` (the write task): ``tasks.write.tools.make_tools`` bound
  to the patient.

LangChain, HealthChain and the catalog are imported on first use only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from groundeval.errors import AgentError

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

__all__ = ["ReadToolsFactory", "ToolsFactory", "bundle_tools", "case_tools"]

ToolsFactory = Callable[[str], "list[BaseTool]"]
"""Write tools: ``patient_reference -> tools``."""

ReadToolsFactory = Callable[[dict[str, Any]], "list[BaseTool]"]
"""Read tools: ``bundle (FHIR JSON) -> tools``."""


def bundle_tools(
    case_id: str, context: Mapping[str, Any], catalog: Callable[[], Any], who: str,
    read_tools: ReadToolsFactory | None = None,
) -> list[BaseTool]:
    """The read tools over ``context["bundle"]``.

    Args:
        case_id: For messages.
        context: The request context.
        catalog: Returns the site catalog (called only when the default tools are built).
        who: What needs the tools, for messages (``"the 'langgraph' agent"``).
        read_tools: ``bundle -> tools`` instead of ``make_read_tools`` (tests).

    Raises:
        AgentError: The context holds no Bundle, or it is not valid FHIR R4B (``details["issues"]``).
    """
    bundle = context.get("bundle")
    if not isinstance(bundle, dict):
        raise AgentError(
            f"{case_id}: the request context has no FHIR Bundle (context['bundle']); {who} reads one "
            "through its tools (tasks extraction, reconcile, labs)"
        )
    if read_tools is not None:
        return read_tools(bundle)
    from groundeval.fhir.read_tools import BundleToolsError, make_read_tools

    try:
        return make_read_tools(bundle, catalog())
    except BundleToolsError as exc:
        raise AgentError(f"{case_id}: the read tools cannot serve this case: {exc}",
                         details={"issues": exc.issues}) from exc


def case_tools(
    case_id: str, context: Mapping[str, Any], catalog: Callable[[], Any], who: str,
    read_tools: ReadToolsFactory | None = None, write_tools: ToolsFactory | None = None,
) -> list[BaseTool]:
    """The case's tools: read tools over ``context["bundle"]``, else write tools for the patient.

    Args:
        case_id: For messages.
        context: The request context (``task.context(case)``).
        catalog: Returns the site catalog (called only when the default tools are built).
        who: What needs the tools, for messages.
        read_tools: ``bundle -> tools`` instead of ``make_read_tools`` (tests).
        write_tools: ``patient_reference -> tools`` instead of ``make_tools`` (tests).

    Raises:
        AgentError: The context holds neither, or the Bundle is not valid FHIR R4B.
    """
    if "bundle" in context:
        return bundle_tools(case_id, context, catalog, who, read_tools)
    reference = context.get("patient_reference")
    if not isinstance(reference, str) or not reference.strip():
        raise AgentError(
            f"{case_id}: the request context has neither a bundle nor a patient_reference; "
            f"{who} serves the extraction, reconcile, labs and write tasks"
        )
    if write_tools is not None:
        return write_tools(reference)
    from groundeval.tasks.write.tools import make_tools

    return make_tools(catalog(), reference)
