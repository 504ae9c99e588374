"""How a run's agent calls are made: serial, threaded and batch executors behind one protocol.

The session asks the process's ``Executor`` for each case's result (``execution.protocol``
describes the contract); the executor makes the agent call (now, ahead in threads, or in a
provider batch) and hands the runner the finished call to parse, score and record. Nothing here
imports pytest.
"""

from __future__ import annotations

from groundeval.execution.base import CallTally, CaseFiles, ExecutionContext, Job
from groundeval.execution.choose import DEFAULT_CONCURRENCY, effective_concurrency, make_executor
from groundeval.execution.protocol import Executor
from groundeval.execution.serial import SerialExecutor
from groundeval.execution.threaded import LOOKAHEAD_PER_SLOT, ThreadedExecutor

__all__ = [
    "DEFAULT_CONCURRENCY",
    "LOOKAHEAD_PER_SLOT",
    "CallTally",
    "CaseFiles",
    "ExecutionContext",
    "Executor",
    "Job",
    "SerialExecutor",
    "ThreadedExecutor",
    "effective_concurrency",
    "make_executor",
]
