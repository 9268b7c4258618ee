"""Raw Kafka frames over a blocking socket, for tests that need to see bytes."""

from __future__ import annotations

import socket


def connect(bootstrap: str, index: int = 0) -> socket.socket:
    host, port = bootstrap.split(",")[index].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    s.settimeout(10)
    return s


def read_frame(s: socket.socket) -> bytes | None:
    """The next frame without its size prefix; None when the peer closed the connection."""
    head = _read(s, 4)
    if head is None:
        return None
    return _read(s, int.from_bytes(head, "big"))


def _read(s: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def roundtrip(bootstrap: str, frame: bytes, index: int = 0) -> bytes | None:
    with connect(bootstrap, index) as s:
        s.sendall(frame)
        return read_frame(s)
