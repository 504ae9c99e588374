"""Where a task option's value comes from when it is given more than once."""

from __future__ import annotations

import pytest

COLLECT = ["--groundeval-task=extraction", "--groundeval-agent=baseline", "--collect-only", "-q", "-p", "no:cacheprovider"]


def test_a_flag_and_the_generic_option_disagreeing_on_the_command_line_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*COLLECT, "--groundeval-min-f1=0.9", "--groundeval-option=min_f1=0.5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: --groundeval-min-f1=0.9 and --groundeval-option=min_f1=0.5 both set the extraction task's option "
        "'min_f1': give one of them",
    ])


def test_the_same_value_twice_however_written_and_a_command_line_value_over_the_ini_file_are_accepted(pytester: pytest.Pytester) -> None:
    assert pytester.runpytest(*COLLECT, "--groundeval-min-f1=0.9", "--groundeval-option=min_f1=0.90").ret == 0
    pytester.makeini("[pytest]\ngroundeval_option = min_f1=0.5\n")
    assert pytester.runpytest(*COLLECT, "--groundeval-min-f1=0.9").ret == 0  # the command line wins over the ini
