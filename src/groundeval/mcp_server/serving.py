"""``MCPToolsAgent``: each case gets its own MCP server of its tools; the record's trace is the server's.

``--groundeval-tools=mcp`` wraps the run's agent in this (``run.agent_setup.prepare_agent``,
inside the response cache, so a cached answer keeps the trace it was made with). For every case:

1. the case's tools are the ones its task declares, exactly as for the in-process agents
   (``agents._case_tools.request_tools``: ``request.tools()``, e.g. the read tools over the case's
   Bundle or the write tools bound to its patient), so the server holds that case's data and
   nothing else;
2. a ``CaseToolServer`` over them is started on loopback (``HttpHost``) and the agent is called
   with ``request.tool_server`` set (``ToolServer``: the URL, the stdio relay command, the names);
3. when the agent returns or raises, the server is stopped, and the calls it answered become the
   result's ``trace`` (and an error's ``details["trace"]``), whatever the agent itself reported:
   an agent that is its own process is traced like the built-in one.

How failures are classed: a server that cannot start is ``RunStopError`` (``config_error``, the
run stops: no case could start one), naming why; a case whose context cannot back the tools (a
Bundle that is not valid FHIR R4B) is the ``AgentError`` the in-process agents raise for it. What
the agent raises is passed on unchanged (the built-in MCP agent raises ``InfraError`` for a dropped
connection). ``agent_meta`` gains ``mcp_tool_calls``, ``mcp_unknown_tool_calls`` and
``mcp_invalid_argument_calls``.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from typing import Any

from groundeval.agent_io import AgentRequest, AgentResult, ToolServer
from groundeval.agent_wrapper import AgentWrapper
from groundeval.agents._case_tools import request_tools
from groundeval.errors import AgentError, RunStopError

__all__ = ["MCPToolsAgent", "stdio_command"]


def stdio_command(url: str) -> tuple[str, ...]:
    """The command an agent runs to reach ``url`` over stdio: this Python, ``-m groundeval.mcp_server.stdio URL``."""
    return (sys.executable, "-m", "groundeval.mcp_server.stdio", url)


def _counts(trace: list[dict[str, Any]]) -> dict[str, int]:
    return {
        "mcp_tool_calls": len(trace),
        "mcp_unknown_tool_calls": sum(e.get("rejected") == "unknown_tool" for e in trace),
        "mcp_invalid_argument_calls": sum(e.get("rejected") == "invalid_arguments" for e in trace),
    }


class MCPToolsAgent(AgentWrapper):
    """Wraps an agent so that each case's tools reach it over MCP (see the module docstring).

    Has the wrapped agent's ``name``, ``model``, ``tasks``, ``max_concurrency``, ``thread_safe``,
    ``network_calls`` (the case's own tool server on loopback is no network call, as the case's
    FHIR server is not) and ``provider_model``;
    ``requires`` adds ``tools`` (the run offers tools, so grounding is scored even when the agent
    calls none). Thread-safe when the wrapped agent is: each call has its own server.

    Args:
        agent: The agent under evaluation.
        host: The loopback address the servers bind.
    """

    def __init__(self, agent: Any, host: str = "127.0.0.1") -> None:
        super().__init__(agent, ("tasks", "max_concurrency", "thread_safe", "network_calls", "provider_model"))
        self.host = host
        self.requires = frozenset({*(getattr(agent, "requires", None) or {"text_prompt"}), "tools"})
        self._catalog: Any = None
        self._catalog_lock = threading.Lock()

    def _site_catalog(self) -> Any:
        with self._catalog_lock:
            if self._catalog is None:
                from groundeval.terminology import Catalog

                self._catalog = Catalog.load()
            return self._catalog

    def warmup(self) -> None:
        """Import the SDK, starlette and uvicorn, load the catalog, then the wrapped agent's ``warmup()``."""
        import mcp.server.lowlevel
        import mcp.server.streamable_http_manager  # noqa: F401
        import uvicorn  # noqa: F401

        from groundeval.mcp_server import http_host, tools  # noqa: F401

        self._site_catalog()
        super().warmup()

    def run(self, request: AgentRequest) -> AgentResult | str:
        """Serve the case's tools, call the agent with the server's URL, stop the server, keep its trace.

        Returns:
            The agent's result with ``trace`` replaced by the server's (a cached or replayed result
            is returned as it is); what the agent returned when that is not an answer.

        Raises:
            RunStopError: The server could not start (``config_error``).
            AgentError: The case's context cannot back the tools, or what the agent raised, with
                ``details["trace"]`` set to the server's trace.
        """
        from groundeval.mcp_server.http_host import HttpHost, ServerStartError
        from groundeval.mcp_server.tools import CaseToolServer

        tools = request_tools(request, self._site_catalog, "the case's MCP server")
        server = CaseToolServer(tools, name=f"groundeval-{request.task}")
        host = HttpHost(server.server, self.host)
        try:
            url = host.start()
        except ServerStartError as exc:
            raise RunStopError(
                f"{request.case_id}: the case's MCP tool server (--groundeval-tools=mcp) could not start on "
                f"{self.host}: {exc}; check that the mcp extra is installed (pip install 'groundeval[mcp]') and "
                "that loopback sockets can be opened",
            ) from exc
        served = dataclasses.replace(request, tool_server=ToolServer(
            url=url, stdio_command=stdio_command(url), tools=server.names))
        try:
            out: Any = self.wrapped.run(served)
        except AgentError as exc:
            host.stop()
            trace = server.trace
            exc.details["trace"] = trace
            exc.details.update(_counts(trace))
            raise
        finally:
            host.stop()
        trace = server.trace
        if isinstance(out, str):
            out = AgentResult(text=out)
        if not isinstance(out, AgentResult) or out.cached:
            unchanged: AgentResult | str = out  # not an answer (the runner reports it), or answered without a call
            return unchanged
        return dataclasses.replace(out, trace=trace, meta={**out.meta, **_counts(trace)})
