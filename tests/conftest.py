"""Isolation for groundeval's own tests."""

from __future__ import annotations

import importlib

import pytest

PRELOAD = ("http.cookiejar", "requests", "scipy.stats", "ucumvert")
"""Loaded before any pytester run: modules that cannot be imported twice in one process (numpy's C
extension) or that break when re-imported beside live objects (requests' cookie jars; ucumvert,
whose lark parser ``groundeval.terminology.ucum`` keeps: a ucumvert imported again raises
exceptions of the old lark that the new ``InvalidUcumError`` does not catch). pytester's in-process
runs drop every module first imported inside them."""

PRELOAD_FOR_SPEED = (
    "groundeval.agents.baselines.extraction", "groundeval.plugin.reporting", "groundeval.plugin.session",
    "groundeval.plugin.controller", "groundeval.run.assembly", "groundeval.run.process",
    "groundeval.plugin.xdist_hooks", "groundeval.tasks.extraction.task", "groundeval.tasks.write.task",
    "groundeval.tasks.reconcile.task", "groundeval.tasks.labs.task", "groundeval.tasks.summary.task",
    "groundeval.plugin.progress", "groundeval.plugin.run_end", "groundeval.plugin.signals", "groundeval.plugin.upcoming",
    "groundeval.plugin.thread_output", "groundeval.records.aggregate", "groundeval.records.grounding",
    "groundeval.records.sensitivity", "jinja2",
    # the provider SDKs: a pytester run of a Claude or OpenAI-compatible agent over a mocked transport
    # would import each again (several thousand pydantic models) every time
    "anthropic", "openai", "groundeval.models.providers.anthropic", "groundeval.models.providers.openai_compat", "groundeval.agents.claude",
    *(f"fhir.resources.R4B.{model}" for model in
      ("bundle", "patient", "medicationrequest", "medication", "medicationstatement")),
    # what a LangGraph agent's run imports (about 700 modules: LangChain, LangGraph, LangSmith's
    # run helpers, HealthChain's tools), which its tests in this process import anyway
    "langchain.agents", "langchain.agents.middleware", "langgraph.errors", "langchain_anthropic", "healthchain.tools",
    "groundeval.agents.langgraph_agent", "groundeval.agents._langgraph_graph", "groundeval.tasks.write.tools",
)
"""Loaded only for speed: an in-process run would otherwise import, and pytest assertion-rewrite,
about 30 groundeval modules, pydantic, fhir.resources and HealthChain again, every time (about 1 s
a run), and the provider SDKs in every run of a model-backed agent."""


def pytest_configure(config: pytest.Config) -> None:
    """Load ``PRELOAD``, HealthChain and ``PRELOAD_FOR_SPEED`` in every process that runs tests.

    Not in a pytest-xdist controller (``-n 2``), which runs none: that saves it about 3 CPU-seconds.
    Not in an eval run started in this repository (``groundeval --agent baseline``, ``pytest
    --groundeval-task=...``), which loads this file too (``testpaths``) but runs no test of the
    suite: the preloads would cost it about 5 CPU-seconds (the SDKs, LangChain, scipy).
    """
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return
    if getattr(config.option, "groundeval_task", None):
        return
    for name in PRELOAD:
        importlib.import_module(name)
    from groundeval._healthchain import import_healthchain

    import_healthchain()
    for name in PRELOAD_FOR_SPEED:
        importlib.import_module(name)


LEAN_ADDOPTS = "-p no:langsmith_plugin -p no:anyio --assert=plain"
"""Options of the pytest runs the suite starts (see ``_lean_pytest_subprocesses``).

Two plugins switched off, and pytest's assertion rewriting: with it on, every run (each in-process
pytester run too) reads the file lists of every installed distribution that has a pytest plugin,
to mark their modules for rewriting (about 10 ms a run here). The suite's own test modules are
still rewritten; no test the suite runs inside pytester compares an assertion's introspected
message: groundeval's items report their own messages, and an ``assert`` in a generated test
file still fails with its message when it is not rewritten."""


@pytest.fixture(autouse=True)
def _no_langsmith_streaming(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never stream the suite's own pytester runs to a developer's LangSmith account.

    Tests of the streaming itself set ``LANGSMITH_API_KEY`` (and a local endpoint) explicitly.
    """
    for name in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _fresh_call_run() -> None:
    """Each test starts with a fresh run of model calls (``throttle.configure``): no earlier test's
    pause after a rate-limit answer (``CallRun.cool_down``, real time) or stop holds its calls."""
    from groundeval.models import throttle

    throttle.configure(None)


@pytest.fixture(autouse=True)
def _lean_pytest_subprocesses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the pytest runs the suite starts (pytester, xdist workers) free of unrelated cost.

    LangSmith's and anyio's pytest plugins load in every pytest process of this environment and
    none of our tests uses them; and ``PYTHONDONTWRITEBYTECODE=1`` (set on these machines) makes
    every subprocess and xdist worker recompile groundeval and its dependencies. Neither changes
    what a test checks.
    """
    monkeypatch.setenv("PYTEST_ADDOPTS", LEAN_ADDOPTS)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's ``pytester``, with ``LEAN_ADDOPTS`` set again after it cleared ``PYTEST_ADDOPTS``.

    ``Pytester`` deletes ``PYTEST_ADDOPTS`` when it is created (after the autouse fixture above),
    so without this every in-process and subprocess run loaded LangSmith's and anyio's plugins and
    re-imported (and re-rewrote) about 260 of their modules.
    """
    monkeypatch.setenv("PYTEST_ADDOPTS", LEAN_ADDOPTS)
    return pytester
