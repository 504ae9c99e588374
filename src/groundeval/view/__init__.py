"""``groundeval view``: a local web viewer of run records (Starlette on uvicorn, loopback only).

Pages: the runs of a directory (``/``), one run's cases filtered by outcome, metric and text
(``/run/<run_id>``), one case (``/run/<run_id>/case/<index>``: its conversation, parsed answer
beside the truth, the scorer's details with a judge's verdicts and evidence, its counterfactual
twins beside their original) and two or more runs side by side on the same cases (``/compare``).
Everything is rendered on the server from the finished run records (Jinja2 templates with
autoescaping on: every agent text is untrusted), so there is no build step and no script.
``starlette`` and ``uvicorn`` come with the ``view`` extra and are imported only here.
"""

from __future__ import annotations

__all__ = ["main"]

from groundeval.view.cli import main
