"""The items this process runs next: the jobs the session hands its executor before each item.

Serially they are the rest of the collection; on a pytest-xdist worker, the worker's own queue
(xdist hands a worker its items a few at a time, so calls made ahead on a worker are over the
items it has been handed so far; ``plugin.xdist_schedule`` keeps that queue long enough).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from groundeval.execution import Job

__all__ = ["upcoming"]


def upcoming(
    order: Sequence[Any], position: Mapping[str, int], nodeid: str, session: pytest.Session, window: int, *,
    worker: bool,
) -> list[Job]:
    """The job of item ``nodeid`` and of the next ones this process will run, at most ``window`` in all.

    Args:
        order: The process's eval items in collection order.
        position: Node id -> index in ``order``.
        nodeid: The item about to run.
        session: pytest's session (its items, and on a worker xdist's queue).
        window: Jobs wanted, the current one included (the executor's ``lookahead``).
        worker: True on an xdist worker.
    """
    if worker:
        indices = _worker_queue(session.config)
        nxt = [session.items[i] for i in indices[: window - 1] if 0 <= i < len(session.items)]
    else:
        at = position.get(nodeid, len(order))
        nxt = list(order[at + 1 : at + window])
    current = [order[position[nodeid]]] if nodeid in position else []
    items = [item for item in current + nxt if hasattr(item, "case") and hasattr(item, "trial")]
    return [Job(item.nodeid, item.case, item.trial) for item in items]


def _worker_queue(config: pytest.Config) -> list[int]:
    """Indices of the items an xdist worker will run next (after the current one), in order.

    pytest-xdist's ``WorkerInteractor`` holds them (``nextitem_index`` and the ``torun`` queue);
    it has no public accessor, so this reads them defensively and returns [] if they change.
    """
    for plugin in config.pluginmanager.get_plugins():
        torun = getattr(plugin, "torun", None)
        if torun is None or not hasattr(plugin, "nextitem_index"):
            continue
        try:
            with torun.lock() as queued:
                pending = list(queued)
            nxt = plugin.nextitem_index
        except Exception:  # pragma: no cover - a pytest-xdist that changed its internals
            return []
        return [i for i in [nxt, *pending] if isinstance(i, int) and not isinstance(i, bool)]
    return []
