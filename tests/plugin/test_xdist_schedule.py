"""Under ``-n``, each worker's queue stays long enough for the calls it makes ahead (no subprocess)."""

from __future__ import annotations

import statistics
import types

import pytest
from xdist.scheduler import LoadScheduling

from groundeval.plugin.xdist_schedule import AheadLoadScheduling


class Node:
    """What a scheduler reads of a worker: it receives item indices and can be shut down."""

    def __init__(self, name: str) -> None:
        self.gateway = types.SimpleNamespace(id=name)
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _run(sched: LoadScheduling, items: int) -> tuple[list[int], list[Node]]:
    """Two workers; every item takes 0.25 s (an agent call); return each worker's queue length per step."""
    nodes = [Node("gw0"), Node("gw1")]
    collection = [f"groundeval/extraction::case{i}" for i in range(items)]
    for node in nodes:
        sched.add_node(node)
    for node in nodes:
        sched.add_node_collection(node, collection)
    sched.schedule()
    queued = []
    done = 0
    while done < items:
        for node in nodes:
            pending = sched.node2pending[node]
            if pending:
                queued.append(len(pending))
                sched.mark_test_complete(node, pending[0], duration=0.25)
                done += 1
    return queued, nodes


def test_workers_keep_their_calls_ahead_queued_and_share_the_end(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("-p", "xdist", "--tx=2*popen")
    plain, _ = _run(LoadScheduling(config), 64)
    ahead, nodes = _run(AheadLoadScheduling(config, ahead=16), 64)
    assert statistics.median(plain) <= 5  # xdist alone: "long-running" items, a queue of a few
    assert min(ahead[2:34]) == 16 and statistics.median(ahead) >= 12  # topped up to 16 while the share allows
    assert sorted(nodes[0].sent + nodes[1].sent) == list(range(64))  # every item once
    assert abs(len(nodes[0].sent) - len(nodes[1].sent)) <= 2  # and the end spread over both
