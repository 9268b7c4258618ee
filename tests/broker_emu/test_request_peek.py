"""broker_emu/request_peek.py: a Produce's acks and whether it names a transactional id, read off
the frame, agree with the decoder's, for every version, and a frame cut anywhere gives the right
acks or None, never a wrong one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker_emu.request_peek import produce_acks, produce_start
from client.protocol import ApiKey
from client.protocol.codec import decode_request, encode_request

TXN_IDS = (None, "", "txn-ü", "t" * 300)   # 300: a two-byte compact length in flexible versions


def _produce(version: int, acks: int, transactional_id: str | None, client_id: str | None) -> bytes:
    body = {"acks": acks, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": None}]}]}
    if version >= 3:
        body["transactional_id"] = transactional_id
    return encode_request(ApiKey.PRODUCE, version, 7, client_id, body)[4:]   # without the size prefix


@pytest.mark.parametrize("version", range(0, 13))
@pytest.mark.parametrize("acks", (-1, 0, 1, 2))
@pytest.mark.parametrize("transactional_id", TXN_IDS)
@pytest.mark.parametrize("client_id", (None, "producer-1"))
def test_acks_read_off_the_frame_are_the_decoders(version, acks, transactional_id, client_id):
    frame = _produce(version, acks, transactional_id, client_id)
    _, body = decode_request(frame)
    assert produce_acks(frame) == body.acks == acks
    assert produce_acks(bytearray(frame)) == acks   # a large frame is received in place
    assert produce_start(frame) == (acks, version >= 3 and transactional_id is not None)


@given(version=st.integers(0, 12), acks=st.sampled_from((-1, 0, 1)), transactional_id=st.sampled_from(TXN_IDS),
       cut=st.integers(0, 400))
def test_a_cut_frame_gives_its_acks_or_none(version, acks, transactional_id, cut):
    frame = _produce(version, acks, transactional_id, "c")
    assert produce_acks(frame[:cut]) in (None, acks)


def test_other_requests_and_headers_with_tagged_fields_are_not_read():
    metadata = encode_request(ApiKey.METADATA, 12, 1, "c", {"topics": None, "allow_auto_topic_creation": False,
                                                             "include_topic_authorized_operations": False})[4:]
    assert produce_acks(metadata) is None
    frame = bytearray(_produce(9, 1, None, "c"))
    at = 10 + len("c")   # the header's tagged-field count
    assert frame[at] == 0
    frame[at:at + 1] = bytes([1, 0, 0])   # one tagged field (tag 0, empty): readable, but not read here
    assert produce_acks(bytes(frame)) is None
