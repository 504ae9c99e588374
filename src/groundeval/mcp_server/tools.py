"""``CaseToolServer``: one case's LangChain tools served by the MCP SDK's low-level ``Server``, every call traced.

The tools are the ones the in-process agents get (``agents._case_tools``); each is listed with the
name, description and JSON schema LangChain sends a model for it
(``convert_to_openai_tool(tool)["function"]``), so an agent sees the same tool whichever way it
reaches it. HealthChain's own ``FHIRToolkit.as_mcp()`` is not used: it serves HealthChain's tool set
(``load_bundle`` reads a file path, ``build_resource``, ...), under HealthChain's names and
descriptions, without the Bundle fixes of ``fhir.read_tools`` or the write task's tools, and
offers no hook to trace a call.

Each ``tools/call`` is answered as the in-process tool node would answer it, and recorded as a trace
entry ``{"tool", "args", "result", "ok", "duration_s"}`` (``result`` is the text the model gets,
JSON-decoded when it is JSON; ``duration_s`` the tool's wall time, seconds):

* a tool the case does not offer: an MCP error result (``isError``), entry ``ok: false`` with
  ``"rejected": "unknown_tool"`` and ``"error"``;
* arguments that fail the tool's JSON schema (https://json-schema.org, as the MCP specification's
  ``inputSchema`` says): an MCP error result, the tool not run, ``"rejected": "invalid_arguments"``;
* a tool that raises: an MCP error result whose text is ``{"ok": false, "error": "<Type>: <message>"}``
  (what the in-process agent shows its model), ``ok: false`` with ``"error"``;
* otherwise the tool's result as text content (JSON for a dict, as LangChain renders it), and as
  ``structuredContent`` when it is a JSON object; ``ok`` is false when the result says
  ``"ok": false`` (tools report failures as values).

A server holds one case's tools only; it is safe to call from the event loop of the thread that
hosts it and to read ``trace`` from another thread.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool
    from mcp import types
    from mcp.server.lowlevel import Server

__all__ = ["CaseToolServer", "tool_spec"]


def tool_spec(tool: BaseTool) -> dict[str, Any]:
    """``{"name", "description", "parameters"}``: the tool as LangChain presents it to a model."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    function: dict[str, Any] = convert_to_openai_tool(tool)["function"]
    return {"name": function["name"], "description": function.get("description", ""),
            "parameters": function.get("parameters") or {"type": "object", "properties": {}}}


def _text(value: Any) -> str:
    """A tool's result as the text a ``ToolMessage`` holds (LangChain's rendering: JSON, else ``str``)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _decoded(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


class CaseToolServer:
    """An MCP server over one case's tools that records every call.

    Args:
        tools: The case's LangChain tools (``agents._case_tools.case_tools``).
        name: The server's name in its ``initialize`` answer.

    Attributes:
        server: The SDK's low-level ``Server`` (hand it to a transport).
        names: The tool names, in order.
    """

    def __init__(self, tools: Sequence[BaseTool], name: str = "groundeval") -> None:
        from mcp import types
        from mcp.server.lowlevel import Server

        self._tools = {t.name: t for t in tools}
        self.names = tuple(self._tools)
        self._specs = {t.name: tool_spec(t) for t in tools}
        self._listed = [
            types.Tool(name=s["name"], description=s["description"], inputSchema=s["parameters"])
            for s in self._specs.values()
        ]
        self._trace: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.server: Server[Any, Any] = Server(name)

        async def list_tools() -> list[types.Tool]:
            return list(self._listed)

        async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
            import anyio.to_thread

            return await anyio.to_thread.run_sync(self.call, name, arguments)  # the tools are synchronous

        self.server.list_tools()(list_tools)  # type: ignore[no-untyped-call]
        self.server.call_tool(validate_input=False)(call_tool)

    @property
    def trace(self) -> list[dict[str, Any]]:
        """A copy of the calls answered so far, in order (see the module docstring)."""
        with self._lock:
            return [dict(entry) for entry in self._trace]

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._trace.append(entry)

    def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """Answer one ``tools/call`` and record it (never raises).

        Args:
            name: The tool's name, as the client sent it.
            arguments: The arguments, as the client sent them.

        Returns:
            The MCP result (``isError`` for a tool not offered, arguments failing the schema, or
            a tool that raised).
        """
        from mcp import types

        args = dict(arguments or {})
        start = time.perf_counter()
        tool = self._tools.get(name)
        rejected = None
        if tool is None:
            rejected = "unknown_tool"
            error = f"Error: {name} is not a valid tool, try one of [{', '.join(self.names)}]."
            text = error
        else:
            problem = self._schema_problem(name, args)
            if problem is not None:
                rejected = "invalid_arguments"
                error = f"invalid tool arguments: {problem}"
                text = json.dumps({"ok": False, "error": error})
        if rejected is not None:
            self._record({"tool": name, "args": args, "result": _decoded(text), "ok": False,
                          "duration_s": round(time.perf_counter() - start, 6), "rejected": rejected, "error": error})
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=True)
        assert tool is not None
        try:
            value = tool.invoke(args)
        except Exception as exc:  # a tool's exception is the agent's to read, never the run's end
            error = f"{type(exc).__name__}: {exc}"
            text = json.dumps({"ok": False, "error": error})
            self._record({"tool": name, "args": args, "result": _decoded(text), "ok": False,
                          "duration_s": round(time.perf_counter() - start, 6), "error": error})
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=True)
        text = _text(value)
        result = _decoded(text)
        ok = not (isinstance(result, dict) and result.get("ok") is False)
        self._record({"tool": name, "args": args, "result": result, "ok": ok,
                      "duration_s": round(time.perf_counter() - start, 6)})
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structuredContent=result if isinstance(result, dict) else None, isError=False,
        )

    def _schema_problem(self, name: str, args: dict[str, Any]) -> str | None:
        """The first way ``args`` fail the tool's published schema, or None."""
        import jsonschema  # type: ignore[import-untyped]

        schema = self._specs[name]["parameters"]
        validator = jsonschema.validators.validator_for(schema)(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(args))
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return f"{where}: {error.message}" if where else error.message
