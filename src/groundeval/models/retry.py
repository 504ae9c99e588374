"""The one retry layer of model-backed agents.

The SDK clients are built with ``max_retries=0``, so this loop is the only place a model call is
repeated (nested retry layers multiply calls and wall time). It follows the
SDKs' own policy, so moving the layer here changes nothing but who counts:

* what is retried is decided by the caller's ``advise`` (``_classify.advise``: 408, 409, 429,
  5xx including 529, connection errors and timeouts; an ``x-should-retry`` header is obeyed);
* the wait is the server's ``Retry-After`` when it sends one, else exponential backoff from
  0.5 s doubling to at most 8 s, minus up to 25% jitter;
* every attempt and every wait must fit in one time budget per case (``timeout_s``), which starts
  when the case's first request is sent (see below for the wait for a slot before it): each
  attempt's HTTP timeout is what is left of it, and a wait that would pass it (say a
  ``Retry-After`` of 171 s with 60 s left) is not started: the call fails at once instead;
* the budget is a wall-clock deadline, whatever the server does. httpx's timeouts are per
  operation (a read timeout restarts on every byte, so a server trickling a byte a second is
  never cut off) and httpx has no total timeout for synchronous clients. So each attempt runs
  in a worker thread (``within``) and the case stops waiting for it at the deadline plus a
  short grace (``DEADLINE_GRACE_S``, so that the SDK's own timeout, which says more, usually
  fires first); the abandoned attempt is handed to ``abandon`` (the agents close the SDK
  client, which closes its sockets) and ends on its own.

Why not tenacity (in uv.lock through langchain-core; it has ``stop_before_delay``): its
clock is ``time.monotonic`` with no seam, so the budget rules could not be tested without real
waits; the ``Retry-After`` wait and the per-attempt deadline would still be ours; and what it
would replace is the 30-line loop below. The loop stays, with every rule tested on a fake clock.

Under ``--groundeval-concurrency`` every attempt holds a slot of the process's
``groundeval.models.throttle.AdaptiveLimit``: a 429/529 answer cuts the number of calls in flight for a
while. A case's first request waits for its slot up to one ``timeout_s`` of its own, and its
budget starts only when it is sent, so a case is never starved by other cases' calls: it is sent
and classed by what the server says, as at concurrency 1. A retry's wait for a slot spends the
budget like any wait. An attempt that never got a slot sends nothing: it is not counted, and the
case keeps the last status the server gave (or, if nothing was ever sent, says it waited N s for
a concurrency slot). Once the run is stopped (``stop_switch.stop_calls``) no attempt starts.

Attempts are counted here (only requests actually sent) and recorded with the case.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from groundeval.errors import ConfigError
from groundeval.models import stop_switch, throttle

__all__ = [
    "CALL_POLICY_OPTIONS",
    "DEADLINE_GRACE_S",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TIMEOUT_S",
    "Abandoned",
    "CallSettings",
    "Completed",
    "DeadlineExceeded",
    "GaveUp",
    "RetryPolicy",
    "call_policy_options",
    "call_with_retries",
    "within",
]

T = TypeVar("T")


class HasOptions(Protocol):
    """Anything with agent ``options`` (an ``agents.base.AgentConfig``, a judge's settings)."""

    @property
    def options(self) -> Mapping[str, Any]:
        """Option name -> value."""
        ...

DEFAULT_MAX_TOKENS = 4096
"""Output limit per call when ``max_tokens`` is not given, tokens."""
DEFAULT_MAX_RETRIES = 2
"""Retries per case when ``max_retries`` is not given (so at most 3 calls)."""
DEFAULT_TIMEOUT_S = 600.0
"""Time budget of one case's model calls and retry waits when ``timeout`` is not given, seconds."""
CALL_POLICY_OPTIONS: tuple[str, ...] = ("max_retries", "timeout")
"""The run options that bound a model call, whoever makes it: its retries (``--groundeval-max-retries``)
and its deadline (``--groundeval-timeout``, seconds). An agent's model and a judge's model read them from
the same run options (``call_policy_options``); they bound the call and never change its answer."""
DEADLINE_GRACE_S = 0.25
"""How long past the deadline a case still waits for the SDK's own timeout to fire, seconds."""


def call_policy_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The ``CALL_POLICY_OPTIONS`` of a run's options (those given), for a model other than the agent's.

    A judge's model is made with these and its own ``max_tokens`` and ``temperature``, so its calls
    keep the run's deadline and retries (and, through ``call_with_retries``, its classification,
    throttle and stop switch) as an agent's do.
    """
    return {key: options[key] for key in CALL_POLICY_OPTIONS if options.get(key) is not None}


class DeadlineExceeded(Exception):
    """An attempt was still running when its case's time budget ran out.

    Attributes:
        ran_s: How long the case had run (since its first request was sent) when it stopped
            waiting, seconds.
        bound_s: The case's time budget (``--groundeval-timeout``), seconds.
        others_in_flight: Other calls of this process in flight when the last attempt was sent
            (a server that serves one request at a time queues them, and the queueing counts).
    """

    def __init__(self, ran_s: float, bound_s: float, others_in_flight: int = 0) -> None:
        queued = (
            f"; {others_in_flight} other call{'s' if others_in_flight != 1 else ''} of this run were in flight "
            "when it was sent, and a server that serves one request at a time (llama.cpp's server, for one) "
            "queues them, so the queueing counted against the bound: lower --groundeval-concurrency"
            if others_in_flight > 0 else ""
        )
        super().__init__(
            f"the case ran {ran_s:.2f} s and was stopped at its {bound_s:g} s bound (--groundeval-timeout){queued}"
        )
        self.ran_s = ran_s
        self.bound_s = bound_s
        self.others_in_flight = others_in_flight


class Abandoned(Exception):
    """``within`` stopped waiting for a call that had not finished."""


def within(fn: Callable[[], T], seconds: float) -> T:
    """Run ``fn()`` in a worker thread and wait at most ``seconds`` for it.

    The thread runs in a copy of the caller's context (so tracing and LangChain's run config
    follow it) and is a daemon: an attempt abandoned at the deadline never holds up the exit.

    Returns:
        What ``fn`` returned; what it raised is raised here.

    Raises:
        Abandoned: ``fn`` had not finished after ``seconds``; it keeps running unobserved.
    """
    context = contextvars.copy_context()
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = context.run(fn)
        except BaseException as exc:  # handed to the waiting thread, which raises it
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name="groundeval-model-call", daemon=True).start()
    if not done.wait(max(seconds, 0.0)):
        raise Abandoned(f"no result after {seconds:.2f} s")
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long one case may call the model.

    Attributes:
        max_retries: Retries after the first attempt (so at most ``max_retries + 1`` calls).
        timeout_s: Time budget of one case's model calls and waits, seconds.
        initial_delay_s: First backoff wait, seconds (doubles per retry).
        max_delay_s: Largest backoff wait, seconds (a server's ``Retry-After`` may ask more).
        sleep: Waits that many seconds (a test seam: tests pass a recorder, never sleeping).
        clock: Monotonic clock in seconds.
    """

    max_retries: int = 2
    timeout_s: float = 600.0
    initial_delay_s: float = 0.5
    max_delay_s: float = 8.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

    def backoff(self, retry: int) -> float:
        """Wait before retry number ``retry`` (1-based) when the server named none, seconds."""
        base = min(self.initial_delay_s * 2.0 ** (retry - 1), self.max_delay_s)
        return base * (1.0 - 0.25 * random.random())


