"""Test support for the group coordinator: a tiny fake cluster (what the coordinator needs of
the real one) and ``call``, which runs a group handler through the codec both ways, so every
test also checks that requests decode into what the handler reads and answers encode."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import trio

from broker_emu.groups.coordinator import GroupCoordinator
from broker_emu.handlers import groups as _registers_group_handlers  # noqa: F401
from broker_emu.registry import REGISTRY
from client.protocol import ApiKey
from client.protocol.codec import decode_request, decode_response, encode_request, encode_response

JOIN, SYNC, HEARTBEAT, LEAVE = ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP
COMMIT, FETCH, FIND = ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR
LIST, DESCRIBE = ApiKey.LIST_GROUPS, ApiKey.DESCRIBE_GROUPS


@dataclass
class FakeBroker:
    id: int
    host: str = "127.0.0.1"
    port: int = 0
    alive: bool = True


@dataclass
class Event:
    time: float
    kind: str
    details: dict


class FakeTrace:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, kind: str, details: dict | None = None, **_: Any) -> None:
        self.events.append(Event(trio.current_time(), kind, details or {}))

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]


class FakeCluster:
    """Brokers 0..n-1; every group is coordinated by ``owner.get(group, 0)``; topics in ``topics``."""

    def __init__(self, brokers: int = 3, *, topics: dict[str, int] | None = None, **config: Any):
        self.brokers = {i: FakeBroker(i, port=9092 + i) for i in range(brokers)}
        self.config = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 6000,
                       "group.max.session.timeout.ms": 1800000, "offsets.topic.num.partitions": 50}
        self.config.update({k.replace("_", "."): v for k, v in config.items()})
        self.topics = {"t": 4} if topics is None else topics
        self.owner: dict[str, int] = {}
        self.rng = random.Random(7)
        self.trace = FakeTrace()
        self.security = SimpleNamespace(authorizer=None)   # no authorizer: every operation allowed
        self.groups = GroupCoordinator(self)

    def coordinator_for(self, group_id: str) -> int:
        owner = self.owner.get(group_id, 0)
        return owner if self.brokers[owner].alive else -1

    def ensure_offsets_topic(self) -> None:
        """No topic model here: the topic FindCoordinator creates is tested on the real Cluster
        (tests/broker_emu/test_internal_topics.py)."""

    def partition(self, topic: str, index: int) -> object | None:
        return object() if 0 <= index < self.topics.get(topic, 0) else None


@dataclass
class Ctx:
    cluster: Any
    broker_id: int
    api_version: int
    client_id: str | None
    client_host: str = "127.0.0.1"

    def port_of(self, broker: Any) -> int:   # one listener
        return broker.port


_corr = itertools.count(1)


async def call(cluster: Any, api: ApiKey, version: int, body: dict, *, broker: int = 0,
               client_id: str | None = "c1") -> Any:
    """Encode the request, decode it as the broker would, run the handler, and round-trip the
    answer through encode_response/decode_response."""
    corr = next(_corr)
    header, request = decode_request(encode_request(api, version, corr, client_id, body)[4:])
    ctx = Ctx(cluster, broker, header.api_version, header.client_id)
    answer = await REGISTRY[api].handler(ctx, request)
    got_corr, decoded = decode_response(api, version, encode_response(api, version, corr, answer)[4:])
    assert got_corr == corr
    return decoded


def join_body(group: str = "g", member_id: str = "", *, session_ms: int = 10000, rebalance_ms: int = 5000,
              protocols: list[tuple[str, bytes]] | None = None, protocol_type: str = "consumer",
              instance: str | None = None) -> dict:
    protocols = [("range", b"meta")] if protocols is None else protocols
    return {"group_id": group, "session_timeout_ms": session_ms, "rebalance_timeout_ms": rebalance_ms,
            "member_id": member_id, "group_instance_id": instance, "protocol_type": protocol_type,
            "protocols": [{"name": n, "metadata": m} for n, m in protocols]}


def sync_body(member_id: str, generation: int, assignments: dict[str, bytes] | None = None, *, group: str = "g",
              instance: str | None = None) -> dict:
    return {"group_id": group, "generation_id": generation, "member_id": member_id, "group_instance_id": instance,
            "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": k, "assignment": v} for k, v in (assignments or {}).items()]}


def heartbeat_body(member_id: str, generation: int, *, group: str = "g", instance: str | None = None) -> dict:
    return {"group_id": group, "generation_id": generation, "member_id": member_id, "group_instance_id": instance}


def commit_body(offsets: dict[tuple[str, int], int], *, group: str = "g", generation: int = -1, member_id: str = "",
                metadata: str | None = "m") -> dict:
    topics: dict[str, list] = {}
    for (t, p), o in offsets.items():
        topics.setdefault(t, []).append({"partition_index": p, "committed_offset": o, "committed_leader_epoch": 5,
                                         "committed_metadata": metadata})
    return {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member_id,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}


@dataclass
class Member:
    """A scripted group member speaking JoinGroup v9 / SyncGroup v5 / Heartbeat v4."""
    cluster: Any
    client_id: str
    member_id: str = ""
    generation: int = -1
    joins: list = field(default_factory=list)   # (time answered, response)

    async def join(self, version: int = 9, **kw: Any) -> Any:
        r = await call(self.cluster, JOIN, version, join_body(member_id=self.member_id, **kw), client_id=self.client_id)
        if r.error_code == 79:  # MEMBER_ID_REQUIRED: rejoin at once with the id we were given
            self.member_id = r.member_id
            r = await call(self.cluster, JOIN, version, join_body(member_id=self.member_id, **kw), client_id=self.client_id)
        if r.error_code == 0:
            self.member_id, self.generation = r.member_id, r.generation_id
        self.joins.append((trio.current_time(), r))
        return r

    async def sync(self, assignments: dict[str, bytes] | None = None) -> Any:
        return await call(self.cluster, SYNC, 5, sync_body(self.member_id, self.generation, assignments),
                          client_id=self.client_id)

    async def heartbeat(self) -> int:
        r = await call(self.cluster, HEARTBEAT, 4, heartbeat_body(self.member_id, self.generation), client_id=self.client_id)
        return r.error_code
