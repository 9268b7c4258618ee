"""Hostile bytes: truncations, mutations and absurd lengths only ever raise the codec's own
errors, quickly, without allocating by a claimed size."""

import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from client.protocol import (CorruptFrameError, ProtocolError, decode_request, decode_response, encode_request,
                             encode_response)
from client.protocol.codec import decode_consumer_blob
from tests.protocol.schema_strategies import all_cases, message_strategy

REQUEST_CASES = [(k, v) for k, v, d in all_cases() if d == "request"]


@pytest.mark.parametrize("key, version", REQUEST_CASES, ids=[f"{k}-v{v}" for k, v in REQUEST_CASES])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_frames_raise_only_protocol_errors(key, version, data):
    body = data.draw(message_strategy(key, version, "request"))
    frame = encode_request(key, version, 1, "c", body)[4:]
    resp = encode_response(key, version, 1, data.draw(message_strategy(key, version, "response")))[4:]
    cut = data.draw(st.integers(0, len(frame)))
    pos = data.draw(st.integers(0, max(len(frame) - 1, 0)))
    flipped = bytearray(frame)
    if flipped:
        flipped[pos] ^= data.draw(st.integers(1, 255))
    tail = data.draw(st.binary(max_size=8))
    for bad in (frame[:cut], bytes(flipped), frame + tail):
        try:
            decode_request(bad)
        except CorruptFrameError as exc:
            if len(bad) >= 4:  # the error names the API and version the (possibly mutated) header claims
                claimed_key, claimed_version = int.from_bytes(bad[0:2], "big", signed=True), int.from_bytes(bad[2:4], "big", signed=True)
                assert exc.api_key in (claimed_key, None) and exc.version in (claimed_version, None)
            assert "at byte" in str(exc)
        except ProtocolError:
            pass
    for bad in (resp[: data.draw(st.integers(0, len(resp)))], resp + tail):
        try:
            decode_response(key, version, bad)
        except ProtocolError:
            pass


@given(st.binary(max_size=64))
@settings(max_examples=500, deadline=None)
def test_random_bytes(raw):
    for fn in (decode_request, lambda b: decode_response(3, 12, b), lambda b: decode_response(0, 3, b),
               lambda b: decode_consumer_blob("CONSUMER_PROTOCOL_SUBSCRIPTION", b)):
        try:
            fn(raw)
        except ProtocolError:
            pass


def _metadata_v4_with_topic_count(count: int) -> bytes:
    # request header v1: api 3, version 4, corr 1, client id "c"; then topics: int32 count, nothing else
    return b"\x00\x03\x00\x04\x00\x00\x00\x01\x00\x01c" + count.to_bytes(4, "big", signed=True)


def test_huge_claimed_lengths_fail_fast_without_allocating():
    cases = [
        _metadata_v4_with_topic_count(2**31 - 1),                                     # array count
        b"\x00\x03\x00\x04\x00\x00\x00\x01\x00\x01c\x00\x00\x00\x01\x7f\xff",         # string length 32767
        b"\x00\x00\x00\x03\x00\x00\x00\x01\x00\x01c\xff\xff\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x01t"
        b"\x00\x00\x00\x01\x00\x00\x00\x00\x7f\xff\xff\xff",                             # Produce v3 records length
    ]
    tracemalloc.start()
    try:
        for frame in cases:
            with pytest.raises(CorruptFrameError, match="exceeds"):
                decode_request(frame)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


def test_null_where_not_nullable_and_bad_varints():
    with pytest.raises(CorruptFrameError, match="invalid array length -2"):
        decode_request(_metadata_v4_with_topic_count(-2))  # -2 is never valid
    assert decode_request(_metadata_v4_with_topic_count(-1) + b"\x01")[1].topics is None  # v1+: nullable
    # Produce v3: transactional_id null, acks, timeout, then topic_data (not nullable) = -1
    produce = b"\x00\x00\x00\x03\x00\x00\x00\x01\x00\x01c\xff\xff\x00\x01\x00\x00\x03\xe8\xff\xff\xff\xff"
    with pytest.raises(CorruptFrameError, match="invalid array length -1"):
        decode_request(produce)
    # Produce v9 (flexible): compact topic name 0 = null, but the name is not nullable
    frame = b"\x00\x00\x00\x09\x00\x00\x00\x01\x00\x01c\x00" + b"\x00" + b"\xff\xff" + b"\x00\x00\x00\x01" + b"\x02" + b"\x00"
    with pytest.raises(CorruptFrameError, match="string length -1"):
        decode_request(frame)
    overlong = b"\x00\x00\x00\x09\x00\x00\x00\x01\x00\x01c\x00" + b"\x80\x80\x80\x80\x80\x01"
    with pytest.raises(CorruptFrameError, match="longer than 5 bytes"):
        decode_request(overlong)


def test_tagged_fields_out_of_order_trailing_bytes_and_bad_utf8():
    base = encode_request(18, 3, 1, "c", {"client_software_name": "a", "client_software_version": "1"})[4:]
    with pytest.raises(CorruptFrameError, match="unread bytes"):
        decode_request(base + b"\x00")
    # replace the body's empty tagged section with two tags out of order
    with pytest.raises(CorruptFrameError, match="out of order"):
        decode_request(base[:-1] + b"\x02\x05\x00\x03\x00")
    bad_utf8 = base.replace(b"\x02a", b"\x02\xff")
    with pytest.raises(CorruptFrameError, match="UTF-8"):
        decode_request(bad_utf8)
