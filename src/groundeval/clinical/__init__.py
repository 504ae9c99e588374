"""Clinical rules and tables more than one task reads: the medication list, lab thresholds and results, the labs truth.

No task imports another task: what two tasks share lives here (or, for what every task needs to read
and check its case files, in ``groundeval.tasks.common``, ``groundeval.datasets`` and
``groundeval.fhir.validation``), and each task's folder imports it.
"""
