"""The response cache: keys, hits and misses, what is cached, WAL mode, corrupt files and entries."""

from __future__ import annotations

import sqlite3
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from groundeval.agent_io import AgentRequest, AgentResult, Prompt
from groundeval.agents.result_cache import CachingAgent, cache_key
from groundeval.errors import AgentError, InfraError, TruncatedError
from groundeval.models.cache_store import CACHE_FILE, CacheWarning, ResultCache
from groundeval.testing import ScriptedAgent

OPTIONS: dict[str, Any] = {"temperature": None, "max_tokens": 4096, "timeout": 600.0, "max_retries": 2}


def request(case_id: str = "c1", trial: int = 0, system: str = "sys", user: str = "bundle") -> AgentRequest:
    return AgentRequest(case_id=case_id, task="extraction", prompt=Prompt(system, user), trial=trial)


def key(**changes: Any) -> str:
    fields: dict[str, Any] = {"agent_spec": "claude", "agent_name": "claude", "model": "claude-opus-4-8",
                              "options": OPTIONS, "request": request()}
    fields.update(changes)
    return cache_key(**fields)


def test_key_changes_with_everything_that_changes_the_answer() -> None:
    base = key()
    assert base == key(options=dict(reversed(list(OPTIONS.items()))))  # order does not matter
    variants = {
        "trial": key(request=request(trial=1)),
        "system": key(request=request(system="sys v2")),
        "user": key(request=request(user="bundle v2")),
        "model": key(model="claude-sonnet-5-5"),
        "temperature": key(options={**OPTIONS, "temperature": 0.0}),
        "max_tokens": key(options={**OPTIONS, "max_tokens": 1024}),
        "spec": key(agent_spec="pkg.mod:agent"),
        "tools": key(task_facts={"tools": ["lookup_rxnorm"]}),
    }
    assert base not in variants.values() and len(set(variants.values())) == len(variants)
    # bounds on the call, not the answer
    assert key(options={**OPTIONS, "timeout": 5.0, "max_retries": 0}) == base
    # the case id is not in the key: the same prompt is the same request
    assert key(request=request(case_id="other")) == base


class Counting:
    """A scripted agent that counts its calls."""

    def __init__(self, fail: BaseException | None = None) -> None:
        self.calls = 0
        self.fail = fail
        self.agent = ScriptedAgent(self.answer, name="scripted", model="m-1")

    def answer(self, req: AgentRequest) -> str:
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        return f"[] {req.prompt.user} {req.trial}"


def caching(tmp_path: Path, inner: Any, options: dict[str, Any] | None = None) -> CachingAgent:
    return CachingAgent(inner, ResultCache(tmp_path / "cache"), spec="scripted", options=options or OPTIONS)


def test_hit_makes_no_call_and_is_marked_cached(tmp_path: Path) -> None:
    counting = Counting()
    agent = caching(tmp_path, counting.agent)
    assert (agent.name, agent.model) == ("scripted", "m-1")
    first = agent.run(request())
    assert counting.calls == 1 and not first.cached
    again = agent.run(request())
    assert counting.calls == 1 and again.cached
    assert (again.text, again.model, again.usage, again.trace, again.meta) == (
        first.text, first.model, first.usage, first.trace, first.meta)
    agent.run(request(trial=1))  # another trial is another sample
    assert counting.calls == 2
    # a second process (a new cache object on the same directory) hits too
    other = caching(tmp_path, Counting().agent)
    assert other.run(request()).cached


