"""The one loader of extension points: a ``module:attribute`` spec to the object it names.

Tasks (``groundeval.tasks.task_class``) and agents (``groundeval.agents.base.make_agent``) are
named the same ways: a built-in name (looked up in the task or agent table first), a name another
package registers under an entry-point group, or ``package.module:attribute``. For a spec that is
not a built-in, the current working directory is importable (as with ``python -m pytest`` or
uvicorn), so ``my_agents.py`` next to where you run works, in every pytest-xdist worker too.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from groundeval.errors import ConfigError

__all__ = ["load_target"]


def load_target(
    spec: str, target: str, *, kind: str, builtin: bool,
    import_failed: Callable[[ImportError], ConfigError | None] | None = None,
) -> Any:
    """Import ``target`` (``package.module:attribute``, dotted attributes allowed) and return the attribute.

    Args:
        spec: What the user wrote (``--groundeval-agent=...``), for messages.
        target: ``package.module:attribute``.
        kind: ``"task"`` or ``"agent"``, for messages.
        builtin: True for groundeval's own targets (the working directory is then not put on ``sys.path``).
        import_failed: Turns an ``ImportError`` into a more precise ``ConfigError`` (a missing extra),
            or returns None for the generic message.

    Raises:
        ConfigError: The module cannot be imported (naming it, with the fix) or has no such attribute.
    """
    module_name, _, attr = target.partition(":")
    if not builtin and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        precise = import_failed(exc) if import_failed is not None else None
        if precise is not None:
            raise precise from exc
        raise ConfigError(
            f"{kind} {spec!r}: cannot import {module_name!r} ({exc}); run from the directory that holds it, "
            "or add that directory to PYTHONPATH"
        ) from exc
    found: Any = module
    for part in attr.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ConfigError(f"{kind} {spec!r}: {module_name!r} has no attribute {attr!r}") from None
    return found
