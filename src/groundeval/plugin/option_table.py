"""The table of ``--groundeval-*`` options: names, converters, defaults, help.

Every option ``--groundeval-x-y`` has an ini twin ``groundeval_x_y``; ``groundeval.plugin.options``
registers and reads them, and the ``groundeval`` CLI mirrors the same table. Each is a
``groundeval.options.Option``, the type a task declares its own options with; the built-in tasks'
declared options get first-class flags here, from their declarations in
``groundeval.registry.builtins`` (no task is imported).
"""

from __future__ import annotations

from dataclasses import replace

from groundeval.options import (
    Option,
    boolean as _bool,
    choice,
    non_negative_float as _non_negative_float,
    non_negative_int as _non_negative_int,
    number as _number,
    positive_float as _positive_float,
    positive_fraction as _positive_fraction,
    positive_int as _positive_int,
    text as _text,
)
from groundeval.registry import builtins as _builtins
from groundeval.shards import parse_shard as _shard

__all__ = ["GENERIC", "GENERIC_HELP", "OPTIONS", "RUN_OPTIONS", "Option", "flags_source"]

_tools_mode = choice("inprocess", "mcp", why="must be inprocess or mcp", any_case=True)


def _fhir_mode(value: str) -> str:
    """``sandbox``, or the base URL of a FHIR R4 server (``http(s)://host[:port]/path``, no credentials).

    Raises:
        ValueError: Anything else, or a URL with a user or password in it (the token goes in
            ``GROUNDEVAL_FHIR_TOKEN``, never on the command line).
    """
    from urllib.parse import urlsplit

    raw = value.strip()
    if raw.lower() == "sandbox":
        return "sandbox"
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be sandbox or the base URL of a FHIR R4 server, e.g. http://127.0.0.1:8080/fhir")
    if parts.username or parts.password:
        raise ValueError(
            "must not hold credentials: give the URL without user:password@ and put the bearer token in "
            "GROUNDEVAL_FHIR_TOKEN"
        )
    return raw.rstrip("/")


_conversation_mode = choice("full", "reference", why="must be full or reference", any_case=True)
_progress_mode = choice("auto", "tty", "plain", "off", why="must be auto, tty, plain or off", any_case=True)

