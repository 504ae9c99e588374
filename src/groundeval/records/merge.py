"""Joining the run records of a split run (``--groundeval-shard=K/N``) into one run record.

The merged record holds every shard's case records, and its aggregate is computed from them by
the same function the end of a run uses (``groundeval.records.aggregate.summarize``), so its
figures, intervals, verdicts and everything read from it (summaries, reports, the gate) are those
of one unsharded run of the same cases. Nothing from the shards' own aggregates is carried over.

Shards are refused when they cannot be one run: records of different tasks, groundeval versions
or settings (agent, model options, task options, trials, limit, min pass rate, counterfactual
twins; not the execution knobs ``workers``, ``concurrency`` and ``shard``), a record that is not
a shard, shards of different splits, a missing or a duplicated shard, or a case in two records.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from groundeval.records.aggregate import AggregatingTask, summarize
from groundeval.records.run_record import RunRecord, fixtures_of, new_run_id
from groundeval.records.trial_stats import verdict_exit_status

__all__ = ["EXECUTION_SETTINGS", "MergeError", "check_shards", "merge_records"]

EXECUTION_SETTINGS = frozenset({"workers", "concurrency", "shard"})
"""Settings that may differ between shards: how a shard ran, not what it measured."""

_OK, _FAILED = 0, 1
_NO_TESTS = 5  # pytest's exit status when a shard collected no case (more shards than cases)


class MergeError(ValueError):
    """Run records that cannot be merged into one run; the message names the files and the reason."""


def _version(record: RunRecord) -> str:
    return record.packages.get("groundeval", "unknown")


def check_shards(records: Sequence[tuple[Path, RunRecord]]) -> int:
    """Check that ``records`` are every shard of one split run, once each.

    Args:
        records: ``(path, record)`` of each shard's run record, any order.

    Returns:
        The number of shards N.

    Raises:
        MergeError: No records; a record that is not a shard (no ``settings.shard``); different tasks,
            groundeval versions, settings or splits (N); a missing or a duplicated shard; a case
            (case id and trial) in two records. The message names the files and the fix.
    """
    if not records:
        raise MergeError("no run records to merge; give every shard's record (groundeval merge A.json B.json ...)")
    from groundeval.shards import parse_shard

    first_path, first = records[0]
    for path, record in records:
        if record.task != first.task:
            raise MergeError(f"{path} is a run of the {record.task} task and {first_path} of {first.task}: "
                             "merge the shards of one run")
        if _version(record) != _version(first):
            raise MergeError(f"{path} was written by groundeval {_version(record)} and {first_path} by "
                             f"{_version(first)}: run every shard with the same groundeval version")
        mine = {k: v for k, v in record.settings.items() if k not in EXECUTION_SETTINGS}
        theirs = {k: v for k, v in first.settings.items() if k not in EXECUTION_SETTINGS}
        if mine != theirs:
            key = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))[0]
            raise MergeError(f"{path} and {first_path} ran with different settings ({key}: {mine.get(key)!r} vs "
                             f"{theirs.get(key)!r}): every shard must run with the same options")
        if not record.settings.get("shard"):
            raise MergeError(f"{path} is not a shard (run without --groundeval-shard=K/N): merge only the records "
                             "of one run split with --groundeval-shard")
    shards: dict[int, Path] = {}
    count = 0
    for path, record in records:
        shard = parse_shard(str(record.settings["shard"]))
        if count and shard.count != count:
            raise MergeError(f"{path} is shard {shard} and {records[0][0]} one of {count}: merge the shards of one "
                             "split (the same N)")
        count = shard.count
        if shard.index in shards:
            raise MergeError(f"shard {shard} given twice: {shards[shard.index]} and {path}; give each shard once")
        shards[shard.index] = path
    missing = [str(k) for k in range(1, count + 1) if k not in shards]
    if missing:
        raise MergeError(f"shard{'s' * (len(missing) > 1)} {', '.join(missing)} of {count} missing (got "
                         f"{', '.join(f'{k}/{count}' for k in sorted(shards))}): give every shard's run record")
    seen: dict[tuple[str, int], Path] = {}
    for path, record in records:
        for case in record.cases:
            ident = (case.case_id, case.trial)
            if ident in seen:
                raise MergeError(f"case {case.case_id} (trial {case.trial}) is in {seen[ident]} and {path}: the "
                                 "shards overlap; run every shard over the same data directory")
            seen[ident] = path
    return count


def _failing_items(cases: Sequence[Any]) -> int:
    """Items pytest counts as failed or errored (every outcome but ``passed`` and ``not_run``)."""
    return sum(c.outcome not in ("passed", "not_run") for c in cases)


def _raw_status(shards: Sequence[RunRecord], merged: RunRecord) -> tuple[int, int]:
    """The exit status one run of all the cases would end with before the verdicts, and its failed items.

    A shard that stopped (2, 3, 4) gives its status; a shard that failed (1) with no failing case
    of its own had another test fail, which counts as one more failed item, so no verdict clears it.
    """
    worst = [s for r in shards if (s := r.exit_status) is not None and s not in (_OK, _FAILED, _NO_TESTS)]
    failing = _failing_items(merged.cases)
    failing += sum(r.exit_status == _FAILED and not _failing_items(r.cases) for r in shards)
    if worst:
        return max(worst), failing
    if not merged.cases and not merged.collection_errors:
        return _NO_TESTS, failing
    return (_FAILED if failing or merged.collection_errors else _OK), failing


def merge_records(records: Sequence[tuple[Path, RunRecord]], task: AggregatingTask) -> RunRecord:
    """One run record from every shard's record (``check_shards`` first).

    Args:
        records: ``(path, record)`` of each shard.
        task: The run's task, built from the records' ``settings`` (its ``aggregate`` combines
            the counted cases' metrics, as at the end of a run).

    Returns:
        The merged record: a new ``run_id`` (every case record carries it; the shards' run ids are
        in ``settings["merged_from"]``), the cases of every shard sorted by case id and trial, the
        aggregate recomputed from them, ``complete`` when every shard is, the earliest start and
        latest finish, ``duration_s`` of the longest shard, ``dropped_calls`` summed,
        ``peak_in_flight`` the most of any shard, and ``exit_status`` the one a single run of the
        same cases would end with (before any regression gate).

    Raises:
        MergeError: See ``check_shards``.
    """
    check_shards(records)
    ordered = sorted(records, key=lambda pr: str(pr[1].settings["shard"]).zfill(12))
    shards = [r for _, r in ordered]
    first = shards[0]
    run_id = new_run_id(datetime.now(UTC))
    cases = sorted((c.model_copy(update={"run_id": run_id}) for r in shards for c in r.cases),
                   key=lambda c: (c.case_id, c.trial))
    complete = all(r.complete for r in shards)
    stops = [f"shard {r.settings['shard']}: {r.stop_reason}" for r in shards if r.stop_reason]
    settings: dict[str, Any] = {**first.settings, "shard": None,
                                "merged_from": [{"shard": r.settings["shard"], "run_id": r.run_id} for r in shards]}
    durations = [r.duration_s for r in shards if r.duration_s is not None]
    peaks = [r.peak_in_flight for r in shards if r.peak_in_flight is not None]
    merged = first.model_copy(update={
        "run_id": run_id,
        "started_at": min(r.started_at for r in shards),
        "finished_at": max((r.finished_at for r in shards if r.finished_at), default=None),
        "duration_s": max(durations) if durations else None,
        "complete": complete,
        "stop_reason": None if complete else ("; ".join(stops) or "interrupted"),
        "settings": settings,
        "fixtures": fixtures_of(cases),
        "collection_errors": [e for r in shards for e in r.collection_errors],
        "dropped_calls": sum(r.dropped_calls for r in shards),
        "peak_in_flight": max(peaks) if peaks else None,
        "cases": cases,
        "aggregate": summarize(task, cases, selected=len(cases), min_pass_rate=first.settings.get("min_pass_rate")),
    })
    status, failing_items = _raw_status(shards, merged)
    cleared = verdict_exit_status(merged, status, failing_items)
    return merged.model_copy(update={"exit_status": status if cleared is None else cleared})