@dataclass(frozen=True, slots=True)
class CallSettings:
    """The options every model-backed agent shares.

    Attributes:
        max_tokens: Output limit per call, tokens.
        temperature: Sampling temperature, or None to send none (the model's default).
        retry: Retry count, time budget per case and the sleep seam.
    """

    max_tokens: int
    temperature: float | None
    retry: RetryPolicy

    @classmethod
    def from_config(cls, config: HasOptions, sleep: Callable[[float], None] | None = None) -> CallSettings:
        """Read ``max_tokens``, ``temperature``, ``max_retries`` and ``timeout`` (seconds).

        Missing or None options take the ``DEFAULT_*`` values; ``temperature`` stays None.

        Raises:
            ConfigError: A value is not a number or is out of range.
        """
        opts = config.options

        def pick(key: str, default: Any) -> Any:
            value = opts.get(key)
            return default if value is None else value

        try:
            max_tokens = int(pick("max_tokens", DEFAULT_MAX_TOKENS))
            temperature = None if opts.get("temperature") is None else float(opts["temperature"])
            max_retries = int(pick("max_retries", DEFAULT_MAX_RETRIES))
            timeout = float(pick("timeout", DEFAULT_TIMEOUT_S))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"agent options: {exc}; give numbers for max_tokens, temperature, "
                              "max_retries and timeout") from None
        if max_tokens < 1 or max_retries < 0 or not timeout > 0:
            raise ConfigError(
                f"agent options: need max_tokens >= 1 (got {max_tokens}), max_retries >= 0 "
                f"(got {max_retries}) and timeout > 0 seconds (got {timeout})"
            )
        policy = RetryPolicy(max_retries=max_retries, timeout_s=timeout, sleep=sleep or time.sleep)
        return cls(max_tokens=max_tokens, temperature=temperature, retry=policy)


@dataclass(frozen=True, slots=True)
class Completed(Generic[T]):
    """A call that succeeded.

    Attributes:
        value: What the call returned.
        attempts: Calls made, the successful one included.
        waited_s: Time spent waiting between attempts, seconds.
    """

    value: T
    attempts: int
    waited_s: float


class GaveUp(Exception):
    """The call failed for good.

    Attributes:
        error: The last exception raised by the call.
        attempts: Calls made.
        note: Why retrying stopped early (budget spent, retries exhausted), or "".
        waited_s: Time spent waiting between attempts, seconds.
    """

    def __init__(self, error: BaseException, attempts: int, note: str = "", waited_s: float = 0.0) -> None:
        super().__init__(str(error))
        self.error = error
        self.attempts = attempts
        self.note = note
        self.waited_s = waited_s


Advice = tuple[bool, float | None]
"""(retry?, seconds the server asked to wait or None)."""


