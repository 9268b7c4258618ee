"""The proxy on the wire: addresses rewritten in every version the codec has, requests forwarded
as the client sent them, what the codec cannot read passed through byte for byte, bad input
closed on its own connection."""

from __future__ import annotations

import struct

import pytest

from broker_emu.proxy.answers import cap_api_versions, produce_acks
from client.protocol.codec import decode_request_header, decode_response, encode_request, supported_versions
from client.protocol.records import Record, encode_batch
from tests.broker_emu.proxy.conftest import events, ports
from tests.broker_emu.proxy.wire import connect, read_frame, roundtrip

pytestmark = pytest.mark.realclient


def _ask(bootstrap: str, api_key: int, version: int, body: dict, index: int = 0):
    answer = roundtrip(bootstrap, encode_request(api_key, version, 42, "wire-test", body), index)
    assert answer is not None
    correlation_id, decoded = decode_response(api_key, version, answer)
    assert correlation_id == 42
    return decoded


def test_metadata_addresses_are_the_proxys_in_every_version(upstream, proxy):
    lo, hi = supported_versions(3)
    for version in range(max(lo, 1), hi + 1):
        meta = _ask(proxy.bootstrap, 3, version, {"topics": None, "allow_auto_topic_creation": False}, index=version % 3)
        assert {b["port"] for b in meta["brokers"]} == ports(proxy.bootstrap), version
        assert {b["host"] for b in meta["brokers"]} == {"127.0.0.1"}
        assert sorted(b["node_id"] for b in meta["brokers"]) == [0, 1, 2]
        assert [t["name"] for t in meta["topics"]] == ["t"]
    direct = _ask(upstream.bootstrap, 3, 12, {"topics": None})
    assert {b["port"] for b in direct["brokers"]} == ports(upstream.bootstrap)   # the proxy changed them


def test_find_coordinator_and_describe_cluster_addresses_are_the_proxys(proxy):
    for version in range(0, supported_versions(10)[1] + 1):
        body = {"key": "g", "key_type": 0, "coordinator_keys": ["g", "h"]}
        answer = _ask(proxy.bootstrap, 10, version, body)
        nodes = [answer] if version < 4 else answer["coordinators"]
        assert nodes and all(n["port"] in ports(proxy.bootstrap) for n in nodes), (version, answer)
    for version in range(0, supported_versions(60)[1] + 1):
        answer = _ask(proxy.bootstrap, 60, version, {"include_cluster_authorized_operations": False, "endpoint_type": 1})
        assert {b["port"] for b in answer["brokers"]} == ports(proxy.bootstrap)


def test_requests_go_upstream_as_the_client_sent_them(upstream, proxy):
    seen: list[bytes] = []
    upstream.call(lambda: setattr(upstream.cluster, "frame_tap", lambda conn, frame: seen.append(bytes(frame))))
    batch = encode_batch([Record(b"hello")], base_timestamp=1_700_000_000_000)
    produce = encode_request(0, 9, 5, "wire-test", {"acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": batch}]}]})
    answer = roundtrip(proxy.bootstrap, produce, index=upstream.call(lambda: upstream.cluster.partition("t", 0).leader))
    assert answer is not None and decode_response(0, 9, answer)[1]["responses"][0]["partition_responses"][0]["error_code"] == 0
    assert produce[4:] in seen


def test_an_api_the_codec_does_not_know_passes_through_byte_for_byte(upstream, proxy):
    seen: list[bytes] = []
    upstream.call(lambda: setattr(upstream.cluster, "frame_tap", lambda conn, frame: seen.append(bytes(frame))))
    unknown = struct.pack(">hhih", 1000, 3, 77, 4) + b"test" + b"\x01\x02\x03 opaque body"
    with connect(proxy.bootstrap) as s:
        s.sendall(struct.pack(">i", len(unknown)) + unknown)
        assert read_frame(s) is None          # the upstream emulator closes on an unknown API; so does the proxy
    assert unknown in seen
    recv = [e for e in events(proxy, "recv") if e.api_key == 1000]
    assert recv and recv[0].details.get("undecoded") is True
    close = [e for e in events(proxy, "conn_close") if e.conn == recv[0].conn]
    assert close[0].details["closed_by"] == "broker" and "upstream" in close[0].details["reason"]


def test_an_answer_the_codec_cannot_read_passes_through_byte_for_byte(upstream, proxy):
    too_new = encode_request(18, 4, 9, "wire-test", {"client_software_name": "x", "client_software_version": "1"})
    too_new = too_new[:6] + struct.pack(">h", 99) + too_new[8:]     # ApiVersions v99: KIP-511's v0 answer
    assert decode_request_header(too_new[4:]).api_version == 99
    direct = roundtrip(upstream.bootstrap, too_new)
    through = roundtrip(proxy.bootstrap, too_new)
    assert direct is not None and through == direct


