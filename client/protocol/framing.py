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
    """Feed bytes in; take whole frames (without their size prefix) out."""

    def __init__(self, max_frame: int = 104_857_600):
        self.max_frame = max_frame
        self._buf = bytearray()
        self._need: int | None = None

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        frames = []
        while True:
            if self._need is None:
                if len(self._buf) < 4:
                    return frames
                size = _SIZE.unpack_from(self._buf, 0)[0]
                if not 0 <= size <= self.max_frame:
                    raise FrameTooLargeError(size, self.max_frame)
                self._need = size
                del self._buf[:4]
            if len(self._buf) < self._need:
                return frames
            frames.append(bytes(self._buf[: self._need]))
            del self._buf[: self._need]
            self._need = None

    @property
    def buffered(self) -> int:
        """Bytes received that are not yet part of a whole frame."""
        return len(self._buf)
