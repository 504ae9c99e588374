"""What a run does to a built agent before the first case: replay checks, the serving wrappers, the cache.

``run.assembly`` calls ``prepare_agent`` on every process that runs cases and ``preflight_replay``
on the pytest-xdist controller, which builds no agent.
"""

from __future__ import annotations

from typing import Any

from groundeval.agents.base import Agent, AgentConfig, make_agent
from groundeval.errors import ConfigError
from groundeval.run.settings import Settings

__all__ = ["preflight_replay", "prepare_agent"]


def _warn_unreplayed_trials(agent: Agent, trials: int) -> None:
    """Warn when the replayed record holds more trials per case than this run replays."""
    record = getattr(agent, "record", None)
    recorded = 1 + max((c.trial for c in getattr(record, "cases", ())), default=0)
    if recorded > trials:
        import warnings

        warnings.warn(
            f"groundeval: the replayed record holds {recorded} trials per case and this run replays "
            f"{trials}; give --groundeval-trials={recorded} to re-score them all",
            stacklevel=2,
        )


def is_replay(spec: str) -> bool:
    """True for ``replay:RUN.json``."""
    return _is_replay(spec)


def _is_replay(spec: str) -> bool:
    return spec.partition(":")[0] == "replay" and ":" in spec


def prepare_agent(agent: Agent, settings: Settings, task: Any) -> Agent:
    """Check a replay agent's record against the current cases; wrap any other agent in the cache.

    Args:
        agent: The built agent (already checked against the task).
        settings: The run settings (``data_dir``, ``cache_dir``, ``replay_allow_changed``).
        task: The task of the run.

    With ``--groundeval-tools=mcp`` the agent is wrapped first in ``mcp_server.serving.MCPToolsAgent`` (each
    case's tools on an MCP server of its own, the server's trace in the result), inside the cache,
    so a cached answer keeps the trace it was made with; with ``--groundeval-fhir`` in
    ``fhir.serving.FhirServingAgent`` (each case's record on a FHIR server, the access log and
    what the agent wrote in ``meta["fhir"]``), inside the cache as well.

    Returns:
        The agent to run: a ``CachingAgent`` around ``agent`` with ``--groundeval-cache``, else ``agent``.

    Raises:
        ConfigError: The replayed record is of another task or of changed case files (see
            ``ReplayAgent.check_cases``), or the task's facts for the cache key cannot be read.
    """
    check_cases = getattr(agent, "check_cases", None)
    if callable(check_cases):
        check_cases(task, settings.data_dir, allow_changed=settings.replay_allow_changed)
        _warn_unreplayed_trials(agent, settings.trials)
        return agent  # a replay makes no model call: nothing to cache
    if settings.tools == "mcp":
        from groundeval.mcp_server.serving import MCPToolsAgent

        agent = MCPToolsAgent(agent)
    if settings.fhir is not None:
        from groundeval.fhir.serving import FhirServingAgent

        agent = FhirServingAgent(agent, settings.fhir)
    if settings.cache_dir is None:
        return agent
    from groundeval.agents.result_cache import CachingAgent
    from groundeval.models.cache_store import ResultCache

    tools = tuple(getattr(task, "tools", ()) or ())
    facts: dict[str, Any] = {"tools": list(tools)}
    if settings.tools == "mcp":
        facts["tool_transport"] = "mcp"  # the same agent may answer otherwise through another transport
    if settings.fhir is not None:  # the served record's SHA-256 is in each request's context
        facts["record_access"] = "fhir-sandbox" if settings.fhir == "sandbox" else "fhir-server"
    run_facts = getattr(task, "run_facts", None)
    # tool results come from the task's reference data (the catalog); over FHIR the agent's own lookups do
    if (tools or settings.fhir is not None) and callable(run_facts):
        try:
            facts["run_facts"] = run_facts()
        except Exception as exc:
            raise ConfigError(f"--groundeval-cache: the {task.name} task's facts cannot be read: {exc}") from exc
    return CachingAgent(
        agent, ResultCache(settings.cache_dir), spec=settings.agent, options=dict(settings.agent_options),
        task_facts=facts,
    )


def preflight_replay(settings: Settings, task: Any) -> None:
    """On the pytest-xdist controller: refuse a bad replay record before any worker starts.

    Raises:
        ConfigError: As ``prepare_agent`` for a replay agent; nothing for other agents.
    """
    if _is_replay(settings.agent):
        agent = make_agent(settings.agent, AgentConfig(model=settings.model, options=dict(settings.agent_options)))
        prepare_agent(agent, settings, task)
