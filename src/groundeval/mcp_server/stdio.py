"""``python -m groundeval.mcp_server.stdio URL``: MCP over stdin/stdout, relayed to a case's Streamable HTTP server.

For agents that start their own MCP server process (Claude's apps and the SDKs' stdio
configurations): ``request.tool_server.stdio_command`` is this command with the case's URL. Every
JSON-RPC message read from stdin goes to the case's server, every message from it goes to stdout,
unchanged (the SDK's ``stdio_server`` and ``streamable_http_client`` transports), so the server
answers and traces the calls as it does for an HTTP client, and holds the case's data: the
relay holds none. It exits when stdin closes, or with status 1 when the case's server is gone.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["main", "relay"]


async def relay(url: str) -> None:
    """Relay MCP messages between this process's stdio and the server at ``url`` until either side ends."""
    import anyio
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.stdio import stdio_server

    async with (
        stdio_server() as (stdin, stdout),
        streamable_http_client(url) as (from_server, to_server, _),
        anyio.create_task_group() as group,
    ):

        async def upstream() -> None:
            async for message in stdin:
                if isinstance(message, Exception):  # a line that is not JSON-RPC
                    continue
                await to_server.send(message)
            group.cancel_scope.cancel()

        async def downstream() -> None:
            async for message in from_server:
                if isinstance(message, Exception):
                    raise message
                await stdout.send(message)
            group.cancel_scope.cancel()

        group.start_soon(upstream)
        group.start_soon(downstream)


def main(argv: list[str] | None = None) -> int:
    """Run the relay; returns the exit status (2: no URL given, 1: the server could not be reached)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m groundeval.mcp_server.stdio URL (the case's tool_server.url)", file=sys.stderr)
        return 2
    import anyio

    try:
        anyio.run(relay, args[0])
    except BaseException as exc:  # an ExceptionGroup from the transports: say what, once
        if isinstance(exc, KeyboardInterrupt):
            return 130
        inner: Any = exc
        while isinstance(inner, BaseExceptionGroup) and inner.exceptions:
            inner = inner.exceptions[0]
        print(f"groundeval MCP relay: the case's server at {args[0]} failed: {type(inner).__name__}: {inner}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
