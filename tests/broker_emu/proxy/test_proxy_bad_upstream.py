"""An upstream that misbehaves is a clear error on the one connection it answered, never a
crash of the proxy: a wrong correlation id, an impossible frame size, half a frame and a silent
close each close the client's connection (``closed_by`` broker, the reason naming the upstream),
and the next client is served."""

from __future__ import annotations

import pytest

from broker_emu.proxy.proxy import run_proxy_in_thread
from client.protocol.codec import decode_response, encode_request
from tests.broker_emu.proxy.conftest import events
from tests.broker_emu.proxy.fake_upstream import MISDEEDS, FakeUpstream
from tests.broker_emu.proxy.wire import roundtrip

pytestmark = pytest.mark.realclient


def test_each_misdeed_closes_its_connection_and_the_proxy_serves_on():
    with FakeUpstream() as upstream, run_proxy_in_thread(upstream.bootstrap) as proxy:
        for misdeed in MISDEEDS:
            assert roundtrip(proxy.bootstrap, encode_request(3, 12, 1, misdeed, {"topics": None})) is None, misdeed
        answer = roundtrip(proxy.bootstrap, encode_request(3, 12, 9, "well-behaved", {"topics": None}))
        assert answer is not None
        correlation_id, body = decode_response(3, 12, answer)
        assert correlation_id == 9 and body["brokers"][0]["port"] == int(proxy.bootstrap.rsplit(":", 1)[1])
        closes = {e.client_id: e.details for e in events(proxy, "conn_close")}
    reasons = {m: closes[m]["reason"] for m in MISDEEDS}
    assert all(closes[m]["closed_by"] == "broker" for m in MISDEEDS)
    assert "correlation id 2 to request 1" in reasons["wrong-correlation-id"]
    assert "upstream sent a bad frame" in reasons["impossible-size"]
    assert "upstream closed" in reasons["half-a-frame"] and "upstream closed" in reasons["silent-close"]
