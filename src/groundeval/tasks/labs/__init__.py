"""The labs task: interpret a patient's latest laboratory results and vital signs against cited guideline thresholds.

``LabsTask`` (``--groundeval-task=labs``); the truth rules in ``tasks.labs.truth``, the threshold
table's loader in ``tasks.labs.thresholds``, the scores in ``tasks.labs.scorer``.
"""

from __future__ import annotations

from groundeval.tasks.labs.task import LabsTask

__all__ = ["LabsTask"]
