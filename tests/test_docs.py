"""The documentation site builds with warnings as errors, and the code it shows runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests._paths import REPO

ROOT = REPO
DOCS = ROOT / "docs"
README_MAX_LINES = 250


def test_the_docs_site_builds_strictly(tmp_path: Path) -> None:
    """``mkdocs build --strict``: a broken link or anchor, or a page left out of the nav, fails."""
    try:
        import mkdocs  # noqa: F401
    except ImportError:  # pragma: no cover - the docs group is a default group (uv sync installs it)
        pytest.fail("mkdocs is not installed: run `uv sync` (the docs dependency group)")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f", str(ROOT / "mkdocs.yml"),
         "-d", str(tmp_path / "site")],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "tasks" / "extraction" / "index.html").is_file()


def test_the_readme_is_short_and_its_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    targets = re.findall(r"\]\(((?:docs/|FRICTION|LICENSE)[^)#]*)", readme)
    assert any(t.startswith("docs/") for t in targets)
    for target in targets:
        assert (ROOT / target).exists(), f"README links to {target}, which does not exist"
    # the test command CI runs is the one the README gives
    assert "uv run pytest -n 2" in readme
    assert "uv run pytest -n 2" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _python_block(page: Path, first_line: str) -> str:
    for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.DOTALL):
        if isinstance(block, str) and block.startswith(first_line):
            return block
    raise AssertionError(f"{page} has no python block starting {first_line!r}")


def test_the_minimal_task_of_writing_a_task_runs_as_printed(pytester: pytest.Pytester) -> None:
    code = _python_block(DOCS / "tasks" / "writing-a-task.md", "# gender_task.py")
    (pytester.path / "gender_task.py").write_text(code, encoding="utf-8")
    pytester.syspathinsert()
    data = pytester.path / "data"
    data.mkdir()
    sources = sorted((ROOT / "fixtures" / "extraction").glob("[A-Z]*.json"))[:3]
    for source in sources:
        (data / source.name).write_bytes(source.read_bytes())
    result = pytester.runpytest(
        "--groundeval-task=gender_task:GenderTask", "--groundeval-data-dir=data", "-p", "no:cacheprovider",
        "--groundeval-out-dir=runs",
    )
    result.assert_outcomes(passed=len(sources))
    result.stdout.fnmatch_lines(["*accuracy*1.000*"])
    # the scorer can fail: a wrong agent gets every case failed, not passed
    (pytester.path / "wrong_agent.py").write_text(
        "def answer(request):\n    return '{\"gender\": \"nonbinary\"}'\n", encoding="utf-8"
    )
    result = pytester.runpytest(
        "--groundeval-task=gender_task:GenderTask", "--groundeval-data-dir=data", "-p", "no:cacheprovider",
        "--groundeval-agent=wrong_agent:answer", "--groundeval-out-dir=runs",
    )
    result.assert_outcomes(failed=len(sources))


def test_the_judge_like_scorer_of_writing_a_task_asks_a_model_as_printed(pytester: pytest.Pytester) -> None:
    page = DOCS / "tasks" / "writing-a-task.md"
    (pytester.path / "gender_task.py").write_text(_python_block(page, "# gender_task.py"), encoding="utf-8")
    (pytester.path / "gender_judge.py").write_text(_python_block(page, "# gender_judge.py"), encoding="utf-8")
    pytester.syspathinsert()
    data = pytester.path / "data"
    data.mkdir()
    sources = sorted((ROOT / "fixtures" / "extraction").glob("[A-Z]*.json"))[:2]
    for source in sources:
        (data / source.name).write_bytes(source.read_bytes())
    args = ("--groundeval-task=gender_judge:JudgedGenderTask", "--groundeval-data-dir=data", "-p", "no:cacheprovider",
            "--groundeval-out-dir=runs")
    pytester.runpytest(*args).assert_outcomes(passed=len(sources))
    (pytester.path / "wrong_agent.py").write_text(
        "def answer(request):\n    return '{\"gender\": \"nonbinary\"}'\n", encoding="utf-8"
    )
    result = pytester.runpytest(*args, "--groundeval-agent=wrong_agent:answer")
    result.assert_outcomes(failed=len(sources))
    result.stdout.fnmatch_lines(["*the judge said 'no'*"])


def test_the_summary_pages_baseline_card_table_is_the_packaged_cards() -> None:
    """The table is filled from the card (scripts/summary_card_docs.py), or is the TODO line while there is none."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("summary_card_docs", ROOT / "scripts" / "summary_card_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.PAGE.read_text(encoding="utf-8")
    start, end = module.current_block(text)
    assert text[start:end].strip() == module.expected_block(), "run: uv run python scripts/summary_card_docs.py"
    assert ("TODO(baseline-card)" in text) == (not module.CARD.is_file())
