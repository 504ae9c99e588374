"""The run's settings: every option validated, as one frozen value that needs no pytest.

The plugin reads them from pytest's command line and ini file (``plugin.options.read_settings``);
another front end (a test, a script, a notebook) may build them by hand and drive a run with
``groundeval.run`` (``run.assembly``, ``run.process``). The batch knobs are the model
layer's (``models.batch.BatchSettings``): the batcher reads them, so they stay beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groundeval.models.batch import BatchSettings
    from groundeval.shards import Shard

__all__ = ["Settings"]


@dataclass(frozen=True, slots=True)
class Settings:
    """Validated run settings.

    Attributes:
        task: Task spec as given (a built-in name, an entry-point name or ``module:Class``;
            ``make_task`` accepts it), or None when the plugin is off.
        agent: Agent spec.
        limit: Case limit, or None for all.
        shard: ``--groundeval-shard``: this run's shard K of N (``groundeval.shards.Shard``), or None for
            every case.
        data_dir: Directory holding the case files.
        out_dir: Directory for run records.
        task_options: Every option the task declares, converted (defaults for those not given).
        agent_options: Options handed to the agent (model settings; never secrets).
        model: Model id, or None for the agent's default.
        task_name: The task's ``name`` (``"extraction"``; for ``module:Class`` specs, the class's).
        baseline: Run record to compare with (``--groundeval-baseline``), or None.
        resume: ``--groundeval-resume``: the interrupted run's record or partial file, or None.
        fail_on_regression: Exit non-zero when a case regressed against the baseline.
        summary_md: Where to write the Markdown summary, or None.
        trials: Items per case (``--groundeval-trials``).
        counterfactual: ``--groundeval-counterfactual``: also run each case's counterfactual twins.
        twin_seed: ``--groundeval-twin-seed``: the seed of the order of a case's items and its
            twins', or None to draw one for the run.
        concurrency: Agent calls in flight at once in this process (``--groundeval-concurrency``).
        cache_dir: ``--groundeval-cache``: the response cache directory, or None for no cache.
        conversation: ``--groundeval-conversation``: ``full`` or ``reference`` (``records.conversation``).
        replay_allow_changed: ``--groundeval-replay-allow-changed``: replay cases whose file changed.
        min_pass_rate: ``--groundeval-min-pass-rate`` R in (0, 1], or None (every trial must pass).
        failure_blocks: ``--groundeval-failure-blocks``: pytest's FAILURES blocks for failed cases.
        max_cost: ``--groundeval-max-cost``: the most this run may spend on model calls, USD, or None.
        prices: ``--groundeval-prices``: the user price file (``groundeval.models.price_file``), or None.
        progress: ``--groundeval-progress``: ``auto``, ``tty``, ``plain`` or ``off``.
        progress_every: ``--groundeval-progress-every``: seconds between plain progress lines.
        batch: ``--groundeval-batch``: the batch knobs (``models.batch.BatchSettings``, journal in the
            out-dir), or None when model requests are sent one call each.
        tools: ``--groundeval-tools``: ``inprocess`` (LangChain tools in the agent's process) or ``mcp``
            (each case's tools served by its own MCP server, ``groundeval.mcp_server``).
        fhir: ``--groundeval-fhir``: ``sandbox``, the base URL of the user's FHIR server, or None
            (the record goes in the prompt or the in-process tools, as the task renders it).
    """

    task: str | None
    agent: str = ""
    limit: int | None = None
    shard: Shard | None = None
    data_dir: Path = Path()
    out_dir: Path = Path("runs")
    model: str | None = None
    task_options: dict[str, Any] = field(default_factory=dict)
    agent_options: dict[str, Any] = field(default_factory=dict)
    task_name: str = ""
    baseline: Path | None = None
    resume: Path | None = None
    fail_on_regression: bool = False
    summary_md: Path | None = None
    trials: int = 1
    counterfactual: bool = False
    twin_seed: int | None = None
    concurrency: int | None = None
    cache_dir: Path | None = None
    conversation: str = "full"
    replay_allow_changed: bool = False
    min_pass_rate: float | None = None
    failure_blocks: bool = False
    max_cost: float | None = None
    prices: Path | None = None
    progress: str = "auto"
    progress_every: float = 30.0
    batch: BatchSettings | None = None
    tools: str = "inprocess"
    fhir: str | None = None
