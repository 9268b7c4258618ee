"""A tiny loopback TCP listener that records every request frame a client sends.

Theory of operation
-------------------
``CaptureListener`` binds 127.0.0.1:0 and serves each accepted connection on its own thread.
It splits the byte stream into Kafka frames (int32 size, then that many bytes), records each
frame as a ``Frame`` and hands it to an optional *responder*: a function of the frame that
returns the whole response frame to send (size prefix included) or ``None`` to stay silent.
With no responder the listener never answers, which is how we see what a client sends first
before any negotiation happens.

Like a real broker (Kafka's SocketServer mutes it until the answer is sent) a connection is
served strictly in order: the next frame is handed to the responder only after the previous answer was written, so pipelined requests
are answered in order.

It is test harness for real third-party clients, so it runs on real sockets in real time; it
knows nothing of our codec (``Frame`` reads the four fixed header fields itself) so that a codec
bug cannot hide what a client really sent.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Self

_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")
# How often the accept and read loops look at the stop flag; small so that closing is quick.
_POLL_S = 0.05
# A frame bigger than this is not a Kafka request from a test client: stop reading.
_MAX_FRAME = 64 * 1024 * 1024


@dataclass(frozen=True)
class Frame:
    """One request frame as received, without its 4-byte size prefix."""

    connection: int  # index of the accepted connection, 0 = the first one
    position: int  # index of the frame on its connection, 0 = the first one
    data: bytes

    @property
    def api_key(self) -> int:
        return _HEADER.unpack_from(self.data)[0]

    @property
    def api_version(self) -> int:
        return _HEADER.unpack_from(self.data)[1]

    @property
    def correlation_id(self) -> int:
        return _HEADER.unpack_from(self.data)[2]

    def __repr__(self) -> str:
        return (f"Frame(conn={self.connection}, pos={self.position}, api_key={self.api_key}, "
                f"v{self.api_version}, corr={self.correlation_id}, {len(self.data)} bytes)")


Responder = Callable[[Frame], "bytes | None"]


class CaptureListener:
    """Use as a context manager; ``port`` is valid inside it. Stops its own threads on exit."""

    def __init__(self, responder: Responder | None = None) -> None:
        self._responder = responder
        self._frames: list[Frame] = []
        self._errors: list[str] = []
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._connections = 0
        self._server: socket.socket | None = None
        self.port = 0

    # -- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> Self:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        server.settimeout(_POLL_S)
        self._server = server
        self.port = server.getsockname()[1]
        self._spawn(self._accept_loop, "capture-accept")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        if self._server is not None:
            self._server.close()
        stuck = [t.name for t in self._threads if t.is_alive()]
        if stuck:
            self._errors.append(f"threads did not stop: {stuck}")

    def _spawn(self, target: Callable[..., None], name: str, *args: object) -> None:
        # daemon: a bug here must not keep the test process alive; __exit__ still joins them.
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    # -- observations ---------------------------------------------------------------------------

    @property
    def frames(self) -> list[Frame]:
        with self._changed:
            return list(self._frames)

    @property
    def errors(self) -> list[str]:
        """Responder exceptions and similar harness failures; a good run leaves it empty."""
        with self._changed:
            return list(self._errors)

    @property
    def connections(self) -> int:
        with self._changed:
            return self._connections

    def wait_for(self, predicate: Callable[[list[Frame]], bool], timeout: float) -> bool:
        """Block until ``predicate(frames)`` holds or ``timeout`` seconds passed."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self._frames), timeout)

    # -- serving --------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        assert self._server is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except (TimeoutError, BlockingIOError):
                continue
            except OSError:
                return
            with self._changed:
                index = self._connections
                self._connections += 1
                self._changed.notify_all()
            self._spawn(self._serve, f"capture-conn-{index}", conn, index)

    def _serve(self, conn: socket.socket, index: int) -> None:
        conn.settimeout(_POLL_S)
        with conn:
            for position, data in enumerate(self._read_frames(conn)):
                frame = Frame(index, position, data)
                with self._changed:
                    self._frames.append(frame)
                    self._changed.notify_all()
                if not self._answer(conn, frame):
                    return

    def _answer(self, conn: socket.socket, frame: Frame) -> bool:
        if self._responder is None:
            return True
        try:
            response = self._responder(frame)
        except Exception as exc:  # noqa: BLE001 - the test must see it; the client sees a closed connection
            with self._changed:
                self._errors.append(f"responder failed on {frame!r}: {type(exc).__name__}: {exc}")
            return False
        if response is not None:
            try:
                conn.sendall(response)
            except OSError:
                return False
        return True

    def _read_frames(self, conn: socket.socket) -> Iterable[bytes]:
        buf = bytearray()
        while True:
            while len(buf) >= 4:
                (size,) = _SIZE.unpack_from(buf)
                if size < 0 or size > _MAX_FRAME:
                    with self._changed:
                        self._errors.append(f"implausible frame size {size}")
                    return
                if len(buf) < 4 + size:
                    break
                yield bytes(buf[4:4 + size])
                del buf[:4 + size]
            chunk = self._recv(conn)
            if not chunk:
                return
            buf += chunk

    def _recv(self, conn: socket.socket) -> bytes:
        while not self._stop.is_set():
            try:
                return conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return b""
        return b""
