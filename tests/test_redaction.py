"""``redaction.clean``: its fast path (strings with nothing to change are kept) gives what ``clean_text`` gives."""

from __future__ import annotations

from typing import Any

import pytest

from groundeval.redaction import REDACTED, clean, clean_text, redact

TRICKY = [
    "plain display 81 MG Oral Tablet",
    "key sk-test-0123456789abcdef inside",
    "http://user:hunter22@host:8000/v1",
    "Authorization: Bearer abc.def-ghi",
    "BASIC dXNlcjpwYXNz",
    "bell\x07 and escape\x1b[31m",
    "half an emoji \ud83c",
    "tab\tnewline\ncarriage\r",
    "",
    "a@b",
]


class Sub(str):
    """A str subclass (an enum member's value, say)."""


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUNDEVAL_TEST_API_KEY", "sk-test-0123456789abcdef")


def test_every_string_of_a_nested_value_comes_out_as_clean_text_makes_it() -> None:
    value: dict[Any, Any] = {
        "strings": TRICKY, "nested": {s: [s, (s, 1)] for s in TRICKY}, 3: Sub("x sk-test-0123456789abcdef"),
        "numbers": [1, 2.5, True, None],
    }
    out = clean(value)
    assert out["strings"] == [clean_text(s) for s in TRICKY]
    assert out["nested"] == {clean_text(s): [clean_text(s), [clean_text(s), 1]] for s in TRICKY}
    assert out["3"] == f"x {REDACTED}" and out["numbers"] == [1, 2.5, True, None]
    assert REDACTED in out["strings"][1] and "hunter22" not in str(out) and "\ud83c" not in str(out)
    assert "\x1b" not in str(out) and out["strings"][7] == TRICKY[7]


def test_a_string_with_nothing_to_change_is_the_same_object() -> None:
    text = "nothing to see here " * 50
    assert clean([text])[0] is text


def test_redact_is_idempotent_so_a_redacted_cached_answer_scores_as_it_first_did(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_API_KEY", "sk-abcdef0123456789")
    texts = [
        'Authorization: Bearer sk-abcdef0123456789 and Basic dXNlcjpwYXNz',
        '[{"display": "http://user:pw@host/v1 sk-abcdef0123456789"}]',
        "Bearer [REDACTED] http://[REDACTED]@host",
    ]
    for text in texts:
        once = redact(text)
        assert "sk-abcdef0123456789" not in once and "user:pw" not in once
        assert redact(once) == once


def test_an_echoed_token_is_redacted_and_a_word_after_basic_is_not() -> None:
    assert redact("Authorization: Basic dXNlcjpwYXNz") == "Authorization: Basic [redacted]"
    assert redact("bearer abc.def-ghi0") == "bearer [redacted]"
    # answers are scored after redaction: ordinary words after "Basic" must come through unchanged
    for text in ("Basic metabolic panel - Blood", "BASIC METABOLIC PANEL", "Bearer Pharmaceuticals"):
        assert redact(text) == text


def test_a_secret_is_found_even_when_another_thread_changes_the_environment_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pytest deletes PYTEST_CURRENT_TEST on the main thread while calls made ahead redact in threads."""
    import os
    from collections.abc import ItemsView

    from groundeval import redaction

    failures: list[Exception] = [KeyError("PYTEST_CURRENT_TEST"), RuntimeError("dictionary changed size")]

    class Changing(dict[str, str]):
        """An environment whose first listing meets a key deleted meanwhile, the second one that changed size."""

        def items(self) -> ItemsView[str, str]:  # type: ignore[override]
            if failures:
                raise failures.pop(0)
            return super().items()

    monkeypatch.setattr(os, "environ", Changing({"MY_API_KEY": "sk-live-0123456789abcdef"}))
    assert redaction._env_secrets() == ["sk-live-0123456789abcdef"]
