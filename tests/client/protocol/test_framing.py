import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.protocol.codec import encode_request, encode_response
from client.protocol.framing import IN_PLACE_CLAIM, IN_PLACE_MIN, FrameSplitter, FrameTooLargeError
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


@settings(deadline=None, max_examples=30)   # megabytes per example
@given(st.lists(st.sampled_from([10, 300, IN_PLACE_MIN, IN_PLACE_MIN * 3 + 7]), min_size=1, max_size=5),
       st.lists(st.integers(1, 1 << 17), min_size=1, max_size=40))
def test_large_frames_received_in_place_come_out_whole_and_in_order(sizes, reads):
    # what the broker's reader does: bytes go into room() when offered, else are fed as chunks
    payloads = [bytes([i + 1]) * n for i, n in enumerate(sizes)]
    stream = memoryview(b"".join(len(p).to_bytes(4, "big") + p for p in payloads))
    splitter, got, pos, i = FrameSplitter(), [], 0, 0
    while pos < len(stream):
        want = reads[i % len(reads)]
        i += 1
        room = splitter.room()
        if room is not None:
            n = min(want, len(room), len(stream) - pos)
            room[:n] = stream[pos:pos + n]
            got += splitter.received(n)
        else:
            n = min(want, len(stream) - pos)
            got += splitter.feed(bytes(stream[pos:pos + n]))
        pos += n
    assert [bytes(f) for f in got] == payloads
    assert splitter.buffered == 0 and splitter.room() is None


def test_a_large_claim_gets_no_buffer_until_a_sixteenth_of_it_arrived():
    splitter = FrameSplitter()
    size = 16 << 20
    splitter.feed(size.to_bytes(4, "big") + b"x" * 1000)
    assert splitter.room() is None     # 1,000 bytes sent do not buy 16 MB
    splitter.feed(b"x" * (size // IN_PLACE_CLAIM - 1000))
    room = splitter.room()
    assert room is not None and len(room) == size - size // IN_PLACE_CLAIM
    room[:] = b"y" * len(room)
    frame, = splitter.received(len(room))
    assert type(frame) is bytearray and len(frame) == size and frame[-1:] == b"y"
    # bytes fed while a frame is received in place still land in it
    splitter.feed(size.to_bytes(4, "big") + b"z" * (size // 8))
    assert splitter.room() is not None
    assert splitter.feed(b"z" * (size - size // 8) + (1).to_bytes(4, "big") + b"!") == [b"z" * size, b"!"]


def test_a_frame_is_awaited_only_between_its_size_prefix_and_its_first_byte():
    splitter = FrameSplitter()
    assert splitter.awaited is None                       # no size read yet
    splitter.feed((1 << 20).to_bytes(4, "big")[:2])
    assert splitter.awaited is None                       # half a prefix
    splitter.feed((1 << 20).to_bytes(4, "big")[2:])
    assert splitter.awaited == 1 << 20
    frame = bytes(range(256)) * (4 << 10)
    assert splitter.feed(frame)[0] is frame               # fed whole: the same object, not a copy
    assert splitter.awaited is None and splitter.buffered == 0
    splitter.feed((1 << 20).to_bytes(4, "big") + b"x")
    assert splitter.awaited is None                       # some of it arrived: receive the rest


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
