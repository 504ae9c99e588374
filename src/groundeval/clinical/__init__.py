"""Clinical rules and tables that more than one task reads (lab thresholds, result reading, the labs truth).

No task imports another task: what two tasks share lives here (or in ``groundeval.tasks.common``,
``groundeval.tasks.medlist``, ``groundeval.tasks.bundle_cases``), and each task's folder imports it.
"""
