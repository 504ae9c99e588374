"""Throughput of a model judge under ``--groundeval-concurrency``: the executor's score stage.

Usage::

    uv run python bench/judge.py [--rounds 1] [--latency 0.1] [--cases 25]

One whole ``pytest --groundeval-task=summary`` process per run, for concurrency 1, 4 and 16,
interleaved (round r runs every variant once, in an order rotated by r; one warm-up round is
discarded). The agent (``bench_agent.py``) answers at once with a summary whose every criterion the
rules leave open, so every criterion goes to the judge; the judge (``bench_judge:JUDGE``) is a
``ScriptedModel`` whose every call waits ``--latency`` seconds (``threading.Event().wait``) and
answers ``{"met": false, "evidence": ""}``. Each judge call appends its start and end
(``time.monotonic``) to a file, so:

* **judge phase**: first judge call started to last judge call finished, seconds;
* **calls**: judge calls made (the run record's ``usage.judge_calls``, checked against the file);
* **speedup**: judge phase at concurrency 1 over judge phase at N;
* **ideal**: calls x latency / N.

Before this stage existed, judge calls ran one after another on the main thread whatever the
concurrency (speedup 1.0 throughout). The last line is one JSON object for CI (``speedup_n16``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _timing import machine, run_once

AGENT = """
def agent(request):
    return "Patient reviewed. Plan discussed."

agent.thread_safe = True
agent.network_calls = False
"""

JUDGE = """import os
import threading
import time

from groundeval.testing import ScriptedModel

LATENCY_S = {latency}
_LOG = os.environ["BENCH_JUDGE_LOG"]
_LOCK = threading.Lock()


def reply(request):
    start = time.monotonic()
    threading.Event().wait(LATENCY_S)
    with _LOCK, open(_LOG, "a") as out:
        out.write(f"{{start}} {{time.monotonic()}}\\n")
    return '{{"met": false, "evidence": ""}}'


JUDGE = ScriptedModel(reply, role="judge", name="bench-judge")
"""

CONCURRENCY = (1, 4, 16)


def _phase(log: Path) -> tuple[float, int]:
    spans = [tuple(map(float, line.split())) for line in log.read_text().splitlines() if line.strip()]
    return max(e for _, e in spans) - min(s for s, _ in spans), len(spans)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--cases", type=int, default=25)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="groundeval-bench-judge-"))
    try:
        (work / "bench_agent.py").write_text(AGENT)
        (work / "bench_judge.py").write_text(JUDGE.format(latency=args.latency))
        phases: dict[int, list[float]] = {n: [] for n in CONCURRENCY}
        calls: dict[int, int] = {}
        for r in range(args.rounds + 1):
            order = list(CONCURRENCY[r % 3:] + CONCURRENCY[:r % 3])
            for n in order:
                log, out = work / f"judge-{n}-{r}.log", work / f"runs-{n}-{r}"
                cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                       f"--rootdir={work}", "--groundeval-task=summary", "--groundeval-agent=bench_agent:agent",
                       "--groundeval-judge=bench_judge:JUDGE", f"--groundeval-concurrency={n}",
                       f"--groundeval-limit={args.cases}", f"--groundeval-out-dir={out}"]
                env = {**os.environ, "BENCH_JUDGE_LOG": str(log), "PYTHONPATH": str(work)}
                _, _, status = run_once(cmd, work, env)
                if status not in (0, 1):
                    raise SystemExit(f"concurrency {n}: exited {status}")
                (record_path,) = out.glob("*.json")
                made = json.loads(record_path.read_text())["aggregate"]["usage"]["judge_calls"]
                phase, logged = _phase(log)
                if logged != made:
                    raise SystemExit(f"concurrency {n}: {logged} judge calls logged, the record says {made}")
                calls[n] = made
                if r:
                    phases[n].append(phase)
        base = statistics.median(phases[1])
        print(f"machine: {machine()}  latency {args.latency} s  cases {args.cases}  rounds {args.rounds}")
        print(f"{'N':>3} {'calls':>6} {'judge phase s':>14} {'ideal s':>8} {'speedup':>8}")
        figures: dict[str, float] = {}
        for n in CONCURRENCY:
            phase = statistics.median(phases[n])
            figures[f"speedup_n{n}"] = round(base / phase, 2)
            print(f"{n:>3} {calls[n]:>6} {phase:>14.2f} {calls[n] * args.latency / n:>8.2f} {base / phase:>7.1f}x")
        print(json.dumps({**figures, "calls": calls[1], "latency_s": args.latency,
                          "phase_s": {n: round(statistics.median(phases[n]), 3) for n in CONCURRENCY}}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
