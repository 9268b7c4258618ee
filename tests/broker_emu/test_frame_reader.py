"""broker_emu.frame_reader: whatever the stream and however the bytes are cut, frames come out
whole and in order, and the end of the stream reads as None."""

import random
import socket

import pytest
import trio
import trio.lowlevel
import trio.testing

from broker_emu.frame_reader import FrameReader
from client.protocol.framing import IN_PLACE_MIN

SIZES = [10, IN_PLACE_MIN + 5, 2 * IN_PLACE_MIN, 7, IN_PLACE_MIN, IN_PLACE_MIN + 1, 3]


def _streams(kind: str) -> tuple[trio.abc.Stream, trio.abc.Stream]:
    if kind == "memory":
        return trio.testing.memory_stream_pair()
    a, b = socket.socketpair()
    return trio.SocketStream(trio.socket.from_stdlib_socket(a)), trio.SocketStream(trio.socket.from_stdlib_socket(b))


@pytest.mark.parametrize("kind", ["memory", "socket"])
@pytest.mark.parametrize("seed", range(4))
async def test_frames_cut_anyhow_come_out_whole_and_in_order(kind, seed):
    rng = random.Random(seed)
    frames = [bytes([i]) * n for i, n in enumerate(SIZES)]
    wire = b"".join(len(f).to_bytes(4, "big") + f for f in frames)
    sender, receiver = _streams(kind)
    reader = FrameReader(receiver, 16 << 20)
    got: list[bytes] = []

    async def send() -> None:
        pos = 0
        while pos < len(wire):
            n = rng.choice([1, 3, 4, 5, 1000, 70_000, IN_PLACE_MIN, 3 * IN_PLACE_MIN])
            await sender.send_all(wire[pos:pos + n])
            pos += n
            if rng.random() < 0.5:
                await trio.lowlevel.checkpoint()   # let the reader see some cuts, and whole frames at others
        await sender.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send)
        while (more := await reader.receive()) is not None:
            got += [bytes(f) for f in more]
    assert got == frames
    assert reader.buffered == 0
    await receiver.aclose()


async def test_after_a_large_frame_one_that_has_arrived_whole_takes_one_receive():
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    reader = FrameReader(trio.SocketStream(trio.socket.from_stdlib_socket(b)), 16 << 20)
    first, second = b"a" * (IN_PLACE_MIN + 5), b"b" * IN_PLACE_MIN
    wire = len(first).to_bytes(4, "big") + first
    a.send(wire[:32 << 10])
    assert await reader.receive() == []                    # a sixteenth is there: a buffer for the rest
    assert a.send(wire[32 << 10:]) == len(wire) - (32 << 10)
    assert await reader.receive() == [first]               # received in place
    assert a.send(len(second).to_bytes(4, "big") + second) == len(second) + 4
    frames = await reader.receive()                        # its size prefix, then all of it in one read
    assert frames == [second] and type(frames[0]) is bytes
    a.close()
    assert await reader.receive() is None
    await reader.stream.aclose()
