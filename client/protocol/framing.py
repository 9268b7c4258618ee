"""Sans-io framing: split a byte stream into size-prefixed frames.

Never allocates by a claimed size: a prefix above ``max_frame`` raises at once, and a frame's
bytes are only joined once all of them have arrived.
"""

from __future__ import annotations

import struct

_SIZE = struct.Struct(">i")


class FrameTooLargeError(ValueError):
    def __init__(self, size: int, limit: int):
        self.size, self.limit = size, limit
        super().__init__(f"frame size {size} is outside 0..{limit} (socket.request.max.bytes)")


class FrameSplitter:
    """Feed bytes in; take whole frames (without their size prefix) out.

    Received chunks are kept in a list and each frame's bytes are joined once, when all of them
    are present, so a large frame arriving in many small reads costs one copy, not one per read.
    """

    def __init__(self, max_frame: int = 104_857_600):
        self.max_frame = max_frame
        self._chunks: list[bytes] = []
        self._have = 0
        self._need: int | None = None

    def _take(self, n: int) -> bytes:
        if n == 0:
            return b""
        if len(self._chunks[0]) == n:
            self._have -= n
            return self._chunks.pop(0)
        if len(self._chunks[0]) > n:
            first = self._chunks[0]
            self._chunks[0] = first[n:]
            self._have -= n
            return first[:n]
        parts, got = [], 0
        while got < n:
            chunk = self._chunks.pop(0)
            if got + len(chunk) > n:
                cut = n - got
                parts.append(chunk[:cut])
                self._chunks.insert(0, chunk[cut:])
                got = n
            else:
                parts.append(chunk)
                got += len(chunk)
        self._have -= n
        return b"".join(parts)

    def feed(self, data: bytes) -> list[bytes]:
        if data:
            self._chunks.append(bytes(data))
            self._have += len(data)
        frames = []
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
    def buffered(self) -> int:
        """Bytes received that are not yet part of a whole frame."""
        return self._have
