"""Keys of what the xdist controller and its workers hand each other (``workerinput``/``workeroutput``)."""

from __future__ import annotations

__all__ = ["CONCURRENCY_KEY", "DROPPED_KEY", "PEAK_KEY", "RESUME_KEY", "RUN_ID_KEY", "SPEND_STOP_KEY"]

RUN_ID_KEY = "groundeval_run_id"
"""``workerinput``: the controller's run id, shared by every worker."""
RESUME_KEY = "groundeval_resume_kept"
"""``workerinput``: under ``--groundeval-resume``, node id -> case file SHA-256 of each case the run keeps."""
DROPPED_KEY = "groundeval_dropped_calls"
"""``workeroutput``: calls the worker made ahead and dropped when the run stopped."""
CONCURRENCY_KEY = "groundeval_concurrency"
"""``workeroutput``: the agent calls in flight at once the worker allowed (its effective N)."""
PEAK_KEY = "groundeval_peak_in_flight"
"""``workeroutput``: the most agent calls the worker had in flight at once (the concurrency reached)."""
SPEND_STOP_KEY = "groundeval_spend_stop"
"""``workeroutput``: why the worker stopped at its share of ``--groundeval-max-cost``, or None."""
