"""Check a plain install (no extras) end to end, in a fresh venv built from the wheel.

Usage::

    uv run python scripts/check_core_install.py [--venv DIR] [--keep]

Builds the wheel (``uv build --wheel``), a venv on this interpreter, and installs the wheel with
the lockfile's core dependencies only (``uv export --frozen --no-dev --no-emit-project``). Then,
from an empty directory, it checks that:

* ``import anyio`` fails (neither anthropic, openai nor healthchain came in, so anyio's pytest
  plugin does not load in this environment's pytest runs), and so does ``import xdist`` (the
  ``xdist`` extra);
* what the plain install promises runs: the extraction task with a ``module:attr`` agent of
  your own, the reconcile task with ``baseline-reconcile`` and ``naive-reconcile``,
  ``groundeval --agent my_agent:agent --limit 3``, a replay of that run's record,
  ``--collect-only``, and ``groundeval compare`` (with the regression gate,
  ``--fail-on-regression``) and ``report``;
* what needs an extra stops before any case with the one-line error naming the extra, exit
  status 4 and no traceback: ``--agent baseline`` and ``--agent naive`` (``healthchain``), ``--groundeval-task=write``
  (``healthchain``), ``-n 2`` (``xdist``), ``--agent claude`` and ``groundeval`` with no agent (``claude``),
  ``--agent openai-compatible`` (``openai``), ``--agent langgraph`` (``write``).

``--keep`` leaves the venv and the empty directory for a look (their path is printed).

It builds a venv (about 30 s with uv's cache), so it is a script, not a test of the suite.
Exit status 0 when every check holds, 1 otherwise (each failed check is printed).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MY_AGENT = """import json

def agent(request):
    bundle = request.context["bundle"]
    found = []
    for entry in bundle.get("entry", []):
        resource = entry.get("resource", {})
        for coding in (resource.get("medicationCodeableConcept") or {}).get("coding", []):
            if resource.get("resourceType") == "MedicationRequest" and "rxnorm" in coding.get("system", ""):
                found.append({"rxnorm_code": coding["code"], "display": coding.get("display", "")})
                break
    return json.dumps(found)
"""
"""A plain-install extraction agent (every coded request, whatever its status: it fails some cases)."""


def _uv(*args: str) -> None:
    subprocess.run(["uv", *args], cwd=ROOT, check=True, capture_output=True, text=True)


def build(venv: Path, work: Path) -> Path:
    """Build the wheel and a core-only venv at ``venv``; returns its ``bin`` directory."""
    dist, core = work / "dist", work / "core.txt"
    _uv("build", "--wheel", "--out-dir", str(dist))
    wheel = next(dist.glob("groundeval-*.whl"))
    _uv("export", "--frozen", "--no-dev", "--no-emit-project", "--no-hashes", "-q", "-o", str(core))
    _uv("venv", "-q", "--python", sys.executable, str(venv))
    _uv("pip", "install", "-q", "--python", str(venv / "bin" / "python"), "-r", str(core), str(wheel))
    return venv / "bin"


class Checks:
    """Runs commands in ``cwd`` and collects the failed checks."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.failed: list[str] = []

    def run(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), cwd=self.cwd, capture_output=True, text=True, timeout=600)

    def expect(self, ok: bool, what: str, detail: str = "") -> None:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            self.failed.append(what)
            if detail:
                print("       " + detail.strip().replace("\n", "\n       ")[-2000:])

    def runs(self, what: str, argv: Sequence[str], allowed: frozenset[int] = frozenset({0, 1})) -> None:
        """``argv`` ends with an exit status in ``allowed`` (1: some case failed) and no traceback."""
        done = self.run(argv)
        ok = done.returncode in allowed and "Traceback" not in done.stdout + done.stderr
        self.expect(ok, f"{what} (exit {done.returncode})", done.stdout[-1500:] + done.stderr)

    def needs_extra(self, what: str, argv: Sequence[str], extra: str) -> None:
        """``argv`` stops with exit 4 and exactly one ``ERROR:`` line naming ``groundeval[extra]``."""
        done = self.run(argv)
        text = done.stdout + done.stderr
        errors = [line for line in text.splitlines() if line.startswith("ERROR:")]
        wrote = any((self.cwd / "runs").glob("*.json"))  # these run first: a record means a case ran
        ok = (done.returncode == 4 and "Traceback" not in text and len(errors) == 1 and not wrote
              and f"pip install 'groundeval[{extra}]'" in errors[0])
        self.expect(ok, f"{what}: one line naming groundeval[{extra}], exit 4 (exit {done.returncode})", text)


