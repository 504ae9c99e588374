"""Benchmarks that print ratios measured in one run (absolute times on 2 cores are noisy).

Usage::

    uv run python bench/bench_plugin.py [--repeat 5]

1. Idle cost: a trivial pytest run with groundeval installed but no --groundeval-task, against
   the same run with the plugin disabled (-p no:groundeval). Goal: ratio ~1.0 (< 1.05).
2. Truth vs validation: deriving the ground truth with a dict walk, against validating the same
   trimmed bundles with fhir.resources R4B models (what a model-based reader pays). Goal: > 5x.
3. Parallel eval: the whole baseline extraction run serial vs -n 2 (wall time). Reported, not a
   goal: worker start-up dominates for 25 fast cases.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "extraction"


def wall(cmd: list[str], cwd: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, check=False, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def idle_cost(repeat: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "test_x.py").write_text("def test_x():\n    pass\n")
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        on = wall(base, Path(tmp), repeat)
        off = wall([*base, "-p", "no:groundeval"], Path(tmp), repeat)
    return on / off


def truth_vs_validation(repeat: int) -> float:
    from fhir.resources.R4B.bundle import Bundle

    from groundeval.tasks.medlist import active_medications

    bundles = [json.loads(p.read_bytes()) for p in sorted(FIXTURES.glob("*_*.json"))]
    Bundle.model_validate(bundles[0])  # warm-up imports
    walk, validate = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        for b in bundles:
            active_medications(b)
        walk.append(time.perf_counter() - start)
        start = time.perf_counter()
        for b in bundles:
            Bundle.model_validate(b)
        validate.append(time.perf_counter() - start)
    return statistics.median(validate) / statistics.median(walk)


def parallel(repeat: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                "--groundeval-task=extraction", "--groundeval-agent=baseline", f"--groundeval-out-dir={tmp}"]
        serial = wall(base, ROOT, repeat)
        xdist = wall([*base, "-n", "2"], ROOT, repeat)
    return serial / xdist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    idle = idle_cost(args.repeat)
    verdict = "ok" if idle < 1.05 else "MISSED"
    print(f"idle plugin cost (with / without groundeval): {idle:.3f}x  goal < 1.05x  {verdict}")
    ratio = truth_vs_validation(args.repeat)
    print(f"R4B model validation / truth dict walk:       {ratio:.1f}x  goal > 5x  {'ok' if ratio > 5 else 'MISSED'}")
    speedup = parallel(max(1, args.repeat // 2))
    print(f"baseline run serial / -n 2 (wall):            {speedup:.2f}x  (reported)")


if __name__ == "__main__":
    main()
