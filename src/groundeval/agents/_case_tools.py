"""A case's tools, as its task declares them (shared by every way tools are handed over).

The in-process LangGraph agents and the per-case MCP server (``groundeval.mcp_server``) get the same
LangChain tools here (``request_tools``), so a tool's name, description and JSON schema are the same
whichever way an agent reaches it. A request the runner built carries them: ``AgentRequest.tools``
builds what the task's ``case_tools(case)`` returns (``tasks.base.tools_of``), so a new task with
tools of its own needs nothing here.

A request built by hand, without a task (library use), has no ``tools``; its tools are then the ones
its context calls for (``case_tools``):

* ``context["bundle"]`` (a FHIR Bundle): the read-only tools of ``fhir.read_tools.make_read_tools``
  over that Bundle;
* else ``context["patient_reference"]``: the write task's ``tasks.write.tools.make_tools`` bound to
  the patient.

LangChain, HealthChain and the catalog are imported on first use only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from groundeval.errors import AgentError

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from groundeval.agent_io import AgentRequest

__all__ = ["RequestToolsFactory", "bundle_tools", "case_tools", "request_tools"]

RequestToolsFactory = Callable[["AgentRequest"], "list[BaseTool]"]
"""A case's tools from its request (an agent's test hook: wrap or replace ``request.tools()``)."""


def request_tools(
    request: AgentRequest, catalog: Callable[[], Any], who: str, override: RequestToolsFactory | None = None,
) -> list[BaseTool]:
    """The case's tools: the task's (``request.tools()``), else those a hand-built request's context calls for.

    Args:
        request: The agent's request.
        catalog: Returns the site catalog (called only for a request built without a task).
        who: What needs the tools, for messages (``"the 'langgraph' agent"``).
        override: ``request -> tools`` instead (tests).

    Raises:
        AgentError: The task's tools cannot be built for this case (a Bundle that is not valid
            FHIR R4B), or a hand-built request's context holds neither a Bundle nor a patient.
    """
    if override is not None:
        return override(request)
    if request.tools is not None:
        return request.tools()
    return case_tools(request.case_id, request.context, catalog, who)


def bundle_tools(case_id: str, context: Mapping[str, Any], catalog: Callable[[], Any], who: str) -> list[BaseTool]:
    """The read tools over ``context["bundle"]``.

    Args:
        case_id: For messages.
        context: The request context.
        catalog: Returns the site catalog (called only when the default tools are built).
        who: What needs the tools, for messages (``"the 'langgraph' agent"``).

    Raises:
        AgentError: The context holds no Bundle, or it is not valid FHIR R4B (``details["issues"]``).
    """
    bundle = context.get("bundle")
    if not isinstance(bundle, dict):
        from groundeval.registry.builtins import BUNDLE_TASKS

        raise AgentError(
            f"{case_id}: the request context has no FHIR Bundle (context['bundle']); {who} reads one "
            f"through its tools (tasks {', '.join(BUNDLE_TASKS)})"
        )
    from groundeval.fhir.read_tools import BundleToolsError, make_read_tools

    try:
        return make_read_tools(bundle, catalog())
    except BundleToolsError as exc:
        raise AgentError(f"{case_id}: the read tools cannot serve this case: {exc}",
                         details={"issues": exc.issues}) from exc


def case_tools(case_id: str, context: Mapping[str, Any], catalog: Callable[[], Any], who: str) -> list[BaseTool]:
    """A hand-built request's tools: read tools over ``context["bundle"]``, else write tools for the patient.

    Args:
        case_id: For messages.
        context: The request context (``task.context(case)``).
        catalog: Returns the site catalog (called only when the default tools are built).
        who: What needs the tools, for messages.

    Raises:
        AgentError: The context holds neither, or the Bundle is not valid FHIR R4B.
    """
    if "bundle" in context:
        return bundle_tools(case_id, context, catalog, who)
    reference = context.get("patient_reference")
    if not isinstance(reference, str) or not reference.strip():
        from groundeval.registry.builtins import ANY_TASK

        raise AgentError(
            f"{case_id}: the request context has neither a bundle nor a patient_reference; "
            f"{who} serves the tasks that offer tools ({', '.join(ANY_TASK)})"
        )
    from groundeval.tasks.write.tools import make_tools

    return make_tools(catalog(), reference)