def call_with_retries(
    call: Callable[[float], T],
    policy: RetryPolicy,
    *,
    errors: tuple[type[BaseException], ...],
    advise: Callable[[BaseException], Advice],
    abandon: Callable[[], None] | None = None,
    started: float | None = None,
) -> Completed[T]:
    """Call ``call(remaining_s)`` until it succeeds, may not be retried, or the budget is spent.

    Each attempt runs under ``within``: the case stops waiting for it at the deadline (plus
    ``DEADLINE_GRACE_S``), whatever the server does.

    Args:
        call: Makes one attempt; its argument is the time left in the budget (seconds), to be
            used as the attempt's HTTP timeout.
        policy: Retry count, time budget and the sleep/clock seams.
        errors: Exception types that are attempt failures (the SDK's API errors). Any other
            exception is a bug and propagates unchanged.
        advise: Says whether an error may be retried and how long the server asked to wait.
        abandon: Called when an attempt is abandoned at the deadline (close the SDK client).
        started: When the case's budget started (``policy.clock`` time), if before this call:
            the budget runs from there (a LangGraph case makes one such call per model turn).
            None: the budget starts when the first request is sent.

    Returns:
        The value with the number of attempts and the time waited.

    Raises:
        GaveUp: The last error could not be retried, the retries ran out, the next wait would
            pass the time budget, an attempt outlived the budget (``error`` is then a
            ``DeadlineExceeded`` with the time the case ran and its bound), or an attempt never
            got a slot or the run was stopped first (``error`` is the last real failure, or a
            ``throttle.SlotTimeout``/``stop_switch.CallsStopped`` when nothing was sent).
    """
    start = started  # the budget starts at the first send (or when the caller's case started)
    attempts = 0
    waited = 0.0
    last: BaseException | None = None  # the last real failure, kept when a later attempt is never sent
    run = throttle.active()  # this run's gate and stop switch, for every attempt of the call
    gate = run.gate
    honoured = 0.0  # the run's pause after a rate limit, up to this instant, was waited by this call's own retry wait
    while True:
        # the first attempt waits up to one budget for a slot (and for the run's pause after a rate
        # limit) before its budget starts; a retry's waits spend the budget that is left
        slot_s = policy.timeout_s if start is None else max(start + policy.timeout_s - policy.clock(), 0.001)
        try:
            if run.stopped():
                raise stop_switch.CallsStopped("the run was stopped; no request was sent")
            paused = run.wait_cooldown(slot_s, policy.sleep, honoured)
            if start is not None:
                waited += paused
                slot_s = max(start + policy.timeout_s - policy.clock(), 0.001)
            with gate.slot(slot_s) if gate is not None else contextlib.nullcontext(1) as in_flight:
                if run.stopped():  # stopped while this attempt waited for its slot
                    raise stop_switch.CallsStopped("the run was stopped; no request was sent")
                if start is None:
                    start = policy.clock()
                attempts += 1
                left = max(start + policy.timeout_s - policy.clock(), 0.001)
                value = within(functools.partial(call, left), left + DEADLINE_GRACE_S)
        except (throttle.SlotTimeout, stop_switch.CallsStopped, throttle.CoolingDown) as exc:
            unsent = f"attempt {attempts + 1}: {exc}"
            if last is None:  # nothing was ever sent: that is the case's error
                raise GaveUp(exc, attempts, unsent, waited) from None
            raise GaveUp(last, attempts, unsent, waited) from last  # keep the last status the server gave
        except Abandoned:
            if abandon is not None:
                abandon()
            assert start is not None
            late = DeadlineExceeded(round(policy.clock() - start, 3), policy.timeout_s, in_flight - 1)
            raise GaveUp(late, attempts, str(late), waited) from None
        except errors as exc:
            last = exc
            assert start is not None
            deadline = start + policy.timeout_s
            retry, asked = advise(exc)
            wait = policy.backoff(attempts) if asked is None else asked
            if throttle.is_rate_limit(exc):
                if gate is not None:
                    gate.rate_limited(asked)  # fewer calls in flight for a while
                honoured = run.cool_down(wait)  # and the whole run sends nothing until the wait has passed
            if not retry:
                raise GaveUp(exc, attempts, waited_s=waited) from exc
            if attempts > policy.max_retries:
                ran = policy.clock() - start
                note = (f"no retries left (max_retries={policy.max_retries}); the case ran {ran:.1f} s of its "
                        f"{policy.timeout_s:g} s bound")
                raise GaveUp(exc, attempts, note, waited) from exc
            left = deadline - policy.clock()
            if wait >= left:
                what = (f"the server asked to wait {wait:g} s" if asked is not None
                        else f"a retry would wait {wait:.1f} s")
                ran = policy.clock() - start
                note = (f"{what} but the case had run {ran:.1f} s of its {policy.timeout_s:g} s bound "
                        "(--groundeval-timeout)")
                raise GaveUp(exc, attempts, note, waited) from exc
            policy.sleep(wait)
            waited += wait
        else:
            return Completed(value=value, attempts=attempts, waited_s=round(waited, 3))
