r"""Local agent: an open-weight GGUF model on a llama.cpp server that groundeval starts and stops.

::

    pip install 'groundeval[local]'
    uv run groundeval --agent local --task reconcile -k no-medication
    uv run groundeval --agent local --model ~/models/qwen2.5-7b-instruct-q4_k_m.gguf --n-ctx 16384

The agent is a single-call agent over ``groundeval.models.providers.local.LocalProvider``: the
``openai-compatible`` provider (the same request, retry layer, failure classes and usage fields) over
a server it manages (``groundeval.models.llama_server``): llama-cpp-python's
``python -m llama_cpp.server`` on a free port of 127.0.0.1, with an explicit context size, its log
in the run's out-dir, started in ``warmup()`` (before the first case is timed) and stopped when
the session ends, on Ctrl-C and on a crash. A server that cannot start is a ``config_error``
that names the command, the model and the last lines of its log.

* **Model**: ``--groundeval-model`` is a GGUF file or a packaged model name (``PACKAGED_MODELS``);
  without it, the ``local`` extra's small model (``smollm2``). The served model id, recorded as
  the run's model, is the file name without ``.gguf``.
* **Context**: ``--groundeval-n-ctx`` tokens (default ``DEFAULT_N_CTX``); the size the server
  reports allocating is the one used. A case's prompt is counted by the server's tokenizer plus
  ``TEMPLATE_TOKENS``; the answer gets ``min(--groundeval-max-tokens, n_ctx - prompt)`` tokens,
  and a case that leaves fewer than ``MIN_OUTPUT_TOKENS`` (256) is ``case_too_large`` before any
  call (``models.served.output_budget``, the rule ``openai-compatible`` applies when its server
  says its context).
* **Concurrency**: 1 (``max_concurrency``): llama-cpp-python serves one request at a time, so
  more calls in flight would only queue behind it.
* **Under -n**: every pytest-xdist worker starts its own server (N workers: N copies of the model
  in memory, each with ``cpu_count // N`` threads for prompts and one fewer for generation,
  ``server_threads``); on a CPU this is no faster than one server.
* **Facts**: every case's ``agent_meta`` holds the model file's SHA-256, its licence (GGUF
  ``general.license``, else the packaged model's), the server's name and version, the context
  size, its threads and the server's log file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from groundeval.agents._single_call import SingleCallAgent
from groundeval.agents.base import AgentConfig
from groundeval.errors import ConfigError
from groundeval.extras import require_extra
from groundeval.models.llama_server import START_TIMEOUT_S, LlamaServer
from groundeval.models.policy import PolicyModel
from groundeval.models.providers.local import (
    DEFAULT_MODEL,
    DEFAULT_N_CTX,
    PACKAGED_MODELS,
    TEMPLATE_TOKENS,
    LocalProvider,
    PackagedModel,
    file_sha256,
    resolve_model,
    server_threads,
)

if TYPE_CHECKING:
    import httpx2

__all__ = ["DEFAULT_MODEL", "DEFAULT_N_CTX", "PACKAGED_MODELS", "TEMPLATE_TOKENS", "LocalAgent", "PackagedModel",
           "file_sha256", "resolve_model", "server_threads"]

NO_BASE_URL = (
    "--groundeval-agent=local starts its own server and takes no --groundeval-base-url; for a server "
    "you run yourself (vLLM, Ollama, llama.cpp) use --groundeval-agent=openai-compatible"
)


class LocalAgent(SingleCallAgent):
    """Answers through a llama.cpp server that it starts on 127.0.0.1 and stops at the end.

    Args:
        config: ``model`` (a GGUF file or a packaged model name; default ``DEFAULT_MODEL``),
            ``out_dir`` (where the server's log goes; default the run's out-dir), and the options of
            ``OpenAICompatibleAgent`` but ``base_url``, plus ``n_ctx`` (tokens, default
            ``DEFAULT_N_CTX``).

    Raises:
        ConfigError: The ``local`` extra is not installed, the model cannot be found, a
            ``base_url`` was given, or (from ``warmup``) the server could not start.
    """

    name = "local"
    provider = "local"
    max_concurrency = 1
    """llama-cpp-python serves one request at a time: more calls in flight would only queue."""
    server_command: ClassVar[tuple[str, ...] | None] = None
    """The server command before its arguments; None for ``python -m llama_cpp.server`` (the extra)."""
    server_distribution: ClassVar[str | None] = "llama-cpp-python"
    """The distribution whose version is recorded as the server's."""
    start_timeout_s: ClassVar[float] = START_TIMEOUT_S

    @classmethod
    def hints(cls) -> dict[str, str]:
        """The message of a base URL given to an agent that starts its own server."""
        return {"base_url": NO_BASE_URL}

    @classmethod
    def check_agent_config(cls, config: AgentConfig) -> None:
        """Refuse a missing extra, a base URL or a model that cannot be found, before any case.

        Raises:
            ConfigError: As the class says.
        """
        if cls.server_command is None:
            require_extra("local", "llama_cpp", f"the agent {cls.name!r}")
        require_extra("local", "openai", f"the agent {cls.name!r}")
        if config.options.get("base_url"):
            raise ConfigError(NO_BASE_URL)
        resolve_model(config.model)

    @classmethod
    def check_config(cls, config: AgentConfig) -> None:
        """Validate ``config`` without building the agent (the pytest-xdist controller calls this).

        Raises:
            ConfigError: As ``check_agent_config``.
        """
        cls.check_agent_config(config)

    def _build_model(
        self, config: AgentConfig, *, http_client: httpx2.Client | None, sleep: Callable[[float], None] | None
    ) -> PolicyModel[Any]:
        options = {
            **config.options, "out_dir": config.out_dir, "server_command": self.server_command,
            "server_distribution": self.server_distribution, "start_timeout_s": self.start_timeout_s,
        }
        api = LocalProvider(config.model, role="agent", options=options, owner=f"the agent {self.name!r}",
                            hints=self.hints(), http_client=http_client)
        return PolicyModel(api, sleep=sleep)

    @property
    def local(self) -> LocalProvider:
        """The agent's provider and its server."""
        assert isinstance(self.provider_model.api, LocalProvider)
        return self.provider_model.api

    @property
    def log_path(self) -> Path:
        """The server's log file."""
        return self.local.log_path

    @property
    def n_ctx(self) -> int:
        """The server's context size, tokens (as it reported it; the requested one before it started)."""
        return self.local.n_ctx

    @property
    def facts(self) -> dict[str, Any]:
        """The model's and server's facts recorded with every case (empty before the server started)."""
        return self.local.facts

    @property
    def server(self) -> LlamaServer | None:
        """The managed server once started, else None."""
        return self.local.server

    def close(self) -> None:
        """Stop the server (the session calls this at its end); safe to call more than once."""
        self.provider_model.close()
