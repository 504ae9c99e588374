"""Task-independent scorers.

* ``codes``: precision, recall and F1 over sets of codes.
* ``grounding``: whether a tool-using agent's answer rests on what its tools returned.
* ``model_graded``: a model of role ``judge`` decides criteria (any task's prompt and verdict
  parser); the executor asks its questions (``execution.score_stage``).
* ``agreement``: a scorer's (or a judge's) binary decisions against labels: Cohen's kappa and
  proportions, each with its interval and n (calibration of a judge).
"""
