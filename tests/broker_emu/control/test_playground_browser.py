"""The timeout playground in a real browser (playwright-core driving Debian's Chromium) against the
full ``broker-emu serve`` (conformance.main registers the scenarios): pick a scenario, change its
settings, run it in virtual time, and read the timeline and who gave up first.

For our producer the Produce race cannot be won by the broker: request.timeout.ms is both the
client's clock and the Produce's timeout_ms, and the broker's clock starts later, after the
append. The winner moves in admin.delete-records-purgatory, where the two clocks are two
settings: the deleteRecords call's timeout (DeleteRecords' timeout_ms, the broker's) and
request.timeout.ms (the client's, per attempt)."""

from __future__ import annotations

import os

import pytest

from tests.broker_emu.control.serve import Served
from tools.console_browser import BrowserUnavailable, ConsoleBrowser, check_available

pytestmark = pytest.mark.browser


@pytest.fixture
def browser_ok():
    try:
        check_available()
    except BrowserUnavailable as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(str(exc))


def run_and_read(b: ConsoleBrowser) -> tuple[str, str, float]:
    b.click('[data-testid="pg-run"]')
    b.wait('[data-testid="pg-result"][data-state="done"]', state="attached")
    drawn_ms = float(b.cmd("attr", selector='[data-testid="pg-result"]', name="data-drawn-ms"))
    return b.text('[data-testid="pg-winner"]'), b.text('[data-testid="pg-verdict"]'), drawn_ms


def test_the_playground_runs_a_scenario_and_a_setting_moves_the_winner(browser_ok):
    with Served(module="conformance.main") as s, ConsoleBrowser(f"{s.control}/console") as b:
        b.click('[data-testid="playground-link"]')                 # linked from the console
        b.wait('[data-testid="pg-scenario"] option[value="server.purgatory-request-timed-out"]', state="attached")
        b.select('[data-testid="pg-scenario"]', "server.purgatory-request-timed-out")
        assert "REQUEST_TIMED_OUT" in b.text('[data-testid="pg-teaching"]')
        assert b.cmd("attr", selector='[data-testid="pg-setting-request.timeout.ms"]', name="value") == "30000"

        winner, verdict, drawn_ms = run_and_read(b)
        assert winner == "client" and "request.timeout.ms = 30000 ms" in verdict
        assert drawn_ms < 1000, f"the timeline took {drawn_ms} ms to appear"
        assert b.count('[data-testid="pg-timeline"] svg rect.span') >= 2
        assert "who gave up first" in b.text('[data-testid="pg-timeline"]')

        # a longer client timeout does not hand the Produce race to the broker: one setting is both clocks
        b.fill('[data-testid="pg-setting-request.timeout.ms"]', "40000")
        b.fill('[data-testid="pg-setting-delivery.timeout.ms"]', "60000")
        winner, verdict, _ = run_and_read(b)
        assert winner == "client" and "request.timeout.ms = 40000 ms" in verdict

        # the race's boundary: no time at all between sending and the append, and the clocks tie
        b.fill('[data-testid="pg-setting-fault.ms"]', "0")
        winner, verdict, _ = run_and_read(b)
        assert winner == "broker" and "REQUEST_TIMED_OUT" in verdict

        # two clocks, two settings: the call's timeout (the broker's timeout_ms) against request.timeout.ms
        b.select('[data-testid="pg-scenario"]', "admin.delete-records-purgatory")
        b.wait('[data-testid="pg-setting-timeout.ms"]')
        winner, verdict, _ = run_and_read(b)
        assert winner == "broker" and "REQUEST_TIMED_OUT" in verdict
        b.fill('[data-testid="pg-setting-request.timeout.ms"]', "10000")
        winner, verdict, _ = run_and_read(b)
        assert winner == "client" and "request.timeout.ms = 10000 ms" in verdict

        # bad input: the server's 400, shown, and no crash
        b.fill('[data-testid="pg-setting-request.timeout.ms"]', "-5")
        b.click('[data-testid="pg-run"]')
        b.wait('[data-testid="pg-error"]', text="request.timeout.ms")
        assert b.errors() == []
