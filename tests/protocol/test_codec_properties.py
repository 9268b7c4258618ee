"""Round-trip properties over every (api, version, direction) the codec knows, and the
compiled constructs agreeing byte for byte with the interpreted ones."""

from io import BytesIO

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from client.protocol import decode_request, decode_response, encode_request, encode_response
from client.protocol.build import message_construct
from tests.protocol.schema_strategies import all_cases, contains, message_strategy

CASES = list(all_cases())


def _build(con, body) -> bytes:
    io = BytesIO()
    if hasattr(con, "buildfunc"):
        con.buildfunc(body, io, None)
    else:
        con._build(body, io, None, "")
    return io.getvalue()


def _parse(con, data: bytes):
    io = BytesIO(data)
    this = {"_end": len(data)}
    out = con.parsefunc(io, this) if hasattr(con, "parsefunc") else con._parse(io, this, "")
    assert io.tell() == len(data)
    return out


# The ranges the codec issue requires (the emulator advertises them).
REQUIRED = {0: (0, 11), 1: (4, 17), 2: (1, 10), 3: (0, 12), 8: (2, 9), 9: (1, 9), 10: (0, 6), 11: (0, 9),
            12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7),
            20: (1, 6), 22: (0, 5), 23: (2, 4), 32: (1, 4), 36: (0, 2), 60: (0, 1), 71: (0, 0)}


def test_every_required_api_version_is_covered():
    have = {(k, v) for k, v, _ in CASES}
    missing = [(k, v) for k, (lo, hi) in REQUIRED.items() for v in range(lo, hi + 1) if (k, v) not in have]
    assert missing == []


@pytest.mark.parametrize("key, version, direction", CASES, ids=[f"{k}-v{v}-{d}" for k, v, d in CASES])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_round_trip_and_compiled_matches_interpreted(key, version, direction, data):
    body = data.draw(message_strategy(key, version, direction))
    compiled = message_construct(key, version, direction, True)
    interpreted = message_construct(key, version, direction, False)
    raw = _build(compiled, body)
    assert _build(interpreted, body) == raw
    decoded = _parse(compiled, raw)
    assert _parse(interpreted, raw) == decoded
    assert contains(body, decoded)
    assert _build(compiled, decoded) == raw  # decode then encode is the identity on bytes
    if direction == "request":
        frame = encode_request(key, version, 7, "cid", body)
        header, via_frame = decode_request(frame[4:])
        assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (key, version, 7, "cid")
    else:
        frame = encode_response(key, version, 7, body)
        corr, via_frame = decode_response(key, version, frame[4:])
        assert corr == 7
    assert via_frame == decoded
