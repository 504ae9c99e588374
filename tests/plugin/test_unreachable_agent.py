"""A custom agent whose own server is down stops the run as an unreachable model API does."""

from __future__ import annotations

import socket
import urllib.error
from pathlib import Path

import pytest

from groundeval.errors import InfraError, connection_failure

from .conftest import run_records

DOWN_AGENT = '''
import json
import urllib.request

PORT = {port}

def agent(request):
    # a custom agent with its own HTTP client, pointed at a port where nothing listens
    with urllib.request.urlopen(f"http://127.0.0.1:{{PORT}}/v1/answer", timeout=5) as reply:
        return json.load(reply)["text"]

def after_one_answer(request):
    if request.case_id.startswith("Clemente_Kreiger"):
        return "[]"  # answered: the endpoint was reachable once, so later failures are the cases' own
    return agent(request)
'''


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_refused_connection_in_the_chain_is_a_failure_to_connect_and_an_http_error_is_not() -> None:
    def fetch() -> None:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as inner:
            raise urllib.error.URLError(inner) from inner

    with pytest.raises(urllib.error.URLError) as wrapped:
        fetch()
    assert connection_failure(wrapped.value)
    assert connection_failure(socket.gaierror(-2, "Name or service not known"))
    assert not connection_failure(TimeoutError("timed out")) and not connection_failure(ValueError("bad JSON"))
    assert connection_failure(InfraError("down", connection=True)) and not connection_failure(InfraError("429"))


def test_a_custom_agents_server_down_stops_the_run_after_three_cases(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makepyfile(down_agent=DOWN_AGENT.format(port=_closed_port()))
    args = ["--groundeval-task=extraction", "--groundeval-data-dir=data", "-p", "no:cacheprovider"]
    result = pytester.runpytest(*args, "--groundeval-agent=down_agent:agent")
    assert result.parseoutcomes() == {"errors": 3}  # agent_error (an error, excluded): the agent's own exception
    result.stdout.fnmatch_lines([
        "*the first 3 cases all failed to connect and none was answered: what the agent connects to looks "
        "unreachable*",
    ])
    (record,) = run_records(pytester.path)
    outcomes = [c["outcome"] for c in record["cases"]]
    assert record["complete"] is False and outcomes.count("agent_error") == 3 and outcomes.count("not_run") == 2
    assert all("URLError" in c["error"]["type"] for c in record["cases"] if c["outcome"] == "agent_error")


def test_once_the_agent_has_answered_a_later_refused_connection_stops_nothing(pytester: pytest.Pytester,
                                                                             eval_dir: Path) -> None:
    pytester.makepyfile(down_agent=DOWN_AGENT.format(port=_closed_port()))
    result = pytester.runpytest("--groundeval-task=extraction", "--groundeval-data-dir=data", "-p",
                                "no:cacheprovider", "--groundeval-agent=down_agent:after_one_answer", "-p",
                                "no:randomly")
    (record,) = run_records(pytester.path)
    assert "not_run" not in [c["outcome"] for c in record["cases"]], result.stdout.str()
