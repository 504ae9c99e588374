"""A llama.cpp server as a managed subprocess on 127.0.0.1 (llama-cpp-python's ``python -m llama_cpp.server``).

``LlamaServer`` starts the server on a free loopback port with an explicit context size
(``--n_ctx``: the server's own default is 2,048 tokens), waits until it answers
``GET /v1/models``, and stops it with SIGTERM, then SIGKILL after ``STOP_TIMEOUT_S`` (uvicorn
waits for a request in flight, and a generation cannot be cancelled). It is stopped by
``stop()``, when the object is collected and at interpreter exit (``weakref.finalize``). The
child runs in a session of its own, so a Ctrl-C in the terminal reaches the harness, which then
stops the server, rather than the server in the middle of an answer; on Linux the child also asks
for SIGKILL when the thread that started it dies (``prctl(PR_SET_PDEATHSIG)``), so a harness killed
outright leaves no server behind (SIGKILL, not SIGTERM: uvicorn would first finish the generation
in flight, for minutes, for a client that is gone).

llama-cpp-python has no endpoint that describes the server, so what it says about itself is read
from its log: the GGUF metadata (``Model metadata: {...}``, printed by ``llama_cpp.Llama`` when
verbose, the server's default) and the context it allocated (llama.cpp's ``llama_context: n_ctx =
N``). Its tokenizer is ``POST /extras/tokenize/count`` (the raw text, without the chat template).
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from groundeval.errors import ConfigError

__all__ = [
    "DEFAULT_COMMAND", "START_TIMEOUT_S", "STOP_TIMEOUT_S", "LlamaServer", "ServerFacts", "free_port", "read_facts",
]

DEFAULT_COMMAND: tuple[str, ...] = (sys.executable, "-m", "llama_cpp.server")
"""The server: llama-cpp-python's OpenAI-compatible server, run by this interpreter."""
START_TIMEOUT_S = 300.0
"""How long the server may take to load its model and answer ``/v1/models``, seconds (about 5 s
for a 98 MB model on 2 cores; a 4 GB model read from a cold disk takes far longer)."""
STOP_TIMEOUT_S = 5.0
"""How long SIGTERM is given before SIGKILL, seconds (an idle server stops in under 1 s)."""
POLL_S = 0.2
"""Interval between readiness checks, seconds."""
REQUEST_TIMEOUT_S = 30.0
"""Timeout of one readiness or tokenizer request, seconds."""
LOG_TAIL_LINES = 15
"""Lines of the server's log quoted when it fails to start."""
PORT_TRIES = 3
"""Ports tried when another process takes the free port between our choosing it and the server binding it."""
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

_METADATA = re.compile(r"^Model metadata: (\{.*\})\s*$", re.MULTILINE)
_N_CTX = re.compile(r"^\w+: n_ctx\s*=\s*(\d+)\s*$", re.MULTILINE)
_PORT_TAKEN = re.compile(r"address already in use", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What a started server said about itself in its log.

    Attributes:
        n_ctx: The context it allocated, tokens (None when its log does not say).
        metadata: The model's GGUF metadata as the server printed it (``general.license``,
            ``general.name``, ``<arch>.context_length``, ...; all values are strings).
    """

    n_ctx: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def n_ctx_train(self) -> int | None:
        """The context the model was trained with (GGUF ``<arch>.context_length``), tokens, or None."""
        arch = self.metadata.get("general.architecture")
        value = self.metadata.get(f"{arch}.context_length") if arch else None
        return int(value) if value is not None and value.isdigit() else None


def read_facts(log: str) -> ServerFacts:
    """Read the context size and GGUF metadata from a llama-cpp-python server's log text."""
    metadata: dict[str, str] = {}
    found = _METADATA.search(log)
    if found:
        with contextlib.suppress(ValueError, SyntaxError, MemoryError, RecursionError):
            value = ast.literal_eval(found.group(1))  # a Python dict repr, not JSON
            if isinstance(value, dict):
                metadata = {str(k): str(v) for k, v in value.items()}
    n_ctx = _N_CTX.search(log)
    return ServerFacts(n_ctx=int(n_ctx.group(1)) if n_ctx else None, metadata=metadata)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux for SIGKILL when the starting thread dies, or None.

    Only from the main thread: the signal follows the thread that forked, and a worker thread
    that ends would take the server with it.
    """
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return None

    def child() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

    return child


def _terminate(process: subprocess.Popen[bytes], log: IO[bytes] | None) -> None:
    """SIGTERM the server's process group, SIGKILL it after ``STOP_TIMEOUT_S``; reap it; close its log."""
    try:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    finally:
        if log is not None:
            log.close()


def _exit_text(returncode: int) -> str:
    if returncode >= 0:
        return f"exited with status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    if -returncode == signal.SIGILL:
        return (
            f"was killed by {name} (an illegal instruction: this build uses CPU instructions this machine "
            "lacks; rebuild llama-cpp-python with CMAKE_ARGS=\"-DGGML_NATIVE=OFF\")"
        )
    return f"was killed by {name}"


