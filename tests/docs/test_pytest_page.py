"""Every example in docs/pytest.md is a test module a user could paste: each runs here as its own
pytest run (the plugin loaded from the installed package, as in a user's project) and passes."""

from __future__ import annotations

import re

import pytest

from tests import ROOT

PAGE = ROOT / "docs" / "pytest.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)
# how many tests each example holds: proof each ran, not only that nothing failed
TESTS = [1, 2, 2, 1, 1]


def test_the_page_has_the_examples_counted_here():
    assert len(EXAMPLES) == len(TESTS)


@pytest.mark.parametrize("index", range(len(TESTS)))
def test_each_example_passes_as_a_users_test_module(pytester, index):
    pytester.makepyfile(**{f"test_example_{index}": EXAMPLES[index]})
    pytester.makeini("[pytest]\ntrio_mode = false\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=TESTS[index])
