"""A minimal wire-level client for emulator tests: encode, send, receive, decode."""

from __future__ import annotations

import trio

from client.protocol.codec import decode_response, encode_request
from client.protocol.framing import FrameSplitter
from client.protocol.records import Record, encode_batch


class WireClient:
    def __init__(self, stream: trio.abc.Stream, client_id: str = "test"):
        self.stream, self.client_id = stream, client_id
        self.splitter = FrameSplitter()
        self.pending: list[bytes] = []
        self.sent: dict[int, tuple[int, int]] = {}
        self.next_corr = 1

    async def send(self, api: int, version: int, body: dict) -> int:
        corr = self.next_corr
        self.next_corr += 1
        self.sent[corr] = (api, version)
        await self.stream.send_all(encode_request(api, version, corr, self.client_id, body))
        return corr

    async def recv(self) -> tuple[int, dict]:
        while not self.pending:
            data = await self.stream.receive_some(1 << 20)
            if not data:
                raise EOFError("the broker closed the connection")
            self.pending += self.splitter.feed(data)
        frame = self.pending.pop(0)
        corr = int.from_bytes(frame[:4], "big", signed=True)
        api, version = self.sent.pop(corr)
        return decode_response(api, version, frame)

    async def call(self, api: int, version: int, body: dict) -> dict:
        await self.send(api, version, body)
        return (await self.recv())[1]

    async def closed(self) -> bool:
        """True if the broker has closed the connection (reads until EOF)."""
        try:
            while True:
                data = await self.stream.receive_some(1 << 20)
                if not data:
                    return True
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return True


def produce_body(topic: str, partition: int, values: list[bytes], acks: int = -1, timeout_ms: int = 30000, **batch) -> dict:
    records = encode_batch([Record(v, timestamp=1000) for v in values], **batch)
    return {"acks": acks, "timeout_ms": timeout_ms,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}]}


def fetch_body(topic: str, partition: int, offset: int, max_wait_ms: int = 500, min_bytes: int = 1) -> dict:
    return {"max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": 1 << 20,
            "topics": [{"topic": topic, "partitions": [{"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]}


def leader_of(cluster, topic: str, partition: int = 0) -> int:
    return cluster.partition(topic, partition).leader
