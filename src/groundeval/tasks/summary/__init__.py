"""The handoff-summary task (``--groundeval-task=summary``): a rubric from the record, rules first, a measured judge."""

from groundeval.tasks.summary.task import SummaryTask

__all__ = ["SummaryTask"]
