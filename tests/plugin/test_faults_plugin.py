"""Faults the plugin itself must survive: odd answers, huge answers, agents that exit, secrets in URLs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import eval_args, junit_cases, run_records


def test_a_lone_surrogate_or_control_characters_in_an_answer_are_text_and_the_case_is_scored(
    pytester: pytest.Pytester, eval_dir: Path
) -> None:
    pytester.makepyfile(odd_agent='''
import json

def agent(request):
    # json.loads of the escape "\\\\ud83c" gives a lone UTF-16 surrogate (half an emoji)
    half = json.loads('"\\\\ud83c"')
    return "[] " + half + " \\x1b[31m\\x07"
''')
    result = pytester.runpytest(*eval_args("--groundeval-agent=odd_agent:agent", "-k", "Clemente",
                                           "--junitxml=out.xml", "-rA"))
    assert "INTERNALERROR" not in result.stdout.str()
    result.assert_outcomes(passed=1, deselected=4)
    (record,) = run_records(pytester.path)
    (case,) = record["cases"]
    assert case["outcome"] == "passed" and case["format_ok"] is False
    assert "\ufffd" in case["raw_output"] and "\x1b" not in case["raw_output"]
    assert junit_cases(pytester.path / "out.xml")  # the XML parses
    partial = list((pytester.path / "runs").glob("*.partial.jsonl"))
    assert partial == []  # the final record replaced it


def test_agent_text_is_no_link_image_or_terminal_control_in_any_output(
    pytester: pytest.Pytester, eval_dir: Path
) -> None:
    import markdown  # Python-Markdown (the docs' renderer): what a Markdown viewer makes of the summary

    pytester.makepyfile(phish_agent='''
def agent(request):
    raise RuntimeError("see [the guideline](http://evil.example/phish) ![t](http://evil.example/track.png) "
                       "www.evil.example *now* \\x9b31m red \\x9d0;title\\x07 \\x85")
''')
    result = pytester.runpytest(*eval_args("--groundeval-agent=phish_agent:agent", "-k", "Clemente",
                                           "--groundeval-summary-md=summary.md", "-rA"))
    result.assert_outcomes(errors=1, deselected=4)
    out = result.stdout.str()
    assert "evil.example" in out  # the message is shown...
    assert not any(c in out for c in "\x9b\x9d\x85\x07"), [c for c in out if 0x7f <= ord(c) <= 0x9f]  # ...inert
    (record,) = run_records(pytester.path)
    assert "\x9b" not in json.dumps(record, ensure_ascii=False) and "\ufffd31m red" in record["cases"][0]["error"]["message"]
    text = (pytester.path / "summary.md").read_text()
    assert "evil" in text
    html = markdown.markdown(text, extensions=["tables"])
    assert "<a " not in html and "<img" not in html and "<em>" not in html, html
    assert "\\[the guideline\\](http" in text  # escaped as CommonMark (and GitHub) read it
    assert "http://" not in text and "www.evil" not in text  # no GitHub autolink either


def test_a_huge_answer_is_capped_in_the_record_with_its_length_and_hash(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makepyfile(big_agent='''
def agent(request):
    return "[]" + " " * 3_000_000
''')
    pytester.runpytest(*eval_args("--groundeval-agent=big_agent:agent", "-k", "Clemente"))
    (path,) = (pytester.path / "runs").glob("*.json")
    (case,) = json.loads(path.read_text())["cases"]
    assert case["outcome"] == "passed"  # parsed in full before the cap
    assert case["raw_output_chars"] == 3_000_002 and len(case["raw_output"]) == 200_000
    assert len(case["raw_output_sha256"]) == 64
    assert path.stat().st_size < 1_000_000


def test_a_10_mb_answer_of_10000_items_is_capped_in_every_output_with_its_counts(
    pytester: pytest.Pytester, eval_dir: Path
) -> None:
    from groundeval.cli.tools import main as cli_main
    from groundeval.records.caps import MAX_LISTED

    pytester.makepyfile(many_agent='''
import json

ANSWER = json.dumps([{"rxnorm_code": str(100000 + i), "display": "Drug %d " % i + "x" * 1000} for i in range(10_000)])


def agent(request):
    return ANSWER
''')
    result = pytester.runpytest(*eval_args("--groundeval-agent=many_agent:agent", "-k", "Clemente or Liz",
                                           "--junitxml=out.xml", "--groundeval-summary-md=summary.md", "-rA"))
    result.assert_outcomes(failed=2, deselected=3)
    (path,) = (pytester.path / "runs").glob("*.json")
    record = json.loads(path.read_text())
    for case in record["cases"]:
        assert case["raw_output_chars"] > 10_000_000  # the answer was 10 MB, scored whole:
        assert case["metrics"]["fp"] >= 10_000 - 20 and case["answered"] is True
        assert len(case["parsed"]) == MAX_LISTED and len(case["details"]["extra"]) == MAX_LISTED
        assert case["capped"]["parsed"] == 10_000 and case["capped"]["details.extra"] >= 10_000 - 20
        assert case["capped"]["message"] > 10_000
        lines = case["message"].splitlines()
        assert len(lines) == MAX_LISTED + 1 and lines[-1].startswith("... ") and "more lines" in lines[-1]
    sizes = {"record": path.stat().st_size, "junit": (pytester.path / "out.xml").stat().st_size,
             "terminal": len(result.stdout.str()), "summary": (pytester.path / "summary.md").stat().st_size}
    assert cli_main(["report", str(path), "-o", str(pytester.path / "report.html")]) == 0
    sizes["html"] = (pytester.path / "report.html").stat().st_size
    assert all(size < 2_000_000 for size in sizes.values()), sizes  # whole, each is over 20 MB
    assert "more (the run record keeps the first 100 of" in (pytester.path / "report.html").read_text()


def test_one_item_with_a_5_mb_display_is_capped_by_characters_in_every_output(
    pytester: pytest.Pytester, eval_dir: Path
) -> None:
    from groundeval.cli.tools import main as cli_main
    from groundeval.records.caps import CUT_MARK, MAX_CHARS

    pytester.makepyfile(long_agent='''
import json

ANSWER = json.dumps([{"rxnorm_code": "999999", "display": "Drug " + "x" * 5_000_000}])


def agent(request):
    return ANSWER
''')
    result = pytester.runpytest(*eval_args("--groundeval-agent=long_agent:agent", "-k", "Clemente or Liz",
                                           "--junitxml=out.xml", "--groundeval-summary-md=summary.md", "-rA"))
    result.assert_outcomes(failed=2, deselected=3)
    (path,) = (pytester.path / "runs").glob("*.json")
    record = json.loads(path.read_text())
    for case in record["cases"]:
        assert case["metrics"]["fp"] >= 1 and case["answered"] is True  # scored on the whole answer
        display = case["parsed"][0]["display"]
        assert len(display) < MAX_CHARS + 50 and display.endswith(f"{CUT_MARK}5000005 characters]")
        assert case["capped"]["parsed[0].display"] == 5_000_005
        assert any(k.startswith("details.") and v >= 5_000_000 for k, v in case["capped"].items()), case["capped"]
        assert any(k.startswith("message[") and v >= 5_000_000 for k, v in case["capped"].items()), case["capped"]
        assert len(case["message"]) < 100 * (MAX_CHARS + 50)
    sizes = {"record": path.stat().st_size, "junit": (pytester.path / "out.xml").stat().st_size,
             "terminal": len(result.stdout.str()), "summary": (pytester.path / "summary.md").stat().st_size}
    assert cli_main(["report", str(path), "-o", str(pytester.path / "report.html")]) == 0
    sizes["html"] = (pytester.path / "report.html").stat().st_size
    assert all(size < 600_000 for size in sizes.values()), sizes  # uncut, each is over 5 MB


def test_an_agent_that_calls_sys_exit_is_an_agent_error_and_the_run_goes_on(
    pytester: pytest.Pytester, eval_dir: Path
) -> None:
    pytester.makepyfile(quitter='''
import sys
from scripted_agent import BASE

def agent(request):
    if request.case_id.startswith("Max_Kris"):
        sys.exit(3)
    return BASE.run(request)
''')
    result = pytester.runpytest(*eval_args("--groundeval-agent=quitter:agent"))
    result.assert_outcomes(passed=4, errors=1)
    (record,) = run_records(pytester.path)
    quit_case = next(c for c in record["cases"] if c["case_id"].startswith("Max_Kris"))
    assert quit_case["outcome"] == "agent_error" and quit_case["error"]["type"] == "SystemExit"
    assert record["complete"] is True and len(record["cases"]) == 5


def test_credentials_in_the_base_url_never_reach_the_record_or_junit(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makepyfile(url_agent='''
class UrlAgent:
    name = "url-agent"
    def __init__(self, config):
        self.model = "m"
    def run(self, request):
        return "[]"
''')
    url = "http://alice:s3cret-pw-123@127.0.0.1:9/v1"
    result = pytester.runpytest(*eval_args("--groundeval-agent=url_agent:UrlAgent", f"--groundeval-base-url={url}",
                                           "-k", "Clemente", "--junitxml=out.xml", "-rA"))
    (record,) = run_records(pytester.path)
    assert record["settings"]["agent_options"]["base_url"] == "http://127.0.0.1:9/v1"
    outputs = result.stdout.str() + (pytester.path / "out.xml").read_text() + json.dumps(record)
    assert "s3cret-pw-123" not in outputs and "alice" not in outputs
