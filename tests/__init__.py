"""The test suite, a package so that its folders may mirror the product's (tests/broker_emu,
tests/client, ...) without shadowing the packages they test: a test module is
``tests.broker_emu.test_produce``, never ``broker_emu.test_produce`` (CONTRIBUTING.md, "Where
a test goes")."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent   # the checkout: where docs/, examples/ and the packages are
