"""What a connection's reader can tell from a request's first bytes, before decoding it.

The reader handles a request itself, one task switch sooner, when its handler cannot wait
(``HandlerBackend.answers_at_once``). A Produce's handler waits only with acks=-1 (the purgatory,
while a follower copies later), so the reader reads acks off the frame: it follows the request
header and the transactional id (Produce v3+; ``ProduceRequest.json``: flexible from v9, so a
compact string there).
Anything it cannot read gives None and the request takes the ordinary path, whose decoder
names what is wrong.
"""

from __future__ import annotations

from client.protocol import ApiKey
from client.protocol.codec import request_header_version
from client.protocol.framing import Frame
from client.protocol.varint import read_uvarint

PRODUCE = int(ApiKey.PRODUCE)


def _int16(frame: Frame, pos: int) -> int | None:
    return int.from_bytes(frame[pos:pos + 2], "big", signed=True) if pos + 2 <= len(frame) else None


def produce_acks(frame: Frame) -> int | None:
    """The acks of a Produce request frame; None when it is not one or its start is unreadable."""
    return produce_start(frame)[0]


def produce_start(frame: Frame) -> tuple[int | None, bool]:
    """(acks, whether it names a transactional id) of a Produce request frame; (None, False)
    when it is not one or its start is unreadable."""
    if len(frame) < 10 or int.from_bytes(frame[:2], "big") != PRODUCE:
        return None, False
    version = int.from_bytes(frame[2:4], "big", signed=True)
    client_id = int.from_bytes(frame[8:10], "big", signed=True)
    pos = 10 + max(client_id, 0)
    transactional = False
    try:
        if request_header_version(PRODUCE, version) == 2:
            tags, pos = read_uvarint(frame, pos)
            if tags:
                return None, False   # a header with tagged fields: not worth reading here
            length_plus_one, pos = read_uvarint(frame, pos)   # compact nullable transactional_id
            transactional = length_plus_one > 0
            pos += max(length_plus_one - 1, 0)
        elif version >= 3:
            length = _int16(frame, pos) or 0
            transactional = length >= 0
            pos += 2 + max(length, 0)   # nullable transactional_id
    except ValueError:   # a truncated varint
        return None, False
    return _int16(frame, pos), transactional
