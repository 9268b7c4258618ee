"""The web console in a real browser (playwright-core driving Debian's Chromium) against a real
``broker-emu serve``, with a real client: a fault added by a click is one our producer then
meets; a parked acks=all produce appears in the purgatory view and leaves it when it expires;
the timeline shows the client's connection closed and who closed it. Real time, generous bounds."""

from __future__ import annotations

import os
import time

import pytest

import client
from client.errors import KafkaError
from tests.broker_emu.control.serve import Served, http_call
from tools.console_browser import BrowserUnavailable, ConsoleBrowser, check_available

pytestmark = pytest.mark.realclient


@pytest.fixture
def browser_ok():
    try:
        check_available()
    except BrowserUnavailable as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(str(exc))


def _boot(served: Served) -> str:
    return ",".join(f"{h}:{p}" for h, p in served.bootstrap)


def test_a_fault_clicked_in_the_console_is_what_the_client_meets(browser_ok):
    with Served(topic="orders:1:3") as s, ConsoleBrowser(f"{s.control}/console") as b:
        b.wait('[data-testid="status"]', text="live")
        b.wait('[data-testid="partition-orders-0"]')
        assert b.count('[data-testid^="broker-"]') == 3
        b.click('[data-testid="quick-black-hole-produce"]')
        b.wait('[data-testid="faults"] tbody tr')                     # the rule shows, from the stream
        _, faults = http_call(s.port, "GET", "/faults")
        assert [f["action"]["type"] for f in faults["faults"]] == ["black_hole"]
        with client.Producer({"bootstrap.servers": _boot(s), "acks": "1", "request.timeout.ms": 1500,
                              "delivery.timeout.ms": 3000, "linger.ms": 0}) as p:
            f = p.send("orders", b"into the hole", partition=0)
            with pytest.raises(client.DeliveryTimeoutException):
                f.result(20)
        b.wait_until(lambda: int(b.text('[data-testid="fault-1-applied"]') or 0) >= 1, "the rule's hits")
        b.wait('[data-testid="closed"] li', text="closed by client")  # request.timeout.ms: our client gave up
        b.click('[data-testid="remove-fault-1"]')
        b.wait('[data-testid="fault-1"]', state="detached")
        assert b.errors() == []


def test_a_parked_produce_appears_in_the_purgatory_and_leaves_when_it_expires(browser_ok):
    with Served(topic="orders:1:3") as s, ConsoleBrowser(f"{s.control}/console") as b:
        b.wait('[data-testid="partition-orders-0"]')
        b.click('[data-testid="stall-orders-0"]')                     # followers stop: acks=all must wait
        # request.timeout.ms is the Produce's timeout_ms (Java's and ours), so the broker's purgatory
        # expires it after 6 s, well before the stalled followers would leave the ISR
        # (replica.lag.time.max.ms 30 s) and let acks=all succeed with the leader alone
        with client.Producer({"bootstrap.servers": _boot(s), "acks": "all", "request.timeout.ms": 6000,
                              "delivery.timeout.ms": 60000, "linger.ms": 0, "retries": 0,
                              "client.id": "parked-client"}) as p:
            start = time.monotonic()
            f = p.send("orders", b"waits for the followers", partition=0)
            b.wait('[data-testid="purgatory"] tbody tr[data-testid^="op-parked-client-"]')
            assert "orders-0 to offset 1" in b.text('[data-testid="purgatory"] tbody')
            assert "of 6.0 s" in b.text('[data-testid="purgatory"] tbody')    # its countdown, against timeout_ms
            assert "Produce" in b.text('[data-testid="connections"] tbody')   # in flight on its connection
            b.select('[data-testid="timeline-client"]', "parked-client")
            b.wait('[data-testid="timeline-window"]')                        # its 6 s window in the purgatory
            b.wait('[data-testid="purgatory-empty"]', timeout_ms=30000)       # expired: gone from the view
            assert time.monotonic() - start >= 5.5
            # both clocks ran 6 s: the broker's answer (REQUEST_TIMED_OUT) or the client's own
            # request.timeout.ms, whichever fired first (the race Java's equal settings make)
            with pytest.raises(KafkaError, match="REQUEST_TIMED_OUT|request.timeout.ms=6000"):
                f.result(30)


def test_the_timeline_shows_the_clients_disconnect(browser_ok):
    with Served(topic="orders:1:3") as s, ConsoleBrowser(f"{s.control}/console") as b:
        b.wait('[data-testid="status"]', text="live")
        with client.Producer({"bootstrap.servers": _boot(s), "client.id": "timeline-client"}) as p:
            p.send("orders", b"one", partition=0).result(20)
        b.wait('[data-testid="timeline-client"] option[value="timeline-client"]', state="attached")
        b.select('[data-testid="timeline-client"]', "timeline-client")
        b.wait('[data-testid^="timeline-close-"]', text="client")            # ✕ client: it closed the connection
        assert b.count('[data-testid="timeline"] rect.req') >= 2              # its requests, answered
        lanes = b.count('[data-testid="timeline"] text.lane')
        assert lanes >= 2                                                     # bootstrap and leader connections
        first = b.cmd("attr", selector='[data-testid="timeline-conn"] option:nth-child(2)', name="value")
        b.select('[data-testid="timeline-conn"]', first)
        b.wait_until(lambda: b.count('[data-testid="timeline"] text.lane') == 1, "one connection's lane")