def check(bin_dir: Path, empty: Path) -> list[str]:
    """Run every check from ``empty``; returns the failed ones."""
    python, groundeval = str(bin_dir / "python"), str(bin_dir / "groundeval")
    c = Checks(empty)
    print("a plain install (no extras), from an empty directory:")
    for module in ("anyio", "anthropic", "openai", "healthchain", "httpx", "xdist", "execnet"):
        done = c.run([python, "-c", f"import {module}"])
        c.expect(done.returncode != 0, f"import {module} fails")
    # the extras' errors first: they must stop before any case, so no run record may exist yet
    c.needs_extra("groundeval --agent baseline", [groundeval, "--agent", "baseline"], "healthchain")
    c.needs_extra("groundeval --agent naive", [groundeval, "--agent", "naive"], "healthchain")
    c.needs_extra("pytest --groundeval-task=write", [python, "-m", "pytest", "--groundeval-task=write"], "healthchain")
    c.needs_extra("groundeval --agent my_agent:agent -n 2 (no pytest-xdist)",
                  [groundeval, "--agent", "my_agent:agent", "-n", "2"], "xdist")
    c.needs_extra("groundeval --agent claude", [groundeval, "--agent", "claude"], "claude")
    c.needs_extra("groundeval (the default agent, claude)", [groundeval], "claude")
    c.needs_extra("groundeval --agent openai-compatible", [groundeval, "--agent", "openai-compatible", "--model", "m",
                                                          "--base-url", "http://127.0.0.1:9/v1"], "openai")
    # (with the write task the task's own healthchain line comes first)
    c.needs_extra("groundeval --agent langgraph", [groundeval, "--agent", "langgraph"], "write")
    c.runs("import groundeval and its public names",
           [python, "-c", "import groundeval, groundeval.plugin; groundeval.ExtractionTask; groundeval.ClaudeAgent"])
    c.runs("pytest --collect-only --groundeval-task=extraction",
           [python, "-m", "pytest", "--collect-only", "-q", "--groundeval-task=extraction"], frozenset({0}))
    # an agent of your own: it lists every coded MedicationRequest, whatever its status (naive)
    (empty / "my_agent.py").write_text(MY_AGENT)
    c.runs("pytest --groundeval-task=extraction --groundeval-agent=my_agent:agent",
           [python, "-m", "pytest", "--groundeval-task=extraction", "--groundeval-agent=my_agent:agent", "-q"],
           frozenset({1}))
    c.runs("pytest --groundeval-task=reconcile --groundeval-agent=baseline-reconcile",
           [python, "-m", "pytest", "--groundeval-task=reconcile", "--groundeval-agent=baseline-reconcile", "-q"])
    c.runs("pytest --groundeval-task=reconcile --groundeval-agent=naive-reconcile",
           [python, "-m", "pytest", "--groundeval-task=reconcile", "--groundeval-agent=naive-reconcile", "-q"])
    for old in (empty / "runs").glob("*.json"):
        old.unlink()
    c.runs("groundeval --agent my_agent:agent --limit 3",
           [groundeval, "--agent", "my_agent:agent", "--limit", "3", "-q"])
    records = sorted((empty / "runs").glob("*.json"))
    c.expect(len(records) == 1, "that run wrote one run record")
    if records:
        record = str(records[0])
        c.runs("groundeval --agent replay:RUN.json", [groundeval, "--agent", f"replay:{record}", "--limit", "3", "-q"])
        c.runs("groundeval compare A B", [groundeval, "compare", record, record], frozenset({0}))
        c.runs("groundeval compare A B --fail-on-regression (the gate)",
               [groundeval, "compare", record, record, "--fail-on-regression"], frozenset({0}))
        c.runs("groundeval report RUN.json", [groundeval, "report", record, "-o", str(empty / "report.html")],
               frozenset({0}))
    return c.failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=None, help="where to build the venv (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="groundeval-core-"))
    try:
        venv = args.venv or tmp / "venv"
        if venv.exists():
            shutil.rmtree(venv)
        print(f"building the wheel and a core-only venv at {venv} ...")
        bin_dir = build(venv, tmp)
        empty = tmp / "empty"
        empty.mkdir()
        failed = check(bin_dir, empty)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(failed)} check(s) failed" if failed else "every check holds")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
