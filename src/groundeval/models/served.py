"""What an OpenAI-compatible server says about itself, and the output budget a prompt leaves in its context.

A server that groundeval does not start (``openai-compatible``) is asked once, before the first
case, what it serves:

* ``GET /props`` (llama.cpp's ``llama-server``): ``default_generation_settings.n_ctx`` (the
  context of one slot, tokens), ``total_slots`` (requests it serves at once), ``model_path``
  and ``build_info``. Its tokenizer is ``POST /tokenize`` with ``{"content": text}``, answering
  ``{"tokens": [...]}``.
  https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md
* ``GET /v1/models``: the served model ``id``; vLLM adds ``max_model_len`` (the context, tokens)
  and ``root`` (the model it was loaded from). vLLM's tokenizer is ``POST /tokenize`` with
  ``{"model", "prompt"}``, answering ``{"count": N}``.
  https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html

* llama-cpp-python's own server (``python -m llama_cpp.server``, the ``local`` agent's) has
  neither ``/props`` nor a context field. Its ``GET /v1/models`` lists each model with
  ``owned_by: "me"`` and ``permissions: []`` (``llama_cpp/server/app.py``); only then is its
  tokenizer asked (so no other server gets a POST it did not expect), ``POST
  /extras/tokenize/count`` with ``{"input": text}`` answering ``{"count": N}``, which confirms it. It serves one
  request at a time (one model behind a lock: one slot). Its context is learnt from the first
  request that does not fit: a 400 whose ``code`` is ``context_length_exceeded`` and whose message
  says ``This model's maximum context length is N tokens`` (``llama_cpp/server/errors.py``,
  ``ErrorResponseFormatters.context_length_exceeded``, 0.3.36); later cases are then fitted before
  any call. The ``local`` agent, which starts that server, reads the facts from its log instead
  (``models.llama_server``).

``output_budget`` is the rule both agents apply to a prompt whose size and context are known: the
answer may use ``min(max_tokens, n_ctx - prompt tokens)`` tokens, and a case that leaves fewer than
``min(max_tokens, MIN_OUTPUT_TOKENS)`` is ``case_too_large`` before any call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from groundeval.errors import CaseTooLargeError

__all__ = [
    "LLAMA_CPP_PYTHON", "MIN_OUTPUT_TOKENS", "ServedFacts", "context_from_error", "looks_like_llama_cpp_python",
    "output_budget", "read_models", "read_props", "read_tokenize_count",
]

LLAMA_CPP_PYTHON = "llama-cpp-python"
"""``ServedFacts.server`` of llama-cpp-python's own server."""
_MAX_CONTEXT = re.compile(r"maximum context length is (\d+) tokens")

MIN_OUTPUT_TOKENS = 256
"""The fewest output tokens a case's answer may be left (or the request's own ``max_tokens`` when
lower): below it the case is ``case_too_large``, not a cut-off answer scored as empty. 256 tokens
hold a short JSON list of a dozen codes or a verdict; every task's answer needs at least that."""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


@dataclass(frozen=True, slots=True)
class ServedFacts:
    """What a server reported about itself (None: it did not say).

    Attributes:
        model_id: The served model's id (``GET /v1/models``), the one matching the requested name.
        n_ctx: The context one request gets, tokens (llama.cpp's slot ``n_ctx``, vLLM's ``max_model_len``).
        n_ctx_from: Where ``n_ctx`` came from (``GET /props``, ``GET /v1/models max_model_len``).
        total_slots: Requests the server serves at once (llama.cpp ``total_slots``).
        server: ``llama.cpp`` (answered ``/props``), ``vllm`` (``max_model_len``), ``llama-cpp-python``
            (answered ``/extras/tokenize/count``), else None.
        model_path: The model file or repository the server loaded (``/props`` ``model_path``, vLLM ``root``).
        build: The server's build (llama.cpp ``build_info``).
    """

    model_id: str | None = None
    n_ctx: int | None = None
    n_ctx_from: str | None = None
    total_slots: int | None = None
    server: str | None = None
    model_path: str | None = None
    build: str | None = None

    def meta(self) -> dict[str, Any]:
        """The facts the server gave, for a case's ``agent_meta`` (keys prefixed ``server_``)."""
        names = {"model_id": "server_model_id", "n_ctx": "n_ctx", "n_ctx_from": "n_ctx_from",
                 "total_slots": "server_slots", "server": "server", "model_path": "server_model_path",
                 "build": "server_build"}
        return {names[k]: v for k, v in asdict(self).items() if v is not None}


