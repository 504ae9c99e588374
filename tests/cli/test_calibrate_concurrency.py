"""``groundeval calibrate --concurrency``: judge calls overlap through the score stage, the card is the serial one."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from groundeval.cli import main as cli_main
from groundeval.models.base import ModelRequest
from groundeval.tasks.summary import judge as summary_judge
from groundeval.tasks.summary.judge import ModelJudge
from groundeval.testing import ScriptedModel

TWO = Path(__file__).resolve().parents[1] / "tasks" / "summary" / "labels" / "two_labellers.jsonl"
GUARD_S = 30.0  # only a hang guard: the barrier passes as soon as two calls are in flight together


def _reply(request: ModelRequest) -> str:
    """A deterministic verdict of the request alone: met for every other criterion, quoting the summary."""
    user = str(request.messages[-1]["content"])
    criterion, _, rest = user.partition("\n\nSummary:\n<<<\n")
    summary = rest.rsplit("\n>>>", 1)[0]
    met = len(criterion) % 2 == 0 and bool(summary.strip())
    return json.dumps({"met": met, "evidence": summary.strip().splitlines()[0] if met else ""})


class Overlapping:
    """The scripted reply, its 2nd and 3rd calls held at a barrier that passes only when both are in flight."""

    def __init__(self) -> None:
        self.barrier = threading.Barrier(2, timeout=GUARD_S)
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, request: ModelRequest) -> str:
        with self.lock:
            self.calls += 1
            n = self.calls
        if n in (2, 3):  # the 1st goes alone (the judge's first call in a process)
            self.barrier.wait()
        return _reply(request)


def _card(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, script: object, args: list[str], name: str) -> str:
    model = ScriptedModel(script, role="judge", name="scripted-judge")  # type: ignore[arg-type]
    monkeypatch.setattr(summary_judge, "make_judge", lambda spec: ModelJudge(model, "scripted/judge"))
    out = tmp_path / name
    assert cli_main(["calibrate", "--task", "summary", "--judge", "scripted/judge", *args, "-o", str(out)]) == 0
    card = json.loads(out.read_text(encoding="utf-8"))
    card.pop("date")
    return json.dumps(card, sort_keys=True)


@pytest.mark.parametrize("args", [["--labels", str(TWO)], ["--limit", "1"]], ids=["labels", "control-set"])
def test_calibrate_asks_concurrently_and_writes_the_serial_card(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str],
) -> None:
    overlapping = Overlapping()
    concurrent = _card(monkeypatch, tmp_path, overlapping, [*args, "--concurrency", "4"], "concurrent.json")
    assert overlapping.calls > 3 and not overlapping.barrier.broken  # two judge calls were in flight together
    serial = _card(monkeypatch, tmp_path, _reply, [*args, "--concurrency", "1"], "serial.json")
    assert concurrent == serial


def test_calibrate_concurrency_must_be_a_positive_whole_number(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli_main(["calibrate", "--judge", "baseline", "--concurrency", "0"])
    assert "give 1 or more" in capsys.readouterr().err
