"""The in-process check of a report's trip to an xdist controller (``tests/_xdist.py``) can fail."""

from __future__ import annotations

import pytest

from tests._xdist import assert_reports_cross_to_the_controller


def test_a_decimal_property_cannot_reach_the_controller_and_primitives_can(
    pytester: pytest.Pytester, request: pytest.FixtureRequest
) -> None:
    pytester.makepyfile(test_props="""
        from decimal import Decimal

        def test_primitive(record_property):
            record_property("f1", 0.5)
            record_property("ok", True)

        def test_decimal(record_property):
            record_property("cost_usd", Decimal("0.25"))
    """)
    fine = pytester.runpytest("-p", "no:cacheprovider", "-k", "primitive", "-W", "ignore::pytest.PytestWarning")
    assert assert_reports_cross_to_the_controller(fine, request.config) == 3  # setup, call, teardown
    broken = pytester.runpytest("-p", "no:cacheprovider", "-k", "decimal", "-W", "ignore::pytest.PytestWarning")
    with pytest.raises(AssertionError, match=r"test_decimal.*cannot reach the controller"):
        assert_reports_cross_to_the_controller(broken, request.config)