def test_a_cache_directory_written_before_the_cache_moved_to_the_agents_layer_is_still_hit(tmp_path: Path) -> None:
    """The key and the file are what the cache wrote before it moved to the agents layer: an old directory hits."""
    old_key = "9c24cbc065f5b9b764653f5f756cf149d7eca4b56b6730cc0287d3feb245abfd"  # computed by the old module
    old = AgentRequest(case_id="Liz_Conn", task="extraction", prompt=Prompt("sys", "bundle"), context={"tools": ["a"]},
                       trial=1)
    options = {"temperature": 0.0, "max_tokens": 4096, "timeout": 600.0, "max_retries": 2}
    assert cache_key(agent_spec="claude", agent_name="claude", model="claude-opus-4-8", options=options, request=old,
                     task_facts={"tools": ["lookup_rxnorm"]}) == old_key
    directory = tmp_path / "cache"
    directory.mkdir()
    con = sqlite3.connect(directory / "groundeval-results-v1.sqlite3", isolation_level=None)  # as the old store made it
    try:
        con.execute("PRAGMA journal_mode = WAL")
        con.execute("CREATE TABLE results (key TEXT PRIMARY KEY, agent TEXT, model TEXT, created_at TEXT, "
                    "value TEXT NOT NULL)")
        con.execute("PRAGMA user_version = 1")
        value = ('{"attempts":1,"kind":"result","messages":[],"meta":{"stop_reason":"end_turn"},'
                 '"model":"claude-opus-4-8","text":"[] from the old cache","trace":[],"usage":{"input_tokens":7}}')
        con.execute("INSERT INTO results VALUES (?, ?, ?, ?, ?)",
                    (old_key, "claude", "claude-opus-4-8", "2026-12-01T00:00:00+00:00", value))
    finally:
        con.close()
    counting = Counting()
    counting.agent.name, counting.agent.model = "claude", "claude-opus-4-8"
    agent = CachingAgent(counting.agent, ResultCache(directory), spec="claude", options=options,
                         task_facts={"tools": ["lookup_rxnorm"]})
    hit = agent.run(old)
    assert counting.calls == 0 and hit.cached
    assert (hit.text, hit.usage, hit.meta, hit.attempts) == ("[] from the old cache", {"input_tokens": 7},
                                                             {"stop_reason": "end_turn"}, 1)


def test_the_wrapper_forwards_the_agents_declared_model(tmp_path: Path) -> None:
    counting = Counting()
    assert getattr(caching(tmp_path, counting.agent), "provider_model", None) is None  # an agent that declares none
    declared = object()
    counting.agent.provider_model = declared  # type: ignore[attr-defined]
    assert caching(tmp_path, counting.agent).provider_model is declared


def test_agent_result_fields_survive_the_cache(tmp_path: Path) -> None:
    class Rich:
        name, model = "rich", "m-2"

        def run(self, req: AgentRequest) -> AgentResult:
            return AgentResult(text="[]", model="m-2-0601", usage={"input_tokens": 10, "cost_usd": 0.01}, attempts=2,
                               trace=[{"tool": "lookup", "args": {"q": "x"}, "result": 1, "ok": True}],
                               meta={"stop_reason": "end_turn"})

    fresh = caching(tmp_path, Rich()).run(request())
    hit = caching(tmp_path, Rich()).run(request())
    assert hit.cached and hit == AgentResult(**{**{f: getattr(fresh, f) for f in fresh.__slots__}, "cached": True})


def test_a_truncated_reply_is_never_cached_nor_replayed(tmp_path: Path) -> None:
    counting = Counting(TruncatedError("stopped at max_tokens", attempts=1, details={"partial_text": "[{", "usage": {}}))
    agent = caching(tmp_path, counting.agent)
    for _ in range(2):
        with pytest.raises(TruncatedError) as cut:
            agent.run(request())
        assert getattr(cut.value, "cached", False) is False
    assert counting.calls == 2  # asked again: a cut reply holds no whole answer
    # an entry an earlier version stored is read as a miss
    agent.cache.put(agent.key(request()), {"kind": "error", "type": "TruncatedError", "message": "cut",
                                           "attempts": 1, "details": {}}, agent="claude", model="m")
    with pytest.raises(TruncatedError):
        agent.run(request())
    assert counting.calls == 3


@pytest.mark.parametrize("error", [InfraError("529 overloaded"), AgentError("no scripted answer"), RuntimeError("bug")])
def test_infra_and_other_errors_are_never_cached(tmp_path: Path, error: BaseException) -> None:
    counting = Counting(error)
    agent = caching(tmp_path, counting.agent)
    for _ in range(2):
        with pytest.raises(type(error)):
            agent.run(request())
    assert counting.calls == 2


