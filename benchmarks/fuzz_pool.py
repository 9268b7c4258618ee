"""The valid bodies of the fuzz campaign (benchmarks/fuzz.py) and how each use steers one.

A ``Pool`` is built once per campaign: for every (API, version) the emulator advertises, request
bodies drawn from the hypothesis strategies of the codec tests (``tests/client/protocol/strategies.py``,
``@seed`` = the campaign seed, so the pool is reproducible); for every version the codec knows but
the emulator does not serve, two more; the corpus of real clients' frames
(``tests/client/protocol/corpus``); and the cluster's topic ids. ``Steer`` rewrites a body field by field
before it is encoded (benchmarks/fuzz_frames.py says why).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from client.protocol import ApiKey
from client.protocol.messages import ALL_APIS
from client.protocol.records import Record, encode_batch

SCRATCH_TOPICS = tuple(f"fz{i}" for i in range(8))
GROUPS = ("g0", "g1", "g2", "g3")
PRODUCE, DELETE_TOPICS = int(ApiKey.PRODUCE), int(ApiKey.DELETE_TOPICS)
ZERO_UUID = uuid.UUID(int=0)


# -- the pool --------------------------------------------------------------------------------------

def hypothesis_bodies(key: int, version: int, n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` request bodies for (key, version) from the codec tests' strategy, reproducibly."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from tests.client.protocol.strategies import Options, message_strategy

    out: list[dict[str, Any]] = []

    @hseed(seed)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(message_strategy(key, version, "request", Options(unknown_tags=True)))
    def collect(body):
        out.append(body)

    collect()
    return out


@dataclass
class Pool:
    bodies: dict[tuple[int, int], list[dict[str, Any]]]       # advertised (key, version) -> bodies
    unserved: dict[tuple[int, int], list[dict[str, Any]]]     # known to the codec, not advertised
    corpus: list[bytes]                                       # real clients' frames, no prefix
    topic_ids: Mapping[str, uuid.UUID]

    @classmethod
    def build(cls, advertised: Mapping[int, tuple[int, int]], seed: int, examples: int,
              corpus: Iterable[bytes] = (), topic_ids: Mapping[str, uuid.UUID] | None = None) -> "Pool":
        bodies, unserved = {}, {}
        for key, api in sorted(ALL_APIS.items()):
            lo, hi = api.version_range
            served = advertised.get(key)
            for version in range(lo, hi + 1):
                if served and served[0] <= version <= served[1]:
                    bodies[(key, version)] = hypothesis_bodies(key, version, examples, seed)
                else:
                    unserved[(key, version)] = hypothesis_bodies(key, version, 2, seed)
        return cls(bodies, unserved, list(corpus), dict(topic_ids or {}))


def load_corpus() -> list[bytes]:
    from tests.client.protocol.corpus_catalog import load

    return [f.data for f in load()]


# -- steering valid bodies towards the cluster's state ------------------------------------------------

TOPIC_KEYS = frozenset({"topic", "name", "topic_name", "resource_name", "topic_names", "topics"})
GROUP_KEYS = frozenset({"group_id", "key", "groups", "coordinator_keys", "group_ids"})
PARTITION_KEYS = frozenset({"partition", "partition_index", "index", "partitions", "partition_indexes"})


class Steer:
    """Rewrites a generated body field by field (by name, the codec's snake_case), keeping the
    generated value one time in five."""

    def __init__(self, rng: random.Random, topic_ids: Mapping[str, uuid.UUID]):
        self.rng, self.topic_ids = rng, topic_ids

    def body(self, key: int, value: Any, name: str = "") -> Any:
        if isinstance(value, dict):
            return {k: (v if k == "_unknown_tags" else self.body(key, v, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.body(key, v, name) for v in value]
        if self.rng.random() < 0.2:
            return value
        return self.scalar(key, name, value)

    def topic(self, key: int) -> str:
        r = self.rng.random()
        if r < 0.6 and key != DELETE_TOPICS:   # never delete the topic the round trip uses
            return "t"
        return self.rng.choice(SCRATCH_TOPICS)

    def scalar(self, key: int, name: str, v: Any) -> Any:
        rng = self.rng
        if isinstance(v, str):
            if name in TOPIC_KEYS:
                return self.topic(key)
            if name in GROUP_KEYS:
                return rng.choice(GROUPS)
            if name == "member_id":
                return rng.choice(("", v))
            if name == "protocol_type":
                return "consumer"
            return v
        if name == "transactional_id":
            return None
        if name == "records":
            return self.records()
        if name == "topic_id" and isinstance(v, uuid.UUID):
            tid = self.topic_ids.get("t", ZERO_UUID) if key != DELETE_TOPICS else ZERO_UUID
            return rng.choice((tid, tid, ZERO_UUID, v))
        if not isinstance(v, int) or isinstance(v, bool):
            return v
        if name in PARTITION_KEYS:
            return rng.choice((0, 1, 2, 0, 1, 2, 3, -1))
        if name.endswith("timeout_ms") or name == "max_wait_ms":
            return rng.choice((0, 10, 50, 100, 250))
        table: dict[str, tuple[int, ...]] = {
            "acks": (-1, 1, -1, 1, 0), "replica_id": (-1, -1, -1, 1),
            "num_partitions": (-1, 1, 2, 3, 0, 10_001), "replication_factor": (-1, 1, 2, 3, 4, 0),
            "timestamp": (-1, -2, -3, -4, -5, v), "session_id": (0, 0, 0, v), "session_epoch": (-1, 0, 0, 1),
            "producer_id": (-1, 1, 1000, v), "producer_epoch": (-1, 0, v),
            "generation_id": (-1, 0, 1, v), "generation_id_or_member_epoch": (-1, 0, 1, v),
            "max_bytes": (1 << 20, 64, 0, v), "partition_max_bytes": (1 << 20, 64, 0, v),
            "min_bytes": (0, 1, v), "isolation_level": (0, 1, v), "fetch_offset": (0, 1, -1, v),
            "committed_offset": (0, 5, -1, v), "leader_epoch": (-1, 0, v), "current_leader_epoch": (-1, 0, v),
            "last_fetched_epoch": (-1, 0, v)}
        choices = table.get(name)
        return rng.choice(choices) if choices else v

    def records(self) -> bytes:
        rng = self.rng
        batches = []
        for _ in range(rng.choice((1, 1, 1, 2))):
            recs = [Record(value=rng.randbytes(rng.randrange(0, 200)) if rng.random() < 0.9 else None,
                           key=rng.randbytes(rng.randrange(0, 16)) if rng.random() < 0.5 else None,
                           headers=[("h", b"v")] if rng.random() < 0.3 else ())
                    for _ in range(rng.randrange(1, 6))]
            pid = rng.choice((-1, -1, rng.randrange(0, 5)))
            batches.append(encode_batch(
                recs, compression=rng.choice((0, 0, 1, 2, 3, 4)), base_timestamp=1_700_000_000_000,
                producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                base_sequence=rng.choice((0, rng.randrange(0, 100))) if pid >= 0 else -1,
                transactional=rng.random() < 0.1))
        return b"".join(batches)
