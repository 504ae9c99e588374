"""The Markdown summary and the self-contained HTML report, the latter checked in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from groundeval.cli import main as cli_main
from groundeval.records.run_record import CaseRecord, RunRecord
from groundeval.reporting import regressions, summary_markdown
from groundeval.reporting.html import render_report, write_report
from groundeval.reporting.summary_md import write_summary_markdown
from tests._paths import REPO
from tests._records import case, run

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--enable-logging=stderr", "--v=0",
)
CONSOLE = re.compile(r":CONSOLE[(:]")


def _write_case(case_id: str, run_id: str, ok: dict[str, bool]) -> CaseRecord:
    dims = {k: {"ok": v, "reasons": [] if v else [f"{k} wrong <script>alert(1)</script>"]} for k, v in ok.items()}
    outcome = "passed" if all(ok.values()) else "partial"
    return case(case_id, outcome, run_id=run_id, task="write", metrics=dict(ok), details={"dimensions": dims})


def _extraction_runs() -> tuple[RunRecord, RunRecord]:
    missing = {"missing": [{"codes": ["316049"], "display": "Hydrochlorothiazide 25 MG"}],
               "extra": [{"rxnorm_code": "562251", "display": "Amoxicillin <b>250</b>", "note": "completed"}],
               "display_mismatches": []}
    a = run([case("c1"), case("c2"), case("c3")], run_id="A")
    b = run([case("c1", run_id="B"), case("c2", "partial", run_id="B", f1=0.5, details=missing),
             case("c3", run_id="B", usage={"input_tokens": 10, "cost_usd": 0.001})], run_id="B",
            )
    b = b.model_copy(update={"aggregate": b.aggregate.model_copy(update={"usage": {"input_tokens": 10,
                                                                                    "cost_usd": 0.001}})})
    return a, b


def test_summary_markdown_headline_intervals_regressions_usage() -> None:
    a, b = _extraction_runs()
    md = summary_markdown(b, regressions(a, b))
    assert "**pass rate 0.667** (2/3) 95% interval [" in md
    assert "| macro_f1 | 0.833 | [" in md
    assert "**regressions vs `A`: 1**" in md and "| `c2` | 1/1 | 0/1 |" in md
    assert "| cost_usd | $0.0010 |" in md and "| input_tokens | 10 |" in md
    assert "1 case(s) not passed" in md
    assert "regressions" not in summary_markdown(a)
    counts = b.model_copy(update={"aggregate": b.aggregate.model_copy(
        update={"metrics": {**b.aggregate.metrics, "format_not_ok": 2}})})
    assert "| format_not_ok | 2 |" in summary_markdown(counts)  # a count stays an integer
    na = b.model_copy(update={"aggregate": b.aggregate.model_copy(
        update={"metrics": {**b.aggregate.metrics, "micro_precision": None}})})
    assert "| micro_precision | - |" in summary_markdown(na) and "None" not in summary_markdown(na)


def test_write_summary_markdown_to_a_file_and_the_step_summary(tmp_path: Path) -> None:
    a, b = _extraction_runs()
    step = tmp_path / "step.md"
    step.write_text("earlier step\n", encoding="utf-8")
    out = tmp_path / "out" / "summary.md"
    written = write_summary_markdown(b, regressions(a, b), out, environ={"GITHUB_STEP_SUMMARY": str(step)})
    assert written == [out, step]
    assert out.read_text(encoding="utf-8").startswith("### groundeval extraction")
    assert step.read_text(encoding="utf-8").startswith("earlier step\n### groundeval extraction")
    assert write_summary_markdown(b, None, None, environ={}) == []


def test_summary_markdown_write_task_dimensions() -> None:
    cases = [_write_case("w1", "W", {"schema": True, "coding": True, "constraints": True, "safety": True}),
             _write_case("w2", "W", {"schema": True, "coding": False, "constraints": True, "safety": True})]
    rec = run(cases, run_id="W", task="write")
    rec = rec.model_copy(update={"aggregate": rec.aggregate.model_copy(update={"metrics": {
        "schema_pass_rate": 1.0, "coding_pass_rate": 0.5}})})
    md = summary_markdown(rec)
    # proportions get the Wilson interval, named: 2 of 2 is no certainty (never [1.000, 1.000])
    assert "| coding_pass_rate | 0.500 | [0.095, 0.905] (Wilson score, 2 cases) |" in md
    assert "| schema_pass_rate | 1.000 | [0.342, 1.000] (Wilson score, 2 cases) |" in md


def test_html_is_self_contained_and_escapes_case_text() -> None:
    a, b = _extraction_runs()
    page = render_report(a, b)
    assert "<script" not in page and "src=" not in page
    assert all(href.startswith("#") for href in re.findall(r'href="([^"]*)"', page))  # links within the page only
    assert "http://" not in page and "https://" not in page
    assert "Amoxicillin &lt;b&gt;250&lt;/b&gt;" in page and "316049 Hydrochlorothiazide 25 MG" in page
    assert 'id="regressed-count">1<' in page and "Comparison: B (B) against A (A)" in page


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("Chromium is not installed (apt-get install -y chromium); .ci/run installs it")


def _load_in_chromium(page: Path, profile: Path) -> tuple[str, list[str]]:
    """Load a file in headless Chromium; return the DOM after load and the console lines."""
    binary = _chromium()
    try:
        proc = subprocess.run(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
            capture_output=True, text=True, timeout=120, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"Chromium could not start here: {exc}")
    if proc.returncode != 0 or "<html" not in proc.stdout:
        pytest.skip(f"Chromium could not start here (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    return proc.stdout, [line for line in proc.stderr.splitlines() if CONSOLE.search(line)]


def test_report_loads_in_chromium_without_console_errors(tmp_path: Path) -> None:
    cases = [_write_case(f"w{i}", "W", {"schema": True, "coding": i != 1, "constraints": True, "safety": True})
             for i in range(5)]
    rec = run(cases, run_id="W", task="write")
    rec = rec.model_copy(update={"aggregate": rec.aggregate.model_copy(update={"metrics": {"coding_pass_rate": 0.8}})})
    path = write_report(tmp_path / "report.html", rec)
    dom, console = _load_in_chromium(path, tmp_path / "profile")
    assert console == []
    assert '<strong class="case-count">5</strong>' in dom
    assert dom.count('<details class="case"') == 5
    assert '<td class="num" data-figure="pass_rate">0.800</td>' in dom
    assert '<td class="num" data-figure="coding_pass_rate">0.800</td>' in dom
    assert "coding wrong &lt;script&gt;alert(1)&lt;/script&gt;" in dom  # escaped, not executed


def test_cli_report_of_two_real_runs_in_chromium(pytester: pytest.Pytester, tmp_path: Path) -> None:
    for agent in ("baseline", "naive"):
        pytester.runpytest(
            "--groundeval-task=extraction", f"--groundeval-agent={agent}", "--groundeval-limit=3",
            f"--groundeval-out-dir={tmp_path / agent}", "-q", "-p", "no:randomly",
        )
    (pa,), (pb,) = (tmp_path / "baseline").glob("*.json"), (tmp_path / "naive").glob("*.json")
    out = tmp_path / "report.html"
    assert cli_main(["report", str(pa), str(pb), "-o", str(out)]) == 0
    dom, console = _load_in_chromium(out, tmp_path / "profile")
    assert console == []
    assert dom.count('<strong class="case-count">3</strong>') == 2
    assert 'id="comparison"' in dom and dom.count('<details class="case"') == 6


FIXTURES = REPO / "fixtures" / "extraction"
NAIVE_CASES = ("Clemente_Kreiger", "Garrett_Thompson", "Johnie961_Connelly992")  # naive: passed, partial, failed


def _naive_record(pytester: pytest.Pytester, out: Path) -> Path:
    data = pytester.mkdir("data")
    for prefix in NAIVE_CASES:
        (src,) = FIXTURES.glob(f"{prefix}*.json")
        (data / src.name).write_bytes(src.read_bytes())
    pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=naive", "--groundeval-data-dir=data",
                       f"--groundeval-out-dir={out}", "-q", "-p", "no:randomly", "--groundeval-progress=off")
    (path,) = out.glob("*.json")
    return path


def test_failures_come_first_and_each_case_explains_itself(pytester: pytest.Pytester, tmp_path: Path) -> None:
    from groundeval.reporting.cases import load_record

    record = load_record(_naive_record(pytester, tmp_path / "runs"))
    page = render_report(record)
    order = [page.index(f'id="run1-{g}"') for g in ("failed", "partial", "passed")]
    assert order == sorted(order)  # failures first, then partial credit, passes last
    assert '<a href="#run1-failed" class="failed">failed 1</a>' in page  # the counts link to their groups
    failed = page[page.index('id="run1-failed"'):page.index('id="run1-partial"')]
    assert 'data-outcome="failed"' in failed and "Johnie961_Connelly992_98ea7ef1" in failed
    assert '&#34;groundeval/extraction::Johnie961_Connelly992_98ea7ef1&#34;' in failed  # the node id to rerun
    assert '<li class="extra">1535362  sodium fluoride 0.0272 MG/MG Oral Gel' in failed  # the extra item, marked
    assert "F1 0.000 (needs &gt;= 1)" in failed and 'class="raw"' in failed
    partial = page[page.index('id="run1-partial"'):page.index('id="run1-passed"')]
    assert partial.count('<li class="extra">') == 2 and "<li class=\"\">" in partial  # Garrett: 2 extra, 1 right
    assert "per-dimension rates" not in page and 'class="bars"' not in page  # the bar list is gone
    assert page.count('<svg class="chart"') >= 3  # score histograms, rates with intervals, latency
    assert 'aria-label="distribution of f1 over the cases"' in page
    assert "cost (USD)" not in page  # a rule-based run costs 0 on every case: the column of zeros is dropped


def test_two_runs_chart_the_per_case_change(pytester: pytest.Pytester, tmp_path: Path) -> None:
    from groundeval.reporting.cases import load_record

    naive = load_record(_naive_record(pytester, tmp_path / "runs"))
    better = naive.model_copy(update={"run_id": "B", "cases": [
        c.model_copy(update={"outcome": "passed", "metrics": {**c.metrics, "f1": 1.0}}) for c in naive.cases]})
    page = render_report(naive, better)
    assert 'id="change-charts"' in page and "change of passed per case (B - A): 0 down, 2 up, 1 same" in page


def _probe(page: str) -> str:
    """The report with a script that measures the layout (the real report allows no script).

    It measures the first screen as the page opens (every case closed), then opens every case
    (long raw answers and lists must wrap, not widen the page) and measures the width, then closes
    them again, so that a screenshot taken after the load shows the page as it opens. A second
    script then fails on purpose: the console check must see it.
    """
    probe = (
        "<script>const r = (q) => { const e = document.querySelector(q); return e ? e.getBoundingClientRect().bottom"
        " : -1; };const probe = {headline: r('[data-headline=\"pass_rate\"]'),"
        " failing: r('details.case[data-outcome=\"failed\"]')};"
        "const cases = [...document.querySelectorAll('details')].filter((d) => !d.open);"
        "cases.forEach((d) => { d.open = true; });"
        "probe.opened = cases.length; probe.width = document.documentElement.scrollWidth;"
        "cases.forEach((d) => { d.open = false; });"
        "document.body.setAttribute('data-probe', JSON.stringify(probe));</script><script>undefinedFn();</script>"
    )
    page = page.replace("default-src 'none';", "default-src 'none'; script-src 'unsafe-inline';")
    return page.replace("</body>", probe + "</body>")


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_first_screen_shows_the_headline_and_the_first_failing_case(pytester: pytest.Pytester, tmp_path: Path) -> None:
    import json

    from groundeval.reporting.cases import load_record

    record = load_record(_naive_record(pytester, tmp_path / "runs"))
    page = render_report(record)
    shot = tmp_path / "first-screen.png"
    probed = tmp_path / "probe.html"
    probed.write_text(_probe(page), encoding="utf-8")
    # one Chromium: the screenshot of the first screen, and the DOM with what the probe measured
    proc = subprocess.run([_chromium(), *CHROMIUM_FLAGS, "--window-size=1280,800", f"--user-data-dir={tmp_path / 'p'}",
                           f"--screenshot={shot}", "--dump-dom", probed.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)
    if not shot.exists():
        pytest.skip("Chromium could not take a screenshot here")
    assert _png_size(shot) == (1280, 800)
    found = re.search(r'data-probe="([^"]*)"', proc.stdout)
    assert found, proc.stderr[-500:]
    layout = json.loads(found.group(1).replace("&quot;", '"'))
    assert layout["opened"] >= page.count('<details class="case"') == 3  # every case was opened for the width
    assert layout["width"] <= 1280  # no horizontal scrolling at 1,280 px
    assert 0 < layout["headline"] < 800 and 0 < layout["failing"] <= 800  # both on the first screen
    # the console check (``_load_in_chromium``) sees a script error: its absence elsewhere means something
    console = [line for line in proc.stderr.splitlines() if CONSOLE.search(line)]
    assert any("undefinedFn is not defined" in line for line in console), proc.stderr[-500:]


def test_a_case_shows_its_tool_calls_and_its_trials() -> None:
    trace = [{"tool": "get_resources", "args": {"type": "MedicationRequest"}, "result": "<b>3 found</b>", "ok": True}]
    cases = [case("c1", "failed", trace=trace, trial=0, message="F1 0.000"), case("c1", "passed", trial=1)]
    page = render_report(run(cases, run_id="T"))
    assert '<ol class="trace"><li><code>get_resources</code> (ok)' in page and "&lt;b&gt;3 found&lt;/b&gt;" in page
    assert page.count('<ul class="plain trials">') == 2  # each trial's details list both trials
    assert "trial 0: <span class=\"failed\">failed</span> <span class=\"small\">F1 0.000</span>" in page


def test_a_summary_of_3000_failing_cases_says_how_many_it_does_not_list() -> None:
    from tests._records import case, run

    record = run([case(f"c{i:04d}", "failed") for i in range(3_000)])
    md = summary_markdown(record)
    assert md.count("| `c") == 50 and "`c0049`" in md and "`c0050`" not in md
    assert "and 2,950 more cases not passed (all of them in the run record)" in md


def test_the_rerun_command_carries_the_model_and_the_base_url() -> None:
    record = run([case("c1", "failed")], model="qwen2.5-7b-instruct", settings={
        "agent_spec": "openai-compatible",
        "agent_options": {"base_url": "http://127.0.0.1:8080/v1", "max_tokens": 512, "temperature": None}})
    page = render_report(record)
    assert ("pytest --groundeval-task=extraction --groundeval-agent=openai-compatible" in page)
    assert "--groundeval-model=qwen2.5-7b-instruct" in page
    assert "--groundeval-base-url=http://127.0.0.1:8080/v1" in page and "--groundeval-max-tokens=512" in page
    assert "--groundeval-temperature" not in page  # not set in the run: the model's own, as then
