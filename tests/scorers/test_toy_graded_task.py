"""A task other than summary grades with a model judge and reads its card without importing the summary task."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TOY = Path(__file__).with_name("_toy_graded_task.py")


def test_a_toy_task_grades_calibrates_and_reads_its_card_without_the_summary_task() -> None:
    done = subprocess.run([sys.executable, str(TOY)], capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["summary_imported"] is False
    assert got["outcome"] == "passed" and got["judge_calls"] == 2
    assert got["alone_kappa"] == 1.0 and got["alone_wrong"] == 0  # the toy judge is right on every known item
    assert got["labels_kappa"] == 1.0 and got["verdict_agreement"] == 1.0
    assert got["where"] == "packaged card toy.json"
    # read from its card, but 3 summaries give no interval: a point kappa from a handful of labels never gates
    assert got["reliability"].startswith("judge unreliable (overall kappa 1.00 (no interval"), got["reliability"]
    assert got["lines"] > 3