RUN_OPTIONS: tuple[Option, ...] = (
    Option(
        "task", _text, None,
        "Run this eval task: " + _builtins.task_choices() + ", a task registered under the entry-point "
        "group groundeval.tasks, or package.module:Class. Without it the plugin is off.", "NAME", scope="run",
    ),
    Option(
        "agent", _text, None,
        "Agent: " + _builtins.agent_choices() + ", or package.module:attribute. "
        "Default: the task's own (" + _builtins.default_agents() + ").", "NAME",
        scope="run",
    ),
    Option(
        "model", _text, None,
        "Model id for model-backed agents; for the local agent a GGUF file or a packaged model (smollm2).", "ID",
        "agent",
    ),
    Option("limit", _positive_int, None, "Run only the first N cases (sorted by file name).", "N", scope="run"),
    Option(
        "shard", _shard, None,
        "Run shard K of N of the cases (1 <= K <= N): a deterministic, balanced split, the same on every machine, "
        "each case with its trials and twins; join the shards' run records with groundeval merge. "
        "Default: every case.", "K/N", scope="run",
    ),
    Option("data-dir", _text, None, "Directory of case files (default: the packaged fixtures).", "DIR", scope="run"),
    Option("out-dir", _text, "runs", "Directory for JSON run records.", "DIR", scope="run"),
    Option("max-tokens", _positive_int, 4096, "Model output limit per call, tokens.", "N", "agent"),
    Option(
        "temperature", _number, None,
        "Sampling temperature for model-backed agents. Default: none sent, so the model's own "
        "(Claude Opus 4.7 and later reject an explicit temperature).", "T", "agent",
    ),
    Option(
        "max-retries", _non_negative_int, 2,
        "Retries of a model call after 429/529/5xx/timeout/connection errors (the only retry "
        "layer; Retry-After honoured).", "N", "agent",
    ),
    Option(
        "timeout", _positive_float, 600.0,
        "Upper bound on one case's model time, retries and waits included, from its first request, seconds "
        "(before it, a case waits at most this long for a concurrency slot).", "SECONDS", "agent",
    ),
    Option(
        "recursion-limit", _positive_int, None,
        "Tool-using (LangGraph) agents: graph steps per case before the case ends as agent_loop. "
        "Default: 25.", "N", "agent",
    ),
    Option(
        "base-url", _text, None,
        "Server URL for the openai-compatible agent, e.g. http://127.0.0.1:8000/v1 (vLLM).", "URL", "agent",
    ),
    Option(
        "n-ctx", _positive_int, None,
        "The local agent's context size, tokens, allocated by its llama.cpp server (--n_ctx). Default: 8192.",
        "TOKENS", "agent",
    ),
    Option(
        "baseline", _text, None,
        "Compare this run with a stored run record: a case that passed there and fails now is a regression, "
        "named in the summary and marked regression=true in junit.", "RUN.json", scope="run",
    ),
    Option(
        "resume", _text, None,
        "Resume an interrupted run: its run record (RUN.json, complete=false) or the partial file of a killed run "
        "(<run id>.partial.jsonl). Only the cases without a final outcome (not run, or an error) run again, with the "
        "same settings (a different setting is refused and named); one record is written, under the same run id, as "
        "if the run had not stopped.", "RUN.json", scope="run",
    ),
    Option(
        "fail-on-regression", _bool, False,
        "With --groundeval-baseline: exit non-zero when the gate fails (a case regressed or was lost, a case file "
        "could not be read or failed its checks, the pass rate dropped beyond noise, or the run is incomplete), even "
        "if every threshold passes.",
        "BOOL", scope="run", flag=True,
    ),
    Option(
        "trials", _positive_int, 1,
        "Run every case K times, one pytest item per trial (node id suffix [trial-0] ... [trial-K-1]); "
        "the summary adds pass@k, pass^k and per-case passes out of K.", "K", scope="run",
    ),
    Option(
        "counterfactual", _bool, False,
        "Also run each case's counterfactual twins: its record changed by code in a way whose effect on the truth "
        "is known (node id suffix [cf-<perturbation>]); the summary adds record_sensitivity, the share of twins "
        "whose answer changed as the truth did. The task must declare perturbations (extraction does).",
        "BOOL", scope="run", flag=True,
    ),
    Option(
        "twin-seed", _non_negative_int, None,
        "With --groundeval-counterfactual: the seed of the order each case's items and its twins' run in "
        "(a twin may run before its original); give it to run the same order again. Default: one drawn for "
        "each run and kept in its run record (settings, twin_seed).", "N", scope="run",
    ),
    Option(
        "concurrency", _positive_int, None,
        "Agent calls in flight at once per process (per xdist worker under -n): upcoming cases are "
        "called ahead in threads while items still report one by one in collection order. 1 calls "
        "the agent inside each item, as a plain pytest run would. Default: 4 for the built-in "
        "agents, 1 for an agent of your own unless it sets thread_safe = True.", "N", scope="run",
    ),
    Option(
        "tools", _tools_mode, "inprocess",
        "How a tool-using agent gets the task's tools: inprocess (LangChain tools in the agent's process) or mcp "
        "(each case's tools served by its own MCP server on 127.0.0.1, Streamable HTTP, with a stdio relay "
        "command; the agent gets the URL in request.tool_server and every call it makes is traced by the "
        "server). Needs the mcp extra; agents: langgraph-mcp or an agent of your own.", "inprocess|mcp",
        scope="run",
    ),
    Option(
        "fhir", _fhir_mode, None,
        "Serve each case's record over the FHIR R4 REST API instead of pasting it into the prompt: sandbox "
        "(groundeval's own server per case on 127.0.0.1, a bearer token per case, an access log) or the base "
        "URL of your FHIR server (each case loaded as one transaction under ids of its own and removed after; "
        "bearer token from GROUNDEVAL_FHIR_TOKEN). The agent gets the base URL, patient and token in "
        "request.fhir and must declare record_access = 'fhir' (langgraph-rest, the *-rest baselines); the "
        "record adds retrieval precision/recall and wasted calls, and a write on a read task fails the case. "
        "Default: off.", "sandbox|URL", scope="run",
    ),
    Option(
        "summary-md", _text, None,
        "Write the run's summary as Markdown to PATH (also appended to $GITHUB_STEP_SUMMARY when that is set).",
        "PATH", scope="run",
    ),
    Option(
        "cache", _text, None,
        "Store each agent result in DIR (SQLite, shared safely by xdist workers and concurrent runs), keyed by "
        "agent, model, the full request and the trial index; a rerun with the same key makes no model call and "
        "its case is marked cached=true.", "DIR", scope="run",
    ),
    Option(
        "conversation", _conversation_mode, "full",
        "What each case record keeps of the prompt the agent was sent: full (the system and user prompt, then "
        "every reply and tool result) or reference (for real patients' records: the case file's name and "
        "SHA-256, the task's version and the prompt's SHA-256, from which the prompt is rendered again exactly; "
        "replies and tool results are kept either way).", "MODE", scope="run",
    ),
    Option(
        "replay-allow-changed", _bool, False,
        "With --groundeval-agent=replay:RUN.json: re-score cases whose case file changed since that run, "
        "flagged fixture_changed=true, instead of refusing to start.", "BOOL", scope="run", flag=True,
    ),
    Option(
        "failure-blocks", _bool, False,
        "Print pytest's full failure block (FAILURES section) for every failed case. By default, above 25 failed "
        "cases each is one line, 'FAILED <node id> - <reason>', under 'failed cases' before the groundeval summary: "
        "thousands of blocks are unreadable, and pytest's FAILURES section costs time that grows with "
        "failures x tests.",
        "BOOL", scope="run", flag=True,
    ),
    Option(
        "min-pass-rate", _positive_fraction, None,
        "With --groundeval-trials: a case passes when at least R of its counted trials pass (0 < R <= 1; "
        "excluded trials are left out); each trial item still shows its own outcome, and the exit status "
        "follows the cases. Default: every trial must pass.", "R", scope="run",
    ),
    Option(
        "max-cost", _positive_float, None,
        "Stop the run before it spends more than USD on model calls: each call's cost is estimated from its "
        "prompt tokens and max-tokens before it is sent, and a call that could pass the limit is not made; "
        "cases not started are not_run. Needs a model with a known price.", "USD", scope="run",
    ),
    Option(
        "prices", _text, None,
        "Price models from FILE (TOML or JSON, USD per million tokens: per model id, input, output, and "
        "optionally cached_input and batch_discount); a model priced here wins over the packaged list price, so "
        "cost_usd and --groundeval-max-cost work for any model (an OpenAI-compatible or local one too).",
        "FILE", scope="run",
    ),
    Option(
        "progress", _progress_mode, "auto",
        "Status line while the run goes (cases done, passed, excluded, calls in flight, tokens, USD, ETA): tty "
        "(one line redrawn in place), plain (a line every --groundeval-progress-every seconds, for CI logs), "
        "off, or auto (tty on a terminal, else plain).", "MODE", scope="run",
    ),
    Option(
        "progress-every", _non_negative_float, 30.0,
        "Seconds between plain progress lines (0: after every case).", "SECONDS", scope="run",
    ),
    Option(
        "batch", _bool, False,
        "Send the model requests of the cases this process runs through the provider's batch API (Anthropic "
        "Message Batches, OpenAI Batch) at batch prices, instead of one call each; items still report one by one. "
        "A cache hit sends nothing; batches sent are journalled in the out-dir, so the same command run again after "
        "an interruption collects them instead of paying again. Single-call agents only; one process (no -n).",
        "BOOL", scope="run", flag=True,
    ),
    Option(
        "batch-size", _positive_int, 1000,
        "With --groundeval-batch: the most requests per batch (also capped by the provider's count and byte "
        "limits: 100,000 requests / 256 MB for Anthropic, 50,000 / 200 MB for OpenAI).", "N", scope="run",
    ),
    Option(
        "batch-send-delay", _non_negative_float, 15.0,
        "With --groundeval-batch: seconds without a new request after which a partly filled batch is sent.",
        "SECONDS", scope="run",
    ),
    Option(
        "batch-poll", _positive_float, 30.0,
        "With --groundeval-batch: seconds between polls of a batch still processing.", "SECONDS", scope="run",
    ),
    Option(
        "batch-max-wait", _positive_float, 86400.0,
        "With --groundeval-batch: the longest a request waits for its batch, seconds (default: the providers' "
        "24-hour window); requests still processing then are infra_error naming the batch.", "SECONDS", scope="run",
    ),
)


