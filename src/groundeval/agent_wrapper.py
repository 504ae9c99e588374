"""What every wrapper around a built agent shares: its declarations forwarded, ``warmup`` and ``close`` passed on.

The wrappers (``agents.result_cache.CachingAgent``, ``fhir.serving.FhirServingAgent``,
``mcp_server.serving.MCPToolsAgent``) stand where the agent stood, so the session, the spend
check and batch mode read the same declarations from them (``agents.base.Agent``: ``requires``,
``tasks``, ``max_concurrency``, ``thread_safe``, ``record_access``, ``network_calls``,
``provider_model``) and the run's warm-up and end reach the agent inside. Standard library only.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AgentWrapper"]


class AgentWrapper:
    """Base of an agent wrapper: ``wrapped``, ``name``, ``model`` and the declarations it forwards.

    Args:
        agent: The built agent wrapped.
        forwarded: The declarations copied from ``agent`` when it has them (not None); a
            wrapper that changes one (the MCP wrapper's ``requires``) leaves it out and sets it.
    """

    def __init__(self, agent: Any, forwarded: tuple[str, ...]) -> None:
        self.wrapped = agent
        self.name: str = agent.name
        self.model: str | None = getattr(agent, "model", None)
        for attr in forwarded:
            if getattr(agent, attr, None) is not None:
                setattr(self, attr, getattr(agent, attr))

    def warmup(self) -> None:
        """The wrapped agent's ``warmup()``, if it has one."""
        warmup = getattr(self.wrapped, "warmup", None)
        if callable(warmup):
            warmup()

    def close(self) -> None:
        """The wrapped agent's ``close()``, if it has one."""
        close = getattr(self.wrapped, "close", None)
        if callable(close):
            close()
