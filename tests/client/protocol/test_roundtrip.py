"""Property round-trips over every (api, version, direction) the codec knows.

For a message generated from the schema of one version: encoding then decoding gives the
message back with every absent field at its default (``strategies.expected_decode``), whole
frames carry the header we asked for, and the compiled construct and the interpreted one write
identical bytes and read identical values. Examples per case: CODEC_EXAMPLES (default 15).
"""

from __future__ import annotations

import os
import struct
from io import BytesIO

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from client.protocol.build import data_construct, message_construct
from client.protocol.codec import (
    decode_consumer_blob,
    decode_request,
    decode_request_header,
    decode_response,
    encode_consumer_blob,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)
from client.protocol.messages import ALL_APIS
from tests.client.protocol.strategies import (
    BLOBS,
    Options,
    blob_strategy,
    case_id,
    cases,
    expected_blob,
    expected_message,
    message_strategy,
)

settings.register_profile(
    "codec",
    max_examples=int(os.environ.get("CODEC_EXAMPLES", "15")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CODEC = settings.get_profile("codec")

CASES = list(cases())
IDS = [case_id(c) for c in CASES]


def build(con, body) -> bytes:
    io = BytesIO()
    if hasattr(con, "buildfunc"):
        con.buildfunc(body, io, None)
    else:
        con._build(body, io, None, "")
    return io.getvalue()


def parse(con, raw: bytes):
    io = BytesIO(raw)
    this = {"_end": len(raw)}
    value = con.parsefunc(io, this) if hasattr(con, "parsefunc") else con._parse(io, this, "")
    assert io.tell() == len(raw), "the construct did not consume the whole body"
    return value


def test_every_api_and_version_range_is_exercised():
    """The version ranges we serve are all inside what the codec (and so this file) covers."""
    required = {0: (0, 12), 1: (4, 17), 2: (1, 10), 3: (0, 12), 8: (2, 9), 9: (1, 9), 10: (0, 6), 11: (0, 9),
                12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7),
                20: (1, 6), 22: (0, 5), 23: (2, 4), 32: (1, 4), 36: (0, 2), 60: (0, 1), 68: (0, 0), 71: (0, 0),
                # served since the transactions issue
                24: (0, 3), 25: (0, 4), 26: (0, 5), 28: (0, 5), 61: (0, 0), 65: (0, 0), 66: (0, 2), 37: (0, 3), 21: (0, 2),
                # share groups (KIP-932, KIP-1222)
                76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 90: (0, 1), 91: (0, 0), 92: (0, 0)}
    have = {(k, v, d) for k, v, d in CASES}
    missing = [(k, v, d) for k, (lo, hi) in required.items() for v in range(lo, hi + 1)
               for d in ("request", "response") if (k, v, d) not in have]
    assert missing == []
    assert {k for k, _, _ in CASES} == set(ALL_APIS)


@pytest.mark.parametrize("key, version, direction", CASES, ids=IDS)
@CODEC
@given(data=st.data())
def test_round_trip(key, version, direction, data):
    sparse = data.draw(st.booleans(), label="sparse")
    body = data.draw(message_strategy(key, version, direction, Options(sparse=sparse, unknown_tags=True)), label="body")
    expected = expected_message(key, version, direction, body)

    compiled = message_construct(key, version, direction)
    interpreted = message_construct(key, version, direction, compiled=False)
    raw = build(compiled, body)
    assert build(interpreted, body) == raw
    decoded = parse(compiled, raw)
    assert decoded == expected
    assert parse(interpreted, raw) == decoded
    # the decoded value is a Message: attribute access works on every level we produced
    for name in expected:
        assert getattr(decoded, name) == expected[name]
    again = build(compiled, decoded)
    assert parse(compiled, again) == decoded
    if not sparse:
        assert again == raw

    # whole frames: size prefix, the header version the API/version calls for, the same body
    if direction == "request":
        frame = encode_request(key, version, 0x7FFF0001, "client-ü", body)
        assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
        header = decode_request_header(frame[4:])
        assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
            key, version, 0x7FFF0001, "client-ü")
        head_len = 2 + 2 + 4 + 2 + len("client-ü".encode()) + (1 if request_header_version(key, version) == 2 else 0)
        assert header.size == head_len
        assert frame[4 + head_len:] == raw
        _, via_frame = decode_request(frame[4:])
    else:
        frame = encode_response(key, version, -5, body)
        assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
        head_len = 4 + (1 if response_header_version(key, version) == 1 else 0)
        assert frame[4:8] == struct.pack(">i", -5)
        assert frame[4 + head_len:] == raw
        correlation_id, via_frame = decode_response(key, version, frame[4:])
        assert correlation_id == -5
    assert via_frame == expected


@pytest.mark.parametrize("kind, version", [(k, v) for k in BLOBS for v in range(4)])
@CODEC
@given(data=st.data())
def test_consumer_blob_round_trip(kind, version, data):
    body = data.draw(blob_strategy(kind, version, Options(sparse=data.draw(st.booleans()))))
    name = BLOBS[kind].name
    const = "CONSUMER_PROTOCOL_" + kind.upper()
    blob = encode_consumer_blob(const, version, body)
    assert blob[:2] == struct.pack(">h", version)
    assert build(data_construct(const, version, compiled=False), body) == blob[2:], name
    got_version, decoded = decode_consumer_blob(const, blob)
    assert got_version == version
    assert decoded == expected_blob(kind, version, body)
    assert parse(data_construct(const, version, compiled=False), blob[2:]) == decoded


def _poison(value) -> None:
    """Mutate every list and struct inside a decoded value, as a caller may."""
    if isinstance(value, dict):
        for v in list(value.values()):
            _poison(v)
        value["_poisoned"] = True
    elif isinstance(value, list):
        for v in value:
            _poison(v)
        value.append("poison")


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "interpreted"])
def test_decodes_never_share_mutable_defaults(compiled):
    """Absent and tagged fields decode to their defaults; a caller mutating one decoded message
    must not change the next one (the defaults are fresh objects each time)."""
    shared = []
    for key, version, direction in CASES:
        con = message_construct(key, version, direction, compiled=compiled)
        raw = build(message_construct(key, version, direction), {})
        first = parse(con, raw)
        _poison(first)
        if parse(con, raw) != expected_message(key, version, direction, {}):
            shared.append(case_id((key, version, direction)))
    assert shared == [], f"{len(shared)} cases hand out shared defaults, e.g. {shared[:4]}"