def _builtin_task_flags() -> tuple[Option, ...]:
    """First-class flags for the built-in tasks' declared options (one per option name)."""
    from groundeval.registry import TaskEntry, builtins

    seen: dict[str, Option] = {}
    for declared in vars(builtins).values():
        if isinstance(declared, TaskEntry):
            for topt in declared.options:
                name = topt.name.replace("_", "-")
                seen.setdefault(name, replace(topt, name=name, scope="task"))
    return tuple(seen.values())


OPTIONS: tuple[Option, ...] = RUN_OPTIONS[:6] + _builtin_task_flags() + RUN_OPTIONS[6:]
"""Every ``--groundeval-*`` flag with a value of its own (the CLI mirrors these)."""

GENERIC = "option"
"""``--groundeval-option=KEY=VALUE`` / ini ``groundeval_option``: any task's declared option."""

GENERIC_HELP = (
    "Set an option the task declares, KEY=VALUE (repeatable), e.g. min_f1=0.8; for any task, "
    "including tasks from outside groundeval."
)
"""The help of ``--groundeval-option``."""

FLAGS_FILE = "src/groundeval/plugin/option_flags.py"
"""Where ``flags_source`` is written (``scripts/option_flags.py``), relative to the repository."""


def _chunks(text: str, width: int = 88) -> list[str]:
    """``text`` cut at spaces into pieces of at most about ``width`` characters (each keeps its trailing space)."""
    pieces: list[str] = []
    line = ""
    for word in text.split(" "):
        if line and len(line) + len(word) > width:
            pieces.append(line)
            line = ""
        line += word + " "
    pieces.append(line[:-1])
    return pieces


