"""The ``--groundeval-*`` options as a plain pytest run registers them: generated, do not edit.

Written by ``uv run python scripts/option_flags.py`` from ``groundeval.plugin.option_table``
(``flags_source``), which stays the one source; see there why this copy exists.
"""

FLAGS: tuple[tuple[str, str, bool, str, str], ...] = (
    ('task', 'NAME', False,
     'Run this eval task: extraction (read the active medications from a FHIR Bundle), write '
     "(write an R4B MedicationStatement from a note), reconcile (check a patient's admission "
     'medication report against the record), labs (interpret lab and vital-sign results '
     'against a cited threshold table), summary (a handoff summary, scored criterion by '
     'criterion with a measured judge), a task registered under the entry-point group '
     'groundeval.tasks, or package.module:Class. Without it the plugin is off.',
     ''),
    ('agent', 'NAME', False,
     'Agent: claude (Claude through the Messages API), openai-compatible (any '
     'OpenAI-compatible chat server, model@URL), local (a llama.cpp server it starts on a GGUF '
     'model), baseline (extraction: rule-based reader of the record), naive (extraction: '
     'negative control: every MedicationRequest, whatever its status), priors (extraction: '
     'remembered answers, never the record: the counterfactual control), langgraph (tool-using '
     "LangGraph agent over the case's tools), langgraph-fhir (extraction, reconcile, labs, "
     'summary: the LangGraph agent with the FHIR read tools only), langgraph-mcp (the '
     'LangGraph agent reaching the tools over MCP), langgraph-rest (the LangGraph agent '
     'reading the record over FHIR REST (--groundeval-fhir)), baseline-write (write: '
     'rule-based MedicationStatement writer), naive-write (write: negative control: one '
     'constant statement for every note), baseline-reconcile (reconcile: rule-based '
     'reconciler), naive-reconcile (reconcile: negative control: every drug called matched), '
     'hedge-reconcile (reconcile: negative control: each drug under every status), '
     'baseline-labs (labs: rule-based reader of the results), naive-labs (labs: negative '
     "control: each test's earliest result, not its latest), baseline-summary (summary: "
     'rule-based summary from the record), naive-summary (summary: negative control: every '
     'condition and drug listed as current), hedge-summary (summary: negative control: a '
     'summary that names nothing), hedge-all-summary (summary: negative control: everything '
     'labelled both past and current), baseline-rest (extraction: the extraction baseline '
     'reading over FHIR REST (--groundeval-fhir)), baseline-labs-rest (labs: the labs baseline '
     'reading over FHIR REST (--groundeval-fhir)), baseline-reconcile-rest (reconcile: the '
     'reconcile baseline reading over FHIR REST (--groundeval-fhir)), baseline-summary-rest '
     '(summary: the summary baseline reading over FHIR REST (--groundeval-fhir)), '
     'baseline-write-rest (write: the write baseline writing over FHIR REST '
     '(--groundeval-fhir)), replay (replay:RUN.json re-scores a recorded run, no model call), '
     "or package.module:attribute. Default: the task's own (claude for extraction, reconcile, "
     'labs, summary; langgraph for write).',
     ''),
    ('model', 'ID', False,
     'Model id for model-backed agents; for the local agent a GGUF file or a packaged model '
     '(smollm2).',
     ''),
    ('limit', 'N', False,
     'Run only the first N cases (sorted by file name).',
     ''),
    ('shard', 'K/N', False,
     'Run shard K of N of the cases (1 <= K <= N): a deterministic, balanced split, the same '
     "on every machine, each case with its trials and twins; join the shards' run records with "
     'groundeval merge. Default: every case.',
     ''),
    ('data-dir', 'DIR', False,
     'Directory of case files (default: the packaged fixtures).',
     ''),
    ('min-f1', 'X', False,
     'Extraction: RxNorm F1 a case needs to pass.',
     ' Default: 1.0.'),
    ('min-display-accuracy', 'X', False,
     'Extraction: display accuracy a case needs to pass.',
     ' Default: 1.0.'),
    ('case-ids', 'name|file', False,
     'Extraction: case ids from the file stem with a trailing UUID cut to 8 characters '
     "('name') or from the whole file stem ('file').",
     ' Default: name.'),
    ('bundle-in-prompt', 'true|false', False,
     'Extraction: paste the Bundle into the prompt (true), or leave it out so that only a '
     'tool-using agent reading it through the FHIR read tools (langgraph, langgraph-fhir) can '
     'answer (false).',
     ' Default: True.'),
    ('judge', 'JUDGE', False,
     'Summary: who decides the rubric criteria text matching cannot: baseline (rule-based, no '
     'model), a model spec (anthropic/<model>, openai-compatible/<name>@<url>, local/<gguf>) '
     'or package.module:attribute.',
     ' Default: baseline.'),
    ('judge-card', 'CARD.json', False,
     "Summary: the judge card (groundeval calibrate -o CARD.json) giving the judge's measured "
     'kappa. Default: the packaged card of the same judge and prompt, else the scores are '
     'marked judge not calibrated.',
     ''),
    ('judge-cache', 'DIR', False,
     "Summary: keep a model judge's replies in DIR (SQLite), keyed by the judge's settings, "
     'prompt SHA-256 and the full request, so a rerun asks the judge only what changed. '
     'Default: off.',
     ''),
    ('max-words', 'N', False,
     'Summary: the word limit the prompt states and a passing summary keeps.',
     ' Default: 250.'),
    ('min-rubric-score', 'X', False,
     'Summary: rubric score a case needs to pass.',
     ' Default: 0.8.'),
    ('out-dir', 'DIR', False,
     'Directory for JSON run records.',
     ' Default: runs.'),
    ('max-tokens', 'N', False,
     'Model output limit per call, tokens.',
     ' Default: 4096.'),
    ('temperature', 'T', False,
     "Sampling temperature for model-backed agents. Default: none sent, so the model's own "
     '(Claude Opus 4.7 and later reject an explicit temperature).',
     ''),
    ('max-retries', 'N', False,
     'Retries of a model call after 429/529/5xx/timeout/connection errors (the only retry '
     'layer; Retry-After honoured).',
     ' Default: 2.'),
    ('timeout', 'SECONDS', False,
     "Upper bound on one case's model time, retries and waits included, from its first "
     'request, seconds (before it, a case waits at most this long for a concurrency slot).',
     ' Default: 600.0.'),
    ('recursion-limit', 'N', False,
     'Tool-using (LangGraph) agents: graph steps per case before the case ends as agent_loop. '
     'Default: 25.',
     ''),
    ('base-url', 'URL', False,
     'Server URL for the openai-compatible agent, e.g. http://127.0.0.1:8000/v1 (vLLM).',
     ''),
    ('n-ctx', 'TOKENS', False,
     "The local agent's context size, tokens, allocated by its llama.cpp server (--n_ctx). "
     'Default: 8192.',
     ''),
    ('baseline', 'RUN.json', False,
     'Compare this run with a stored run record: a case that passed there and fails now is a '
     'regression, named in the summary and marked regression=true in junit.',
     ''),
    ('resume', 'RUN.json', False,
     'Resume an interrupted run: its run record (RUN.json, complete=false) or the partial file '
     'of a killed run (<run id>.partial.jsonl). Only the cases without a final outcome (not '
     'run, or an error) run again, with the same settings (a different setting is refused and '
     'named); one record is written, under the same run id, as if the run had not stopped.',
     ''),
    ('fail-on-regression', 'BOOL', True,
     'With --groundeval-baseline: exit non-zero when the gate fails (a case regressed or was '
     'lost, a case file could not be read or failed its checks, the pass rate dropped beyond '
     'noise, or the run is incomplete), even if every threshold passes.',
     ' Default: False.'),
    ('trials', 'K', False,
     'Run every case K times, one pytest item per trial (node id suffix [trial-0] ... '
     '[trial-K-1]); the summary adds pass@k, pass^k and per-case passes out of K.',
     ' Default: 1.'),
    ('counterfactual', 'BOOL', True,
     "Also run each case's counterfactual twins: its record changed by code in a way whose "
     'effect on the truth is known (node id suffix [cf-<perturbation>]); the summary adds '
     'record_sensitivity, the share of twins whose answer changed as the truth did. The task '
     'must declare perturbations (extraction does).',
     ' Default: False.'),
    ('twin-seed', 'N', False,
     "With --groundeval-counterfactual: the seed of the order each case's items and its twins' "
     'run in (a twin may run before its original); give it to run the same order again. '
     'Default: one drawn for each run and kept in its run record (settings, twin_seed).',
     ''),
    ('concurrency', 'N', False,
     'Agent calls in flight at once per process (per xdist worker under -n): upcoming cases '
     'are called ahead in threads while items still report one by one in collection order. 1 '
     'calls the agent inside each item, as a plain pytest run would. Default: 4 for the '
     'built-in agents, 1 for an agent of your own unless it sets thread_safe = True.',
     ''),
    ('tools', 'inprocess|mcp', False,
     "How a tool-using agent gets the task's tools: inprocess (LangChain tools in the agent's "
     "process) or mcp (each case's tools served by its own MCP server on 127.0.0.1, Streamable "
     'HTTP, with a stdio relay command; the agent gets the URL in request.tool_server and '
     'every call it makes is traced by the server). Needs the mcp extra; agents: langgraph-mcp '
     'or an agent of your own.',
     ' Default: inprocess.'),
    ('fhir', 'sandbox|URL', False,
     "Serve each case's record over the FHIR R4 REST API instead of pasting it into the "
     "prompt: sandbox (groundeval's own server per case on 127.0.0.1, a bearer token per case, "
     'an access log) or the base URL of your FHIR server (each case loaded as one transaction '
     'under ids of its own and removed after; bearer token from GROUNDEVAL_FHIR_TOKEN). The '
     'agent gets the base URL, patient and token in request.fhir and must declare '
     "record_access = 'fhir' (langgraph-rest, the *-rest baselines); the record adds retrieval "
     'precision/recall and wasted calls, and a write on a read task fails the case. Default: '
     'off.',
     ''),
    ('summary-md', 'PATH', False,
     "Write the run's summary as Markdown to PATH (also appended to $GITHUB_STEP_SUMMARY when "
     'that is set).',
     ''),
    ('cache', 'DIR', False,
     'Store each agent result in DIR (SQLite, shared safely by xdist workers and concurrent '
     'runs), keyed by agent, model, the full request and the trial index; a rerun with the '
     'same key makes no model call and its case is marked cached=true.',
     ''),
    ('conversation', 'MODE', False,
     'What each case record keeps of the prompt the agent was sent: full (the system and user '
     "prompt, then every reply and tool result) or reference (for real patients' records: the "
     "case file's name and SHA-256, the task's version and the prompt's SHA-256, from which "
     'the prompt is rendered again exactly; replies and tool results are kept either way).',
     ' Default: full.'),
    ('replay-allow-changed', 'BOOL', True,
     'With --groundeval-agent=replay:RUN.json: re-score cases whose case file changed since '
     'that run, flagged fixture_changed=true, instead of refusing to start.',
     ' Default: False.'),
    ('failure-blocks', 'BOOL', True,
     "Print pytest's full failure block (FAILURES section) for every failed case. By default, "
     "above 25 failed cases each is one line, 'FAILED <node id> - <reason>', under 'failed "
     "cases' before the groundeval summary: thousands of blocks are unreadable, and pytest's "
     'FAILURES section costs time that grows with failures x tests.',
     ' Default: False.'),
    ('min-pass-rate', 'R', False,
     'With --groundeval-trials: a case passes when at least R of its counted trials pass (0 < '
     'R <= 1; excluded trials are left out); each trial item still shows its own outcome, and '
     'the exit status follows the cases. Default: every trial must pass.',
     ''),
    ('max-cost', 'USD', False,
     "Stop the run before it spends more than USD on model calls: each call's cost is "
     'estimated from its prompt tokens and max-tokens before it is sent, and a call that could '
     'pass the limit is not made; cases not started are not_run. Needs a model with a known '
     'price.',
     ''),
    ('prices', 'FILE', False,
     'Price models from FILE (TOML or JSON, USD per million tokens: per model id, input, '
     'output, and optionally cached_input and batch_discount); a model priced here wins over '
     'the packaged list price, so cost_usd and --groundeval-max-cost work for any model (an '
     'OpenAI-compatible or local one too).',
     ''),
    ('progress', 'MODE', False,
     'Status line while the run goes (cases done, passed, excluded, calls in flight, tokens, '
     'USD, ETA): tty (one line redrawn in place), plain (a line every '
     '--groundeval-progress-every seconds, for CI logs), off, or auto (tty on a terminal, else '
     'plain).',
     ' Default: auto.'),
    ('progress-every', 'SECONDS', False,
     'Seconds between plain progress lines (0: after every case).',
     ' Default: 30.0.'),
    ('batch', 'BOOL', True,
     "Send the model requests of the cases this process runs through the provider's batch API "
     '(Anthropic Message Batches, OpenAI Batch) at batch prices, instead of one call each; '
     'items still report one by one. A cache hit sends nothing; batches sent are journalled in '
     'the out-dir, so the same command run again after an interruption collects them instead '
     'of paying again. Single-call agents only; one process (no -n).',
     ' Default: False.'),
    ('batch-size', 'N', False,
     "With --groundeval-batch: the most requests per batch (also capped by the provider's "
     'count and byte limits: 100,000 requests / 256 MB for Anthropic, 50,000 / 200 MB for '
     'OpenAI).',
     ' Default: 1000.'),
    ('batch-send-delay', 'SECONDS', False,
     'With --groundeval-batch: seconds without a new request after which a partly filled batch '
     'is sent.',
     ' Default: 15.0.'),
    ('batch-poll', 'SECONDS', False,
     'With --groundeval-batch: seconds between polls of a batch still processing.',
     ' Default: 30.0.'),
    ('batch-max-wait', 'SECONDS', False,
     'With --groundeval-batch: the longest a request waits for its batch, seconds (default: '
     "the providers' 24-hour window); requests still processing then are infra_error naming "
     'the batch.',
     ' Default: 86400.0.'),
)
"""(name, metavar, flag, help, default) of each option with a value, in ``OPTIONS`` order."""

GENERIC = 'option'
GENERIC_HELP = (
    'Set an option the task declares, KEY=VALUE (repeatable), e.g. min_f1=0.8; for any task, '
    'including tasks from outside groundeval.'
)
