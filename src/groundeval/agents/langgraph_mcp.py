"""``langgraph-mcp``: the LangGraph agent reaching the case's tools over MCP (langchain-mcp-adapters).

The same graph, model guard, retries, stops and answer as ``langgraph`` (``LangGraphAgent``); only
where the tools come from differs: per case it opens an MCP client session (the official SDK's
``ClientSession`` over ``streamable_http_client``) to ``request.tool_server.url``, the case's
server started by ``--groundeval-tools=mcp``, and turns the tools it lists into LangChain tools with
langchain-mcp-adapters' ``load_mcp_tools``. LangGraph with langchain-mcp-adapters is LangChain's
documented way for a LangGraph agent to use MCP tools, so this agent keeps the in-process agent's
graph unchanged (the anthropic SDK's MCP connector would need a public URL and a second agent loop).

The adapters' tools are asynchronous; the session lives on an event loop in a thread of its own
(``MCPConnection``) and each tool call is run there and waited for, so the graph stays the
synchronous one of ``langgraph``. A tool's text result is handed to the model as one string, as an
in-process tool's is; an MCP error result (a tool that raised, a tool not offered, arguments that
fail the schema) becomes an error ``ToolMessage`` with the server's text. Tool calls of one model
turn run one after another, in the order the model gave them (``max_concurrency`` 1), so the
server's trace has the order of the in-process agent's.

How failures are reported, beyond ``langgraph``'s:

* no ``request.tool_server`` (the run is not ``--groundeval-tools=mcp``): ``RunStopError``
  (``config_error``); the plugin refuses that combination before any case;
* the session cannot be opened, or a call fails for anything but an MCP error result (the server
  went away, the connection dropped, no answer within the case's ``timeout``): ``InfraError``
  (``infra_error``: excluded and counted), never a message to the model.

The record's trace is the server's (``mcp_server.serving``), not this client's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents.base import AgentConfig
from groundeval.agents.langgraph_agent import LangGraphAgent
from groundeval.errors import InfraError, RunStopError
from groundeval.extras import EXTRAS, require_extra

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

__all__ = ["NO_SERVER", "LangGraphMCPAgent", "MCPConnection"]

NO_SERVER = (
    "the request carries no MCP tool server: the 'langgraph-mcp' agent reaches the case's tools over MCP; "
    "add --groundeval-tools=mcp (CLI: --tools mcp)"
)

CONNECT_TIMEOUT_S = 30.0
"""The longest opening a session (initialize, tools/list) may take, seconds."""


def _text(content: Any) -> str:
    """MCP content blocks (as the adapters convert them) as one text, or ``str(content)``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content)


def _innermost(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class MCPConnection:
    """An MCP client session to one case's server, on an event loop in its own thread.

    Use as a context manager; ``tools`` are synchronous LangChain tools calling the server.

    Args:
        url: The server's Streamable HTTP endpoint.
        case_id: For messages.
        timeout_s: The longest one tool call may wait for its answer, seconds.

    Raises:
        InfraError: On entry, when the session cannot be opened (or the tools listed) within
            ``CONNECT_TIMEOUT_S``; from a tool, when the call fails for anything but an MCP error
            result.
    """

    def __init__(self, url: str, case_id: str, timeout_s: float) -> None:
        self.url = url
        self.case_id = case_id
        self.timeout_s = timeout_s
        self.tools: list[BaseTool] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._pending: set[concurrent.futures.Future[Any]] = set()

    async def _session(self) -> None:
        from langchain_mcp_adapters.tools import load_mcp_tools
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        self._stop = asyncio.Event()
        try:
            async with streamable_http_client(self.url) as (read, write, _), ClientSession(
                read, write, read_timeout_seconds=timedelta(seconds=self.timeout_s)
            ) as session:
                await session.initialize()
                self.tools = [self._sync(t) for t in await load_mcp_tools(session)]
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # reported on entry, or by the next call
            self._failure = _innermost(exc)
            for future in list(self._pending):  # a call whose answer can no longer come
                future.cancel()
        finally:
            self._ready.set()

    def __enter__(self) -> MCPConnection:
        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._session())
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name=f"groundeval-mcp-client-{self.case_id}", daemon=True)
        self._thread.start()
        self._ready.wait(CONNECT_TIMEOUT_S)
        if self._failure is not None or not self._ready.is_set():
            self.__exit__(None, None, None)
            why = f"{type(self._failure).__name__}: {self._failure}" if self._failure else \
                f"no answer within {CONNECT_TIMEOUT_S:g} s"
            raise InfraError(f"{self.case_id}: could not open an MCP session to the case's tool server {self.url} "
                             f"({why})", details={"url": self.url})
        return self

    def __exit__(self, *exc: object) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(CONNECT_TIMEOUT_S)

    def _sync(self, tool: BaseTool) -> BaseTool:
        """The adapters' async tool as a synchronous one with the same name, description and schema."""
        from langchain_core.tools import StructuredTool, ToolException

        coroutine = tool.coroutine  # type: ignore[attr-defined]

        def call(**arguments: Any) -> str:
            loop = self._loop
            if self._failure is not None or loop is None or loop.is_closed():
                raise self._dropped(tool.name, self._failure)
            future = asyncio.run_coroutine_threadsafe(coroutine(**arguments), loop)
            self._pending.add(future)
            if self._failure is not None:
                future.cancel()
            try:
                content, _artifact = future.result(self.timeout_s)
            except ToolException as exc:  # an MCP error result: the server's text, for the model to read
                raise ToolException(_text(getattr(exc, "tool_content", None) or str(exc))) from exc
            except Exception as exc:  # the transport: the server is gone or does not answer
                future.cancel()
                raise self._dropped(tool.name, self._failure or exc) from exc
            finally:
                self._pending.discard(future)
            return _text(content)

        return StructuredTool(name=tool.name, description=tool.description, args_schema=tool.args_schema or {},
                              func=call, handle_tool_error=True)

    def _dropped(self, name: str, exc: BaseException | None) -> InfraError:
        inner = _innermost(exc) if exc is not None else None
        why = f"{type(inner).__name__}: {inner}" if inner is not None else "the session has ended"
        return InfraError(f"{self.case_id}: the MCP connection to the case's tool server {self.url} failed during a "
                          f"{name} call ({why})", details={"url": self.url, "tool": name})


