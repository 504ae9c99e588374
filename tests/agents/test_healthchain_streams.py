"""HealthChain is imported only through groundeval._healthchain, which keeps sys.stdout/sys.stderr."""

from __future__ import annotations

import subprocess
import sys

from tests._paths import REPO

ROOT = REPO


def test_warming_and_running_the_baseline_agent_leaves_the_streams_alone() -> None:
    code = (
        "import sys; out, err = sys.stdout, sys.stderr\n"
        "from groundeval.agents.baselines.extraction import BaselineExtractionAgent\n"
        "from groundeval.datasets import default_data_dir\n"
        "from groundeval.execution.call import call_agent, request_for\n"
        "from groundeval.tasks import make_task\n"
        "agent = BaselineExtractionAgent(); agent.warmup()\n"
        "warm = sys.stdout is out and sys.stderr is err\n"
        "task = make_task('extraction')\n"
        "case = task.load_case(task.case_files(default_data_dir('extraction'))[0])\n"
        "call_agent(agent, request_for(task, case))\n"
        "print(warm, sys.stdout is out and sys.stderr is err, 'healthchain.fhir' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.split() == ["True", "True", "True"], out.stderr


def test_ruff_refuses_a_direct_healthchain_import_in_src() -> None:
    snippet = "from healthchain.fhir import get_resources\n\n__all__ = ['get_resources']\n"
    ruff = [sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "TID251",
            "--stdin-filename", "src/groundeval/anywhere.py", "-"]
    banned = subprocess.run(ruff, input=snippet, capture_output=True, text=True, cwd=ROOT)
    assert banned.returncode == 1 and "TID251" in banned.stdout and "groundeval._healthchain" in banned.stdout
    ruff[-2] = "src/groundeval/_healthchain.py"  # the accessor itself may import it
    allowed = subprocess.run(ruff, input=snippet, capture_output=True, text=True, cwd=ROOT)
    assert allowed.returncode == 0, allowed.stdout
