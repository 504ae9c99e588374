"""A case's tools come from its task (``Task.case_tools``), handed to agents as ``AgentRequest.tools``.

Agents and the MCP server no longer read the request context to find them: the runner's request
carries what the task declares, so a task with tools of its own needs no edit to the agents.
"""

from __future__ import annotations

from pathlib import Path

from groundeval.agent_io import Prompt
from groundeval.datasets import Case
from groundeval.execution.call import request_for
from groundeval.fhir.read_tools import OBSERVATION_TOOL, READ_TOOLS
from groundeval.tasks.base import BaseTask
from groundeval.tasks.extraction.task import ExtractionTask
from groundeval.tasks.fhir_mode import FhirModeTask
from groundeval.tasks.labs import LabsTask
from groundeval.tasks.write.task import WriteTask
from tests._paths import REPO

FIXTURES = REPO / "fixtures"


def _first(task: BaseTask, folder: str) -> Path:
    return task.case_files(FIXTURES / folder)[0]


def test_each_built_in_tasks_request_carries_the_tools_its_task_declares() -> None:
    extraction, labs, write = ExtractionTask(), LabsTask(), WriteTask()
    for task, folder, names in ((extraction, "extraction", READ_TOOLS), (labs, "labs", (*READ_TOOLS, OBSERVATION_TOOL)),
                                (write, "write", write.tools)):
        request = request_for(task, task.load_case(_first(task, folder)))
        assert request.tools is not None
        assert tuple(t.name for t in request.tools()) == tuple(names) == tuple(task.tools), task.name


def test_a_task_without_tools_or_served_over_fhir_gives_none() -> None:
    class Plain(BaseTask):
        name = "plain"

        def prompt(self, case: Case) -> Prompt:
            return Prompt(system="", user=case.case_id)

    task = ExtractionTask()
    case = task.load_case(_first(task, "extraction"))
    assert request_for(Plain(), case).tools is None  # no TOOLS provided
    assert request_for(FhirModeTask(task, "sandbox"), case).tools is None  # its tools are the FHIR REST API
