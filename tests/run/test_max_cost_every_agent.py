"""``--groundeval-max-cost`` follows each registered agent's own declaration, never a list kept by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groundeval.agents.base import AgentConfig, agent_target, calls_no_model
from groundeval.errors import ConfigError
from groundeval.registry import builtin_agents
from groundeval.run.spend_check import check_max_cost


def _targets() -> list[tuple[str, Any]]:
    """Every built-in agent's class (``replay`` by its ``replay:RUN.json`` form); one missing its extra is left out."""
    found = []
    for name in builtin_agents():
        spec = "replay:RUN.json" if name == "replay" else name
        try:
            found.append((spec, agent_target(spec)))
        except ConfigError as exc:  # an extra not installed here (the `local` agent's llama.cpp)
            if "extra" not in str(exc):
                raise
    return found


def test_every_agent_that_calls_no_model_is_held_to_the_limit_trivially() -> None:
    targets = _targets()
    # the rule-based floors and controls live in agents/baselines; replay re-scores a recorded run
    rule_based = [(spec, t) for spec, t in targets
                  if t.__module__.startswith("groundeval.agents.baselines.") or spec.startswith("replay:")]
    assert len(rule_based) >= 19  # 14 task baselines and controls, 5 *-rest baselines
    for spec, target in rule_based:
        assert calls_no_model(target), f"{spec} does not declare network_calls = False"
        check_max_cost(1.0, spec, target, AgentConfig())  # no refusal
    assert {"baseline-labs", "naive-labs", "baseline-summary", "hedge-all-summary", "priors"} <= {
        spec for spec, _ in rule_based}


def test_model_agents_are_priced_and_the_others_refused() -> None:
    targets = dict(_targets())
    check_max_cost(1.0, "claude", targets["claude"], AgentConfig())  # the default model has a list price
    with pytest.raises(ConfigError, match="the model 'my-own-model' has no known price"):
        check_max_cost(1.0, "claude", targets["claude"], AgentConfig(model="my-own-model"))
    config = AgentConfig(model="qwen-x", options={"base_url": "http://127.0.0.1:9/v1"})
    with pytest.raises(ConfigError, match="the model 'qwen-x' has no known price"):
        check_max_cost(1.0, "openai-compatible", targets["openai-compatible"], config)
    for spec in ("langgraph", "langgraph-fhir"):
        with pytest.raises(ConfigError, match="does not call its model through groundeval's single-call layer"):
            check_max_cost(1.0, spec, targets[spec], AgentConfig())


def test_a_built_agent_and_its_wrappers_declare_the_model_they_call(tmp_path: Path) -> None:
    from groundeval.agents.result_cache import CachingAgent
    from groundeval.fhir.serving import FhirServingAgent
    from groundeval.mcp_server.serving import MCPToolsAgent
    from groundeval.models.cache_store import ResultCache

    class Declares:
        name = "declares"
        model = "m"
        provider_model = object()  # what the wrappers forward, whatever it is

        def run(self, request: Any) -> str:
            return ""

    inner = Declares()
    wrappers: list[Any] = [FhirServingAgent(inner, "sandbox"), MCPToolsAgent(inner),
                           CachingAgent(inner, ResultCache(tmp_path), spec="x", options={})]
    for wrapper in wrappers:
        assert wrapper.provider_model is inner.provider_model


def test_every_wrapper_keeps_an_agents_declaration_that_it_makes_no_network_call(tmp_path: Path) -> None:
    """A wrapped offline agent spends nothing and its first call need not go alone, as unwrapped."""
    from groundeval.agents.result_cache import CachingAgent
    from groundeval.fhir.serving import FhirServingAgent
    from groundeval.mcp_server.serving import MCPToolsAgent
    from groundeval.models.cache_store import ResultCache
    from groundeval.testing.scripted_agent import ScriptedAgent

    inner = ScriptedAgent({})
    wrappers: list[Any] = [FhirServingAgent(inner, "sandbox"), MCPToolsAgent(inner),
                           CachingAgent(inner, ResultCache(tmp_path), spec="x", options={})]
    assert calls_no_model(inner)
    for wrapper in wrappers:
        assert calls_no_model(wrapper), type(wrapper).__name__


def test_the_labs_baseline_runs_under_a_spend_limit(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--groundeval-task=labs", "--groundeval-agent=baseline-labs", "--groundeval-max-cost=1",
                                "--groundeval-limit=2", "-p", "no:cacheprovider", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["usage: no model calls (cost 0 USD)*"])
