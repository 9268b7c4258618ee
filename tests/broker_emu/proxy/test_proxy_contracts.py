"""The conformance contracts judge a proxied run as they judge an emulated one: the proxy's
trace (and the upstream's, when the upstream is the emulator) is evidence of the same shape."""

from __future__ import annotations

import time

import pytest

import client
from client.errors import KafkaError
from conformance.contracts import client_disconnects_after
from conformance.model import Evidence
from tests.broker_emu.proxy.conftest import add_fault, events

pytestmark = pytest.mark.realclient

TIMEOUT_MS = 1000


def _black_holed_produce(proxy) -> None:
    """Our client (Java's semantics: request.timeout.ms is the client's own deadline for an
    answer, KIP-19) sends a Produce into the black hole and gives up on the connection."""
    with client.Producer({"bootstrap.servers": proxy.bootstrap, "acks": 1, "linger.ms": 0, "retries": 0,
                          "request.timeout.ms": TIMEOUT_MS, "delivery.timeout.ms": 3000}) as producer:
        future = producer.send("t", b"x", partition=0)
        with pytest.raises(KafkaError):
            future.result(10)
    time.sleep(0.3)


def _judge(trace: list) -> tuple[bool, str, str]:
    evidence = Evidence(outcomes=[], trace=trace, config={"request.timeout.ms": TIMEOUT_MS}, slack_ms=300)
    verdict = client_disconnects_after("Produce", "request.timeout.ms", 300).check(evidence)
    return verdict.passed, verdict.figure, verdict.message


def test_the_disconnect_contract_passes_on_the_proxys_trace(proxy):
    add_fault(proxy, {"match": {"api": "Produce"}, "action": "black_hole"})
    _black_holed_produce(proxy)
    passed, figure, message = _judge(events(proxy))
    assert passed, (figure, message)


def test_the_same_contract_passes_on_the_upstreams_trace_behind_the_proxy(upstream, proxy):
    add_fault(upstream, {"match": {"api": "Produce"}, "action": "black_hole"})
    _black_holed_produce(proxy)
    for trace in (events(upstream), events(proxy)):
        passed, figure, message = _judge(trace)
        assert passed, (figure, message)
