"""A pytest run in a child process forked from the test process, for tests whose run must be a process of its own.

A signal sent to the run, or a file-size limit on it, must not reach the test process; but a new
``python -m pytest`` interpreter imports pytest, groundeval and scipy again (about 2 CPU-seconds
on these machines) before the run starts. A child forked from the test process has them loaded
already (``tests/conftest.py`` preloads them) and is still a process of its own: it gets its own
signals, its own limits and its own pid, and its xdist workers (``-n 2``) are new interpreters,
as they are under a shell. The child restores the default SIGINT and SIGTERM handlers first, so
the run sees what a foreground ``pytest`` started from a shell sees.
"""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import signal
import sys
import threading
import time
from pathlib import Path

import pytest


class ForkedPytest:
    """``pytest ARGS`` in ``cwd``, in a forked child; its output (stdout and stderr) read through a pipe.

    Args:
        cwd: The child's working directory.
        args: pytest's arguments.
        file_size_limit: If given, the child's ``RLIMIT_FSIZE`` (soft and hard), in bytes.
        own_group: Start the child in a process group of its own (with its xdist workers), as a
            shell starts a foreground job, so that ``signal_group`` reaches all of them as Ctrl-C does.
    """

    def __init__(self, cwd: Path, args: list[str], file_size_limit: int | None = None,
                 own_group: bool = False) -> None:
        read, write = os.pipe()
        # the objects there are now stay out of the collector's reach in the child (which never frees
        # them: it leaves by os._exit), so it does not touch, and copy, every page of this process
        gc.freeze()
        try:
            pid = os.fork()
        except OSError:
            gc.unfreeze()
            raise
        if pid == 0:  # pragma: no cover - the child: runs pytest and never returns
            code = 70
            try:
                os.close(read)
                if own_group:
                    os.setpgid(0, 0)
                os.dup2(write, 1)
                os.dup2(write, 2)
                os.close(write)
                devnull = os.open(os.devnull, os.O_RDONLY)
                os.dup2(devnull, 0)
                signal.signal(signal.SIGINT, signal.default_int_handler)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                if file_size_limit is not None:
                    # no bytecode is written under the limit (by the run or its xdist workers): CPython
                    # does not check a short write of a .pyc, and would leave a truncated one in place
                    # ("EOFError: marshal data too short" on every later import of that module)
                    sys.dont_write_bytecode = True
                    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
                    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))
                os.chdir(cwd)
                sys.path.insert(0, str(cwd))  # as `python -m pytest` puts the working directory first
                for name in [n for n in os.environ if n.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT_TEST"))]:
                    del os.environ[name]  # this suite's own worker and test, not the run's
                os.environ["PY_COLORS"] = "0"
                sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the child's own streams, until it exits
                sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
                code = int(pytest.main(list(args)))
            except BaseException as exc:  # reported on the child's stderr, then it exits
                try:
                    sys.stderr.write(f"forked pytest run failed: {exc!r}\n")
                finally:
                    code = 71
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        gc.unfreeze()
        os.close(write)
        self.pid = pid
        self.own_group = own_group
        if own_group:
            with contextlib.suppress(OSError):  # the child may have done it already (or exited)
                os.setpgid(pid, pid)
        self.returncode: int | None = None
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._read, args=(read,), daemon=True)
        self._reader.start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as stream:
            while chunk := stream.read1(65536):
                self._chunks.append(chunk)

    def send_signal(self, signum: int) -> None:
        """Send ``signum`` to the child (if it has not exited)."""
        if self.returncode is None:
            os.kill(self.pid, signum)

    def signal_group(self, signum: int) -> None:
        """Send ``signum`` to the child's process group (``own_group``), as the terminal sends Ctrl-C."""
        if self.returncode is None:
            os.killpg(self.pid, signum)

    def kill(self) -> None:
        """SIGKILL the child."""
        self.send_signal(signal.SIGKILL)

    def poll(self) -> int | None:
        """The child's exit status if it has ended (reaped here), else None; never waits, never kills."""
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float) -> int:
        """The child's exit status (negative: the signal that killed it).

        Raises:
            TimeoutError: It was still running after ``timeout`` seconds (it is then killed and reaped,
                so that no run outlives the test).
        """
        deadline = time.monotonic() + timeout
        while (code := self.poll()) is None:
            if time.monotonic() > deadline:
                if self.own_group:  # its xdist workers too
                    with contextlib.suppress(OSError):
                        os.killpg(self.pid, signal.SIGKILL)
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                self.returncode = -signal.SIGKILL
                raise TimeoutError(f"the forked pytest run {self.pid} still ran after {timeout} s: killed")
            time.sleep(0.02)
        return code

    def communicate(self, timeout: float) -> str:
        """Wait for the child (``wait``), then return everything it wrote."""
        self.wait(timeout)
        self._reader.join(timeout)
        return b"".join(self._chunks).decode(errors="replace")
