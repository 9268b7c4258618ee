"""The hold fault through the proxy: a request held while its client gives up and closes is
still handled upstream when released (over an upstream connection of its own, the client's
having closed with it), its answer dropped. Real time over loopback: short holds, generous bounds."""

from __future__ import annotations

import time

from client.protocol.codec import encode_request
from client.protocol.records import Record, encode_batch
from tests.broker_emu.proxy.conftest import add_fault, events
from tests.broker_emu.proxy.wire import connect


def test_a_request_held_past_its_clients_close_is_handled_upstream_when_released(upstream, proxy):
    leader = upstream.call(lambda: upstream.cluster.partition("t", 0).leader)
    end_before = upstream.call(lambda: upstream.cluster.partition("t", 0).log.log_end_offset)
    add_fault(proxy, {"match": {"api": "Produce"}, "action": {"type": "hold", "until": "delay", "ms": 800}, "times": 1})
    batch = encode_batch([Record(b"late")], base_timestamp=1_700_000_000_000)
    produce = encode_request(0, 9, 7, "late-test", {"acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": batch}]}]})
    sent = time.perf_counter()
    with connect(proxy.bootstrap, index=leader) as s:
        s.sendall(produce)
        time.sleep(0.2)   # the client's request.timeout.ms: it gives up and closes
    landed = None
    while time.perf_counter() - sent < 15 and landed is None:
        if upstream.call(lambda: upstream.cluster.partition("t", 0).log.log_end_offset) > end_before:
            landed = time.perf_counter() - sent
        time.sleep(0.02)
    assert landed is not None and landed >= 0.75, landed   # written upstream, and only once released
    release = next(e for e in events(proxy, "late_release"))
    assert release.details["connection_open"] is False and release.details["reason"].startswith("fallback: 800")
    deadline = time.perf_counter() + 10
    while not events(proxy, "late_answer") and time.perf_counter() < deadline:
        time.sleep(0.02)
    assert [e.details for e in events(proxy, "late_answer")] == [{"held": 1, "dropped": True}]
    closes = [e for e in events(proxy, "conn_close") if e.client_id == "late-test"]
    assert closes and closes[0].details["closed_by"] == "client" and closes[0].t_ms < release.t_ms
