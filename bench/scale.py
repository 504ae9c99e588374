"""Cost of a run as it grows: 500, 5,000 and 50,000 cases through an instant agent.

Usage::

    uv run python bench/scale.py [--sizes 500,5000,50000] [--junit]
        [--extra-args "--tb=long"]

For each size, one whole ``pytest --groundeval-task=extraction`` process over that many case files
(the packaged extraction fixtures, then copies of them under new names) with an agent that answers
``[]`` at once: most cases fail, so the failure reporting is exercised at full size. Prints, per
size, the process's CPU seconds (user + system, ``os.wait4``), CPU per case, the marginal CPU per
case against the previous size, the peak resident set (``ru_maxrss``) and the size of the run
record (``--junit``: each run also writes a junit file, whose size is added). One untimed run over
the 48 distinct files goes first, so that the R4B check of each is remembered (every copy has the
bytes of one of them), as on any second run.

The last line is one JSON object for CI: ``cpu_per_case_ratio`` (CPU per case at the largest size
over that at the smallest; target <= 1.2) and ``peak_rss_mb_<size>`` (target < 500 MB at 50,000),
with every figure. Read the ratios, not the seconds: the machine may be shared. The 50,000 point
takes about 5 CPU-minutes and writes a 2.3 GB record (each case keeps its prompt) in a temporary
directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import machine
from concurrency import make_cases

AGENT = """def agent(request):
    return "[]"
"""


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """Run ``cmd``; return (child CPU seconds, peak RSS in MB, exit status)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="500,5000,50000", help="case counts, comma-separated")
    parser.add_argument("--junit", action="store_true", help="each run also writes --junitxml")
    parser.add_argument("--extra-args", default="", help="more pytest arguments for every run")
    parser.add_argument("--src", type=Path, help="run the groundeval package in DIR (a checkout's src/), "
                        "not the installed one: measure an older commit with the same bench")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(machine())
    figures: dict[str, float] = {}
    rows: list[tuple[int, float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="groundeval-scale-") as tmp:
        base = Path(tmp)
        (base / "bench_agent.py").write_text(AGENT)
        path = [str(base)] + ([str(args.src.resolve())] if args.src else [])
        env = {"PYTHONPATH": os.pathsep.join(path), "PATH": "/usr/bin:/bin", "HOME": str(base)}

        def command(size: int) -> list[str]:
            return [sys.executable, "-m", "pytest", "-q", "-p", "no:langsmith_plugin", "-p", "no:anyio",
                    "--groundeval-task=extraction", "--groundeval-agent=bench_agent:agent",
                    f"--groundeval-data-dir=data{size}", f"--groundeval-out-dir=out{size}",
                    *([f"--junitxml=out{size}/junit.xml"] if args.junit else []), *shlex.split(args.extra_args)]

        make_cases(base / "data48", 48)
        run(command(48), base, env)  # untimed: the R4B check of every distinct file is remembered
        for size in sizes:
            make_cases(base / f"data{size}", size)
            out = base / f"out{size}"
            cmd = command(size)
            cpu, rss, status = run(cmd, base, env)
            if status not in (0, 1):  # 1: the "[]" answers fail their cases, as intended
                raise SystemExit(f"{size} cases: exited {status}: {' '.join(cmd)}")
            record = sum(p.stat().st_size for p in [*out.glob("*.json"), *out.glob("*.xml")])
            rows.append((size, cpu, rss, record / 1e6))
            figures[f"cpu_s_{size}"] = round(cpu, 2)
            figures[f"peak_rss_mb_{size}"] = round(rss, 1)
            figures[f"record_mb_{size}"] = round(record / 1e6, 2)
    print(f"{'cases':>6}{'cpu s':>9}{'ms/case':>9}{'marginal':>10}{'peak RSS MB':>13}{'record MB':>11}")
    previous: tuple[int, float] | None = None
    for size, cpu, rss, record_mb in rows:
        marginal = "" if previous is None else f"{(cpu - previous[1]) / (size - previous[0]) * 1000:.1f}"
        print(f"{size:>6}{cpu:>9.1f}{cpu / size * 1000:>9.1f}{marginal:>10}{rss:>13.0f}{record_mb:>11.2f}")
        previous = (size, cpu)
    first, last = rows[0], rows[-1]
    ratio = (last[1] / last[0]) / (first[1] / first[0])
    figures["cpu_per_case_ratio"] = round(ratio, 3)
    print(f"cpu_per_case_ratio {ratio:.2f} (target <= 1.2); peak RSS at {last[0]} cases {last[2]:.0f} MB "
          "(target < 500 at 50000)" + ("; with --junitxml" if args.junit else ""))
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
