"""The named fault `reset` resets the connection as Toxiproxy's reset_peer does: the client's
read fails with ECONNRESET; `close_before` ends the stream with a FIN (an empty read)."""

from __future__ import annotations

import socket
import struct

import pytest

from broker_emu.runtime import run_cluster_in_thread

# ApiVersions v0 (key 18), correlation id 7, client id "t": a request any broker reads
API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 7, 1) + b"t"


def _read_after(rule_type: str) -> bytes:
    with run_cluster_in_thread(brokers=1) as tc:
        tc.call(lambda: tc.cluster.faults.add({"match": {"api": "ApiVersions"}, "action": rule_type}, 0.0))
        host, port = tc.bootstrap.split(",")[0].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0)
            return s.recv(4096)


def test_reset_is_a_tcp_reset():
    with pytest.raises(ConnectionResetError):
        _read_after("reset")


def test_close_before_is_an_orderly_close():
    assert _read_after("close_before") == b""
