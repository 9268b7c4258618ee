"""Suite-wide rules. Where a test goes (the tree mirrors the product's folders) is in
CONTRIBUTING.md; a marker is set where the test is (``pytestmark = pytest.mark.browser`` in the
module, or on the test), never here by file name — except ``spark``, which follows the fixture
that starts Spark's JVM (below).

A ``handler_error`` is a bug in the emulator (an exception escaped a handler or an encoder: the
client got UNKNOWN_SERVER_ERROR or lost its connection). Any test during which one happened, in
any cluster of this process, fails with it — unless it is marked ``handler_errors_expected``
(tests of that very path).

Kept Metadata answers are checked against fresh ones throughout (``broker_emu.cluster_shape``),
in this process and in every ``broker-emu serve`` a test starts (the environment is inherited)."""

from __future__ import annotations

import os

import pytest

os.environ["BROKER_EMU_VERIFY_SHAPE"] = "1"   # before broker_emu is imported: it reads it once

from broker_emu.trace import HANDLER_ERRORS

pytest_plugins = ["pytester"]   # tests/broker_emu/test_handler_errors.py runs an inner suite


@pytest.fixture(autouse=True)
def _no_handler_errors(request):
    before = HANDLER_ERRORS.count
    yield
    new = HANDLER_ERRORS.since(before)
    if new and not request.node.get_closest_marker("handler_errors_expected"):
        shown = "; ".join(f"{e.api} v{e.api_version}: {e.details.get('stage')}: {e.details.get('error')} "
                          f"at {e.details.get('at')}" for e in new[:3])
        pytest.fail(f"{HANDLER_ERRORS.count - before} handler_error(s) in the emulator during this test: {shown}",
                    pytrace=False)


def pytest_addoption(parser):
    parser.addoption("--broker", choices=("emulator", "kfake", "kafka", "kafka-proxy"), default="emulator",
                     help="what the real-client tests' cluster fixture starts: broker-emu (default), franz-go's kfake, "
                          "Apache Kafka (3 nodes per test), or Kafka through broker-emu proxy; under the others only "
                          "tests marked any_broker run (tests/realclients/other_brokers.py)")


def pytest_collection_modifyitems(config, items):
    """``spark`` (a marker a fast local run can deselect, README) on every test that asks for
    the ``spark`` fixture, directly or through another fixture: what starts Spark's JVM is the
    fixture, so a new Spark test cannot forget the marker. Every other marker (``browser``,
    ``realclient``, ``slow``, ...) is set where the tests are."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
        if config.getoption("--broker") != "emulator" and "any_broker" not in item.keywords:
            item.add_marker(pytest.mark.skip(reason=f"needs the emulator itself (its trace, faults or state), "
                                                    f"not --broker {config.getoption('--broker')}"))
