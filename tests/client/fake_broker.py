"""A tiny scripted broker for our client's tests: the codec over in-memory streams.

It is not the emulator: each API's answer is scripted per test (answer, black-hole, delay, error
code, close), so a test can pin exactly one behaviour of the client. Like a real broker it
answers one request per connection at a time, in order, so a black-holed request blocks every
later one on that connection. Every request and connection event is logged with trio's time.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import trio
import trio.testing

from client.protocol import ApiKey
from client.protocol.codec import decode_request, encode_response, supported_versions
from client.protocol.framing import FrameSplitter
from client.protocol.records import parse_batch_header

SERVED = (ApiKey.PRODUCE, ApiKey.METADATA, ApiKey.API_VERSIONS, ApiKey.INIT_PRODUCER_ID, ApiKey.HEARTBEAT,
          ApiKey.JOIN_GROUP)


@dataclass
class Event:
    t: float
    kind: str            # "open", "recv", "send", "close"
    broker: int
    conn: int
    api: str = ""
    correlation_id: int = -1
    version: int = -1
    body: Any = None
    by: str = ""


@dataclass
class Partition:
    leader: int
    epoch: int = 0
    log: list = field(default_factory=list)    # (producer_id, epoch, base_sequence, count)


class FakeCluster:
    def __init__(self, nursery: trio.Nursery, brokers: int, topics: dict[str, int]):
        self.nursery = nursery
        self.broker_ids = list(range(brokers))
        self.alive = set(self.broker_ids)
        self.partitions = {(t, i): Partition(i % brokers) for t, n in topics.items() for i in range(n)}
        self.events: list[Event] = []
        self.script: dict[tuple[int | None, int], list[Any]] = {}   # (broker|None, api) -> actions, consumed in order
        self.api_versions_max: int | None = None                  # pretend to know ApiVersions only up to this
        self.unknown_topics: set[str] = set()
        self._conn_ids = 0
        self.next_pid = 7

    # -- scripting -------------------------------------------------------------------------
    def on(self, api: int, *actions: Any, broker: int | None = None) -> None:
        """Queue actions for the next requests of ``api``: "answer", "black_hole", "close",
        ("delay", seconds), ("error", code). Unscripted requests are answered."""
        self.script.setdefault((broker, int(api)), []).extend(actions)

    def _action(self, broker: int, api: int) -> Any:
        for key in ((broker, api), (None, api)):
            if self.script.get(key):
                return self.script[key].pop(0)
        return "answer"

    def of(self, kind: str, api: str | None = None) -> list[Event]:
        return [e for e in self.events if e.kind == kind and (api is None or e.api == api)]

    # -- connections -----------------------------------------------------------------------
    async def connect(self, node: int, host: str, port: int) -> trio.abc.Stream:
        broker = node if node >= 0 else self.broker_ids[-1 - node]
        if broker not in self.alive:
            raise OSError(f"connection refused (fake broker {broker} is down)")
        client_end, server_end = trio.testing.memory_stream_pair()
        self._conn_ids += 1
        self.events.append(Event(trio.current_time(), "open", broker, self._conn_ids))
        self.nursery.start_soon(self._serve, broker, self._conn_ids, server_end)
        return client_end

    async def _serve(self, broker: int, conn: int, stream: trio.abc.Stream) -> None:
        splitter, stuck = FrameSplitter(), False
        try:
            while True:
                data = await stream.receive_some(1 << 20)
                if not data:
                    self.events.append(Event(trio.current_time(), "close", broker, conn, by="client"))
                    return
                for frame in splitter.feed(data):
                    header, body = decode_request(frame)
                    api = ApiKey(header.api_key)
                    self.events.append(Event(trio.current_time(), "recv", broker, conn, api.api_name,
                                             header.correlation_id, header.api_version, body))
                    if stuck:
                        continue   # one request at a time: everything queues behind the black hole
                    action = self._action(broker, int(api))
                    if action == "black_hole":
                        stuck = True
                        continue
                    if action == "close":
                        self.events.append(Event(trio.current_time(), "close", broker, conn, by="broker"))
                        await stream.aclose()
                        return
                    if isinstance(action, tuple) and action[0] == "delay":
                        await trio.sleep(action[1])
                    error = action[1] if isinstance(action, tuple) and action[0] == "error" else 0
                    reply = self._answer(broker, header, body, error)
                    if reply is None:
                        continue  # acks=0
                    self.events.append(Event(trio.current_time(), "send", broker, conn, api.api_name, header.correlation_id))
                    await stream.send_all(reply)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.events.append(Event(trio.current_time(), "close", broker, conn, by="client"))

    # -- answers ---------------------------------------------------------------------------
    def _answer(self, broker: int, header: Any, body: Any, error: int) -> bytes | None:
        api, version, corr = header.api_key, header.api_version, header.correlation_id
        if api == ApiKey.API_VERSIONS:
            if self.api_versions_max is not None and version > self.api_versions_max:
                return encode_response(api, 0, corr, {"error_code": 35, "api_keys": [
                    {"api_key": 18, "min_version": 0, "max_version": self.api_versions_max}]})
            keys = [{"api_key": int(k), "min_version": 0, "max_version": supported_versions(k)[1]} for k in SERVED]
            return encode_response(api, version, corr, {"error_code": error, "api_keys": keys})
        if api == ApiKey.METADATA:
            return encode_response(api, version, corr, self._metadata(body, error))
        if api == ApiKey.INIT_PRODUCER_ID:
            pid = body.producer_id if body.producer_id >= 0 else self.next_pid
            epoch = body.producer_epoch + 1 if body.producer_id >= 0 else 0
            return encode_response(api, version, corr, {"error_code": error, "producer_id": pid, "producer_epoch": epoch})
        if api == ApiKey.PRODUCE:
            if body.acks == 0:
                return None
            return encode_response(api, version, corr, self._produce(broker, body, error))
        return encode_response(api, version, corr, {"error_code": error})

    def _metadata(self, body: Any, error: int) -> dict:
        brokers = [{"node_id": b, "host": "fake", "port": 9000 + b} for b in self.broker_ids]
        names = [t.name for t in body.topics] if body.topics is not None else sorted({t for t, _ in self.partitions})
        topics = []
        for name in names:
            parts = sorted((i, p) for (t, i), p in self.partitions.items() if t == name)
            if not parts or name in self.unknown_topics:
                topics.append({"name": name, "error_code": 3, "partitions": []})
                continue
            topics.append({"name": name, "error_code": error, "partitions": [
                {"partition_index": i, "leader_id": p.leader, "leader_epoch": p.epoch, "replica_nodes": self.broker_ids,
                 "isr_nodes": self.broker_ids} for i, p in parts]})
        return {"brokers": brokers, "controller_id": 0, "topics": topics}

    def _produce(self, broker: int, body: Any, error: int) -> dict:
        out = []
        for t in body.topic_data:
            parts = []
            for pd in t.partition_data:
                p = self.partitions[(t.name, pd.index)]
                code, base = error, -1
                if not code and p.leader != broker:
                    code = 6
                if not code:
                    h = parse_batch_header(pd.records)
                    key = (h.producer_id, h.producer_epoch, h.base_sequence, h.records_count)
                    if h.producer_id >= 0 and key in p.log:
                        base = p.log.index(key)   # a retry of a written batch: not appended again
                    else:
                        base = len(p.log)
                        p.log.append(key)
                parts.append({"index": pd.index, "error_code": code, "base_offset": base})
            out.append({"name": t.name, "partition_responses": parts})
        return {"responses": out}


@contextlib.asynccontextmanager
async def open_fake_cluster(brokers: int = 1, topics: dict[str, int] | None = None) -> AsyncIterator[FakeCluster]:
    async with trio.open_nursery() as nursery:
        try:
            yield FakeCluster(nursery, brokers, topics if topics is not None else {"t": 1})
        finally:
            nursery.cancel_scope.cancel()
