"""The model layer: every model call groundeval makes, an agent's or a judge's, goes through here.

* ``base``: the ``Model`` protocol, ``ModelRequest``, ``ModelResponse``, ``ModelRole``.
* ``policy``: ``PolicyModel``, the one policy of a call (pre-flight, spending limit, retries,
  classification, refusal and truncation, batch routing, the response cache), composed over a
  provider; ``providers`` holds the small provider API and the providers (``anthropic``,
  ``openai_compat``, ``local``, with their batch adapters).
* ``retry``, ``classify``, ``throttle``, ``pricing``, ``spend``, ``response_cache``: the one policy
  of retries and deadlines, failure classes, rate limits, prices, spending and cached responses
  (kept in ``cache_store``, the SQLite store an agent's cached results share).
* ``chat``: the LangChain chat model a tool-using agent drives, made from the same spec.
* ``batch`` (with ``batch_api``, ``batch_journal`` and the providers' adapters): batch mode, a
  model's requests sent through the provider's batch API (``--groundeval-batch``).

``get_model(spec, role=...)`` makes a ``Model`` from a spec string. Importing this package
imports no provider SDK.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from groundeval.errors import ConfigError

if TYPE_CHECKING:
    import httpx2

    from groundeval.models.base import ModelRole
    from groundeval.models.policy import PolicyModel
    from groundeval.models.providers.base import Provider

__all__ = ["PROVIDERS", "ModelSpec", "check_model", "check_role", "get_model", "model_class", "parse_spec",
           "rejects_temperature"]

from groundeval.models.providers import PROVIDERS

_URL = re.compile(r"^(?P<name>.*?)@(?P<url>https?://.+)$")


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A parsed model spec.

    Attributes:
        provider: A key of ``PROVIDERS``.
        name: The model id (None: the provider's default).
        base_url: The server's URL for ``openai-compatible`` (may hold credentials: never show it).
    """

    provider: str
    name: str | None
    base_url: str | None = None


def parse_spec(spec: str) -> ModelSpec:
    """Read ``<provider>/<model>`` or ``openai-compatible/<model>@<base URL>``.

    Examples: ``anthropic/claude-opus-4-8``, ``anthropic`` (its default model),
    ``openai-compatible/qwen2.5-7b@http://127.0.0.1:8000/v1``, ``local/smollm2``.

    Raises:
        ConfigError: The provider is unknown or the spec is empty (the message lists the known
            providers and the form of a spec), or an ``openai-compatible`` spec's part after ``@``
            is not an http(s) URL.
    """
    provider, _, rest = spec.strip().partition("/")
    if provider not in PROVIDERS:
        known = ", ".join(PROVIDERS)
        raise ConfigError(
            f"model spec {spec!r}: unknown provider {provider!r}; write <provider>/<model> with a provider "
            f"among {known} (e.g. anthropic/claude-opus-4-8, openai-compatible/<name>@http://127.0.0.1:8000/v1)"
        )
    found = _URL.match(rest)
    if found:
        return ModelSpec(provider, found["name"] or None, found["url"])
    if provider == "openai-compatible" and "@" in rest:
        url = rest.rpartition("@")[2]
        raise ConfigError(
            f"model spec {spec!r}: {url!r} after '@' is not an http(s) URL; write "
            "openai-compatible/<name>@<base URL>, e.g. openai-compatible/qwen2.5-7b@http://127.0.0.1:8000/v1"
        )
    return ModelSpec(provider, rest or None)


def get_model(
    spec: str | ModelSpec,
    role: ModelRole = "agent",
    *,
    options: Mapping[str, Any] | None = None,
    owner: str | None = None,
    hints: Mapping[str, str] | None = None,
    http_client: httpx2.Client | None = None,
    sleep: Callable[[float], None] | None = None,
) -> PolicyModel[Any]:
    """Make the ``Model`` a spec names, with the one retry, deadline, pricing and spending policy.

    Args:
        spec: A spec string (see ``parse_spec``) or a parsed ``ModelSpec``.
        role: ``agent`` or ``judge``.
        options: ``max_tokens`` (tokens), ``temperature``, ``max_retries``, ``timeout`` (seconds)
            and the provider's own (``base_url``; the spec's URL wins).
        owner: Who uses it, as messages name it (default ``the <role> model``).
        hints: Advice for messages (see ``models.providers.base.Provider``).
        http_client: An ``httpx2.Client`` for the SDK (tests).
        sleep: Replacement for ``time.sleep`` between retries (tests).

    Raises:
        ConfigError: Unknown provider, a missing SDK, key or setting, an option out of range, or a
            role that is not one of ``models.base.ROLES``.
    """
    from groundeval.models.policy import PolicyModel

    check_role(role)
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    api = model_class(parsed.provider)(parsed.name, role=role, options=_options(parsed, options), owner=owner,
                                       hints=hints, http_client=http_client)
    return PolicyModel(api, sleep=sleep)


def check_role(role: object) -> None:
    """Refuse a role that is not one of ``models.base.ROLES``.

    Raises:
        ConfigError: The role is unknown; the message lists the roles (and the closest one).
    """
    from groundeval.errors import did_you_mean
    from groundeval.models.base import ROLES

    if role not in ROLES:
        hint = did_you_mean(str(role), ROLES)
        raise ConfigError(f"unknown model role {role!r}{hint}; use one of: {', '.join(ROLES)}")


def rejects_temperature(spec: str) -> bool:
    """True when the model a spec names answers an explicit temperature with a 400 (send none).

    The provider decides (``Provider.takes_temperature``): Claude Opus 4.7
    and later, and ``anthropic`` alone (its default model is one). False for an unknown provider.
    """
    try:
        parsed = parse_spec(spec)
    except ConfigError:
        return False
    cls = model_class(parsed.provider)
    return not cls.takes_temperature(parsed.name or cls.default_model)


def model_class(provider: str) -> type[Provider[Any]]:
    """The ``Provider`` class of a provider prefix (imports its module, not its SDK)."""
    from groundeval.models.providers import provider_class

    return provider_class(provider)


def check_model(
    spec: str | ModelSpec, *, options: Mapping[str, Any] | None = None, owner: str,
    hints: Mapping[str, str] | None = None,
) -> None:
    """What ``get_model`` would refuse, without building anything (the pytest-xdist controller).

    Raises:
        ConfigError: As ``get_model``.
    """
    from groundeval.models.policy import PolicyModel

    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    PolicyModel.check(
        model_class(parsed.provider), parsed.name, options=_options(parsed, options), owner=owner, hints=hints
    )


def _options(parsed: ModelSpec, options: Mapping[str, Any] | None) -> dict[str, Any]:
    merged = dict(options or {})
    if parsed.base_url:
        merged["base_url"] = parsed.base_url
    return merged
