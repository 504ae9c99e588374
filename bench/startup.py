"""Start-up cost of groundeval: collecting the eval, and what installing it costs other test runs.

Usage::

    uv run python bench/startup.py [--rounds 7] [--venvs DIR]

1. Collection: ``pytest --collect-only --groundeval-task=extraction`` (the packaged cases) against
   the same pytest invocation with the plugin disabled (``-p no:groundeval``, no task), both in
   this interpreter (the dev environment, every extra installed) from an empty directory.
   Target: under 0.5 s added (wall), reported with CPU time, cold (``-p no:cacheprovider``: no
   check cache) and warm (pytest's cache on). Collection reads each file (JSON, the Patient, the
   id); the FHIR R4B check waits until a case runs (``Task.check_case``), so the two should agree.
2. Install footprint: a trivial 2-test project run by ``python -m pytest`` in fresh venvs built
   here with uv from the lockfile's versions: pytest alone; pytest with the anthropic SDK (what a
   project that calls Claude has anyway: it brings anyio, whose pytest plugin loads in every run);
   groundeval from a wheel without extras (no anyio: neither anthropic, openai nor healthchain);
   ``groundeval[claude]`` (compared with pytest + anthropic); groundeval with every extra
   (``[all]``), also with ``-p no:langsmith_plugin``; without extras with ``-p no:groundeval``
   (groundeval's own plugin idle); ``groundeval[claude]`` with ``-p no:anyio``.
   Target: groundeval without extras within 1.1x of pytest alone; ``[all]`` against pytest alone
   is reported beside it.
   The venvs hold what a user's ``pip install groundeval`` (or ``groundeval[all]``) gets, at the
   lock's versions: ``uv export --frozen --no-default-groups --no-hashes`` (no dev or docs group:
   mkdocs and the linters are not installed with groundeval), with ``--extra all`` for ``[all]``.
   ``all`` leaves out the ``local`` extra (llama-cpp-python, an sdist that compiles llama.cpp for
   minutes; ``.ci/llama-wheel`` builds it once per machine), so nothing here installs it. uv runs
   in the project directory, so ``[tool.uv] override-dependencies`` (spaCy 3.8, see FRICTION.md)
   applies as in the lock; a pip user on Python 3.11 gets spaCy 3.7 and numpy 1.26 instead.
   Every install runs with ``--only-binary :all:``: uv takes wheels only and stops rather than
   build an sdist, so the bench never compiles. Two exceptions, both in ``[all]`` through the
   ``summary`` extra, are published as sdists only and are let through by name (``--no-binary``,
   ``SDIST_ONLY``): medspacy 1.3.1 and medspacy-quickumls 3.2, pure Python (setuptools builds each
   into a ``py3-none-any`` wheel with no extension module, which uv caches; no compiler runs).
   Every other package the two exports pin has a wheel for CPython 3.11 on manylinux x86_64. The
   one thing built besides is groundeval's own wheel (``uv build``: hatchling, pure Python).
   The timed runs never time Python's compiler: the discarded warm-up round writes the ``.pyc``
   files of what a run imports (as a user's first run does); with ``--no-bytecode`` nothing can
   write them then, so the installs compile every module first (``--compile-bytecode``, as pip
   does by default: about 30 s more here, 23 of them for ``[all]``).
3. The baseline extraction run (the packaged cases) serial against ``-n 2``: reported, no target.
4. Usage errors: an unknown task, a bad option value and a missing API key, through the
   ``groundeval`` CLI and through ``pytest --groundeval-task=...``, each against ``python -c pass``
   (the interpreter's own start). Target: a CLI usage error under 1 CPU-s (the options are
   checked before pytest and the plugin start). The pytest path cannot beat pytest's own start
   and the other plugins installed beside groundeval (langsmith's, through langchain-core): it
   is reported against ``pytest --version`` in the same environment.

Runs are interleaved (one warm-up round discarded), medians reported, CPU time beside wall time;
the footprint's ratios are the median of the per-round ratios (each round runs every variant
once, back to back), with their quartiles, which a machine shared with other jobs disturbs less
than a ratio of two medians.
The venvs are rebuilt on every run (uv's cache makes that a few seconds; the time is printed)
under ``--venvs`` (default: a temporary directory, removed afterwards). The whole bench's wall
time is printed at the end (acceptance: under 120 s on the development machine, 2 shared cores).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import ROOT, Sample, interleaved, machine, paired_ratio

TWO_TESTS = "def test_a():\n    assert 1 + 1 == 2\n\n\ndef test_b():\n    assert 'a' in 'abc'\n"
PYTEST = ("-m", "pytest", "-q", "-p", "no:cacheprovider")
# Published as sdists only (pure Python, built without a compiler): the one exception to wheels only.
SDIST_ONLY = ("medspacy", "medspacy-quickumls")
WHEELS_ONLY = ("--only-binary", ":all:", *(arg for name in SDIST_ONLY for arg in ("--no-binary", name)))


def _uv(*args: str) -> None:
    proc = subprocess.run(["uv", *args], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"uv {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")


def _export(out: Path, *extra: str) -> None:
    """Write the lock's pins of a user's install to ``out`` (no dev or docs group, no hashes)."""
    _uv("export", "--frozen", "--no-default-groups", *extra, "--no-emit-project", "--no-hashes", "-q",
        "-o", str(out))


def build_venvs(base: Path, compile_bytecode: bool) -> dict[str, Path]:
    """The venvs under ``base``, wheels only (``SDIST_ONLY`` aside); returns name -> its python."""
    start = time.perf_counter()
    dist = base / "dist"
    _uv("build", "--wheel", "--out-dir", str(dist))
    wheel = next(dist.glob("groundeval-*.whl"))
    core, every = base / "core.txt", base / "all.txt"
    _export(core)
    # ``--extra all``, not ``--all-extras``: the ``local`` extra (llama-cpp-python, an sdist that
    # compiles for minutes) is not in ``all``, an install no user of ``[all]`` makes.
    _export(every, "--extra", "all")
    specs = {  # -c: the lockfile's versions as constraints
        "pytest alone": ["-c", str(core), "pytest"],
        "pytest + anthropic": ["-c", str(every), "pytest", "anthropic"],
        "groundeval": ["-r", str(core), str(wheel)],
        "groundeval[claude]": ["-c", str(every), "-r", str(core), f"groundeval[claude] @ {wheel.as_uri()}"],
        "groundeval[all]": ["-r", str(every), f"groundeval[all] @ {wheel.as_uri()}"],
    }
    pythons = {}
    for i, (name, args) in enumerate(specs.items()):
        venv = base / f"venv{i}"
        _uv("venv", "-q", "--python", sys.executable, str(venv))
        python = venv / "bin" / "python"
        _uv("pip", "install", "-q", *WHEELS_ONLY, *(["--compile-bytecode"] if compile_bytecode else []),
            "--python", str(python), *args)
        pythons[name] = python
    took = time.perf_counter() - start
    print(f"  venvs built from wheels only (sdists: {', '.join(SDIST_ONLY)}) in {took:.1f} s wall")
    return pythons


def _row(name: str, sample: Sample, ref: Sample) -> str:
    return (f"  {name:<52} wall {sample.wall_s:6.3f} s ({sample.wall_s / ref.wall_s:4.2f}x)   "
            f"cpu {sample.cpu_s:6.3f} s ({sample.cpu_s / ref.cpu_s:4.2f}x)")


def collection(rounds: int, empty: Path, env: dict[str, str]) -> None:
    base = [sys.executable, *PYTEST, "--collect-only"]
    cached = [sys.executable, "-m", "pytest", "-q", "--collect-only"]  # pytest's cache on: the check cache works
    samples = interleaved(
        {
            "-p no:groundeval": ([*base, "-p", "no:groundeval"], empty),
            "--groundeval-task=extraction": ([*base, "--groundeval-task=extraction"], empty),
            "warm check cache": ([*cached, "--groundeval-task=extraction"], empty),
        },
        rounds,
        ok=lambda name, status: status in (0, 5),  # 5: no tests collected (the plugin is off)
        env=env,
    )
    off, on = samples["-p no:groundeval"], samples["--groundeval-task=extraction"]
    warm = samples["warm check cache"]
    print("1. collection (dev env, every extra), the packaged extraction cases, median of", rounds)
    print(_row("pytest --collect-only -p no:groundeval", off, off))
    print(_row("pytest --collect-only --groundeval-task=extraction", on, off))
    print(_row("  the same, pytest's cache on (2nd run)", warm, off))
    for label, sample in (("cold (no cache)", on), ("warm (pytest's cache on)", warm)):
        added = sample.wall_s - off.wall_s
        verdict = "ok" if added < 0.5 else "MISSED"
        print(f"  added by collecting the eval, {label}: wall {added:.3f} s, cpu {sample.cpu_s - off.cpu_s:.3f} s"
              f"  (target < 0.5 s wall) {verdict}")


def _instructions(cmd: list[str], cwd: Path, env: dict[str, str]) -> int:
    """User-space instructions one run of ``cmd`` executes, counted by valgrind's callgrind (deterministic)."""
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], cwd=cwd, env=env,
                          capture_output=True, text=True)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode or not found:
        raise SystemExit(f"valgrind {' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return int(found.group(1))


def instructions(pythons: dict[str, Path], project: Path, env: dict[str, str]) -> None:
    """The footprint as instructions executed: one run per variant, free of the load's noise (``--instructions``).

    Splits a plain install's cost into groundeval's own plugin, platformdirs' plugin (platformdirs
    4.x declares one; it comes with pint, through ucumvert) and the rest (pytest reading the
    metadata of every installed distribution, and the file list of each with a ``pytest11`` entry
    point to mark it for assertion rewriting).
    """
    plain = [str(pythons["groundeval"]), *PYTEST]
    runs = {
        "pytest alone": [str(pythons["pytest alone"]), *PYTEST],
        "groundeval": plain,
        "groundeval -p no:groundeval": [*plain, "-p", "no:groundeval"],
        "groundeval -p no:groundeval -p no:platformdirs": [*plain, "-p", "no:groundeval", "-p", "no:platformdirs"],
    }
    for cmd in runs.values():  # bytecode and pytest's rewrite cache written before counting
        subprocess.run(cmd, cwd=project, env=env, capture_output=True, check=True)
    counts = {name: _instructions(cmd, project, env) for name, cmd in runs.items()}
    ref = counts["pytest alone"]
    print("  instructions executed (valgrind callgrind, one run each; deterministic):")
    for name, count in counts.items():
        print(f"  {name:<52} {count / 1e6:8.1f} M ({count / ref:.3f}x)")
    own = (counts["groundeval"] - counts["groundeval -p no:groundeval"]) / ref
    dirs = (counts["groundeval -p no:groundeval"] - counts["groundeval -p no:groundeval -p no:platformdirs"]) / ref
    rest = counts["groundeval -p no:groundeval -p no:platformdirs"] / ref - 1
    verdict = "ok" if counts["groundeval"] / ref <= 1.1 else "MISSED"
    print(f"  groundeval (no extras) / pytest alone: {counts['groundeval'] / ref:.3f}x in instructions "
          f"(target <= 1.1x: {verdict}): groundeval's plugin {own:.3f}x, platformdirs' plugin {dirs:.3f}x, "
          f"the rest (metadata, files marked for rewriting) {rest:.3f}x")


def footprint(rounds: int, base: Path, project: Path, env: dict[str, str], count: bool = False) -> None:
    print("2. install footprint: a 2-test project, `python -m pytest -q`, median of", rounds)
    pythons = build_venvs(base, compile_bytecode=bool(env.get("PYTHONDONTWRITEBYTECODE")))
    variants = {name: ([str(py), *PYTEST], project) for name, py in pythons.items()}
    every = pythons["groundeval[all]"]
    variants["groundeval -p no:groundeval"] = ([str(pythons["groundeval"]), *PYTEST, "-p", "no:groundeval"], project)
    # anyio's pytest plugin (anyio comes with the Anthropic SDK and httpx): what the claude extra adds
    variants["groundeval[claude] -p no:anyio"] = ([str(pythons["groundeval[claude]"]), *PYTEST, "-p", "no:anyio"],
                                                  project)
    variants["groundeval[all] -p no:langsmith_plugin"] = ([str(every), *PYTEST, "-p", "no:langsmith_plugin"], project)
    samples = interleaved(variants, rounds, ok=lambda name, status: status == 0, env=env)
    ref = samples["pytest alone"]
    for name, sample in samples.items():
        print(_row(name, sample, ref))
    for name, against, target in (
        ("groundeval", "pytest alone", True),
        ("groundeval -p no:groundeval", "pytest alone", False),
        ("groundeval[claude]", "pytest + anthropic", False),
        ("groundeval[all]", "pytest alone", False),
        ("groundeval[all] -p no:langsmith_plugin", "pytest alone", False),
    ):
        ours, theirs = samples[name], samples[against]
        cpu, cpu_q1, cpu_q3 = paired_ratio(ours, theirs)
        wall, _, _ = paired_ratio(ours, theirs, cpu=False)
        ratio = max(cpu, wall)
        label = "groundeval (no extras)" if name == "groundeval" else name
        verdict = f"target <= 1.1x: {'ok' if ratio <= 1.1 else 'MISSED'}" if target else "reported"
        print(f"  {label} / {against}: {ratio:.2f}x (median of the per-round ratios, the worse of wall and cpu; "
              f"cpu quartiles {cpu_q1:.2f} to {cpu_q3:.2f}; {verdict})")
    if count:
        instructions(pythons, project, env)


def xdist(rounds: int, out: Path, env: dict[str, str]) -> None:
    base = [sys.executable, *PYTEST, "--groundeval-task=extraction", "--groundeval-agent=baseline",
            f"--groundeval-out-dir={out}"]
    samples = interleaved({"serial": (base, ROOT), "-n 2": ([*base, "-n", "2"], ROOT)}, rounds,
                          ok=lambda name, status: status == 0, env=env)
    serial = samples["serial"]
    print("3. the baseline extraction run (the packaged cases), serial against -n 2 (dev env), median of", rounds)
    for name, sample in samples.items():
        print(_row(name, sample, serial))
    print("  (reported, no target: each xdist worker starts its own session, collects and builds the agent)")


USAGE_ERRORS: dict[str, list[str]] = {
    "unknown task": ["--task", "extractoin"],
    "bad option value": ["--limit", "0"],
    "missing API key (the default agent)": [],
}


def usage_errors(rounds: int, empty: Path, env: dict[str, str]) -> None:
    groundeval = str(Path(sys.executable).with_name("groundeval"))
    no_key = {k: v for k, v in env.items() if k != "ANTHROPIC_API_KEY"}
    variants: dict[str, tuple[list[str], Path]] = {"python -c pass": ([sys.executable, "-c", "pass"], empty)}
    for label, args in USAGE_ERRORS.items():
        variants[f"groundeval {' '.join(args)}".rstrip() + f" ({label})"] = ([groundeval, *args], empty)
    variants["pytest --version"] = ([sys.executable, "-m", "pytest", "--version"], empty)
    variants["pytest --groundeval-task=extractoin"] = (
        [sys.executable, *PYTEST, "--groundeval-task=extractoin"], empty)
    samples = interleaved(variants, rounds, ok=lambda name, status: status == (0 if "--version" in name or
                                                                                  "-c pass" in name else 4),
                          env=no_key)
    print("4. usage errors (exit status 4), median of", rounds)
    ref = samples["python -c pass"]
    for name, sample in samples.items():
        print(_row(name, sample, ref))
    worst = max(s.cpu_s for n, s in samples.items() if n.startswith("groundeval "))
    print(f"  worst CLI usage error: cpu {worst:.3f} s (target < 1 CPU-s): {'ok' if worst < 1 else 'MISSED'}")
    pyt, ver = samples["pytest --groundeval-task=extractoin"], samples["pytest --version"]
    print(f"  pytest path: cpu {pyt.cpu_s:.3f} s, {pyt.cpu_s / ver.cpu_s:.2f}x `pytest --version` (reported)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per variant (default: 7)")
    parser.add_argument("--venvs", type=Path, default=None, help="where to build the venvs (default: a temp dir)")
    parser.add_argument("--skip-footprint", action="store_true", help="leave out the install footprint (2.)")
    parser.add_argument("--skip-xdist", action="store_true", help="leave out serial against -n 2 (3.)")
    parser.add_argument("--only-usage", action="store_true", help="run only the usage errors (4.)")
    parser.add_argument(
        "--instructions", action="store_true",
        help="also count the footprint's instructions with valgrind (callgrind; about 40 s more): a figure the "
        "load does not move, split into groundeval's plugin, platformdirs' plugin and the rest",
    )
    parser.add_argument(
        "--no-bytecode", action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE for the runs (default: unset it, as in a user's shell, so "
        "pytest caches its assertion rewriting of plugins after the warm-up round)",
    )
    args = parser.parse_args()
    env = dict(os.environ)
    if not args.no_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    print(machine())
    print("runs:", "PYTHONDONTWRITEBYTECODE=1" if env.get("PYTHONDONTWRITEBYTECODE") else "bytecode and pytest's "
          "rewrite cache written (warm-up round discarded)")
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp, "empty")
        project = Path(tmp, "project")
        empty.mkdir()
        project.mkdir()
        (project / "test_two.py").write_text(TWO_TESTS)
        if args.only_usage:
            usage_errors(args.rounds, empty, env)
            return
        collection(args.rounds, empty, env)
        if not args.skip_footprint:
            venvs = args.venvs or Path(tmp, "venvs")
            venvs.mkdir(parents=True, exist_ok=True)
            footprint(args.rounds, venvs, project, env, count=args.instructions)
        if not args.skip_xdist:
            xdist(max(1, args.rounds // 2), Path(tmp, "runs"), env)
        usage_errors(args.rounds, empty, env)
    print(f"whole bench: {time.perf_counter() - start:.1f} s wall (acceptance: under 120 s); at the end", machine())


if __name__ == "__main__":
    main()
