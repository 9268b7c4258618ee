"""A one-broker Kafka that misbehaves on request: it answers ApiVersions and Metadata properly
(enough for the proxy's discovery), and for a request whose client id names a misdeed, commits
it — a wrong correlation id, an impossible frame size, half a frame, a silent close."""

from __future__ import annotations

import socket
import struct
import threading

from client.protocol.codec import decode_request, encode_response
from tests.broker_emu.proxy.wire import read_frame

MISDEEDS = ("wrong-correlation-id", "impossible-size", "half-a-frame", "silent-close")


class FakeUpstream:
    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.bootstrap = f"127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> "FakeUpstream":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _answer(self, header, body) -> bytes:
        if header.api_key == 18:
            return encode_response(18, header.api_version, header.correlation_id, {"error_code": 0, "api_keys": [
                {"api_key": 3, "min_version": 0, "max_version": 12}, {"api_key": 18, "min_version": 0, "max_version": 3}]})
        return encode_response(3, header.api_version, header.correlation_id, {
            "brokers": [{"node_id": 0, "host": "127.0.0.1", "port": self.port, "rack": None}],
            "cluster_id": "fake", "controller_id": 0, "topics": []})

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    frame = read_frame(conn)
                except OSError:
                    return
                if frame is None:
                    return
                header, body = decode_request(frame)
                answer = self._answer(header, body)
                misdeed = header.client_id
                if misdeed == "wrong-correlation-id":
                    answer = answer[:4] + struct.pack(">i", header.correlation_id + 1) + answer[8:]
                elif misdeed == "impossible-size":
                    answer = struct.pack(">i", -5) + answer[4:]
                elif misdeed == "half-a-frame":
                    conn.sendall(answer[: len(answer) // 2])
                    return
                elif misdeed == "silent-close":
                    return
                conn.sendall(answer)