class LlamaServer:
    """One llama.cpp server process serving one GGUF model on 127.0.0.1.

    Args:
        model: The GGUF file.
        alias: The model id the server serves and reports (``--model_alias``).
        n_ctx: Context size to allocate, tokens (``--n_ctx``).
        n_threads: CPU threads for generation and prompt processing (``--n_threads``,
            ``--n_threads_batch``).
        log_path: File the server's stdout and stderr are appended to (its directory is created).
        command: The server command before its arguments (default ``python -m llama_cpp.server``).
        start_timeout_s: How long to wait for ``/v1/models`` to answer, seconds.

    Raises:
        ConfigError: (from ``start``) the server exited, was killed or did not answer in time;
            the message names the command, the model, the log file and its last lines.
    """

    def __init__(
        self,
        model: Path,
        *,
        alias: str,
        n_ctx: int,
        n_threads: int,
        log_path: Path,
        command: Sequence[str] = DEFAULT_COMMAND,
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        self.model = model
        self.alias = alias
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.log_path = log_path
        self.command = tuple(command)
        self.start_timeout_s = start_timeout_s
        self.port: int | None = None
        self.facts = ServerFacts()
        self._process: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._lock = threading.Lock()
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy

    @property
    def binary(self) -> str:
        """The server command as one string, for messages."""
        return " ".join(self.command)

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT`` of the started server."""
        if self.port is None:
            raise RuntimeError("the llama.cpp server has not been started")
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI API root of the started server (``.../v1``)."""
        return f"{self.root}/v1"

    @property
    def pid(self) -> int | None:
        """The server's process id while it was started (also after it exited), else None."""
        return self._process.pid if self._process is not None else None

    def alive(self) -> bool:
        """True while the server process runs."""
        return self._process is not None and self._process.poll() is None

    def returncode(self) -> int | None:
        """The exit status of a server that exited (negative: killed by that signal), else None."""
        return self._process.poll() if self._process is not None else None

    def wait(self, timeout_s: float) -> int | None:
        """Wait up to ``timeout_s`` seconds for the server to exit; its exit status, or None if it still runs."""
        if self._process is None:
            return None
        try:
            return self._process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def args(self, port: int) -> list[str]:
        """The full command line for ``port``."""
        return [
            *self.command, "--model", str(self.model), "--model_alias", self.alias, "--host", "127.0.0.1",
            "--port", str(port), "--n_ctx", str(self.n_ctx), "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads),
        ]

    def start(self) -> None:
        """Start the server and wait until it answers; a no-op when it runs already.

        Raises:
            ConfigError: It exited or was killed before answering (an illegal instruction, a bad
                model file, a missing module), or did not answer within ``start_timeout_s``.
        """
        with self._lock:
            if self.alive():
                return
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            for _ in range(PORT_TRIES):
                port = free_port()
                offset = self.log_path.stat().st_size if self.log_path.exists() else 0
                self._spawn(port)
                try:
                    if self._wait_ready(port, offset):
                        break
                except BaseException:  # a start error, or Ctrl-C while the model loads: leave nothing behind
                    self.stop()
                    raise
                self.stop()  # the port was taken: try another one
            else:
                raise self.failure(f"could not bind a port on 127.0.0.1 in {PORT_TRIES} tries")
            self.port = port
            self.facts = read_facts(self.log_text(offset))

    def _spawn(self, port: int) -> None:
        log = self.log_path.open("ab")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # its log lines appear as they happen
        try:
            process = subprocess.Popen(
                self.args(port), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True, preexec_fn=_die_with_parent(),
            )
        except OSError as exc:
            log.close()
            raise ConfigError(
                f"the llama.cpp server ({self.binary}) could not be started for the model {self.model}: {exc}"
            ) from exc
        self._process = process
        self._finalizer = weakref.finalize(self, _terminate, process, log)

    def _wait_ready(self, port: int, offset: int) -> bool:
        """True once ``/v1/models`` answers; False when the port was taken.

        Raises:
            ConfigError: The server exited first, or did not answer within ``start_timeout_s``.
        """
        deadline = time.monotonic() + self.start_timeout_s
        url = f"http://127.0.0.1:{port}/v1/models"
        while True:
            code = self.returncode()
            if code is not None:
                if _PORT_TAKEN.search(self.log_text(offset)):
                    return False
                raise self.failure(f"{_exit_text(code)} before it answered", offset)
            # OSError: not listening yet, or still loading the model
            with contextlib.suppress(OSError, ValueError), self._opener.open(url, timeout=REQUEST_TIMEOUT_S) as reply:
                if reply.status == 200 and isinstance(json.load(reply).get("data"), list):
                    return True
            if time.monotonic() >= deadline:
                raise self.failure(f"did not answer GET /v1/models within {self.start_timeout_s:g} s", offset)
            time.sleep(POLL_S)

    def log_text(self, offset: int = 0) -> str:
        """The server's log from byte ``offset`` on ("" when there is none yet)."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(offset)
                return log.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def failure(self, what: str, offset: int = 0) -> ConfigError:
        """The ``ConfigError`` saying the server ``what``, with the command, the model and its log's last lines."""
        lines = [line for line in self.log_text(offset).splitlines() if line.strip()][-LOG_TAIL_LINES:]
        tail = "\n".join(f"    {line}" for line in lines) or "    (empty)"
        return ConfigError(
            f"the llama.cpp server ({self.binary}) {what}, serving the model {self.model}; its log is "
            f"{self.log_path}, last lines:\n{tail}"
        )

    def count_tokens(self, text: str) -> int | None:
        """The number of tokens the server's tokenizer makes of ``text``, or None when it has no tokenizer endpoint.

        Raises:
            OSError: The server could not be reached (``urllib.error.URLError`` is one).
        """
        request = urllib.request.Request(
            f"{self.root}/extras/tokenize/count", data=json.dumps({"input": text}).encode(),
            headers={"content-type": "application/json"}, method="POST",
        )
        try:
            with self._opener.open(request, timeout=REQUEST_TIMEOUT_S) as response:
                count = json.load(response).get("count")
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 405):
                return None
            raise
        return count if isinstance(count, int) and not isinstance(count, bool) else None

    def stop(self) -> None:
        """Stop the server (SIGTERM, SIGKILL after ``STOP_TIMEOUT_S``) and reap it; safe to call again."""
        finalizer = self._finalizer
        self._finalizer = None
        if finalizer is not None:
            finalizer()

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
