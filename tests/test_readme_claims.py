"""What the README shows a new user is what they get: its sample summary and its install section."""

from __future__ import annotations

import re

import pytest

from tests._paths import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _sample() -> list[str]:
    """The README's sample summary: the first fenced block that holds a ``groundeval extraction`` banner."""
    found = re.search(r"```\n(=+ groundeval extraction =+\n.*?)```", README, flags=re.S)
    assert found, "the README shows no sample summary"
    return found.group(1).rstrip("\n").splitlines()


def _normalised(lines: list[str]) -> list[str]:
    """Lines with what differs between runs masked: the run id, the record's path, calls reached at once."""
    out = []
    for line in lines:
        line = re.sub(r"run: \S+", "run: RUN", line)
        line = re.sub(r"run record: \S+", "run record: PATH", line)
        line = re.sub(r"reached \d+ in flight", "reached N in flight", line)
        out.append(line.rstrip())
    return out


def test_the_readme_sample_summary_is_the_real_one(pytester: pytest.Pytester) -> None:
    """The quick start's command on the packaged fixtures prints the README's block, line for line."""
    result = pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=baseline", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "groundeval extraction" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("run record: "))
    assert _normalised(_sample()) == _normalised(lines[start:end + 1])


def test_the_install_section_says_how_to_install_from_a_checkout_and_where_the_cases_live() -> None:
    section = README.split("## Installing it in your own project", 1)[1].split("\n## ", 1)[0]
    assert "pip install './groundeval[all]'" in section, "no install from a checkout"
    assert "git clone" in section
    assert "site-packages/groundeval/" in section, "the packaged cases' place is not said"
