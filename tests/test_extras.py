"""Optional extras: the plain install stays free of the LangChain stack; a missing extra is one line.

A missing extra is simulated with ``sys.modules[name] = None`` (``import`` then raises and
``importlib.util.find_spec`` returns None), so these tests run in the fully installed dev env.
The real no-extras install is checked by bench/startup.py and by hand with a wheel (README,
"Performance").
"""

from __future__ import annotations

import sys
import tomllib
import warnings
from importlib.metadata import PackageNotFoundError, distribution
from typing import Any

import pytest
from packaging.requirements import Requirement

from groundeval.agents.base import AgentConfig, make_agent
from groundeval.errors import ConfigError
from groundeval.extras import EXTRAS, NOT_IN_ALL, extra_missing_message, has_module, require_extra
from groundeval.reporting.langsmith import LangSmithStream, LangSmithStreamWarning
from tests._paths import REPO

ROOT = REPO
HEAVY = {"langchain", "langchain-core", "langchain-anthropic", "langgraph", "langsmith"}
ANYIO = {"anyio", "anthropic", "openai", "healthchain", "httpx", "starlette", "fastapi"}
"""anyio and what brings it (its pytest plugin loads in every pytest run): none in a plain install."""


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _closure(dist_name: str, extras: frozenset[str] = frozenset()) -> set[str]:
    """Installed distributions ``dist_name`` (with ``extras``) pulls in, transitively."""
    seen: set[str] = set()
    todo: list[tuple[str, frozenset[str]]] = [(dist_name, extras)]
    while todo:
        name, wanted = todo.pop()
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        for line in requires:
            req = Requirement(line)
            env = [{"extra": e} for e in wanted] or [{"extra": ""}]
            if req.marker is not None and not any(req.marker.evaluate(e) for e in env):
                continue
            dep = _normal(req.name)
            if dep not in seen:
                seen.add(dep)
                todo.append((dep, frozenset(req.extras)))
    return seen


def test_plain_install_pulls_in_no_langchain_no_langsmith_and_no_anyio() -> None:
    # The whole point of the extras: neither langsmith's nor anyio's pytest plugin loads in a plain install.
    plain = _closure("groundeval")
    assert {"pytest", "fhir-resources", "pydantic"} <= plain
    assert not plain & HEAVY, sorted(plain & HEAVY)
    assert not plain & ANYIO, sorted(plain & ANYIO)
    assert not plain & {"pytest-xdist", "execnet"}  # its plugin loads in every run too: the xdist extra


def test_the_cli_asks_for_the_xdist_extra_when_n_is_given_without_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import groundeval.cli as cli

    monkeypatch.setattr(cli, "has_module", lambda m: m != "xdist" and has_module(m))
    assert cli.main(["--agent", "naive", "-n", "2"]) == 4
    assert capsys.readouterr().err.splitlines() == [
        f"ERROR: {extra_missing_message('xdist', 'pytest-xdist', '-n (parallel workers)')}"
    ]
    assert cli.main(["--agent", "naive", "--", "-n2"]) == 4  # pytest's own spelling, after --
    assert "pytest-xdist is not installed" in capsys.readouterr().err
    import groundeval.cli as cli_module

    seen: list[list[str]] = []

    def fake_main(args: list[str]) -> int:
        seen.append(list(args))
        return 0

    monkeypatch.setattr("pytest.main", fake_main)
    assert cli_module.main(["--agent", "naive", "-n", "0"]) == 0  # serial: needs no pytest-xdist
    assert "-n" not in seen[0]


def test_extras_install_the_stack_they_are_named_for() -> None:
    assert {"langchain", "langgraph", "langchain-anthropic", "langsmith"} <= _closure(
        "groundeval", frozenset({"write"})
    )
    assert "langsmith" in _closure("groundeval", frozenset({"langsmith"}))
    assert "langchain" not in _closure("groundeval", frozenset({"langsmith"}))
    assert "healthchain" in _closure("groundeval", frozenset({"write"}))
    for extra, dist in (("claude", "anthropic"), ("openai", "openai"), ("healthchain", "healthchain"),
                        ("xdist", "pytest-xdist")):
        got = _closure("groundeval", frozenset({extra}))
        assert dist in got and not got & HEAVY, extra
    assert ANYIO - {"fastapi", "starlette", "httpx"} <= _closure("groundeval", frozenset({"all"}))


def test_pyproject_extras_match_extras_module_and_dev_group_installs_all() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = meta["project"]["optional-dependencies"]
    assert set(extras) == {*EXTRAS, "all"}
    (every,) = (Requirement(r) for r in extras["all"])  # self-referencing: groundeval[every other extra]
    assert every.name == "groundeval" and every.extras == set(EXTRAS) - NOT_IN_ALL
    for name, modules in EXTRAS.items():
        dists = {_normal(Requirement(r).name) for r in extras[name]}
        assert {_normal({"xdist": "pytest-xdist", "llama_cpp": "llama-cpp-python", "sklearn": "scikit-learn"}.get(m, m)) for m in modules} <= dists, name  # module -> distribution
    core = {_normal(Requirement(r).name) for r in meta["project"]["dependencies"]}
    assert not core & HEAVY
    assert not core & ANYIO
    dev = [Requirement(r) for r in meta["dependency-groups"]["dev"]]
    assert any(r.name == "groundeval" and r.extras == {"all"} for r in dev)


def test_require_extra_names_the_extra_and_the_install_command() -> None:
    with pytest.raises(ConfigError) as info:
        require_extra("write", "groundeval_no_such_module", "the agent 'x'")
    message = str(info.value)
    assert message == (
        "the agent 'x' needs the 'write' extra (groundeval_no_such_module is not installed): "
        "pip install 'groundeval[write]' (uv: uv add 'groundeval[write]')"
    )
    assert "\n" not in message
    require_extra("langsmith", "json", "anything")  # present: no error


def test_require_extra_rejects_an_unknown_extra() -> None:
    with pytest.raises(ValueError, match="unknown extra 'writ'"):
        require_extra("writ", "json", "x")


def test_has_module_does_not_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    assert has_module("colorsys.sub") and "colorsys" not in sys.modules
    monkeypatch.setitem(sys.modules, "langsmith", None)
    assert not has_module("langsmith")


def test_langgraph_agent_without_the_write_extra_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain", None)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with pytest.raises(ConfigError) as info:
        make_agent("langgraph", AgentConfig())
    assert str(info.value) == extra_missing_message("write", "langchain", "the agent 'langgraph'")


def test_extra_error_is_one_usage_line_before_any_case(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "langchain", None)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    result = pytester.runpytest("--groundeval-task=write", "--groundeval-agent=langgraph", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert errors == [f"ERROR: {extra_missing_message('write', 'langchain', 'the agent ' + repr('langgraph'))}"]


def test_langsmith_key_without_the_extra_warns_and_does_not_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langsmith", None)
    monkeypatch.setenv("LANGSMITH_API_KEY", "lsv2-test")
    info: Any = object()  # never read on this path
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert LangSmithStream.from_env(info) is None
    assert [type(w.message) for w in caught] == [LangSmithStreamWarning]
    assert "pip install 'groundeval[langsmith]'" in str(caught[0].message)