def test_api_versions_caps_every_api_the_codec_reads():
    """So that faults which rewrite answers or match topics always apply (docs/proxy.md)."""
    body = {"error_code": 0, "api_keys": [
        {"api_key": 0, "min_version": 3, "max_version": 99},       # Produce: capped to the codec
        {"api_key": 3, "min_version": 0, "max_version": 99},       # Metadata: capped to the codec
        {"api_key": 60, "min_version": 50, "max_version": 60},     # DescribeCluster: nothing rewritable, left out
        {"api_key": 1000, "min_version": 0, "max_version": 7},     # unknown to the codec: as the upstream has it
    ]}
    assert cap_api_versions(body)
    assert body["api_keys"] == [{"api_key": 0, "min_version": 3, "max_version": supported_versions(0)[1]},
                                {"api_key": 3, "min_version": 0, "max_version": supported_versions(3)[1]},
                                {"api_key": 1000, "min_version": 0, "max_version": 7}]
    assert not cap_api_versions(body)


def test_api_versions_through_the_proxy_advertise_what_it_can_rewrite(proxy):
    answer = _ask(proxy.bootstrap, 18, 3, {"client_software_name": "x", "client_software_version": "1"})
    ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}
    for key in (3, 10, 60):
        assert ranges[key][1] <= supported_versions(key)[1]
    assert 0 in ranges and 1 in ranges


@pytest.mark.parametrize("version", range(0, supported_versions(0)[1] + 1))
def test_produce_acks_read_from_the_bytes(version):
    for acks in (0, 1, -1):
        frame = encode_request(0, version, 1, "c", {"transactional_id": "tx" if version >= 3 else None, "acks": acks,
                                                     "timeout_ms": 100, "topic_data": []})[4:]
        header = decode_request_header(frame)
        assert produce_acks(frame, header.size - (1 if version >= 9 else 0), version) == acks


def test_garbage_closes_its_connection_and_the_proxy_keeps_serving(proxy):
    for payload in (b"\xff\xff\xff\xff", (2**31 - 1).to_bytes(4, "big") + b"x" * 10, b"\x00\x00\x00\x03\x00\x03\x00"):
        with connect(proxy.bootstrap) as s:
            s.sendall(payload)
            assert read_frame(s) is None
    meta = _ask(proxy.bootstrap, 3, 12, {"topics": None})
    assert len(meta["brokers"]) == 3
    reasons = [e.details["reason"] for e in events(proxy, "conn_close") if e.details["closed_by"] == "broker"]
    assert any("socket.request.max.bytes" in r for r in reasons) and any("corrupt request header" in r for r in reasons)


def test_the_answer_cache_gives_each_answer_its_correlation_id_and_stays_within_its_bytes():
    from broker_emu.proxy.answers import AnswerCache

    cache = AnswerCache()
    cache.LIMIT_BYTES = 1000
    for i in range(50):
        answer = struct.pack(">i", 1) + bytes([i]) * 100
        cache.put(3, 12, answer, struct.pack(">ii", 104, 1) + b"rewritten" * 11 + b"x", [])
    assert cache.bytes <= 1000 and len(cache._entries) == 4
    hit = cache.get(3, 12, struct.pack(">i", 77) + bytes([49]) * 100)
    assert hit is not None and hit[0][:8] == struct.pack(">ii", 104, 77) and hit[0][8:17] == b"rewritten"
    assert cache.get(3, 12, struct.pack(">i", 77) + bytes([0]) * 100) is None     # the oldest went first


def test_bytes_after_a_body_are_traced_as_an_anomaly_and_forwarded_as_sent(upstream, proxy):
    seen: list[bytes] = []
    upstream.call(lambda: setattr(upstream.cluster, "frame_tap", lambda conn, frame: seen.append(bytes(frame))))
    frame = encode_request(3, 12, 4, "anomaly", {"topics": None})
    frame = struct.pack(">i", len(frame) - 4 + 3) + frame[4:] + b"\0\0\0"   # librdkafka's admin client does this
    answer = roundtrip(proxy.bootstrap, frame)
    assert answer is not None and decode_response(3, 12, answer)[0] == 4
    assert frame[4:] in seen
    anomaly = events(proxy, "request_anomaly")
    assert anomaly and "3 bytes after the body" in anomaly[0].details["anomalies"][0]


def test_a_too_new_api_versions_is_answered_by_the_proxy_so_the_client_downgrades(upstream, proxy):
    """Kafka 4.4 serves ApiVersions v5, which our codec cannot read: passed through, its answer
    could not be capped and the client would reach Metadata versions whose addresses the proxy
    cannot rewrite (franz-go then connected around the proxy). The proxy answers as Kafka does
    to a version it lacks (KIP-511: UNSUPPORTED_VERSION in the v0 layout, with its range)."""
    seen: list[bytes] = []
    upstream.call(lambda: setattr(upstream.cluster, "frame_tap", lambda conn, frame: seen.append(bytes(frame))))
    _, hi = supported_versions(18)
    frame = bytearray(encode_request(18, hi, 7, "wire-test", {"client_software_name": "t", "client_software_version": "1"}))
    struct.pack_into(">h", frame, 6, hi + 1)   # the header's api_version: one past what the codec reads
    answer = roundtrip(proxy.bootstrap, bytes(frame))
    assert answer is not None
    correlation_id, decoded = decode_response(18, 0, answer)
    assert correlation_id == 7 and decoded["error_code"] == 35
    assert [(k["api_key"], k["min_version"], k["max_version"]) for k in decoded["api_keys"]] == [(18, 0, hi)]
    assert not [f for f in seen if struct.unpack_from(">hh", f)[0] == 18]   # nothing of it went upstream
    assert any(e.details.get("too_new") for e in events(proxy, "recv"))
