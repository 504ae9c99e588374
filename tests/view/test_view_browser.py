"""``groundeval view`` in a real browser: Debian's Chromium driven by Playwright, against the real server.

The server binds 127.0.0.1 on a free port in a thread, and the test stops it (bounded waits). Set
``GROUNDEVAL_SCREENSHOTS=DIR`` to also write the screenshots the docs show (docs/ci/view.md).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")
playwright_sync = pytest.importorskip("playwright.sync_api")

XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'

AGENT = f"""
from groundeval import AgentResult

def fn(request):
    text = "[]" if len(request.case_id) % 2 else {XSS!r}
    return AgentResult(text=text, messages=[{{"role": "assistant", "content": {XSS!r} + " answer",
                                               "call": {{"latency_s": 0.5, "attempts": 1, "usage": {{}}}}}}])
"""


def _runs(pytester: pytest.Pytester) -> Path:
    pytester.makepyfile(xss_agent=AGENT)
    for agent in ("baseline", "naive", "xss_agent:fn"):
        pytester.runpytest(
            "--groundeval-task=extraction",
            f"--groundeval-agent={agent}",
            "--groundeval-limit=6",
            "--groundeval-out-dir=runs",
            "-p",
            "no:cacheprovider",
        )
    runs = pytester.path / "runs"
    assert len(list(runs.glob("*.json"))) == 3
    return runs


@pytest.fixture
def server(pytester: pytest.Pytester) -> Iterator[str]:
    from groundeval.view.app import make_app

    app = make_app(_runs(pytester))
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    for _ in range(200):  # bounded: up to 10 s for the socket
        if srv.started and srv.servers:
            break
        time.sleep(0.05)
    else:
        srv.should_exit = True
        pytest.fail("the viewer did not start")
    port = srv.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)
        assert not thread.is_alive()


@pytest.fixture
def page() -> Iterator[Any]:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("Chromium is not installed (apt-get install -y chromium); .ci/run installs it")
    with playwright_sync.sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=binary, args=["--no-sandbox"])
        except playwright_sync.Error as exc:
            pytest.skip(f"Chromium could not start here: {str(exc)[:200]}")
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.set_default_timeout(15_000)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        yield page
        browser.close()
        assert errors == []


def _shot(page: Any, name: str) -> None:
    where = os.environ.get("GROUNDEVAL_SCREENSHOTS")
    if where:
        page.screenshot(path=str(Path(where) / f"{name}.png"))


def test_runs_list_filters_case_page_and_side_by_side(server: str, page: Any) -> None:
    page.goto(server + "/")
    rows = page.locator("#runs tbody tr")
    assert rows.count() == 3
    agents = {rows.nth(i).locator("td").nth(3).inner_text() for i in range(3)}
    assert agents == {"baseline", "naive", "xss_agent:fn"}
    _shot(page, "view-runs")

    # one run's cases, filtered by outcome and by text
    page.locator("#runs tbody tr", has_text="naive").locator("td").nth(1).locator("a").click()
    page.wait_for_selector("#cases")
    total = page.locator("#cases tbody tr").count()
    assert total == 6
    page.select_option("select[name=outcome]", "passed")
    page.click("#filters button[type=submit]")
    page.wait_for_url("**outcome=passed**")
    outcomes = page.locator("#cases tbody tr td:nth-child(3)").all_inner_texts()
    assert outcomes and set(outcomes) == {"passed"} and len(outcomes) < total
    _shot(page, "view-run")
    page.select_option("select[name=outcome]", "")
    page.select_option("select[name=metric]", "precision")
    page.fill("input[name=below]", "1")
    page.click("#filters button[type=submit]")
    page.wait_for_url("**metric=precision**")
    below = page.locator("#cases tbody tr").count()
    assert 0 < below < total
    first = page.locator("#cases tbody tr td a").first.inner_text()
    page.fill("input[name=below]", "")
    page.select_option("select[name=metric]", "")
    page.fill("input[name=text]", first)
    page.click("#filters button[type=submit]")
    page.wait_for_url("**text=**")
    assert page.locator("#cases tbody tr td a").all_inner_texts() == [first]

    # a case page: the conversation (the prompt sent), the parsed answer beside the truth
    page.locator("#cases tbody tr td a").first.click()
    page.wait_for_selector("#conversation")
    assert page.locator("#case-id").inner_text().startswith(first)
    assert page.locator("#conversation .msg.system").count() == 1
    assert "resourceType" in page.locator("#conversation .msg.user pre").inner_text()
    assert page.locator("#parsed").is_visible() and page.locator("#truth").is_visible()
    assert "medications" in page.locator("#truth").inner_text()
    _shot(page, "view-case")

    # two runs side by side, from the runs page's checkboxes
    page.goto(server + "/")
    for agent in ("baseline", "naive"):
        page.locator("#runs tbody tr", has_text=agent).locator("input[type=checkbox]").check()
    page.click("text=Compare the runs ticked")
    page.wait_for_selector("#compare")
    header = page.locator("#compare thead").inner_text()
    assert "baseline" in header and "naive" in header
    assert page.locator("#compare tbody tr").count() == 6
    page.check("input[name=differ]")
    page.click("text=Show")
    page.wait_for_url("**differ=1**")
    differing = page.locator("#compare tbody tr").count()
    assert differing < 6
    _shot(page, "view-compare")


def test_agent_text_is_escaped_never_run(server: str, page: Any) -> None:
    page.goto(server + "/")
    page.locator("#runs tbody tr", has_text="xss_agent").locator("td").nth(1).locator("a").click()
    page.wait_for_selector("#cases")
    for i in range(page.locator("#cases tbody tr td a").count()):
        page.locator("#cases tbody tr td a").nth(i).click()
        page.wait_for_selector("#conversation")
        assert "<script>window.__xss = 1</script>" in page.locator("#conversation .msg.assistant pre").inner_text()
        assert page.locator("#conversation script, #conversation img, #raw img").count() == 0
        page.go_back()
        page.wait_for_selector("#cases")
    assert page.evaluate("window.__xss") is None


def test_the_command_refuses_a_missing_directory_with_a_usage_error(tmp_path: Path, capsys: Any) -> None:
    from groundeval.cli import main

    assert main(["view", str(tmp_path / "nowhere"), "--no-browser"]) == 4
    assert "not a directory" in capsys.readouterr().err
