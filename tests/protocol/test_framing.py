import pytest
from hypothesis import given
from hypothesis import strategies as st

from client.protocol import encode_request, encode_response
from client.protocol.framing import FrameSplitter, FrameTooLargeError
from client.protocol.transcript import Transcript


@given(st.lists(st.binary(max_size=300), max_size=8), st.data())
def test_frames_survive_any_chunking(payloads, data):
    stream = b"".join(len(p).to_bytes(4, "big") + p for p in payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    splitter, got, last = FrameSplitter(), [], 0
    for cut in cuts + [len(stream)]:
        got += splitter.feed(stream[last:cut])
        last = cut
    assert got == payloads
    assert splitter.buffered == 0


def test_oversized_prefix_raises_before_buffering():
    splitter = FrameSplitter(max_frame=1000)
    with pytest.raises(FrameTooLargeError, match="1001"):
        splitter.feed((1001).to_bytes(4, "big") + b"x")


def test_negative_prefix_is_refused():
    with pytest.raises(FrameTooLargeError):
        FrameSplitter().feed(b"\xff\xff\xff\xff")


def test_transcript_pairs_response_with_its_request():
    t = Transcript()
    req = encode_request(0, 9, 5, "me", {"acks": -1, "timeout_ms": 1000,
                                          "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": None}]}]})
    entry = t.request(req[4:])
    assert (entry.api, entry.version, entry.client_id) == ("Produce", 9, "me")
    assert "acks=-1" in entry.summary and "timeout_ms=1000" in entry.summary
    resp = encode_response(0, 9, 5, {"responses": [{"name": "t", "partition_responses": [{"index": 0, "error_code": 7}]}]})
    answer = t.response(resp[4:])
    assert answer.api == "Produce" and answer.correlation_id == 5
    assert "partition_errors=[7]" in answer.summary


def test_transcript_flags_unmatched_response():
    t = Transcript()
    resp = encode_response(18, 0, 99, {})
    assert t.response(resp[4:]).summary == "no matching request"
