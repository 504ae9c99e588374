"""Threads a batch-mode run holds: the peak number of live threads while N requests wait for their batch.

Usage::

    uv run python bench/batch_threads.py [--cases 1000] [--batch-latency 3]

One ``pytest --groundeval-task=extraction --groundeval-batch`` process over the fake Message
Batches API of ``bench/batch.py`` (the real ``ClaudeAgent`` and ``anthropic`` SDK over an
``httpx2.MockTransport``; a batch ends ``--batch-latency`` s after it was created), the cases being
the packaged extraction fixtures run as ``--groundeval-trials``. A small plugin in the same process
samples ``threading.active_count()`` every 5 ms and reports the peak, the threads alive when the
first batch was created (every request of the first window is waiting then), and the requests
sent. The last line is one JSON object with those figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from _timing import machine, run_once
from batch import AGENT, fixtures, sent

SAMPLER = '''import json, os, threading

PEAK = {"threads": 0, "samples": 0}
DONE = threading.Event()


def _sample():
    while not DONE.wait(0.005):
        PEAK["threads"] = max(PEAK["threads"], threading.active_count())
        PEAK["samples"] += 1


def pytest_configure(config):
    threading.Thread(target=_sample, name="bench-sampler", daemon=True).start()


def pytest_unconfigure(config):
    DONE.set()
    with open(os.environ["BENCH_THREADS"], "w") as fh:
        json.dump(PEAK, fh)
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000, help="items: the fixtures x trials (default 1000)")
    parser.add_argument("--batch-latency", type=float, default=3.0, help="batch processing time, s (default 3)")
    parser.add_argument("--batch-size", type=int, default=1000, help="--groundeval-batch-size (default 1000)")
    parser.add_argument("--src", type=Path, default=None,
                        help="run groundeval from this checkout's src/ instead of the installed one (a before/after)")
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory(prefix="groundeval-bench-threads-") as tmp:
        base = Path(tmp)
        files = fixtures(base / "data")
        trials = max(1, round(args.cases / files))
        (base / "bench_claude.py").write_text(AGENT)
        (base / "bench_sampler.py").write_text(SAMPLER)
        store, peak_file = base / "state.json", base / "threads.json"
        path = [str(base)] + ([str(args.src.resolve())] if args.src is not None else [])
        env = {"PYTHONPATH": os.pathsep.join(path), "PATH": "/usr/bin:/bin", "HOME": str(base),
               "ANTHROPIC_API_KEY": "sk-ant-bench-offline", "BENCH_LATENCY": "0",
               "BENCH_BATCH_LATENCY": str(args.batch_latency), "BENCH_STATE": str(store),
               "BENCH_THREADS": str(peak_file)}
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:langsmith_plugin", "-p", "no:anyio",
               "-p", "no:cacheprovider", "-p", "bench_sampler", "--groundeval-task=extraction",
               "--groundeval-agent=bench_claude:Agent", "--groundeval-data-dir=data",
               f"--groundeval-trials={trials}", "--groundeval-progress=off", "--groundeval-batch",
               f"--groundeval-batch-size={args.batch_size}", "--groundeval-batch-send-delay=1",
               "--groundeval-batch-poll=0.5", f"--groundeval-out-dir={base / 'out'}"]
        wall, cpu, status = run_once(cmd, base, env)
        if status not in (0, 1):
            raise SystemExit(f"exited {status}")
        peak = json.loads(peak_file.read_text())
        batches, requests = sent(store)
    figures = {"cases": trials * files, "batch_size": args.batch_size, "batches": batches, "requests_sent": requests,
               "peak_threads": peak["threads"], "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}
    print(f"{trials * files} cases, batch size {args.batch_size}: peak {peak['threads']} threads, {requests} "
          f"requests in {batches} batch(es); {wall:.1f} s whole, {cpu:.1f} CPU-s")
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
