"""Sans-io framing: split a byte stream into size-prefixed frames.

Never allocates by a claim alone: a prefix above ``max_frame`` raises at once; a frame's bytes
are joined once all of them have arrived, or, for a large frame, received straight into a buffer
of its size (``room``) once a sixteenth of it has arrived — so a client that claims a size and
stalls holds at most 16 times what it sent.
"""

from __future__ import annotations

import struct
from collections import deque

_SIZE = struct.Struct(">i")
Frame = bytes | bytearray   # a bytearray: a large frame received in place (room/received)
IN_PLACE_MIN = 256 << 10   # frames this large are received in place (room/received)
IN_PLACE_CLAIM = 16        # ... once 1/16 of them has arrived


class FrameTooLargeError(ValueError):
    def __init__(self, size: int, limit: int):
        self.size, self.limit = size, limit
        super().__init__(f"frame size {size} is outside 0..{limit} (socket.request.max.bytes)")


class FrameSplitter:
    """Feed bytes in; take whole frames (without their size prefix) out.

    Received chunks are kept as (bytes, read position) so taking a frame never copies what stays
    behind: a frame inside one chunk costs one slice (none if it is the whole chunk), a frame over
    many reads costs one join of memoryviews. At ~1 MB produce frames the old slice-the-remainder
    approach copied most bytes twice (benchmarks/broker).
    """

    def __init__(self, max_frame: int = 104_857_600):
        self.max_frame = max_frame
        self._chunks: deque[tuple[bytes, int]] = deque()
        self._have = 0
        self._need: int | None = None
        self._frame: bytearray | None = None   # a large frame being received in place

    def _take(self, n: int) -> bytes:
        if n == 0:
            return b""
        self._have -= n
        data, start = self._chunks[0]
        if len(data) - start >= n:
            if len(data) - start == n:
                self._chunks.popleft()
                if start == 0:
                    return data
            else:
                self._chunks[0] = (data, start + n)
            return data[start:start + n]
        parts: list[bytes | memoryview] = []
        need = n
        while need:
            data, start = self._chunks[0]
            avail = len(data) - start
            if avail > need:
                parts.append(memoryview(data)[start:start + need])
                self._chunks[0] = (data, start + need)
                need = 0
            else:
                parts.append(memoryview(data)[start:] if start else data)
                self._chunks.popleft()
                need -= avail
        return b"".join(parts)

    def room(self) -> memoryview | None:
        """Where the next bytes should go: the rest of a large frame whose size is known and of
        which enough has arrived (the buffered part moved into a buffer of its size), so that
        its bytes are copied once instead of received in chunks and joined; None: ``feed`` the
        next chunk instead. Report what was written there with ``received``."""
        if self._frame is None:
            need = self._need
            if need is None or need < IN_PLACE_MIN or self._have >= need or self._have * IN_PLACE_CLAIM < need:
                return None
            frame = bytearray(need)
            pos = 0
            for data, start in self._chunks:
                frame[pos:pos + len(data) - start] = memoryview(data)[start:]
                pos += len(data) - start
            self._chunks.clear()
            self._frame = frame
        return memoryview(self._frame)[self._have:]

    def received(self, n: int) -> list[bytearray]:
        """``n`` bytes were written at the start of ``room()``; the frame once it is whole."""
        assert self._frame is not None and 0 <= n <= len(self._frame) - self._have
        self._have += n
        if self._have < len(self._frame):
            return []
        frame, self._frame, self._need, self._have = self._frame, None, None, 0
        return [frame]

    def feed(self, data: bytes) -> list[bytes]:
        if self._frame is not None:   # room() was not used for these bytes: they go there anyway
            n = min(len(data), len(self._frame) - self._have)
            self._frame[self._have:self._have + n] = data[:n]
            whole = [bytes(f) for f in self.received(n)]   # (not the server's path: no copy saved here)
            return whole + (self.feed(data[n:]) if n < len(data) else [])
        if data:
            self._chunks.append((data if type(data) is bytes else bytes(data), 0))
            self._have += len(data)
        frames: list[bytes] = []
        while True:
            if self._need is None:
                if self._have < 4:
                    return frames
                size = _SIZE.unpack(self._take(4))[0]
                if not 0 <= size <= self.max_frame:
                    raise FrameTooLargeError(size, self.max_frame)
                self._need = size
            if self._have < self._need:
                return frames
            frames.append(self._take(self._need))
            self._need = None

    @property
    def awaited(self) -> int | None:
        """The size of a frame whose size prefix was read and none of its bytes yet (a reader may
        then receive it whole and ``feed`` it: a frame that is one whole chunk is not copied)."""
        return self._need if self._have == 0 and self._frame is None else None

    @property
    def buffered(self) -> int:
        """Bytes received that are not yet part of a whole frame."""
        return self._have
