"""What a run costs before and after its agent calls: each part of the fixed cost, measured.

Usage::

    uv run python bench/fixed_cost.py [--rounds 3] [--cases 64]

Whole processes, interleaved (round r runs every variant once, in an order rotated by r), over
``--cases`` extraction case files and an agent that answers ``[]`` at once (so the run phase is
nearly nothing and what is left is fixed cost), at ``--groundeval-concurrency 16``:

* ``python``: ``python -c pass`` (the interpreter);
* ``import``: ``python -c "import pytest, groundeval.plugin"`` (pytest and the plugin's imports);
* ``collect``: the eval with ``--collect-only`` (start-up, every plugin, collection);
* ``run``: the whole eval;
* ``run -s``: the same with pytest's output capture off (``--capture=no``), so ``run`` minus
  ``run -s`` is pytest's per-test capture;
* ``cli``: the same eval through the ``groundeval`` command (``python -m groundeval.cli``), which
  ends the process once its outputs are flushed (``groundeval.cli.entry``), and ``cli, ordinary
  exit``: the same ``groundeval.cli.main`` returning through the interpreter's teardown, so their
  difference is what the early exit saves.

Then, in this process with scipy already imported, the intervals of the ``run`` variant's own
record (``trial_stats.trial_stats`` over its cases, as the end of every run computes them).
Prints medians (wall and CPU seconds) and ends with one JSON line. Read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _timing import machine, run_once
from concurrency import make_cases

AGENT = """def agent(request):
    return "[]"
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--cases", type=int, default=64, help="cases (default 64)")
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory(prefix="groundeval-fixed-") as tmp:
        base = Path(tmp)
        make_cases(base / "data", args.cases)
        (base / "bench_agent.py").write_text(AGENT)
        env = {"PYTHONPATH": str(base), "PATH": "/usr/bin:/bin", "HOME": str(base)}
        py = sys.executable
        eval_cmd = [py, "-m", "pytest", "-q", "-p", "no:langsmith_plugin", "-p", "no:anyio",
                    "--groundeval-task=extraction", "--groundeval-agent=bench_agent:agent",
                    "--groundeval-data-dir=data", "--groundeval-concurrency=16", "--groundeval-out-dir=out"]
        cli_args = ["--agent", "bench_agent:agent", "--data-dir", "data", "--concurrency", "16", "--out-dir", "out",
                    "--", "-q", "-p", "no:langsmith_plugin", "-p", "no:anyio"]
        variants: dict[str, list[str]] = {
            "python": [py, "-c", "pass"],
            "import": [py, "-c", "import pytest, groundeval.plugin"],
            "collect": [*eval_cmd, "--collect-only"],
            "run": eval_cmd,
            "run -s": [*eval_cmd, "--capture=no"],
            "cli": [py, "-m", "groundeval.cli", *cli_args],
            "cli, ordinary exit": [py, "-c", "import sys; from groundeval.cli import main; sys.exit(main())",
                                   *cli_args],
        }
        run_once(eval_cmd, base, env)  # warm: the R4B check of every file is remembered
        wall: dict[str, list[float]] = {v: [] for v in variants}
        cpu: dict[str, list[float]] = {v: [] for v in variants}
        names = list(variants)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[: r % len(names)]:
                w, c, status = run_once(variants[name], base, env)
                if status not in (0, 1):
                    raise SystemExit(f"{name}: exited {status}: {' '.join(variants[name])}")
                wall[name].append(w)
                cpu[name].append(c)
        record = json.loads(sorted((base / "out").glob("*.json"))[-1].read_text())
    import scipy.stats  # noqa: F401  (imported first, so the time below is the intervals alone)

    from groundeval.records.run_record import RunRecord
    from groundeval.records.trial_stats import with_trial_stats

    run = RunRecord.model_validate(record)
    start = time.process_time()
    stats = with_trial_stats(run.aggregate, run.cases).trials
    intervals_cpu = time.process_time() - start
    med = {k: statistics.median(v) for k, v in wall.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    parts = {
        "interpreter": (med["python"], med_cpu["python"]),
        "imports (pytest, groundeval.plugin)": (med["import"] - med["python"], med_cpu["import"] - med_cpu["python"]),
        "start-up and collection, less those": (med["collect"] - med["import"], med_cpu["collect"] - med_cpu["import"]),
        "cases, record and summary": (med["run -s"] - med["collect"], med_cpu["run -s"] - med_cpu["collect"]),
        "pytest's output capture": (med["run"] - med["run -s"], med_cpu["run"] - med_cpu["run -s"]),
        "teardown the groundeval command skips": (
            med["cli, ordinary exit"] - med["cli"], med_cpu["cli, ordinary exit"] - med_cpu["cli"]),
    }
    print(f"{args.cases} cases, an instant agent, concurrency 16, {args.rounds} round(s); medians")
    print(f"{'part':<40}{'wall s':>9}{'cpu s':>9}")
    for part, (w, c) in parts.items():
        print(f"{part:<40}{w:>9.3f}{c:>9.3f}")
    n_iv = len(stats.intervals) + 2 * bool(stats.headline) if stats is not None else 0
    print(f"{'intervals (' + str(n_iv) + ' bootstraps, in process)':<40}{'':>9}{intervals_cpu:>9.3f}")
    print(f"{'whole run':<40}{med['run']:>9.3f}{med_cpu['run']:>9.3f}")
    figures = {
        "whole_s": {k: round(v, 3) for k, v in med.items()},
        "cpu_s": {k: round(v, 3) for k, v in med_cpu.items()},
        "parts_cpu_s": {k: round(c, 3) for k, (_, c) in parts.items()},
        "intervals_cpu_s": round(intervals_cpu, 3),
        "cases": args.cases, "rounds": args.rounds,
    }
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
