"""Throughput of ``--groundeval-concurrency``: 64 cases through an agent that waits 0.25 s per call.

Usage::

    uv run python bench/concurrency.py [--rounds 1] [--latency 0.25] [--cases 64] [--src DIR] [--before-src DIR]

For concurrency 1, 4 and 16, serial and with ``-n 2``, one whole ``pytest --groundeval-task=extraction``
process per run, interleaved (round r runs every variant once, in an order rotated by r):

* **whole**: the process's wall time (and CPU time, user + system, from ``os.wait4``);
* **run phase**: first agent call started to last agent call finished, read from the run record
  (``started_at`` + ``latency_s`` of every case);
* **fixed**: whole minus run phase (interpreter and pytest start-up, imports, collection, the
  run record);
* **ideal**: cases x latency / (concurrency x workers), and the run phase's efficiency against it.

The **floor** is a plain asyncio loop with 16 calls in flight over the same 0.25 s wait, as a whole
process (``python -c``). The last line is one JSON object for CI: ``speedup_n16`` (run phase,
serial, N=1 over N=16; target >= 12) and ``vs_floor`` (whole process, serial N=16 over the floor;
target <= 1.5), with every median.

The agent (``bench_agent.py``, written into a temporary directory with 64 case files copied from
the packaged extraction fixtures, 16 of them twice under new names) waits with
``threading.Event().wait`` and answers ``[]``; scores are irrelevant here. It makes no network
call and says so (``agent.network_calls = False``), so its first call does not go alone. The
variant **serial N=16, model** runs the same wait as ``bench_agent:model_agent``, which declares
nothing, as a model agent does: its first call goes alone (one latency more), and
``vs_floor_model`` is its whole process over the floor.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from datetime import datetime
from pathlib import Path

from _timing import ROOT, machine, run_once

AGENT = """import threading

LATENCY_S = {latency}


def agent(request):
    threading.Event().wait(LATENCY_S)
    return "[]"


agent.network_calls = False  # no key, model or API to be wrong: the first call need not go alone


def model_agent(request):  # the same wait, declaring nothing: its first call goes alone, as a model agent's
    return agent(request)
"""

FLOOR = """import asyncio

async def main():
    gate = asyncio.Semaphore(16)

    async def call(i):
        async with gate:
            await asyncio.sleep({latency})
            return "[]"

    await asyncio.gather(*(call(i) for i in range({cases})))

