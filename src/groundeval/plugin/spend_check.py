"""``--groundeval-max-cost``: refuse it for an agent or model whose calls cannot be priced beforehand.

The limit needs every model call to be estimated before it is sent and priced when it returns:
the single-call agents (``claude``, ``openai-compatible``) do both when the model has a list
price in ``groundeval.models.pricing`` or a price in the user's ``--groundeval-prices`` file.
A replayed run makes no call and needs no price. Agents that
call a model through another library (``langgraph``) or an agent of your own cannot be held to
the limit: the option is refused rather than silently not applied.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from groundeval.models.pricing import price_source

__all__ = ["RULE_BASED", "check_max_cost", "worker_share"]

RULE_BASED = frozenset({"baseline", "naive", "baseline-write", "baseline-reconcile", "naive-reconcile"})
"""Built-in agents that call no model (nothing to spend)."""


def _inner(agent: Any) -> Any:
    """The agent behind ``--groundeval-cache``'s wrapper."""
    return getattr(agent, "wrapped", agent)


def check_max_cost(limit_usd: float, spec: str, agent: Any, model: str | None) -> None:
    """Refuse ``--groundeval-max-cost`` when the run's calls cannot be held to it.

    Args:
        limit_usd: The limit, USD.
        spec: The agent spec as given.
        agent: The built agent, or its class (the pytest-xdist controller builds none).
        model: The model id the agent will call (None: the agent's default).

    Raises:
        pytest.UsageError: The agent is not a single-call agent, or the model has no known price.
    """
    from groundeval.agents._single_call import SingleCallAgent

    agent = _inner(agent)
    if spec.startswith("replay:") or spec in RULE_BASED:
        return  # no model call is made
    cls = agent if isinstance(agent, type) else type(agent)
    if not issubclass(cls, SingleCallAgent):
        raise pytest.UsageError(
            f"--groundeval-max-cost={limit_usd:g}: the agent {spec!r} does not call its model through groundeval's "
            "single-call layer (claude, openai-compatible), so its calls cannot be estimated before they are sent; "
            "drop the option, or use --groundeval-limit to bound the run"
        )
    if model is None:
        model = getattr(agent, "model", None) if not isinstance(agent, type) else None
    if model is None:
        model = getattr(importlib.import_module(cls.__module__), "DEFAULT_MODEL", None)
    if price_source(model) is None:
        raise pytest.UsageError(
            f"--groundeval-max-cost={limit_usd:g}: the model {model!r} has no known price "
            "(neither groundeval's Claude list nor the genai-prices catalogue of the `prices` extra has it), "
            "so no call can be estimated before it is sent; "
            "price it in a file given to --groundeval-prices (per model id: input and output, USD per million "
            "tokens), drop the option, or use --groundeval-limit to bound the run"
        )


def worker_share(limit_usd: float, config: pytest.Config) -> float:
    """This process's share of the limit: all of it when serial, an equal part on each xdist worker."""
    workerinput = getattr(config, "workerinput", None)
    count = workerinput.get("workercount") if isinstance(workerinput, dict) else None
    return limit_usd / count if isinstance(count, int) and count > 1 else limit_usd
