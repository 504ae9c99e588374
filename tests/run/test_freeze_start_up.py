"""Start-up's objects move to the collector's permanent generation before a process's first case, once."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent('''
    import gc, json, sys
    from pathlib import Path

    from groundeval.datasets import default_data_dir
    from groundeval.execution import Job
    from groundeval.run.assembly import Role, assemble
    from groundeval.run.process import ProcessRun, run_info
    from groundeval.run.settings import Settings

    settings = Settings(task="labs", agent="baseline-labs", data_dir=default_data_dir("labs"),
                        out_dir=Path(sys.argv[1]), task_name="labs")
    counts = {"before": gc.get_freeze_count()}
    for session in ("first", "second"):  # a second session in the same process (pytester's in-process runs)
        parts = assemble(settings, Role())
        process = ProcessRun(parts, run_info(parts, settings, session), settings)
        process.start()
        sources = parts.task.case_files(settings.data_dir)[:2]
        for i, source in enumerate(sources):
            case = parts.task.load_case(source)
            process.run(Job(f"groundeval/labs::{case.case_id}", case), ahead=lambda window: [])
            counts[f"{session} session, case {i + 1}"] = gc.get_freeze_count()
        process.end()
    print(json.dumps(counts))
''')


def test_the_first_case_freezes_start_up_and_nothing_is_frozen_again(tmp_path: Path) -> None:
    """A fresh process, two sessions of two cases: only the first case of the first session freezes."""
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout.splitlines()[-1])
    assert counts["before"] == 0  # nothing is frozen by importing groundeval
    frozen = counts["first session, case 1"]
    assert frozen > 0  # the modules, classes and the case objects of start-up
    later = [count for name, count in counts.items() if name not in ("before", "first session, case 1")]
    assert all(0 < count <= frozen for count in later)  # frozen objects freed since leave it; none was added
