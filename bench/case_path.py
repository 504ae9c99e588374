"""The modules one case passes through, from ``EvalItem.setup`` to its record, counted.

Usage::

    uv run python bench/case_path.py [--concurrency 1]

Runs three extraction case files with the baseline agent in this process and traces, with
``sys.setprofile``, every Python call made in the main thread during the setup of the second
item (after the first call returned, so calls made ahead are on when ``--concurrency`` is above
1; a call made ahead runs in a thread and is not in the trace, its hand-back is). Prints:

* the sequence of groundeval modules entered (in ``plugin.items``, ``EvalItem.setup`` only),
  consecutive repeats collapsed: modules, hops (module changes) and returns to a module already
  left;
* the same for the modules that run a case (``plugin.*``, ``run.*``, ``execution.*``);
* re-entries: such a module called again while it is still on the stack below another (A calls
  B, which calls back into A);
* upward calls: a call from a lower floor to a higher one (``execution.outcome_policy`` ->
  ``execution`` executors -> ``run`` -> ``plugin``), against the dependency direction.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Generator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
ORCHESTRATION = ("plugin.", "run.", "execution")
CASE_LEVEL = ("execution.call", "execution.outcome_policy")


def floor(module: str) -> int:
    """4 for the plugin, 3 for the run, 2 for the executors, 1 for one call and its outcome, 0 for anything else."""
    if module.startswith("plugin."):
        return 4
    if module.startswith("run."):
        return 3
    if module in CASE_LEVEL:
        return 1
    return 2 if module.startswith("execution") else 0


class Trace:
    """Traces the setup of the second item."""

    def __init__(self) -> None:
        self.items = 0
        self.sequence: list[str] = []
        self.stack: list[str] = []
        self.reentries: list[str] = []
        self.upward: list[str] = []

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        name = str(frame.f_globals.get("__name__", ""))
        module = name.removeprefix("groundeval.")
        if event == "call":
            # in plugin.items only EvalItem.setup itself counts (not its one-line accessors)
            if name.startswith("groundeval") and (module != "plugin.items" or frame.f_code.co_name == "setup"):
                self.sequence.append(module)
                if module.startswith(ORCHESTRATION):
                    caller = next((m for m in reversed(self.stack) if m.startswith(ORCHESTRATION)), None)
                    if caller is not None and floor(caller) < floor(module):
                        self.upward.append(f"{caller} -> {module}")
                    if self.stack and self.stack[-1] != module and module in self.stack:
                        self.reentries.append(" > ".join([*dict.fromkeys(self.stack), module]))
            self.stack.append(module)
        elif event == "return" and self.stack:
            self.stack.pop()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        self.items += 1
        if self.items == 2:
            sys.setprofile(self.profile)
        try:
            return (yield)
        finally:
            sys.setprofile(None)


def path_figures(label: str, sequence: list[str]) -> None:
    """Print the modules, hops and returns of ``sequence`` (consecutive repeats collapsed)."""
    path = [m for i, m in enumerate(sequence) if i == 0 or sequence[i - 1] != m]
    left: set[str] = set()
    returns = 0
    for i, module in enumerate(path):
        returns += module in left
        if i + 1 < len(path):
            left.add(module)
    print(f"{label}: {len(set(path))} modules, {len(path) - 1} hops, {returns} returns to a module already left")
    print("   ", " > ".join(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="case-path-"))
    data = work / "data"
    data.mkdir()
    for path in sorted((ROOT / "fixtures" / "extraction").glob("*.json"))[:3]:
        shutil.copy(path, data / path.name)
    trace = Trace()
    os.chdir(work)
    pytest.main(["-q", "-p", "no:cacheprovider", "--groundeval-task=extraction", "--groundeval-agent=baseline",
                 f"--groundeval-data-dir={data}", f"--groundeval-concurrency={args.concurrency}",
                 f"--groundeval-out-dir={work / 'runs'}"], plugins=[trace])
    shutil.rmtree(work, ignore_errors=True)
    path_figures("all groundeval modules", trace.sequence)
    path_figures("modules that run a case", [m for m in trace.sequence if m.startswith(ORCHESTRATION)])
    print(f"re-entries: {len(trace.reentries)}", *sorted(set(trace.reentries)), sep="\n    ")
    print(f"upward calls: {len(trace.upward)}", *sorted(set(trace.upward)), sep="\n    ")


if __name__ == "__main__":
    main()
