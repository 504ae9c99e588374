"""The labs task: interpret a patient's latest laboratory results and vital signs against cited guideline thresholds.

``LabsTask`` (``--groundeval-task=labs``); the truth rules in ``groundeval.clinical.lab_truth``, the threshold
table's loader in ``groundeval.clinical.lab_thresholds``, the scores in ``groundeval.tasks.labs.scorer``.
"""

from __future__ import annotations

from groundeval.tasks.labs.task import LabsTask

__all__ = ["LabsTask"]