asyncio.run(main())
"""

LEVELS = (1, 4, 16)


def make_cases(dest: Path, cases: int) -> None:
    """``cases`` extraction case files in ``dest``: the packaged ones, then copies under new names."""
    dest.mkdir(parents=True)
    sources = sorted((ROOT / "fixtures" / "extraction").glob("*.json"))
    sources = [p for p in sources if not p.name.startswith("MANIFEST")]
    for i in range(cases):
        src = sources[i % len(sources)]
        name = src.name if i < len(sources) else f"copy{i // len(sources)}_{src.name}"
        shutil.copyfile(src, dest / name)


def run_phase(record_dir: Path) -> float:
    """First call started to last call finished, seconds, from the run record in ``record_dir``."""
    (path,) = record_dir.glob("*.json")
    cases = json.loads(path.read_text())["cases"]
    starts = [datetime.fromisoformat(c["started_at"]).timestamp() for c in cases if c.get("started_at")]
    ends = [datetime.fromisoformat(c["started_at"]).timestamp() + (c["latency_s"] or 0.0)
            for c in cases if c.get("started_at")]
    if len(starts) != len(cases):
        raise SystemExit(f"{path}: {len(cases) - len(starts)} cases have no agent call")
    return max(ends) - min(starts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1, help="timed rounds (default 1)")
    parser.add_argument("--latency", type=float, default=0.25, help="agent latency, seconds (default 0.25)")
    parser.add_argument("--cases", type=int, default=64, help="cases (default 64)")
    parser.add_argument("--src", type=Path, help="run the groundeval package in DIR (a checkout's src/), "
                        "not the installed one: measure an older commit with the same bench")
    parser.add_argument("--before-src", type=Path, help="also run serial N=16 with the groundeval package in DIR "
                        "(variant 'serial N=16, before'), interleaved with the others: a change's before and after "
                        "in one run")
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory(prefix="groundeval-bench-") as tmp:
        base = Path(tmp)
        make_cases(base / "data", args.cases)
        (base / "bench_agent.py").write_text(AGENT.format(latency=args.latency))
        (base / "floor.py").write_text(FLOOR.format(latency=args.latency, cases=args.cases))
        common = [sys.executable, "-m", "pytest", "-q", "-p", "no:langsmith_plugin", "-p", "no:anyio",
                  "--groundeval-task=extraction", "--groundeval-agent=bench_agent:agent", "--groundeval-data-dir=data"]
        variants: dict[str, list[str]] = {}
        for workers in (1, 2):
            for n in LEVELS:
                extra = ["-n", "2"] if workers == 2 else []
                variants[f"{'-n 2' if workers == 2 else 'serial'} N={n}"] = [
                    *common, f"--groundeval-concurrency={n}", *extra]
        variants["serial N=16, model"] = [*common, "--groundeval-concurrency=16"]
        variants["serial N=16, model"][variants["serial N=16, model"].index(
            "--groundeval-agent=bench_agent:agent")] = "--groundeval-agent=bench_agent:model_agent"
        if args.before_src:
            variants["serial N=16, before"] = [*common, "--groundeval-concurrency=16"]
        variants["floor"] = [sys.executable, "floor.py"]
        path = [str(base)] + ([str(args.src.resolve())] if args.src else [])
        env = {"PYTHONPATH": ":".join(path), "PATH": "/usr/bin:/bin", "HOME": str(base)}
        envs = {name: env for name in variants}
        if args.before_src:
            envs["serial N=16, before"] = {**env, "PYTHONPATH": f"{base}:{args.before_src.resolve()}"}
            run_once([*common, "--collect-only"], base, envs["serial N=16, before"])
        run_once([*common, "--collect-only"], base, env)  # warm pytest's cache (load-time checks)
        wall: dict[str, list[float]] = {v: [] for v in variants}
        cpu: dict[str, list[float]] = {v: [] for v in variants}
        phase: dict[str, list[float]] = {v: [] for v in variants if v != "floor"}
        names = list(variants)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[: r % len(names)]:
                out = base / "runs" / f"{r}-{name.replace(' ', '_').replace('=', '')}"
                cmd = variants[name] + ([f"--groundeval-out-dir={out}"] if name != "floor" else [])
                w, c, status = run_once(cmd, base, envs[name])
                if status not in (0, 1):  # 1: the "[]" answers fail their cases, as intended
                    raise SystemExit(f"{name}: exited {status}: {' '.join(cmd)}")
                wall[name].append(w)
                cpu[name].append(c)
                if name != "floor":
                    phase[name].append(run_phase(out))
    med = {k: statistics.median(v) for k, v in wall.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    med_phase = {k: statistics.median(v) for k, v in phase.items()}
    print(f"{args.cases} cases, agent latency {args.latency} s, {args.rounds} round(s); medians")
    print(f"{'variant':<19}{'whole s':>9}{'cpu s':>8}{'run phase s':>13}{'fixed s':>9}{'ideal s':>9}{'efficiency':>12}")
    for name in names:
        if name == "floor":
            continue
        n = int(name.split("N=")[1].split(",")[0])
        workers = 2 if name.startswith("-n") else 1
        ideal = args.cases * args.latency / (n * workers)
        print(f"{name:<19}{med[name]:>9.2f}{med_cpu[name]:>8.2f}{med_phase[name]:>13.2f}"
              f"{med[name] - med_phase[name]:>9.2f}{ideal:>9.2f}{ideal / med_phase[name]:>11.0%}")
    print(f"{'floor':<19}{med['floor']:>9.2f}{med_cpu['floor']:>8.2f}   (asyncio, 16 in flight, whole process)")
    figures = {
        "speedup_n16": round(med_phase["serial N=1"] / med_phase["serial N=16"], 2),
        "vs_floor": round(med["serial N=16"] / med["floor"], 2),
        "vs_floor_model": round(med["serial N=16, model"] / med["floor"], 2),
        "cpu_n16_s": round(med_cpu["serial N=16"], 3),
        **({"vs_floor_before": round(med["serial N=16, before"] / med["floor"], 2)} if args.before_src else {}),
        "speedup_n16_xdist": round(med_phase["-n 2 N=1"] / med_phase["-n 2 N=16"], 2),
        "whole_s": {k: round(v, 3) for k, v in med.items()},
        "cpu_s": {k: round(v, 3) for k, v in med_cpu.items()},
        "run_phase_s": {k: round(v, 3) for k, v in med_phase.items()},
        "cases": args.cases, "latency_s": args.latency, "rounds": args.rounds,
    }
    print(f"speedup_n16 {figures['speedup_n16']}x (target >= 12); vs_floor {figures['vs_floor']}x (target <= 1.5), "
          f"CPU {figures['cpu_n16_s']} s; a model agent (first call alone): vs_floor {figures['vs_floor_model']}x"
          + (f"; before: vs_floor {figures['vs_floor_before']}x" if args.before_src else ""))
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
