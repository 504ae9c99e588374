"""The viewer's Starlette application: four pages rendered from the run records of one directory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, select_autoescape

from groundeval.records.outcomes import OUTCOMES
from groundeval.view.runs import Runs, case_matches, load_runs, pretty, twins_of

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["make_app"]


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("groundeval.view", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["pretty"] = pretty
    env.filters["num"] = _num
    return env


def _num(value: Any, digits: int = 3) -> str:
    """A figure for a table cell: an integer as it is, a float to ``digits`` places, anything else a dash."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def _metric_names(cases: Any) -> list[str]:
    names: dict[str, None] = {}
    for case in cases:
        for key, value in case.metrics.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                names.setdefault(key, None)
    return list(names)


def make_app(directory: Path) -> Starlette:
    """The viewer of the run records in ``directory`` (read again on every request to the runs page).

    Raises:
        ConfigError: ``starlette`` is not installed (the ``view`` extra).
    """
    from groundeval.extras import require_extra

    require_extra("view", "starlette", "groundeval view")
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    env = _environment()
    state: dict[str, Runs] = {"runs": load_runs(directory)}

    def page(name: str, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(directory=str(directory), **context))

    def run_of(run_id: str) -> Any:
        run = state["runs"].records.get(run_id)
        if run is None:
            raise HTTPException(404, f"no run {run_id} in {directory}")
        return run

    async def index(request: Request) -> Response:
        state["runs"] = load_runs(directory)
        return page("runs.html", runs=list(state["runs"].records.values()), skipped=state["runs"].skipped)

    async def run_page(request: Request) -> Response:
        run = run_of(request.path_params["run_id"])
        q = request.query_params
        below_raw = q.get("below", "").strip()
        problem = ""
        try:
            below = float(below_raw) if below_raw else None
        except ValueError:
            below = None
        if below_raw and (below is None or below != below):  # not a number (or NaN): say so, filter nothing by it
            below = None
            problem = f"below {below_raw!r} is not a number; give one such as 0.5 (cases whose metric is under it)"
        filters = {
            "outcome": q.get("outcome", ""),
            "metric": q.get("metric", ""),
            "below": below_raw,
            "text": q.get("text", ""),
        }
        shown = [
            (i, c)
            for i, c in enumerate(run.cases)
            if case_matches(c, outcome=filters["outcome"], metric=filters["metric"], below=below, text=filters["text"])
        ]
        return page(
            "run.html",
            run=run,
            cases=shown,
            filters=filters,
            problem=problem,
            outcomes=sorted(OUTCOMES),
            metrics=_metric_names(run.cases),
        )

    async def case_page(request: Request) -> Response:
        run = run_of(request.path_params["run_id"])
        index_ = int(request.path_params["index"])
        if not 0 <= index_ < len(run.cases):
            raise HTTPException(404, f"run {run.run_id} has no case {index_}")
        case = run.cases[index_]
        return page("case.html", run=run, case=case, index=index_, family=twins_of(run, case))

    async def compare(request: Request) -> Response:
        ids = request.query_params.getlist("run")
        runs = [run_of(i) for i in ids]
        if len(runs) < 2:
            raise HTTPException(400, "pick two or more runs to compare")
        keys: dict[tuple[str, int], None] = {}
        for run in runs:
            for case in run.cases:
                keys.setdefault((case.case_id, case.trial), None)
        rows = []
        for key in keys:
            cells = []
            for run in runs:
                found = next(((i, c) for i, c in enumerate(run.cases) if (c.case_id, c.trial) == key), None)
                cells.append(found)
            outcomes = {c.outcome for c in (cell[1] for cell in cells if cell is not None)}
            rows.append({"case_id": key[0], "trial": key[1], "cells": cells, "differ": len(outcomes) > 1})
        only = request.query_params.get("differ") == "1"
        return page("compare.html", runs=runs, rows=[r for r in rows if r["differ"] or not only], only=only)

    return Starlette(
        routes=[
            Route("/", index),
            Route("/run/{run_id}", run_page),
            Route("/run/{run_id}/case/{index:int}", case_page),
            Route("/compare", compare),
        ]
    )