def test_store_is_sqlite_in_wal_mode(tmp_path: Path) -> None:
    caching(tmp_path, Counting().agent).run(request())
    con = sqlite3.connect(tmp_path / "cache" / CACHE_FILE)
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("PRAGMA user_version").fetchone()[0] == 1
        assert con.execute("SELECT count(*) FROM results").fetchone()[0] == 1
    finally:
        con.close()


def test_threads_share_one_cache(tmp_path: Path) -> None:
    counting = Counting()
    agent = caching(tmp_path, counting.agent)
    reqs = [request(user=f"bundle {i}") for i in range(16)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(agent.run, reqs))
    with ThreadPoolExecutor(8) as pool:
        assert all(r.cached for r in pool.map(agent.run, reqs))
    assert counting.calls == 16


def _run_twice(tmp_path: Path) -> tuple[Counting, list[bool], list[warnings.WarningMessage]]:
    """Two runs of the same request through a fresh cache object: the calls, cached flags and cache warnings."""
    counting = Counting()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        agent = caching(tmp_path, counting.agent)
        cached = [agent.run(request()).cached for _ in range(2)]
    return counting, cached, [w for w in seen if issubclass(w.category, CacheWarning)]


@pytest.mark.parametrize("content", [b"this is not a database" * 50, "truncated"])
def test_corrupt_database_warns_once_and_runs_without_cache(tmp_path: Path, content: bytes | str) -> None:
    db = tmp_path / "cache" / CACHE_FILE
    if content == "truncated":  # a real database cut short mid-file
        agent = caching(tmp_path, Counting().agent)
        for i in range(50):
            agent.run(request(user="x" * 2000 + str(i)))
        con = sqlite3.connect(db)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        data = db.read_bytes()
        assert len(data) > 8192
        db.write_bytes(data[: len(data) // 3])
        for side in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            side.unlink(missing_ok=True)
    else:
        db.parent.mkdir(parents=True)
        db.write_bytes(content)  # type: ignore[arg-type]
    counting, cached, caught = _run_twice(tmp_path)
    assert counting.calls == 2 and cached == [False, False]
    assert len(caught) == 1 and str(db) in str(caught[0].message)


def test_corrupt_entry_is_ignored_with_a_warning_and_replaced(tmp_path: Path) -> None:
    caching(tmp_path, Counting().agent).run(request())
    con = sqlite3.connect(tmp_path / "cache" / CACHE_FILE)
    con.execute("UPDATE results SET value = '{\"kind\": \"result\", \"text\": '")  # cut mid-JSON
    con.commit()
    con.close()
    counting, cached, caught = _run_twice(tmp_path)
    assert counting.calls == 1 and cached == [False, True]  # ignored once, then replaced by the fresh answer
    assert len(caught) == 1 and "unreadable" in str(caught[0].message)


@pytest.mark.parametrize("ddl", ["PRAGMA user_version = 99", "CREATE TABLE results (key TEXT PRIMARY KEY, blob BLOB)"])
def test_schema_of_another_version_is_not_read(tmp_path: Path, ddl: str) -> None:
    db = tmp_path / "cache" / CACHE_FILE
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.execute(ddl)
    con.commit()
    con.close()
    counting, cached, caught = _run_twice(tmp_path)
    assert counting.calls == 2 and cached == [False, False] and len(caught) == 1
    assert "delete" in str(caught[0].message)


def test_the_wrapper_submits_only_when_the_wrapped_agent_can(tmp_path: Path) -> None:
    from concurrent.futures import Future

    counting = Counting()
    assert caching(tmp_path, counting.agent).submit is None  # no submit: the executor calls run in a thread

    class Submitting:
        name, model = "submitting", "m-3"

        def __init__(self) -> None:
            self.submitted = 0

        def run(self, req: AgentRequest) -> AgentResult:
            raise AssertionError("run is not called when submit is")

        def submit(self, req: AgentRequest) -> Future[AgentResult]:
            self.submitted += 1
            done: Future[AgentResult] = Future()
            done.set_result(AgentResult(text=f"[] {req.trial}"))
            return done

    inner = Submitting()
    agent = caching(tmp_path, inner)
    assert agent.submit is not None
    first = agent.submit(request()).result()
    hit = agent.submit(request()).result()
    assert inner.submitted == 1 and not first.cached and hit.cached and hit.text == first.text == "[] 0"
