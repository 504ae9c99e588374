"""Batch mode against direct calls: 1,000 cases through a fake batch API and a fake direct API.

Usage::

    uv run python bench/batch.py [--cases 1000] [--latency 0.5] [--batch-latency 20]

Three whole ``pytest --groundeval-task=extraction --groundeval-agent=bench_claude:Agent`` processes
(the real ``ClaudeAgent`` and ``anthropic`` SDK over an ``httpx2.MockTransport``), the cases being
the packaged extraction fixtures run as ``--groundeval-trials`` (48 files x K trials):

* **direct**: ``--groundeval-concurrency 16``; each Messages API call answers after ``--latency`` s;
* **batch**: ``--groundeval-batch``; a Message Batch ends ``--batch-latency`` s after it was
  created (its results are then read back);
* **resume**: the batch run started again with batches that take an hour, killed (SIGKILL) once
  the journal lists every request, then the same command run again with the batches ending
  ``--batch-latency`` s after their creation: ``repaid_after_resume`` is the requests the second
  process sent again (0 when resume works).

Every answer is ``[]`` (scores are irrelevant here) with 1,000-ish input tokens (the prompt's
characters / 4) and 40 output tokens, so the recorded costs are comparable. Printed: whole-process
wall and CPU time, CPU per case, requests sent, batches, recorded cost; the last line is one JSON
object with ``batches``, ``requests_sent``, ``cost_ratio`` (batch run's recorded cost over the
direct run's) and ``repaid_after_resume``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import ROOT, machine, run_once

AGENT = '''import json, os, threading, time
import httpx2
from groundeval.agents.claude import ClaudeAgent

STATE = os.environ["BENCH_STATE"]
LOCK = threading.Lock()


def load():
    try:
        with open(STATE) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {"batches": {}, "direct": 0}


def save(state):
    with open(STATE + ".tmp", "w") as fh:
        json.dump(state, fh)
    os.replace(STATE + ".tmp", STATE)


def message(model, tokens):
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": "[]"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": tokens, "output_tokens": 40, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}


def batch(batch_id, entry):
    ended = time.time() >= entry["ends"]
    n = len(entry["ids"])
    return {"id": batch_id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
            "request_counts": {"processing": 0 if ended else n, "succeeded": n if ended else 0, "errored": 0,
                               "canceled": 0, "expired": 0},
            "created_at": "2026-12-02T08:00:00Z", "expires_at": "2026-12-03T08:00:00Z",
            "results_url": f"https://api.anthropic.com/v1/messages/batches/{batch_id}/results" if ended else None}


def handler(request):
    path = request.url.path
    if path == "/v1/messages":
        body = json.loads(request.content)
        threading.Event().wait(float(os.environ["BENCH_LATENCY"]))
        with LOCK:
            state = load()
            state["direct"] += 1
            save(state)
        tokens = len(json.dumps(body["messages"])) // 4
        return httpx2.Response(200, json=message(body["model"], tokens), headers={"request-id": "req_1"})
    with LOCK:
        state = load()
        if request.method == "POST" and path == "/v1/messages/batches":
            requests = json.loads(request.content)["requests"]
            batch_id = f"msgbatch_{len(state['batches']) + 1:04d}"
            state["batches"][batch_id] = {
                "ends": time.time() + float(os.environ["BENCH_BATCH_LATENCY"]),
                "ids": {r["custom_id"]: [r["params"]["model"], len(json.dumps(r["params"]["messages"])) // 4]
                        for r in requests},
            }
            save(state)
            return httpx2.Response(200, json=batch(batch_id, state["batches"][batch_id]))
        parts = path.split("/")
        entry = state["batches"].get(parts[4]) if len(parts) > 4 else None
        if entry is None:
            return httpx2.Response(404, json={"type": "error", "error": {"type": "not_found_error", "message": "no"}})
        if len(parts) == 5:
            return httpx2.Response(200, json=batch(parts[4], entry))
        lines = []
        for cid, (model, tokens) in entry["ids"].items():
            msg = message(model, tokens)
            msg["usage"]["service_tier"] = "batch"
            lines.append(json.dumps({"custom_id": cid, "result": {"type": "succeeded", "message": msg}}))
        return httpx2.Response(200, content="\\n".join(reversed(lines)).encode())


class Agent(ClaudeAgent):
    def __init__(self, config):
        super().__init__(config, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
'''


def fixtures(dest: Path) -> int:
    """Copy the packaged extraction fixtures into ``dest``; return how many."""
    dest.mkdir(parents=True)
    found = sorted((ROOT / "fixtures" / "extraction").glob("*.json"))
    sources = [p for p in found if not p.name.startswith("MANIFEST")]
    for src in sources:
        (dest / src.name).write_bytes(src.read_bytes())
    return len(sources)


def recorded(out: Path) -> tuple[int, float]:
    """(cases, recorded cost in USD) of the run record in ``out``."""
    (path,) = out.glob("*.json")
    record = json.loads(path.read_text())
    return len(record["cases"]), float(record["aggregate"]["usage"]["cost_usd"])


def state(path: Path) -> dict[str, object]:
    return json.loads(path.read_text()) if path.exists() else {"batches": {}, "direct": 0}


def sent(path: Path) -> tuple[int, int]:
    """(batches created, requests in them) so far."""
    batches = state(path)["batches"]
    assert isinstance(batches, dict)
    return len(batches), sum(len(b["ids"]) for b in batches.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000, help="items: the fixtures x trials (default 1000)")
    parser.add_argument("--latency", type=float, default=0.5, help="direct call latency, s (default 0.5)")
    parser.add_argument("--batch-latency", type=float, default=20.0, help="batch processing time, s (default 20)")
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory(prefix="groundeval-bench-batch-") as tmp:
        base = Path(tmp)
        files = fixtures(base / "data")
        trials = max(1, round(args.cases / files))
        (base / "bench_claude.py").write_text(AGENT)
        env = {"PYTHONPATH": str(base), "PATH": "/usr/bin:/bin", "HOME": str(base),
               "ANTHROPIC_API_KEY": "sk-ant-bench-offline", "BENCH_LATENCY": str(args.latency),
               "BENCH_BATCH_LATENCY": str(args.batch_latency)}
        common = [sys.executable, "-m", "pytest", "-q", "-p", "no:langsmith_plugin", "-p", "no:anyio",
                  "-p", "no:cacheprovider", "--groundeval-task=extraction", "--groundeval-agent=bench_claude:Agent",
                  "--groundeval-data-dir=data", f"--groundeval-trials={trials}", "--groundeval-progress=off"]
        batch_flags = ["--groundeval-batch", "--groundeval-batch-send-delay=2", "--groundeval-batch-poll=1"]
        rows: dict[str, dict[str, float]] = {}
        for name, extra in (("direct", ["--groundeval-concurrency=16"]), ("batch", batch_flags)):
            store = base / f"{name}.state.json"
            out = base / name
            wall, cpu, status = run_once([*common, *extra, f"--groundeval-out-dir={out}"], base,
                                         {**env, "BENCH_STATE": str(store)})
            if status not in (0, 1):
                raise SystemExit(f"{name}: exited {status}")
            cases, cost = recorded(out)
            batches, in_batches = sent(store)
            requests = in_batches if name == "batch" else int(state(store)["direct"])  # type: ignore[call-overload]
            rows[name] = {"wall_s": wall, "cpu_s": cpu, "cases": cases, "requests": requests, "batches": batches,
                          "cost_usd": cost}
        # resume: batches that take an hour, the run killed once every request is journalled
        store, out = base / "resume.state.json", base / "resume"
        journal = out / "groundeval-batches.jsonl"
        cmd = [*common, *batch_flags, f"--groundeval-out-dir={out}"]
        proc = subprocess.Popen(cmd, cwd=base, env={**env, "BENCH_STATE": str(store), "BENCH_BATCH_LATENCY": "3600"},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline and proc.poll() is None:
            ids = sum(len(json.loads(line)["custom_ids"]) for line in journal.read_text().splitlines()) \
                if journal.exists() else 0
            if ids >= trials * files:
                break
            time.sleep(0.5)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        before = sent(store)[1]
        # the batches "end" now: the rerun collects them
        data = state(store)
        for entry in data["batches"].values():  # type: ignore[attr-defined]
            entry["ends"] = time.time() + args.batch_latency
        store.write_text(json.dumps(data))
        wall, cpu, status = run_once(cmd, base, {**env, "BENCH_STATE": str(store)})
        if status not in (0, 1):
            raise SystemExit(f"resume: exited {status}")
        repaid = sent(store)[1] - before
        cases, cost = recorded(out)
        rows["resumed"] = {"wall_s": wall, "cpu_s": cpu, "cases": cases, "requests": repaid,
                           "batches": sent(store)[0], "cost_usd": cost}
    print(f"{trials * files} cases ({files} fixtures x {trials} trials); direct latency {args.latency} s at "
          f"concurrency 16; batch latency {args.batch_latency} s")
    print(f"{'variant':<9}{'whole s':>9}{'cpu s':>8}{'cpu ms/case':>13}{'requests':>10}{'batches':>9}{'cost USD':>10}")
    for name, row in rows.items():
        print(f"{name:<9}{row['wall_s']:>9.1f}{row['cpu_s']:>8.1f}{1000 * row['cpu_s'] / row['cases']:>13.1f}"
              f"{int(row['requests']):>10}{int(row['batches']):>9}{row['cost_usd']:>10.4f}")
    figures = {
        "batches": int(rows["batch"]["batches"]), "requests_sent": int(rows["batch"]["requests"]),
        "cost_ratio": round(rows["batch"]["cost_usd"] / rows["direct"]["cost_usd"], 4),
        "repaid_after_resume": int(repaid), "cases": trials * files,
        "whole_s": {k: round(v["wall_s"], 2) for k, v in rows.items()},
        "cpu_s": {k: round(v["cpu_s"], 2) for k, v in rows.items()},
    }
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
