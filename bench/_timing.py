"""Shared timing helpers for the benchmarks: interleaved subprocess runs, wall and CPU time.

Absolute times on a shared 2-core machine are noisy; the benchmarks compare variants measured
in the same run, interleaved (round r runs every variant once, in an order rotated by r), and
report medians. CPU time is the child's user + system time (``os.wait4``), which other load on
the machine disturbs less than wall time.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Sample:
    """Wall and CPU seconds of every run of one variant."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    @property
    def wall_s(self) -> float:
        return statistics.median(self.wall)

    @property
    def cpu_s(self) -> float:
        return statistics.median(self.cpu)


def run_once(cmd: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> tuple[float, float, int]:
    """Run ``cmd``; return (wall seconds, child CPU seconds, exit status)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(cmd), cwd=cwd, env=dict(env) if env is not None else None,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


def interleaved(
    variants: Mapping[str, tuple[Sequence[str], Path]],
    rounds: int,
    ok: Callable[[str, int], bool] | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Sample]:
    """Run every variant once per round, rotating the order; one warm-up round is discarded.

    Args:
        variants: name -> (command, working directory).
        rounds: Timed rounds.
        ok: ``ok(name, exit_status)``; a run it rejects aborts the benchmark (a broken variant
            must not produce a fast, meaningless time).
        env: Environment of every run (default: this process's).
    """
    names = list(variants)
    samples = {name: Sample() for name in names}
    for r in range(rounds + 1):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            cmd, cwd = variants[name]
            wall, cpu, status = run_once(cmd, cwd, env)
            if ok is not None and not ok(name, status):
                raise SystemExit(f"{name}: {' '.join(cmd)} exited {status} in {cwd}")
            if r:
                samples[name].wall.append(wall)
                samples[name].cpu.append(cpu)
    return samples


def paired_ratio(a: Sample, b: Sample, cpu: bool = True) -> tuple[float, float, float]:
    """Median and quartiles of the per-round ratio a/b (runs of one round were interleaved).

    Pairing by round cancels the machine's slow drifts (other jobs starting and stopping), which
    a ratio of two medians does not; the quartiles show how far single rounds scatter.

    Returns:
        ``(median, first quartile, third quartile)`` of a/b over the rounds.
    """
    xs, ys = (a.cpu, b.cpu) if cpu else (a.wall, b.wall)
    ratios = [x / y for x, y in zip(xs, ys, strict=True)]
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    return statistics.median(ratios), q1, q3


def machine() -> str:
    """One line: cores, load average, Python, and whether bytecode caching is off."""
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    nobytecode = "PYTHONDONTWRITEBYTECODE=1" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "bytecode cached"
    return (
        f"machine: {os.cpu_count()} cores, load {load}, Python {platform.python_version()} "
        f"({sys.platform}), {nobytecode}"
    )


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    """Median wall milliseconds of ``repeat`` calls of ``fn`` (in-process, ``perf_counter``)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000
