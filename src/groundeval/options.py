"""One option type, ``Option``, and its converters: for the plugin's own settings and for the options a task declares.

Standard library only, and outside ``groundeval.tasks`` and ``groundeval.plugin``: the plugin reads
its option table and the built-in tasks' declared options (``groundeval.registry.builtins``) at
``pytest_addoption``, in every pytest session, groundeval or not, without importing any task,
agent or SDK.

A converter turns the raw string into the value or raises ``ValueError`` whose message is the
reason, starting with ``"must"`` or ``"not "``, so that the plugin and the CLI can show it after
the option and the value (``--groundeval-limit='0': must be 1 or more``). ``float``, ``int`` or
any callable of your own work too: a failure without such a reason reads ``not a valid
<metavar>``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Option",
    "TaskOption",
    "boolean",
    "choice",
    "non_negative_float",
    "non_negative_int",
    "number",
    "positive_float",
    "positive_fraction",
    "positive_int",
    "text",
    "unit_interval",
]


@dataclass(frozen=True, slots=True)
class Option:
    """One option: a threshold a task reads, or one of the plugin's ``--groundeval-*`` settings.

    A task declares its options on its class (``options = (TaskOption("min_f1", ...),)``); they
    are given as ``--groundeval-option=<key>=<value>`` (or the ini line ``groundeval_option =
    <key>=<value>``), and the built-in tasks' options also get first-class flags
    ``--groundeval-<name with - for _>``. The plugin's own table
    (``groundeval.plugin.option_table``) holds the run, agent and task flags, each with an ini
    twin ``groundeval_<key>``.

    Attributes:
        name: ``"min_f1"`` for a task option (also the task's attribute name), ``"max-tokens"`` for a
            flag of the plugin's table; ``key`` and ``dest`` normalise it.
        convert: Turns the raw string into the value; raises ``ValueError`` with the reason (a
            converter of this module, ``float``, ``int`` or your own).
        default: The value when the option is not given.
        help: One line for ``--help`` and the options table (docs/reference/options.md).
        metavar: Placeholder shown in ``--help`` (``"X"``, ``"N"``, ``"SECONDS"``).
        scope: ``"task"`` (read by the task; the default), ``"agent"`` (handed to the agent in
            ``AgentConfig.options``) or ``"run"`` (read by the plugin).
        flag: True for an on/off flag that takes no value on the command line (its ini twin takes
            ``true``/``false``).
    """

    name: str
    convert: Callable[[str], Any]
    default: Any
    help: str
    metavar: str = "VALUE"
    scope: str = "task"
    flag: bool = False

    @property
    def key(self) -> str:
        """The settings key: ``min_f1``."""
        return self.name.replace("-", "_")

    @property
    def dest(self) -> str:
        """The attribute/ini key: ``groundeval_min_f1``."""
        return "groundeval_" + self.key

    def value(self, raw: Any) -> Any:
        """Convert a raw value (a string from the command line or an ini file, or an already-typed value).

        Returns:
            The converted value, or ``default`` when ``raw`` is None.

        Raises:
            ValueError: The value is invalid; the message is the reason (``"must be ..."``,
                ``"not a number"``, ``"not a valid <metavar>"``).
        """
        if raw is None:
            return self.default
        try:
            return self.convert(str(raw).strip())
        except (TypeError, ValueError) as exc:
            reason = str(exc)
            raise ValueError(reason if reason.startswith(("must", "not ")) else f"not a valid {self.metavar}") from None

    def parse(self, raw: Any, task: str) -> Any:
        """``value(raw)``, with a bad value reported as a ``ConfigError``.

        Raises:
            ConfigError: The value is invalid; the message names the task, the key and why.
        """
        try:
            return self.value(raw)
        except ValueError as exc:
            from groundeval.errors import ConfigError

            raise ConfigError(f"task {task!r} option {self.name}={str(raw)!r}: {exc}") from None


TaskOption = Option
"""The name a task's declarations use (``groundeval.TaskOption``): the same type, scope ``"task"``."""


def _whole(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError("not a whole number") from None


def number(value: str) -> float:
    """Any number (``--groundeval-temperature``).

    Raises:
        ValueError: Not a number.
    """
    try:
        return float(value)
    except ValueError:
        raise ValueError("not a number") from None


def positive_int(value: str) -> int:
    """A whole number of at least 1 (a case limit, trials, tokens)."""
    count = _whole(value)
    if count < 1:
        raise ValueError("must be 1 or more")
    return count


def non_negative_int(value: str) -> int:
    """A whole number of at least 0 (retries)."""
    count = _whole(value)
    if count < 0:
        raise ValueError("must be 0 or more")
    return count


def unit_interval(value: str) -> float:
    """A number in [0, 1] (a rate threshold such as ``min_f1``).

    Raises:
        ValueError: Not a number, or outside [0, 1].
    """
    rate = number(value)
    if not 0.0 <= rate <= 1.0:
        raise ValueError("must be between 0 and 1")
    return rate


def positive_fraction(value: str) -> float:
    """A number greater than 0 and at most 1 (a share of trials, ``--groundeval-min-pass-rate``)."""
    share = number(value)
    if not 0.0 < share <= 1.0:
        raise ValueError("must be greater than 0 and at most 1")
    return share


def positive_float(value: str) -> float:
    """A number greater than 0 (seconds for timeouts, USD for a cost limit)."""
    amount = number(value)
    if not amount > 0:
        raise ValueError("must be greater than 0")
    return amount


def non_negative_float(value: str) -> float:
    """A number of at least 0 (seconds between progress lines)."""
    amount = number(value)
    if not amount >= 0:
        raise ValueError("must be 0 or more")
    return amount


_TRUE, _FALSE = frozenset({"true", "yes", "on", "1"}), frozenset({"false", "no", "off", "0"})


def boolean(value: str) -> bool:
    """``true``/``yes``/``on``/``1`` or ``false``/``no``/``off``/``0`` (any case).

    Raises:
        ValueError: Anything else.
    """
    word = value.strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise ValueError("must be true or false")


def text(value: str) -> str:
    """A non-empty string, stripped (a name, a path, a URL)."""
    if not value.strip():
        raise ValueError("must not be empty")
    return value.strip()


def choice(*allowed: str, why: str = "", any_case: bool = False) -> Callable[[str], str]:
    """A converter accepting only ``allowed`` strings; the error lists them (or says ``why``).

    Args:
        *allowed: The accepted values.
        why: The reason shown for anything else (default: ``must be one of: 'a', 'b'``).
        any_case: Accept the values in any case and with surrounding spaces (``TTY`` for ``tty``).
    """

    def convert(value: str) -> str:
        word = value.strip().lower() if any_case else value
        if word not in allowed:
            raise ValueError(why or "must be one of: " + ", ".join(repr(a) for a in allowed))
        return word

    return convert