def flags_source() -> str:
    """The source of ``groundeval.plugin.option_flags``: what registering the options needs, as literals.

    A pytest run without a task registers every ``--groundeval-*`` option and its ini twin, and reads
    nothing else of the plugin; importing this table (its converters, the registry's declarations for
    the built-in tasks' flags and the task and agent lists in the help) would cost every pytest run of
    every project with groundeval installed a few milliseconds. The generated module holds one tuple
    per option instead: ``(name, metavar, flag, help, default)``, ``default`` being ``" Default: X."``
    or ``""``; ``tests/plugin/test_option_flags.py`` checks it is this function's output.

    Returns:
        Python source, ruff-clean (lines under 120 characters).
    """
    lines = [
        '"""The ``--groundeval-*`` options as a plain pytest run registers them: generated, do not edit.',
        "",
        "Written by ``uv run python scripts/option_flags.py`` from ``groundeval.plugin.option_table``",
        "(``flags_source``), which stays the one source; see there why this copy exists.",
        '"""',
        "",
        "FLAGS: tuple[tuple[str, str, bool, str, str], ...] = (",
    ]
    for opt in OPTIONS:
        default = "" if opt.default is None else f" Default: {opt.default}."
        lines.append(f"    ({opt.name!r}, {opt.metavar!r}, {opt.flag!r},")
        lines.extend(f"     {piece!r}" for piece in _chunks(opt.help))
        lines[-1] += ","
        lines.append(f"     {default!r}),")
    lines.append(")")
    lines.append('"""(name, metavar, flag, help, default) of each option with a value, in ``OPTIONS`` order."""')
    lines.append("")
    lines.append(f"GENERIC = {GENERIC!r}")
    lines.append("GENERIC_HELP = (")
    lines.extend(f"    {piece!r}" for piece in _chunks(GENERIC_HELP))
    lines.append(")")
    return "\n".join(lines) + "\n"
