"""``--groundeval-max-cost``: refuse it for an agent or model whose calls cannot be priced beforehand.

The limit needs every model call to be estimated before it is sent and priced when it returns:
an agent that declares its ``provider_model`` (``agents.base.Agent``: ``claude``,
``openai-compatible``) has both when the model has a list price in ``groundeval.models.pricing`` or
a price in the user's ``--groundeval-prices`` file. An agent that declares it calls no model
(``network_calls = False``: every rule-based agent, a replayed run) needs no price. Agents that
call a model through another library (``langgraph``) or an agent of your own cannot be held to
the limit: the option is refused rather than silently not applied.
"""

from __future__ import annotations

from typing import Any

from groundeval.agents.base import AgentConfig, calls_no_model, declared_provider_model
from groundeval.errors import ConfigError
from groundeval.models.pricing import price_source

__all__ = ["check_max_cost", "worker_share"]


def _declared_model(agent: Any, config: AgentConfig) -> tuple[bool, str | None]:
    """``(declares a provider model, its model id)`` for a built agent or, on the controller, its class."""
    if not isinstance(agent, type):
        model = declared_provider_model(agent)
        return (True, model.name) if model is not None else (False, None)
    spec = getattr(agent, "model_spec", None)
    if not callable(spec):
        return False, None
    model = str(spec(config)).partition("/")[2]  # provider/model, or provider/model@URL
    return True, (model.rpartition("@")[0] or model) or None


def check_max_cost(limit_usd: float, spec: str, agent: Any, config: AgentConfig) -> None:
    """Refuse ``--groundeval-max-cost`` when the run's calls cannot be held to it.

    Args:
        limit_usd: The limit, USD.
        spec: The agent spec as given.
        agent: The built agent, or its class (``agents.base.agent_target``: the pytest-xdist
            controller builds none).
        config: The settings the agent is built with (the model id, None: the agent's default).

    Raises:
        ConfigError: The agent does not declare the model it calls (``provider_model``), or the
            model has no known price.
    """
    if calls_no_model(agent):
        return  # no model call is made
    declared, model = _declared_model(agent, config)
    if not declared:
        raise ConfigError(
            f"--groundeval-max-cost={limit_usd:g}: the agent {spec!r} does not call its model through groundeval's "
            "single-call layer (claude, openai-compatible), so its calls cannot be estimated before they are sent; "
            "drop the option, or use --groundeval-limit to bound the run"
        )
    if price_source(model) is None:
        raise ConfigError(
            f"--groundeval-max-cost={limit_usd:g}: the model {model!r} has no known price "
            "(neither groundeval's Claude list nor the genai-prices catalogue of the `prices` extra has it), "
            "so no call can be estimated before it is sent; "
            "price it in a file given to --groundeval-prices (per model id: input and output, USD per million "
            "tokens), drop the option, or use --groundeval-limit to bound the run"
        )


def worker_share(limit_usd: float, workers: int | None) -> float:
    """This process's share of the limit: all of it when serial, an equal part on each of ``workers`` xdist workers."""
    return limit_usd / workers if isinstance(workers, int) and workers > 1 else limit_usd
