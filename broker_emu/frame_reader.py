"""A broker connection's requests as they arrive: reads sized so that a large frame's bytes are
copied as few times as possible, split into frames (client/protocol/framing.py).

Small frames come in chunks of up to 1 MB, many per read. After a large frame (a produce batch)
only the next size prefix is read, so that the next large frame is not read into a chunk that
would then be copied into its buffer: if the kernel already holds all of it, it is read in one
go into a fresh ``bytes`` of its size (``socket_io.receive_whole``: not zeroed first, not copied
again, and stored as that object); else a short chunk is read, and the rest straight into a
buffer of its size (``FrameSplitter.room``). Measured with confluent-kafka at 10 KB records
(benchmarks/broker): ``serve`` 534 -> 493 µs of CPU per MB.
"""

from __future__ import annotations

import trio

from broker_emu import socket_io
from client.protocol.framing import IN_PLACE_MIN, Frame, FrameSplitter

CHUNK_BYTES, AFTER_LARGE_CHUNK_BYTES, SIZE_PREFIX_BYTES = 1 << 20, 64 << 10, 4


class FrameReader:
    def __init__(self, stream: trio.abc.Stream, max_frame: int):
        self.stream = stream
        self.splitter = FrameSplitter(max_frame)
        self._chunk = CHUNK_BYTES
        # a whole frame can be read at once only from a plain socket (TLS and in-memory streams
        # hand out what they hold): elsewhere a prefix read alone would be one receive more
        self._after_large = SIZE_PREFIX_BYTES if socket_io.plain_fd(stream) >= 0 else AFTER_LARGE_CHUNK_BYTES

    @property
    def buffered(self) -> int:
        """Bytes received that are not yet part of a whole frame."""
        return self.splitter.buffered

    async def receive(self) -> list[Frame] | None:
        """The frames the next read completes (often none); None at the end of the stream.
        Raises what the stream raises (trio.BrokenResourceError, trio.ClosedResourceError) and
        FrameTooLargeError for a size prefix above the limit."""
        frames: list[Frame] = []
        room = self.splitter.room()
        if room is not None:
            got = await socket_io.receive_into(self.stream, room)
            if not got:
                return None
            frames += self.splitter.received(got)
            self._chunk = self._after_large
        else:
            data = await socket_io.receive_some(self.stream, self._chunk)
            if not data:
                return None
            frames += self.splitter.feed(bytes(data))
            self._chunk = CHUNK_BYTES
        size = self.splitter.awaited
        if size is not None and size >= IN_PLACE_MIN:
            whole = socket_io.receive_whole(self.stream, size)
            if whole is not None:
                frames += self.splitter.feed(whole)
            self._chunk = SIZE_PREFIX_BYTES if whole is not None else AFTER_LARGE_CHUNK_BYTES
        return frames
