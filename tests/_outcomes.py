"""The outcome counts of a pytester run, without its warning count.

LangChain's tool factory calls pydantic's deprecated ``validate_arguments``, which warns once per
process; which in-process run of a worker sees it depends on how pytest-xdist spreads the tests.
The outcome counts are what these tests compare.
"""

from __future__ import annotations

import pytest


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    """``result.parseoutcomes()`` without ``warnings``."""
    return {k: v for k, v in result.parseoutcomes().items() if k not in ("warnings", "warning")}
