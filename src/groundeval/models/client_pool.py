"""One provider SDK client shared by the threads of a run, retired when a call is abandoned.

Under ``--groundeval-concurrency`` several calls share one SDK client (one connection pool). Each
attempt checks the client out, and the attempt's thread sees that client (``get``) until it checks
it back in. When an attempt is abandoned at the case's deadline (its thread may still be blocked
in a read), the client it holds is retired: new calls get a new client, and the retired one is
closed, with its sockets, as soon as only abandoned attempts still hold it, so the calls in flight
beside it go on. A client the caller passed in (a test's transport) is never closed here.

An attempt: ``client = pool.checkout()``, the SDK call inside ``with pool.pinned(client):``, then
``pool.checkin(client, abandoned=...)``; ``retire(client)`` when the attempt is abandoned.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

__all__ = ["ClientPool"]

ClientT = TypeVar("ClientT")


class ClientPool(Generic[ClientT]):
    """The shared client of one model, built on first use.

    Args:
        make: Builds a new client (the provider's SDK client, with ``max_retries=0``).
        owned: True when the pool closes the clients it retires (False for a client built around
            an HTTP client the caller passed in: the caller's to close).
    """

    def __init__(self, make: Callable[[], ClientT], *, owned: bool) -> None:
        self._make = make
        self._owned = owned
        self._client: ClientT | None = None
        self._lock = threading.RLock()
        self._local = threading.local()
        self._users: dict[int, int] = {}  # id(client) -> attempts holding it
        self._retired: dict[int, tuple[ClientT, int]] = {}  # id(client) -> (client, abandoned attempts)

    @property
    def current(self) -> ClientT | None:
        """The shared client, or None before the first use (or right after a retirement)."""
        return self._client

    def get(self) -> ClientT:
        """The client this thread's attempt checked out, else the shared one (built if needed)."""
        pinned: ClientT | None = getattr(self._local, "client", None)
        if pinned is not None:
            return pinned
        with self._lock:
            if self._client is None:
                self._client = self._make()
            return self._client

    def checkout(self) -> ClientT:
        """Hold the shared client for one attempt (until ``checkin``)."""
        with self._lock:
            client = self.get()
            self._users[id(client)] = self._users.get(id(client), 0) + 1
            return client

    @contextlib.contextmanager
    def pinned(self, client: ClientT) -> Iterator[ClientT]:
        """Within the block, this thread's ``get`` returns ``client`` (the SDK call of one attempt)."""
        self._local.client = client
        try:
            yield client
        finally:
            self._local.client = None

    def checkin(self, client: ClientT, *, abandoned: bool = False) -> None:
        """The attempt holding ``client`` is over (``abandoned``: it was given up at the deadline)."""
        with self._lock:
            key = id(client)
            self._users[key] -= 1
            retired = self._retired.get(key)
            if retired is not None and abandoned:
                self._retired[key] = (client, retired[1] - 1)
            self._close_if_idle(key)

    def retire(self, client: ClientT) -> None:
        """An attempt holding ``client`` was abandoned: new calls get a new client; close this one when idle."""
        with self._lock:
            if self._client is client:
                self._client = None
            key = id(client)
            _, abandoned = self._retired.get(key, (client, 0))
            self._retired[key] = (client, abandoned + 1)
            self._close_if_idle(key)

    def _close_if_idle(self, key: int) -> None:
        """Close a retired client once only abandoned attempts still hold it."""
        client, abandoned = self._retired.get(key, (None, 0))
        if client is None or self._users.get(key, 0) > max(abandoned, 0):
            return
        del self._retired[key]
        if self._owned:
            with contextlib.suppress(Exception):  # best effort; the next call builds a new client
                getattr(client, "close", lambda: None)()
