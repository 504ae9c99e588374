"""Harness cost per extraction case against ``json.loads`` of the same file.

Usage::

    uv run python bench/overhead.py [--repeat 21]

For every packaged extraction case file (25 trimmed Synthea bundles and 23 variants made from
them by scripts/make_variants.py), in this process, the median
over ``--repeat`` calls of each stage the harness runs for a case, through the public task API
(``groundeval.tasks.make_task``):

* ``load``: ``task.load_case(path)`` (read, hash, JSON, the Bundle's one Patient, the case id),
  what collection does per file;
* ``check``: ``task.check_case(case)`` with its verdict cache cleared (the R4B structure check of
  the entries the truth reads, their status and intent codes, the truth once): paid the first
  time a file's bytes run, then remembered by SHA-256 in pytest's cache (``check_cache``), so it
  is reported beside the harness, not in it;
* ``truth``: ``task.truth(case)``;
* ``prompt``: ``task.prompt(case)``;
* ``parse``: ``task.parse(case, answer)`` of the baseline agent's answer;
* ``score``: ``task.score(case, truth, parsed)``;
* ``record``: building the case record as the runner does (every string through the redaction
  rule, every leaf made JSON-safe, ``CaseRecord`` validation) and its JSON line;

and, beside them, the agent: ``make_agent("baseline").run(request)`` (it validates the whole
Bundle with fhir.resources, as a model-based reader would). ``runner`` is the real thing end to
end: ``load_case`` plus ``execution.outcome_policy.classify`` with an agent that returns the baseline's answer at
once (the request, the truth, the call, parsing, scoring and the record), so it shows what the
stages leave out. The reference is ``json.loads`` of the file's bytes.

Reported: median ms per case of each stage and of the harness total (sum of the six stages
other than ``check``), and harness / json.loads (median over cases of the per-case ratio).
Target: at most 3x. ``load`` runs at collection (once per process: once per xdist worker too),
the other stages per case; the ratios of the runner end to end and with the first-run ``check``
are printed too.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from _timing import ROOT, machine, median_ms

from groundeval import check_cache
from groundeval.agent_io import AgentRequest
from groundeval.agents.base import make_agent
from groundeval.execution.outcome_policy import RunInfo
from groundeval.jsonable import jsonable
from groundeval.records.run_record import CaseRecord
from groundeval.redaction import clean
from groundeval.tasks import make_task
from groundeval.testing.one_case import run_case

FIXTURES = ROOT / "fixtures" / "extraction"
STAGES = ("load", "truth", "prompt", "parse", "score", "record")
"""The stages every run pays per case (``check`` is paid once per file's bytes)."""


def _record(data: dict[str, Any]) -> str:
    return CaseRecord.model_validate(clean(jsonable(data))).model_dump_json()


class _Answer:
    """An agent that answers at once with a fixed text (the runner's cost without an agent's)."""

    name = "fixed-answer"

    def __init__(self, text: str) -> None:
        self.text = text

    def run(self, request: AgentRequest) -> str:
        return self.text


def _check(task: Any, case: Any) -> None:
    check_cache.use_directory(None)  # forget the verdict: time the check itself
    task.check_case(case)


def measure(path: Path, repeat: int) -> dict[str, float]:
    """Median ms of each stage, the agent and json.loads for one case file."""
    task = make_task("extraction")
    agent = make_agent("baseline")
    case = task.load_case(path)
    truth = task.truth(case)
    prompt = task.prompt(case)
    request = AgentRequest(case_id=case.case_id, task=task.name, prompt=prompt, context=task.context(case))
    raw = agent.run(request).text
    parsed = task.parse(case, raw)
    score = task.score(case, truth, parsed)
    if score.outcome != "passed":  # the baseline answers every packaged case correctly
        raise SystemExit(f"{path.name}: baseline scored {score.outcome}: {score.message}")
    data = path.read_bytes()
    info = RunInfo(run_id="bench", task=task.name, agent="fixed-answer", model=None)
    fixed = _Answer(raw)
    fields = run_case(task, fixed, case, info, "n").record.model_dump(mode="json")
    out = {
        "json.loads": median_ms(lambda: json.loads(path.read_bytes()), repeat),
        "load": median_ms(lambda: task.load_case(path), repeat),
        "check": median_ms(lambda: _check(task, case), repeat),
        "truth": median_ms(lambda: task.truth(case), repeat),
        "prompt": median_ms(lambda: task.prompt(case), repeat),
        "parse": median_ms(lambda: task.parse(case, raw), repeat),
        "score": median_ms(lambda: task.score(case, truth, parsed), repeat),
        "record": median_ms(lambda: _record(fields), repeat),
        "runner": median_ms(lambda: run_case(task, fixed, task.load_case(path), info, "n"), repeat),
        "agent (baseline)": median_ms(lambda: agent.run(request), repeat),
        "kB": len(data) / 1000,
    }
    out["harness"] = sum(out[s] for s in STAGES)
    out["harness without load"] = out["harness"] - out["load"]
    out["harness + check"] = out["harness"] + out["check"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21, help="calls per stage and case (default: 21)")
    args = parser.parse_args()
    print(machine())
    files = make_task("extraction").case_files(FIXTURES)  # every case file; the MANIFEST*.json files are not cases
    warm = make_agent("baseline")
    getattr(warm, "warmup", lambda: None)()  # imports (fhir.resources, HealthChain) outside the timing
    measure(files[0], 1)
    rows = [measure(p, args.repeat) for p in files]
    print(f"extraction harness cost per case, {len(rows)} fixtures "
          f"(median {statistics.median(r['kB'] for r in rows):.1f} kB), median of {args.repeat} calls each")
    print(f"  {'stage':<18} {'median ms/case':>14}")
    for key in ("json.loads", *STAGES, "harness", "harness without load", "runner", "check", "harness + check",
                "agent (baseline)"):
        print(f"  {key:<18} {statistics.median(r[key] for r in rows):14.3f}")
    ratio = statistics.median(r["harness"] / r["json.loads"] for r in rows)
    worst = max(r["harness"] / r["json.loads"] for r in rows)
    verdict = "ok" if ratio <= 3 else "MISSED"
    print(f"  harness / json.loads: median {ratio:.1f}x, worst case {worst:.1f}x (target <= 3x) {verdict}")
    load_share = statistics.median(r["load"] / r["harness"] for r in rows)
    print(f"  share of the harness spent in load_case: {load_share:.0%}")
    first = statistics.median(r["harness + check"] / r["json.loads"] for r in rows)
    print(f"  with the check a file's bytes get on their first run (R4B validation): median {first:.1f}x")
    runner = statistics.median(r["runner"] / r["json.loads"] for r in rows)
    print(f"  load_case + testing.one_case.run_case end to end (fixed answer) / json.loads: median {runner:.1f}x")
    rest = statistics.median(r["harness without load"] / r["json.loads"] for r in rows)
    print(f"  the stages after collection (truth, prompt, parse, score, record) / json.loads: median {rest:.1f}x")


if __name__ == "__main__":
    main()
