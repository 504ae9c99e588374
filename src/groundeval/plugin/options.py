"""Command-line options, their ini twins, and validation into ``run.settings.Settings``.

Every option ``--groundeval-x-y`` has an ini twin ``groundeval_x_y``; the command line wins.
Bad values raise ``pytest.UsageError`` naming the option and the fix.

Task options are declared by the tasks (``Task.options``, a tuple of ``groundeval.options.Option``,
the type of this module's table too), not here:

* the built-in tasks' options get first-class flags (``--groundeval-min-f1``), generated from
  their declarations in ``groundeval.registry.builtins`` (standard library only: no task is imported);
* any task's options, a task from outside included, are given as
  ``--groundeval-option=KEY=VALUE`` (repeatable) or ini lines ``groundeval_option = KEY=VALUE``.

An unknown key or a bad value is a usage error naming the task and the key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from groundeval.plugin.option_register import _raw, add_options, task_given
from groundeval.plugin.option_table import GENERIC, OPTIONS, RUN_OPTIONS, Option

if TYPE_CHECKING:
    from groundeval.models.batch import BatchSettings
    from groundeval.run.settings import Settings

__all__ = ["OPTIONS", "add_options", "read_settings", "task_given"]


def _convert(opt: Option, raw: str, source: str) -> Any:
    try:
        return opt.value(raw)
    except ValueError as exc:
        raise pytest.UsageError(f"{source}={raw!r}: {exc}") from None


def _generic_pairs(config: pytest.Config) -> list[tuple[str, str, str]]:
    """``(key, raw value, source)`` from ini ``groundeval_option`` lines, then the command line.

    Raises:
        pytest.UsageError: An entry without ``=``.
    """
    dest = f"groundeval_{GENERIC}"
    ini = config.getini(dest)
    entries = [(line, f"ini {dest}") for line in (ini if isinstance(ini, list) else []) if line.strip()]
    entries += [(item, f"--groundeval-{GENERIC}") for item in config.getoption(dest, default=None) or []]
    pairs = []
    for entry, source in entries:
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"{source}={entry!r}: expected KEY=VALUE, e.g. min_f1=0.8")
        pairs.append((key.strip().replace("-", "_"), value.strip(), source))
    return pairs


def _task_options(config: pytest.Config, cls: Any, task: str) -> dict[str, Any]:
    """The values of every option the task declares, from flags, ``groundeval_option`` and ini.

    Precedence: the command line over the ini file (``groundeval_option`` lines, then the flag's
    ini twin), then the declared default. On the command line a first-class flag and
    ``--groundeval-option`` giving one key two different values is a usage error (neither silently wins).

    Raises:
        pytest.UsageError: A first-class flag the task does not declare, an unknown
            ``groundeval_option`` key, a bad value (naming the task and the key), or one key given two
            values on the command line.
    """
    declared = {o.name: o for o in getattr(cls, "options", ())}
    chosen: dict[str, tuple[int, str, str]] = {}  # key -> (rank, raw, source); lower rank wins

    def same(key: str, a: str, b: str) -> bool:
        """Whether two raw values of one option mean the same (``0.9`` and ``0.90``); a bad one is reported later."""
        try:
            return bool(a == b or declared[key].value(a) == declared[key].value(b))
        except ValueError:
            return a == b

    def offer(key: str, raw: str, source: str, rank: int) -> None:
        held = chosen.get(key)
        if held is not None and {held[0], rank} == {0, 1} and not same(key, held[1], raw):  # two command-line values
            flag, generic = (held, (rank, raw, source)) if held[0] == 0 else ((rank, raw, source), held)
            raise pytest.UsageError(
                f"{flag[2]}={flag[1]} and {generic[2]}={key}={generic[1]} both set the {task} task's option "
                f"{key!r}: give one of them"
            )
        if held is None or rank <= held[0]:
            chosen[key] = (rank, raw, source)

    for opt in OPTIONS:
        if opt.scope != "task":
            continue
        raw, source = _raw(config, opt)
        if raw is None:
            continue
        if opt.key not in declared:
            if source.startswith("--"):  # a flag that cannot apply is a mistake
                raise pytest.UsageError(f"{source} does not apply to the {task} task; drop it")
            continue  # an ini value may serve another task
        offer(opt.key, raw, source, 0 if source.startswith("--") else 3)
    for key, raw, source in _generic_pairs(config):
        if key not in declared:
            from groundeval.errors import did_you_mean

            known = ", ".join(sorted(declared)) or "none"
            raise pytest.UsageError(
                f"{source}={key}={raw}: the {task} task has no option {key!r}{did_you_mean(key, declared)} "
                f"(its options: {known})"
            )
        offer(key, raw, source, 1 if source.startswith("--") else 2)
    values: dict[str, Any] = {}
    for key, topt in declared.items():
        if key not in chosen:
            values[key] = topt.default
            continue
        _, raw, source = chosen[key]
        try:
            values[key] = topt.value(raw)
        except ValueError as exc:
            if GENERIC in source:
                raise pytest.UsageError(f"{source} {key}={raw!r}: {exc} (option {key} of the {task} task)") from None
            raise pytest.UsageError(f"{source}={raw!r}: {exc}") from None
    return values


def _task_class(task: str) -> Any:
    """The task class for a spec, or a usage error naming the choices."""
    from groundeval.errors import ConfigError
    from groundeval.tasks import available_tasks, task_class

    try:
        known = available_tasks()
    except ConfigError as exc:  # an install whose metadata declares no tasks
        raise pytest.UsageError(str(exc)) from None
    if ":" not in task and task not in known:
        from groundeval.errors import did_you_mean

        raise pytest.UsageError(
            f"--groundeval-task={task!r}: unknown task{did_you_mean(task, known)}; choose one of: "
            f"{', '.join(sorted(known))}, or package.module:Class for your own task"
        )
    try:
        return task_class(task)
    except ConfigError as exc:
        raise pytest.UsageError(f"--groundeval-task={task!r}: {exc}") from None


def read_settings(config: pytest.Config) -> Settings:
    """Read and validate every option; with no task, read nothing else.

    ``--groundeval-task=`` (empty) switches off a task set in the ini file.

    Raises:
        pytest.UsageError: A value is invalid (the message names the flag or ini key it came
            from, and for task options the task and the key), the task cannot be found, the data
            directory does not exist or holds no case files.
    """
    from groundeval.run.settings import Settings  # not in a run without a task: the plugin then imports nothing

    task_raw, _ = _raw(config, RUN_OPTIONS[0])
    if task_raw is None or not task_raw.strip():
        return Settings(task=None)  # the plugin is off: ordinary runs never see our options
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    given: set[str] = set()
    for opt in RUN_OPTIONS:
        raw, source = _raw(config, opt)
        values[opt.key] = opt.default if raw is None else _convert(opt, raw, source)
        sources[opt.key] = source or f"--groundeval-{opt.name}"
        if raw is not None:
            given.add(opt.key)
    task = values["task"]
    cls = _task_class(task)
    task_options = _task_options(config, cls, str(cls.name))
    from groundeval.errors import ConfigError

    try:
        built = cls.from_options(task_options)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    name = str(cls.name)
    here = config.invocation_params.dir

    def base(key: str) -> Path:
        """Paths from the command line resolve against the working directory, ini paths against the rootdir."""
        return config.rootpath if sources[key].startswith("ini") else here

    if values["data_dir"]:
        data_dir = Path(values["data_dir"]).expanduser()
    elif getattr(cls, "data_dir", None) is not None:
        data_dir = Path(cls.data_dir)
    elif task in _builtin_names():
        from groundeval.datasets import default_data_dir

        data_dir = default_data_dir(name)
    else:
        raise pytest.UsageError(
            f"--groundeval-task={task!r} ships no cases (its class sets no data_dir); give "
            "--groundeval-data-dir=DIR"
        )
    data_dir = (base("data_dir") / data_dir).resolve()
    where = sources["data_dir"]
    if not data_dir.is_dir():
        raise pytest.UsageError(
            f"{where}={str(data_dir)!r}: not a directory; give a directory of {name} case files"
        )
    if not built.case_files(data_dir):
        raise pytest.UsageError(f"{where}={str(data_dir)!r}: no {name} case files (*.json) in it")

    def path(key: str) -> Path | None:
        return (base(key) / os.path.expanduser(values[key])).resolve() if values[key] else None

    baseline = path("baseline")
    if baseline is not None and not baseline.is_file():
        raise pytest.UsageError(f"{sources['baseline']}={str(baseline)!r}: no such run record file")
    resume = path("resume")
    if resume is not None and not resume.is_file():
        raise pytest.UsageError(
            f"{sources['resume']}={str(resume)!r}: no such file; give the interrupted run's record (<out-dir>/<run "
            "id>.json) or its partial file (<out-dir>/<run id>.partial.jsonl)"
        )
    if values["fail_on_regression"] and baseline is None:
        raise pytest.UsageError(f"{sources['fail_on_regression']} needs --groundeval-baseline=RUN.json to compare with")
    if values["counterfactual"]:
        from groundeval.tasks.counterfactual import perturbations

        if not perturbations(built):
            raise pytest.UsageError(
                f"{sources['counterfactual']}: the {name} task declares no perturbations, so it has no counterfactual "
                "twins (extraction does); drop the option"
            )
        if values["shard"] is not None and values["twin_seed"] is None:
            raise pytest.UsageError(
                f"{sources['shard']} with {sources['counterfactual']} needs --groundeval-twin-seed=N, the same on "
                "every shard: each run otherwise draws its own seed, so the shards would order twins differently and "
                "could not be merged into one run"
            )
    agent = values["agent"] or str(cls.default_agent)
    if values["replay_allow_changed"] and not agent.startswith("replay:"):
        raise pytest.UsageError(
            f"{sources['replay_allow_changed']} applies only to --groundeval-agent=replay:RUN.json; drop it"
        )
    tools = str(values["tools"]).strip().lower()
    if tools == "mcp":
        _check_mcp(built, name, sources["tools"])
    fhir = values["fhir"]
    if fhir is not None:
        _check_fhir(built, name, sources["fhir"], tools)
    out_dir = (base("out_dir") / os.path.expanduser(values["out_dir"])).resolve()
    return Settings(
        task=task,
        agent=agent,
        limit=values["limit"],
        shard=values["shard"],
        data_dir=data_dir,
        out_dir=out_dir,
        model=values["model"],
        task_options=task_options,
        agent_options={o.key: values[o.key] for o in RUN_OPTIONS if o.scope == "agent" and o.key != "model"},
        task_name=name,
        baseline=baseline,
        resume=resume,
        fail_on_regression=bool(values["fail_on_regression"]),
        summary_md=path("summary_md"),
        trials=int(values["trials"]),
        counterfactual=bool(values["counterfactual"]),
        twin_seed=None if values["twin_seed"] is None else int(values["twin_seed"]),
        concurrency=None if values["concurrency"] is None else int(values["concurrency"]),
        cache_dir=path("cache"),
        conversation=str(values["conversation"]),
        replay_allow_changed=bool(values["replay_allow_changed"]),
        min_pass_rate=values["min_pass_rate"],
        failure_blocks=bool(values["failure_blocks"]),
        max_cost=values["max_cost"],
        prices=path("prices"),
        progress=str(values["progress"]),
        progress_every=float(values["progress_every"]),
        batch=_batch(values, {k: sources[k] for k in given}, out_dir),
        tools=tools,
        fhir=fhir,
    )


def _check_fhir(task: Any, name: str, where: str, tools: str) -> None:
    """``--groundeval-fhir`` needs a task that serves its record over FHIR, and no MCP tools.

    Raises:
        pytest.UsageError: The task does not serve over FHIR, or ``--groundeval-tools=mcp`` is given too.
    """
    from groundeval.tasks.fhir_mode import serves_over_fhir

    if not serves_over_fhir(task):
        raise pytest.UsageError(
            f"{where}: the {name} task does not serve its record over FHIR (it needs fhir_record, fhir_prompt and "
            "fhir_used); drop the option, or run extraction, labs, reconcile, summary or write"
        )
    if tools == "mcp":
        raise pytest.UsageError(
            f"{where} with --groundeval-tools=mcp: over FHIR the agent's tools are the FHIR REST API, not the task's "
            "MCP tools; drop one of them"
        )


def _check_mcp(task: Any, name: str, where: str) -> None:
    """``--groundeval-tools=mcp`` needs a task that offers tools and the ``mcp`` extra.

    Raises:
        pytest.UsageError: The task offers no tools, or a module of the ``mcp`` extra is missing.
    """
    from groundeval.errors import ConfigError
    from groundeval.extras import EXTRAS, require_extra

    if "tools" not in getattr(task, "provides", frozenset()):
        raise pytest.UsageError(f"{where}=mcp: the {name} task offers no tools to serve; drop the option")
    try:
        for module in EXTRAS["mcp"]:
            require_extra("mcp", module, f"{where}=mcp")
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


def _batch(values: dict[str, Any], sources: dict[str, str], out_dir: Path) -> BatchSettings | None:
    """The batch knobs when ``--groundeval-batch`` is on; a knob without it is a usage error.

    Raises:
        pytest.UsageError: A ``--groundeval-batch-*`` knob given without ``--groundeval-batch``.
    """
    knobs = ("batch_size", "batch_send_delay", "batch_poll", "batch_max_wait")
    if not values["batch"]:
        given = [sources[k] for k in knobs if sources.get(k)]
        if given:
            raise pytest.UsageError(f"{given[0]} applies only with --groundeval-batch; add it or drop {given[0]}")
        return None
    from groundeval.models.batch import JOURNAL_FILE, BatchSettings  # only a batch run pays for the batcher

    return BatchSettings(
        size=int(values["batch_size"]), send_delay_s=float(values["batch_send_delay"]),
        poll_s=float(values["batch_poll"]), max_wait_s=float(values["batch_max_wait"]),
        journal=out_dir / JOURNAL_FILE,
    )


def _builtin_names() -> frozenset[str]:
    from groundeval.registry import builtin_tasks

    return frozenset(builtin_tasks())