def read_props(body: Any) -> dict[str, Any]:
    """The facts in a llama.cpp ``GET /props`` body (empty when it is not one)."""
    if not isinstance(body, Mapping):
        return {}
    settings = body.get("default_generation_settings")
    n_ctx = _int(settings.get("n_ctx")) if isinstance(settings, Mapping) else None
    if n_ctx is None and _int(body.get("total_slots")) is None:
        return {}
    found: dict[str, Any] = {"server": "llama.cpp", "total_slots": _int(body.get("total_slots"))}
    if n_ctx is not None:
        found.update(n_ctx=n_ctx, n_ctx_from="GET /props")
    for key, name in (("model_path", "model_path"), ("build_info", "build")):
        if isinstance(body.get(key), str) and body[key]:
            found[name] = body[key]
    return found


def read_models(body: Any, name: str | None) -> dict[str, Any]:
    """The facts in a ``GET /v1/models`` body about the model ``name`` (or the only one served)."""
    data = body.get("data") if isinstance(body, Mapping) else None
    listed = data if isinstance(data, list) else []
    models = [m for m in listed if isinstance(m, Mapping) and isinstance(m.get("id"), str)]
    chosen = next((m for m in models if m["id"] == name), models[0] if len(models) == 1 else None)
    if chosen is None:
        return {}
    found: dict[str, Any] = {"model_id": chosen["id"]}
    length = _int(chosen.get("max_model_len"))
    if length is not None:
        found.update(n_ctx=length, n_ctx_from="GET /v1/models max_model_len", server="vllm")
        if isinstance(chosen.get("root"), str) and chosen["root"]:
            found["model_path"] = chosen["root"]
    return found


def looks_like_llama_cpp_python(body: Any) -> bool:
    """True when a ``GET /v1/models`` body has llama-cpp-python's shape (``owned_by: "me"``, ``permissions: []``)."""
    data = body.get("data") if isinstance(body, Mapping) else None
    return isinstance(data, list) and bool(data) and all(
        isinstance(m, Mapping) and m.get("owned_by") == "me" and m.get("permissions") == [] for m in data
    )


def read_tokenize_count(body: Any) -> dict[str, Any]:
    """The facts a ``POST /extras/tokenize/count`` answer gives (llama-cpp-python's server), else empty.

    Returns:
        ``{"server": "llama-cpp-python", "total_slots": 1}`` when ``body`` is ``{"count": N}``.
    """
    if isinstance(body, Mapping) and set(body) == {"count"} and isinstance(body["count"], int):
        return {"server": LLAMA_CPP_PYTHON, "total_slots": 1}
    return {}


def context_from_error(details: Mapping[str, Any]) -> int | None:
    """The context a server's "too large" 400 states (``maximum context length is N tokens``), tokens, or None.

    Args:
        details: The classified error's details (``api_message`` as the server sent it).
    """
    match = _MAX_CONTEXT.search(str(details.get("api_message") or ""))
    return _int(int(match.group(1))) if match else None


def output_budget(
    *, label: str, model: str, prompt_tokens: int, max_tokens: int, n_ctx: int, counted_by: str,
    details: Mapping[str, Any] | None = None, fix: str = "",
) -> int:
    """The output limit a prompt leaves in the context: ``min(max_tokens, n_ctx - prompt_tokens)``.

    Args:
        label: The case, for the message.
        model: The model's name, for the message.
        prompt_tokens: The prompt's tokens, chat template included.
        max_tokens: The most output tokens asked for.
        n_ctx: The context the server gives one request, tokens.
        counted_by: How ``prompt_tokens`` were counted (``the server's tokenizer``), for the message.
        details: Facts added to the error's ``details``.
        fix: What the user can change, appended to the message.

    Raises:
        CaseTooLargeError: Fewer than ``min(max_tokens, MIN_OUTPUT_TOKENS)`` tokens are left; no
            call is to be made. ``details`` hold the counts.
    """
    left = n_ctx - prompt_tokens
    floor = min(max_tokens, MIN_OUTPUT_TOKENS)
    if left < floor:
        raise CaseTooLargeError(
            f"{label}: the case is too large for the model {model}: {prompt_tokens:,} prompt tokens ({counted_by}, "
            f"chat template included) leave {max(left, 0):,} of the server's {n_ctx:,}-token context for the "
            f"answer, fewer than the {floor} output tokens a case needs; no call was made. {fix}".rstrip(),
            attempts=0,
            details={**(details or {}), "prompt_tokens": prompt_tokens, "context_tokens": n_ctx,
                     "max_tokens": max_tokens, "min_output_tokens": floor, "counted_by": counted_by},
        )
    return min(max_tokens, left)
