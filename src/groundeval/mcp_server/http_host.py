"""``HttpHost``: an MCP server on loopback over Streamable HTTP, in a thread of its own, for one case.

The SDK's ``StreamableHTTPSessionManager`` (stateless, JSON responses) mounted at ``/mcp`` in a
starlette app, run by uvicorn on a socket bound to ``127.0.0.1`` port 0 (the OS picks a free port,
so concurrent cases and pytest-xdist workers never collide). uvicorn runs in a daemon thread with
its own event loop; ``stop()`` asks it to exit and waits for the thread. Streamable HTTP is the MCP
transport of https://modelcontextprotocol.io/specification/2025-06-18/basic/transports.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["START_TIMEOUT_S", "STOP_TIMEOUT_S", "HttpHost", "ServerStartError"]

START_TIMEOUT_S = 30.0
"""The longest a case's server may take to start listening, seconds (it takes milliseconds)."""

STOP_TIMEOUT_S = 10.0
"""The longest ``stop()`` waits for the server's thread, seconds."""

PATH = "/mcp"
"""Where the MCP endpoint is mounted (the SDK's default path)."""


class ServerStartError(RuntimeError):
    """The server could not start; the message says why (a bind error, an import error, a timeout)."""


class HttpHost:
    """Serve one MCP ``Server`` at ``http://127.0.0.1:<port>/mcp`` until ``stop()``.

    Args:
        server: The SDK's low-level ``Server`` (``CaseToolServer.server``).
        host: The loopback address to bind.
    """

    def __init__(self, server: Any, host: str = "127.0.0.1") -> None:
        self._mcp = server
        self._host = host
        self._uvicorn: Any = None
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self.url = ""

    def _app(self) -> Any:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from starlette.applications import Starlette
        from starlette.routing import Route

        manager = StreamableHTTPSessionManager(app=self._mcp, json_response=True, stateless=True)

        class Endpoint:  # an ASGI app, so starlette's Route passes the raw scope through
            async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
                await manager.handle_request(scope, receive, send)

        @contextlib.asynccontextmanager
        async def lifespan(_app: Any) -> AsyncIterator[None]:
            async with manager.run():
                yield

        return Starlette(routes=[Route(PATH, endpoint=Endpoint())], lifespan=lifespan)

    def start(self, timeout_s: float = START_TIMEOUT_S) -> str:
        """Bind, start serving, and return the endpoint's URL once the server accepts connections.

        Raises:
            ServerStartError: The socket could not be bound, the app could not be built (the
                ``mcp`` extra is missing), uvicorn failed, or it was not up within ``timeout_s``.
        """
        try:
            import uvicorn

            app = self._app()
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((self._host, 0))
            sock.listen(128)
        except (ImportError, OSError) as exc:
            raise ServerStartError(f"{type(exc).__name__}: {exc}") from exc
        port = sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                                timeout_graceful_shutdown=1)
        self._uvicorn = uvicorn.Server(config)

        def serve() -> None:
            try:
                asyncio.run(self._uvicorn.serve(sockets=[sock]))
            except BaseException as exc:  # reported by start() or stop()
                self._failure = exc
            finally:
                sock.close()

        self._thread = threading.Thread(target=serve, name=f"groundeval-mcp-{port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._uvicorn.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        if not self._uvicorn.started:
            self.stop()
            why = f"{type(self._failure).__name__}: {self._failure}" if self._failure else \
                f"not listening after {timeout_s:g} s"
            raise ServerStartError(why)
        self.url = f"http://{self._host}:{port}{PATH}"
        return self.url

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Ask uvicorn to exit and wait for its thread (idempotent); open connections are closed."""
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None
