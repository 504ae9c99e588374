"""The agents that answer a case with one model call: a thin frame over a ``Model``.

``SingleCallAgent`` turns the case's prompt into a ``ModelRequest`` (the task's system prompt,
the case as the one user turn, the case id as the label), asks its ``Model`` (``models.get_model``:
the one retry, deadline, pricing, spending and classification policy) and hands the answer back
as an ``AgentResult``. Everything about the provider (its SDK, its errors, its stop reasons, its
prices) lives in ``groundeval.models``; an agent only says which model spec its configuration
means and how its messages name it.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, ClassVar

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents.base import AgentConfig
from groundeval.models import check_model, get_model
from groundeval.models.base import ModelRequest, ModelResponse
from groundeval.models.policy import PolicyModel
from groundeval.models.providers.base import check_temperature
from groundeval.models.retry import RetryPolicy
from groundeval.models.transcript import reply_message

if TYPE_CHECKING:
    import httpx2

__all__ = ["SingleCallAgent", "check_temperature"]


class SingleCallAgent:
    """Base of agents that make one (retried) model call per case.

    Args:
        config: Model id and options (``max_tokens``, ``temperature``, ``max_retries``,
            ``timeout``, and the provider's own such as ``base_url``), passed to the model.
        http_client: An ``httpx2.Client`` for the SDK (tests pass one with a ``MockTransport``).
        sleep: Replacement for ``time.sleep`` between retries (tests).

    Attributes:
        provider_model: The ``Model`` this agent calls (``models.policy.PolicyModel``: the one
            policy over the provider), declared for the run (``agents.base.Agent``: the spend
            limit and batch mode read it).
        model: Its model id (recorded as the run's model).

    Raises:
        ConfigError: The agent's or the provider's configuration check failed, or an option is
            out of range.
    """

    thread_safe = True
    """Safe to call from several threads at once (``--groundeval-concurrency`` defaults to 4)."""

    name: str
    requires: frozenset[str] = frozenset({"text_prompt"})
    """Runs any task that renders a text prompt (see ``groundeval.agents.base``)."""
    provider: ClassVar[str]
    """The model spec's provider (a key of ``models.PROVIDERS``)."""

    def __init__(
        self,
        config: AgentConfig | None = None,
        *,
        http_client: httpx2.Client | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        config = config or AgentConfig()
        self.check_agent_config(config)
        self.provider_model: PolicyModel[Any] = self._build_model(config, http_client=http_client, sleep=sleep)
        self.model: str | None = self.provider_model.name

    def _build_model(
        self, config: AgentConfig, *, http_client: httpx2.Client | None, sleep: Callable[[float], None] | None
    ) -> PolicyModel[Any]:
        """The agent's model: ``models.get_model`` with the agent's provider, model and options."""
        return get_model(
            f"{self.provider}/{config.model or ''}", "agent", options=config.options, owner=f"the agent {self.name!r}",
            hints=self.hints(), http_client=http_client, sleep=sleep,
        )

    @classmethod
    def hints(cls) -> dict[str, str]:
        """Advice the agent's messages give (see ``models.providers.base.Provider``); none by default."""
        return {}

    @classmethod
    def check_agent_config(cls, config: AgentConfig) -> None:
        """The agent's own checks of ``config`` (required settings), before the model is made.

        Raises:
            ConfigError: A required setting is missing.
        """

    @classmethod
    def check_config(cls, config: AgentConfig) -> None:
        """Validate ``config`` without building the agent (the pytest-xdist controller calls this).

        Raises:
            ConfigError: What the constructor would raise: a missing key or setting, or an
                option out of range.
        """
        cls.check_agent_config(config)
        check_model(f"{cls.provider}/{config.model or ''}", options=config.options, owner=f"the agent {cls.name!r}",
                    hints=cls.hints())

    @classmethod
    def model_spec(cls, config: AgentConfig) -> str:
        """The spec of the model this agent would call with ``config`` (``anthropic/claude-opus-4-8``).

        Read by the run record without building the agent (the pytest-xdist controller builds none).
        """
        from groundeval.models import model_class

        name = config.model or model_class(cls.provider).default_model or ""
        url = config.options.get("base_url")
        if cls.provider == "openai-compatible" and isinstance(url, str):
            from groundeval.models.classify import strip_userinfo

            return f"{cls.provider}/{name}@{strip_userinfo(url.rstrip('/'))}"
        return f"{cls.provider}/{name}"

    @property
    def backend(self) -> PolicyModel[Any]:
        """The ``Model`` this agent calls (``provider_model``, by its former name)."""
        return self.provider_model

    # -- what the run record and the session read ------------------------------------------
    @property
    def max_tokens(self) -> int:
        """Output limit per call, tokens."""
        return self.backend.max_tokens

    @property
    def temperature(self) -> float | None:
        """Sampling temperature sent, or None (the provider's default)."""
        return self.backend.temperature

    @property
    def retry(self) -> RetryPolicy:
        """The model's retry policy (retries, the case's time budget)."""
        return self.backend.retry

    @retry.setter
    def retry(self, policy: RetryPolicy) -> None:
        self.backend.retry = policy

    def warmup(self) -> None:
        """Import the SDK and build the client before the first case is timed."""
        self.backend.warmup()

    def model_request(self, request: AgentRequest) -> ModelRequest:
        """The case as a model request: the task's system prompt and the case as the user turn."""
        return ModelRequest.single(request.prompt.user, system=request.prompt.system, label=request.case_id)

    def params(self, request: AgentRequest) -> dict[str, Any]:
        """The SDK call's arguments for a case (no timeout)."""
        return self.backend.params(self.model_request(request))

    def preflight(self, request: AgentRequest) -> None:
        """Refuse a case that clearly cannot fit the model's context, before paying.

        Raises:
            CaseTooLargeError: See ``PolicyModel.preflight``.
        """
        self.backend.preflight(self.model_request(request))

    def run(self, request: AgentRequest) -> AgentResult:
        """Send the case to the model (retried on infrastructure errors) and return the answer.

        Returns:
            The answer text; ``usage`` with token counts and ``cost_usd``; ``attempts``; ``meta``
            with ``stop_reason``, ``request_id``, ``max_tokens``, ``temperature`` and
            ``retry_wait_s`` (seconds); ``messages``: the model's reply with its call's timing and
            usage (``models.transcript``; a reply cut off or refused is in the error's
            ``details["messages"]``).

        Raises:
            AgentError: As ``PolicyModel.generate``: ``AuthError``, ``RunStopError``,
                ``CaseTooLargeError``, ``InfraError``, ``RefusalError``, ``TruncatedError``.
        """
        return self._result(self.backend.generate(self.model_request(request)))

    def submit(self, request: AgentRequest) -> Future[AgentResult]:
        """Batch mode: send the case in the model's next batch and return at once (``PolicyModel.submit``).

        Returns:
            A future that completes with what ``run`` would have returned or raised.
        """
        out: Future[AgentResult] = Future()

        def finish(done: Future[ModelResponse]) -> None:
            try:
                out.set_result(self._result(done.result()))
            except BaseException as exc:
                out.set_exception(exc)

        self.backend.submit(self.model_request(request)).add_done_callback(finish)
        return out

    @staticmethod
    def _result(response: ModelResponse) -> AgentResult:
        return AgentResult(
            text=response.text, model=response.model, usage=response.usage, attempts=response.attempts,
            meta=dict(response.meta), messages=[reply_message(response)],
        )
