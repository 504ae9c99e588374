"""The former home of the local llama.cpp model; it now lives in ``models.providers.local``.

Re-exports that module's public names, so that code importing them from here goes on working.
"""

from __future__ import annotations

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

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_N_CTX",
    "PACKAGED_MODELS",
    "TEMPLATE_TOKENS",
    "LocalProvider",
    "PackagedModel",
    "file_sha256",
    "resolve_model",
    "server_threads",
]
