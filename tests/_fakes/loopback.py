"""A raw HTTP/1.1 server on 127.0.0.1 for fault tests: every reply byte is under the test's control.

Each request is answered by ``plan(path, body) -> Answer``: the status, headers and body bytes,
and optionally a ``gap_s`` between bytes (a server that trickles its answer; the gap is waited
with ``threading.Event.wait``, never ``time.sleep``, and ends at once when the server stops).
The server runs in daemon threads and is stopped by the fixture that started it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    """One HTTP response as the server will write it."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    gap_s: float = 0.0

    @classmethod
    def json(cls, status: int, value: Any, **headers: str) -> Answer:
        return cls(status, json.dumps(value).encode(), headers={k.replace("_", "-"): v for k, v in headers.items()})


Plan = Callable[[str, dict[str, Any]], Answer]


class Loopback:
    """The server; ``requests`` holds ``(path, headers, body)`` of every request received."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                outer.requests.append((self.path, dict(self.headers), body))
                answer = outer.plan(self.path, body)
                head = [f"HTTP/1.1 {answer.status} X", f"content-type: {answer.content_type}",
                        f"content-length: {len(answer.body)}", "connection: close",
                        *(f"{k}: {v}" for k, v in answer.headers.items())]
                data = ("\r\n".join(head) + "\r\n\r\n").encode() + answer.body
                self.close_connection = True
                try:
                    if not answer.gap_s:
                        self.wfile.write(data)
                        return
                    for i in range(len(data)):  # status line, headers and body, a byte at a time
                        if outer.stop.wait(answer.gap_s):
                            return
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                except OSError:  # the client gave up and closed the socket
                    return

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.root = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> Loopback:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def serve(plan: Plan) -> Iterator[Loopback]:
    """Fixture body: a started server, stopped when the test ends."""
    with Loopback(plan) as server:
        yield server