class LangGraphMCPAgent(LangGraphAgent):
    """``langgraph-mcp``: ``langgraph`` with the case's tools from its MCP server (see the module docstring).

    Args:
        config: As ``LangGraphAgent``.
        chat_model: As ``LangGraphAgent`` (tests pass ``ScriptedChatModel``).
        sleep: As ``LangGraphAgent``.

    Raises:
        ConfigError: The ``mcp`` extra is missing, or as ``LangGraphAgent``.
    """

    name = "langgraph-mcp"
    requires: frozenset[str] = frozenset({"tools"})
    tool_transport = "mcp"
    """The case's tools reach it over MCP only (``--groundeval-tools=mcp``)."""
    needs_extra = ("mcp", "mcp")
    """``(extra, module)``: the official MCP SDK, named in the missing-extra message."""

    @classmethod
    def check_config(cls, config: AgentConfig) -> None:
        """As ``LangGraphAgent.check_config``, and the ``mcp`` extra must be installed.

        Raises:
            ConfigError: An extra is missing, ``ANTHROPIC_API_KEY`` is not set, or an option is out of range.
        """
        _require_mcp(cls.name)
        super().check_config(config)

    def __init__(self, config: AgentConfig | None = None, *, chat_model: Any = None, sleep: Any = None) -> None:
        _require_mcp(self.name)
        super().__init__(config, chat_model=chat_model, sleep=sleep)
        self._local = threading.local()

    def warmup(self) -> None:
        """``LangGraphAgent.warmup``, and import the MCP client and the adapters."""
        import langchain_mcp_adapters.tools  # noqa: F401
        import mcp.client.streamable_http  # noqa: F401

        super().warmup()

    def _tools_for(self, request: AgentRequest) -> list[BaseTool]:
        tools: list[BaseTool] = self._local.tools
        return tools

    def _stream_config(self) -> dict[str, Any]:
        return {**super()._stream_config(), "max_concurrency": 1}

    def run(self, request: AgentRequest) -> AgentResult:
        """Open a session to the case's server and run the graph on its tools (``LangGraphAgent.run``).

        Raises:
            RunStopError: The request carries no tool server.
            InfraError: The session cannot be opened, or a call's connection failed.
            AgentError: As ``LangGraphAgent.run``.
        """
        server = request.tool_server
        if server is None:
            raise RunStopError(f"{request.case_id}: {NO_SERVER}")
        with MCPConnection(server.url, request.case_id, self.settings.retry.timeout_s) as connection:
            self._local.tools = connection.tools
            try:
                return super().run(request)
            finally:
                self._local.tools = None


def _require_mcp(name: str) -> None:
    for module in EXTRAS["mcp"]:
        require_extra("mcp", module, f"the agent {name!r}")

