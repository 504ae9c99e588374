"""Render again a prompt a case record kept by reference (``--groundeval-conversation=reference``).

The record keeps the case file's name and SHA-256, the task's version and the prompt's SHA-256
(``groundeval.records.conversation.PromptReference``); this module makes the task again and renders
the prompt from the file, exactly, or says what differs. It lives with the tasks, not the records,
because it needs a task to render.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundeval.records.conversation import task_version

if TYPE_CHECKING:
    from groundeval.agent_io import Prompt
    from groundeval.records.run_record import CaseRecord, RunRecord

__all__ = ["PromptReferenceError", "render_prompt"]


class PromptReferenceError(ValueError):
    """A prompt kept by reference cannot be rendered exactly again; the message says what differs and the fix."""


def render_prompt(run: RunRecord, case: CaseRecord, data_dir: Path | None = None) -> Prompt:
    """Render again the prompt a case kept by reference, exactly as the agent was sent it.

    Args:
        run: The run record (its ``settings.task_spec`` and ``settings.task_options`` make the task).
        case: The case record; its ``conversation.reference`` says which file and version.
        data_dir: Where the case file is; default the run's ``data_dir``.

    Returns:
        The prompt, whose SHA-256 is the one recorded.

    Raises:
        PromptReferenceError: The case keeps no reference, the file is missing or changed since
            the run (SHA-256), the task's version differs, or the rendered text's SHA-256 differs.
    """
    from groundeval.records.trial_ids import split_twin
    from groundeval.tasks import make_task  # the package's own entry point, imported when needed

    conversation = case.conversation
    ref = conversation.reference if conversation is not None else None
    if ref is None:
        raise PromptReferenceError(f"{case.case_id}: its prompt is not kept by reference (nothing to render)")
    path = Path(data_dir or run.data_dir) / ref.source
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PromptReferenceError(
            f"{case.case_id}: cannot read the case file {path} ({exc.strerror or exc}); give the data directory "
            "the run read"
        ) from None
    if hashlib.sha256(data).hexdigest() != ref.fixture_sha256:
        raise PromptReferenceError(
            f"{case.case_id}: the case file {path} changed since the run (SHA-256 differs); its prompt cannot be "
            "rendered exactly: use the file as it was"
        )
    task: Any = make_task(str(run.settings.get("task_spec") or run.task), run.settings.get("task_options") or {})
    version = task_version(type(task).__module__)
    fhir = run.settings.get("fhir")
    if isinstance(fhir, str):  # the prompt named the FHIR server (its placeholders), not the record
        from groundeval.tasks.fhir_mode import FhirModeTask

        task = FhirModeTask(task, fhir)
    if version != ref.task_version:
        raise PromptReferenceError(
            f"{case.case_id}: the run used the {ref.task} task at version {ref.task_version}, this is {version}; "
            f"install version {ref.task_version} to render its prompt exactly"
        )
    loaded = task.load_case(path)
    kind = split_twin(ref.case_id)[1]
    if kind is not None:
        twin = task.counterfactual(loaded, kind)
        if twin is None:
            raise PromptReferenceError(f"{case.case_id}: the {ref.task} task makes no {kind} twin of {ref.source}")
        loaded = twin
    prompt: Prompt = task.prompt(loaded)
    sha = hashlib.sha256(prompt.text.encode("utf-8", "surrogatepass")).hexdigest()
    if sha != ref.prompt_sha256:
        raise PromptReferenceError(
            f"{case.case_id}: the prompt rendered from {ref.source} differs from the one sent (SHA-256 {sha[:12]} "
            f"against {ref.prompt_sha256[:12]}); check the run's task options ({run.settings.get('task_options')})"
        )
    return prompt
