"""Drive one Python client through a rich session against broker-emu, for the request corpus.

    python tools/corpus_sessions/python_clients.py CLIENT BOOTSTRAP

CLIENT is confluent-kafka, kafka-python, aiokafka, ours-blocking (``client.Producer`` /
``client.Consumer``) or ours-async (``client.open_producer`` / ``client.open_consumer`` under
trio). The cluster (``tools/capture_corpus.py``) has topic ``t`` (3 partitions, RF 3) and
telemetry switched on. Each session produces with every codec the client can write, with acks
0, 1 and all and idempotently; reads back by assign (earliest, latest, by time, committed,
position) and as a group member with commits; and makes every admin call the client offers that
the emulator implements. Values are a few bytes, so the frames stay small.

Every step runs even when an earlier one failed; prints one JSON line
``{client, version, steps: {step: "ok" | error}}``. The frames, not the outcomes, are the point:
an outcome only tells the corpus tool which parts of the session really happened.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import acls  # tools/corpus_sessions/acls.py (this directory is the script's path)
import kip848  # tools/corpus_sessions/kip848.py
import transactions  # tools/corpus_sessions/transactions.py

TOPIC = "t"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# (step name, codec, acks, idempotent): every codec once with acks=1, then acks 0 / all and an
# idempotent producer (InitProducerId, producer id and sequence in the batch)
PRODUCERS = [*((f"produce {c}", c, 1, False) for c in CODECS),
             ("produce acks=0", "none", 0, False), ("produce acks=all", "zstd", -1, False),
             ("produce idempotent", "gzip", -1, True)]
WAIT_S = 8  # how long a step waits for records or answers: the cluster is local


def client_id(client: str) -> str:
    return f"corpus-{client}"


class Steps:
    """Run each step, keep going on failure, remember what happened."""

    def __init__(self) -> None:
        self.results: dict[str, str] = {}

    def run(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            out = fn(*args)
        except Exception as exc:  # noqa: BLE001 - a failed step is reported, the session goes on
            self.results[name] = f"{type(exc).__name__}: {exc}"[:300]
            return None
        self.results[name] = "ok"
        return out

    async def arun(self, name: str, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        try:
            out = await fn(*args)
        except Exception as exc:  # noqa: BLE001
            self.results[name] = f"{type(exc).__name__}: {exc}"[:300]
            return None
        self.results[name] = "ok"
        return out


def _records(i: int) -> tuple[bytes, bytes]:
    # compressible: librdkafka sends a batch uncompressed when compressing does not make it smaller
    return b"k%d" % i, b"value-%d-" % i + b"x" * 100


# -- confluent-kafka (librdkafka) -------------------------------------------------------------

def confluent_kafka(bootstrap: str, steps: Steps) -> str:
    import confluent_kafka as ck

    base = {"bootstrap.servers": bootstrap, "client.id": client_id("confluent-kafka")}
    for name, codec, acks, idem in PRODUCERS:
        steps.run(name, _ck_produce, ck, {**base, "compression.type": codec, "acks": acks,
                                           "enable.idempotence": idem, "linger.ms": 5})
    steps.run("consume by assign", _ck_assign, ck, base)
    steps.run("consume in a group", _ck_group, ck, base)
    steps.run("consume in a KIP-848 group", kip848.confluent, ck, base)
    _ck_admin(bootstrap, base, steps)
    steps.run("transactions", transactions.confluent, ck, base)
    steps.run("sasl refused", _ck_sasl, ck, base)
    return f"{ck.__version__} (librdkafka {ck.libversion()[0]})"


def _ck_produce(ck, conf: dict) -> None:
    p = ck.Producer(conf)
    errors: list[Any] = []
    for i in range(3):
        key, value = _records(i)
        p.produce(TOPIC, value=value, key=key, partition=i, headers=[("h", b"1")],
                  on_delivery=lambda err, msg: errors.append(err) if err else None)
    left = p.flush(WAIT_S)
    if left or errors:
        raise RuntimeError(f"{left} undelivered, errors {errors}")


def _poll_ck(consumer, n: int) -> list:
    got, deadline = [], time.time() + WAIT_S
    while len(got) < n and time.time() < deadline:
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            got.append(m)
    if len(got) < n:
        raise RuntimeError(f"{len(got)} of {n} records")
    return got


def _ck_assign(ck, base: dict) -> None:
    c = ck.Consumer({**base, "group.id": "ck-assign", "enable.auto.commit": False})
    try:
        c.assign([ck.TopicPartition(TOPIC, p, ck.OFFSET_BEGINNING) for p in range(3)])
        _poll_ck(c, 3)
        c.get_watermark_offsets(ck.TopicPartition(TOPIC, 0), timeout=5)
        c.offsets_for_times([ck.TopicPartition(TOPIC, 0, int(time.time() * 1000) - 60_000)], timeout=5)
        c.position([ck.TopicPartition(TOPIC, 0)])
        c.commit(offsets=[ck.TopicPartition(TOPIC, 0, 1)], asynchronous=False)
        c.committed([ck.TopicPartition(TOPIC, p) for p in range(3)], timeout=5)
        c.list_topics(TOPIC, timeout=5)
    finally:
        c.close()


def _ck_group(ck, base: dict) -> None:
    c = ck.Consumer({**base, "group.id": "ck-group", "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "session.timeout.ms": 6000, "heartbeat.interval.ms": 300})
    try:
        c.subscribe([TOPIC])
        _poll_ck(c, 3)
        end = time.time() + 1.0  # a few heartbeats
        while time.time() < end:
            c.poll(0.2)
        c.commit(asynchronous=False)
        c.committed([ck.TopicPartition(TOPIC, p) for p in range(3)], timeout=5)
    finally:
        c.close()  # LeaveGroup


def _ck_admin(bootstrap: str, base: dict, steps: Steps) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, ElectionType, TopicCollection, TopicPartition
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        OffsetSpec,
    )

    admin = AdminClient(base)

    def result(fs):  # dict of futures or one future
        for f in (fs.values() if isinstance(fs, dict) else [fs]):
            f.result(WAIT_S)

    steps.run("admin list_topics all", lambda: admin.list_topics(timeout=WAIT_S))
    steps.run("admin list_topics named", lambda: admin.list_topics(TOPIC, timeout=WAIT_S))
    steps.run("admin create_topics", lambda: result(admin.create_topics(
        [NewTopic("ck-new", 2, 1, config={"cleanup.policy": "compact"})], operation_timeout=5)))
    steps.run("admin create_topics validate_only", lambda: result(admin.create_topics(
        [NewTopic("ck-never", 1, 1)], validate_only=True)))
    steps.run("admin describe_topics", lambda: result(admin.describe_topics(
        TopicCollection([TOPIC]), include_authorized_operations=True)))
    steps.run("admin describe_cluster", lambda: admin.describe_cluster(request_timeout=WAIT_S).result(WAIT_S))
    steps.run("admin describe_configs", lambda: result(admin.describe_configs(
        [ConfigResource("topic", TOPIC), ConfigResource("broker", "0")])))
    steps.run("admin list_consumer_groups", lambda: admin.list_consumer_groups().result(WAIT_S))
    steps.run("admin list_groups (legacy)", lambda: admin.list_groups(timeout=WAIT_S))
    steps.run("admin describe_consumer_groups", lambda: result(admin.describe_consumer_groups(["ck-group"])))
    steps.run("admin describe_consumer_groups (KIP-848)", kip848.confluent_admin, admin)
    steps.run("admin create / describe / delete ACLs", acls.confluent, admin)
    steps.run("admin SCRAM credentials", acls.confluent_scram, admin)
    steps.run("admin list_consumer_group_offsets", lambda: result(admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("ck-group")])))
    steps.run("admin alter_consumer_group_offsets", lambda: result(admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("ck-group", [TopicPartition(TOPIC, 0, 1)])])))
    specs = {TopicPartition(TOPIC, 0): OffsetSpec.earliest(), TopicPartition(TOPIC, 1): OffsetSpec.latest(),
             TopicPartition(TOPIC, 2): OffsetSpec.max_timestamp()}
    steps.run("admin list_offsets", lambda: result(admin.list_offsets(specs)))
    steps.run("admin list_offsets by time", lambda: result(admin.list_offsets(
        {TopicPartition(TOPIC, 0): OffsetSpec.for_timestamp(int(time.time() * 1000) - 60_000)})))
    steps.run("admin create_partitions", lambda: result(admin.create_partitions([NewPartitions("ck-new", 3)])))
    steps.run("admin delete_records", lambda: result(admin.delete_records([TopicPartition(TOPIC, 0, 1)])))
    steps.run("admin delete_topics", lambda: result(admin.delete_topics(["ck-new"], operation_timeout=5)))
    steps.run("admin delete_consumer_groups", lambda: result(admin.delete_consumer_groups(["ck-group"])))
    steps.run("admin elect_leaders", lambda: admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, 0)]).result(WAIT_S))
    steps.run("admin incremental_alter_configs", lambda: result(admin.incremental_alter_configs([
        ConfigResource("topic", TOPIC, incremental_configs=[
            ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.APPEND)]),
        ConfigResource("broker", "0", incremental_configs=[
            ConfigEntry("log.retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])])))
    steps.run("admin alter_configs (legacy)", lambda: result(admin.alter_configs([
        ConfigResource("topic", TOPIC, set_config={"retention.ms": "3600000"})])))


def _ck_sasl(ck, base: dict) -> None:
    # the emulator lists no SASL mechanism: the frame is the point, the failure is expected
    p = ck.Producer({**base, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                     "sasl.username": "u", "sasl.password": "p"})
    try:
        p.list_topics(timeout=2)
    except ck.KafkaException:
        pass


# -- kafka-python -----------------------------------------------------------------------------

def kafka_python(bootstrap: str, steps: Steps) -> str:
    import kafka
    from kafka.codec import has_lz4, has_snappy, has_zstd

    can = {"none": True, "gzip": True, "snappy": has_snappy(), "lz4": has_lz4(), "zstd": has_zstd()}
    base = {"bootstrap_servers": bootstrap, "client_id": client_id("kafka-python")}
    for name, codec, acks, idem in PRODUCERS:
        if not can[codec]:
            steps.results[name] = f"skipped: no {codec} library installed for kafka-python"
            continue
        steps.run(name, _kp_produce, kafka, {**base, "compression_type": None if codec == "none" else codec,
                                             "acks": "all" if acks == -1 else acks, "enable_idempotence": idem,
                                             "linger_ms": 5})
    steps.run("consume by assign", _kp_assign, kafka, base)
    steps.run("consume in a group", _kp_group, kafka, base)
    _kp_admin(kafka, base, steps)
    steps.run("transactions", transactions.kafka_python, kafka, base)
    steps.run("admin transactions and producers", transactions.kafka_python_admin, kafka, base)
    steps.run("sasl refused", _kp_sasl, kafka, base)
    return kafka.__version__


def _kp_produce(kafka, conf: dict) -> None:
    p = kafka.KafkaProducer(**conf)
    try:
        futures = [p.send(TOPIC, value=_records(i)[1], key=_records(i)[0], partition=i, headers=[("h", b"1")])
                   for i in range(3)]
        p.flush(WAIT_S)
        if conf["acks"] != 0:
            for f in futures:
                f.get(WAIT_S)
    finally:
        p.close(timeout=2)


def _kp_assign(kafka, base: dict) -> None:
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata

    c = kafka.KafkaConsumer(**base, group_id="kp-assign", enable_auto_commit=False)
    tps = [TopicPartition(TOPIC, p) for p in range(3)]
    try:
        c.assign(tps)
        c.seek_to_beginning()
        got, deadline = 0, time.time() + WAIT_S
        while got < 3 and time.time() < deadline:
            got += sum(len(b) for b in c.poll(timeout_ms=200).values())
        c.beginning_offsets(tps)
        c.end_offsets(tps)
        c.offsets_for_times({tps[0]: int(time.time() * 1000) - 60_000})
        c.position(tps[0])
        c.commit({tps[0]: OffsetAndMetadata(1, "", -1)})
        c.committed(tps[0])
        c.partitions_for_topic(TOPIC)
        if got < 3:
            raise RuntimeError(f"{got} of 3 records")
    finally:
        c.close()


def _kp_group(kafka, base: dict) -> None:
    c = kafka.KafkaConsumer(TOPIC, **base, group_id="kp-group", auto_offset_reset="earliest",
                            enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=300)
    try:
        got, deadline = 0, time.time() + WAIT_S
        while got < 3 and time.time() < deadline:
            got += sum(len(b) for b in c.poll(timeout_ms=200).values())
        end = time.time() + 1.0
        while time.time() < end:
            c.poll(timeout_ms=200)
        c.commit()
        if got < 3:
            raise RuntimeError(f"{got} of 3 records")
    finally:
        c.close()


def _kp_admin(kafka, base: dict, steps: Steps) -> None:
    from kafka import TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic, OffsetSpec
    from kafka.structs import OffsetAndMetadata

    admin = steps.run("admin connect", lambda: KafkaAdminClient(**base))
    if admin is None:
        return
    steps.run("admin list_topics", admin.list_topics)
    described = steps.run("admin describe_topics named", admin.describe_topics, [TOPIC])
    steps.run("admin describe_topics all", admin.describe_topics)
    if described:
        import uuid
        tid = described[0].get("topic_id")
        steps.run("admin describe_topics by id", admin.describe_topics, [uuid.UUID(str(tid))])
    steps.run("admin describe_cluster", admin.describe_cluster)
    steps.run("admin create_topics", admin.create_topics,
              [NewTopic("kp-new", 2, 1, topic_configs={"cleanup.policy": "compact"}), NewTopic("kp-by-id", 1, 1)])
    steps.run("admin create_topics validate_only", lambda: admin.create_topics([NewTopic("kp-never", 1, 1)],
                                                                                validate_only=True))
    steps.run("admin describe_configs", admin.describe_configs,
              [ConfigResource(ConfigResourceType.TOPIC, TOPIC), ConfigResource(ConfigResourceType.BROKER, "0")])
    steps.run("admin list_groups", admin.list_groups)
    steps.run("admin describe_groups", admin.describe_groups, ["kp-group"])
    steps.run("admin list_group_offsets", admin.list_group_offsets, {"kp-group": None})
    steps.run("admin alter_group_offsets", admin.alter_group_offsets, "kp-group",
              {TopicPartition(TOPIC, 0): OffsetAndMetadata(1, "", -1)})
    steps.run("admin list_partition_offsets", admin.list_partition_offsets,
              {TopicPartition(TOPIC, 0): OffsetSpec.EARLIEST, TopicPartition(TOPIC, 1): OffsetSpec.LATEST,
               TopicPartition(TOPIC, 2): OffsetSpec.MAX_TIMESTAMP})
    steps.run("admin create_partitions", admin.create_partitions, {"kp-new": NewPartitions(total_count=3)})
    steps.run("admin delete_records", admin.delete_records, {TopicPartition(TOPIC, 1): 1})
    steps.run("admin delete_group_offsets", admin.delete_group_offsets, "kp-group", [TopicPartition(TOPIC, 0)])
    steps.run("admin delete_groups", admin.delete_groups, ["kp-group"])
    steps.run("admin elect_leaders", lambda: admin.elect_leaders(0, {TOPIC: [1]}, raise_errors=False))
    steps.run("admin alter_configs (incremental)", admin.alter_configs,
              [ConfigResource(ConfigResourceType.TOPIC, TOPIC, configs={"retention.ms": "86400000",
                                                                        "cleanup.policy": ("APPEND", "delete")})])
    steps.run("admin alter_configs (legacy)", lambda: admin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, TOPIC, configs={"retention.ms": "3600000"})], incremental=False))
    steps.run("admin describe_log_dirs", admin.describe_log_dirs)
    steps.run("admin alter_partition_reassignments", admin.alter_partition_reassignments,
              {TopicPartition(TOPIC, 2): [2, 1, 0]})
    steps.run("admin list_partition_reassignments", admin.list_partition_reassignments)
    steps.run("admin create / describe / delete ACLs", acls.kafka_python, admin)
    steps.run("admin delete_topics", admin.delete_topics, ["kp-new"])
    by_id = steps.run("admin describe new topic", admin.describe_topics, ["kp-by-id"])
    if by_id:
        import uuid
        steps.run("admin delete_topics by id", admin.delete_topics, [uuid.UUID(str(by_id[0]["topic_id"]))])
    admin.close()


def _kp_sasl(kafka, base: dict) -> None:
    from kafka.errors import KafkaError

    try:
        kafka.KafkaProducer(**base, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                            sasl_plain_username="u", sasl_plain_password="p", max_block_ms=2000,
                            bootstrap_timeout_ms=2000).close(timeout=1)
    except KafkaError:
        pass


# -- aiokafka ---------------------------------------------------------------------------------

def aiokafka(bootstrap: str, steps: Steps) -> str:
    import aiokafka as ak

    asyncio.run(_ak_session(ak, bootstrap, steps))
    return ak.__version__


async def _ak_session(ak, bootstrap: str, steps: Steps) -> None:
    base = {"bootstrap_servers": bootstrap, "client_id": client_id("aiokafka")}
    for name, codec, acks, idem in PRODUCERS:
        await steps.arun(name, _ak_produce, ak, {**base, "compression_type": None if codec == "none" else codec,
                                                 "acks": "all" if acks == -1 else acks,
                                                 "enable_idempotence": idem, "linger_ms": 5})
    await steps.arun("consume by assign", _ak_assign, ak, base)
    await steps.arun("consume in a group", _ak_group, ak, base)
    await _ak_admin(base, steps)
    await steps.arun("transactions", transactions.aiokafka, ak, base)


async def _ak_produce(ak, conf: dict) -> None:
    p = ak.AIOKafkaProducer(**conf)
    await p.start()
    try:
        futures = [await p.send(TOPIC, value=_records(i)[1], key=_records(i)[0], partition=i,
                                headers=[("h", b"1")]) for i in range(3)]
        await asyncio.wait_for(asyncio.gather(*futures), WAIT_S)
    finally:
        await p.stop()


async def _ak_getmany(c, n: int) -> int:
    got = 0
    async with asyncio.timeout(WAIT_S):
        while got < n:
            got += sum(len(b) for b in (await c.getmany(timeout_ms=200)).values())
    return got


async def _ak_assign(ak, base: dict) -> None:
    from aiokafka.structs import OffsetAndMetadata

    c = ak.AIOKafkaConsumer(**base, group_id="ak-assign", enable_auto_commit=False)
    await c.start()
    tps = [ak.TopicPartition(TOPIC, p) for p in range(3)]
    try:
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        await _ak_getmany(c, 3)
        await c.beginning_offsets(tps)
        await c.end_offsets(tps)
        await c.offsets_for_times({tps[0]: int(time.time() * 1000) - 60_000})
        await c.position(tps[0])
        await c.commit({tps[0]: OffsetAndMetadata(1, "")})
        await c.committed(tps[0])
        await c.topics()
    finally:
        await c.stop()


async def _ak_group(ak, base: dict) -> None:
    c = ak.AIOKafkaConsumer(TOPIC, **base, group_id="ak-group", auto_offset_reset="earliest",
                            enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=300)
    await c.start()
    try:
        await _ak_getmany(c, 3)
        await asyncio.sleep(1.0)  # a few heartbeats
        await c.commit()
    finally:
        await c.stop()


async def _ak_admin(base: dict, steps: Steps) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    admin = AIOKafkaAdminClient(**base)
    await steps.arun("admin start", admin.start)
    if steps.results["admin start"] != "ok":
        return
    try:
        await steps.arun("admin list_topics", admin.list_topics)
        await steps.arun("admin describe_topics named", admin.describe_topics, [TOPIC])
        await steps.arun("admin describe_topics all", admin.describe_topics)
        await steps.arun("admin describe_cluster", admin.describe_cluster)
        await steps.arun("admin create_topics", admin.create_topics,
                         [NewTopic("ak-new", 2, 1, topic_configs={"cleanup.policy": "compact"})])
        await steps.arun("admin describe_configs", admin.describe_configs,
                         [ConfigResource(ConfigResourceType.TOPIC, TOPIC),
                          ConfigResource(ConfigResourceType.BROKER, "0")])
        await steps.arun("admin list_consumer_groups", admin.list_consumer_groups)
        await steps.arun("admin describe_consumer_groups", admin.describe_consumer_groups, ["ak-group"])
        await steps.arun("admin list_consumer_group_offsets", admin.list_consumer_group_offsets, "ak-group")
        await steps.arun("admin find_coordinator", admin.find_coordinator, "ak-group")
        await steps.arun("admin delete_topics", admin.delete_topics, ["ak-new"])
    finally:
        await admin.close()


# -- ours -------------------------------------------------------------------------------------

def ours_blocking(bootstrap: str, steps: Steps) -> str:
    import client

    base = {"bootstrap.servers": bootstrap, "client.id": client_id("ours-blocking")}
    for name, codec, acks, idem in PRODUCERS:
        steps.run(name, _ours_produce, client, _ours_producer_config(base, codec, acks, idem))
    steps.run("consume by assign", _ours_assign, client, base)
    steps.run("consume in a group", _ours_group, client, base)
    steps.run("transactions", transactions.ours, client, base)
    return _ours_version()


def _ours_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("broker-emu")
    except importlib.metadata.PackageNotFoundError:
        return "working tree"


def _ours_producer_config(base: dict, codec: str, acks: int, idem: bool) -> dict:
    return {**base, "compression.type": codec, "acks": "all" if acks == -1 else str(acks),
            "enable.idempotence": idem, "linger.ms": 5}


def _ours_produce(client, conf: dict) -> None:
    with client.Producer(conf) as p:
        futures = [p.send(TOPIC, _records(i)[1], key=_records(i)[0], partition=i, headers=[("h", b"1")])
                   for i in range(3)]
        for f in futures:
            f.result(WAIT_S)


def _ours_consumer_config(base: dict, group: str) -> dict:
    return {**base, "group.id": group, "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300}


def _ours_assign(client, base: dict) -> None:
    tps = [(TOPIC, p) for p in range(3)]
    with client.Consumer(_ours_consumer_config(base, "ours-assign")) as c:
        c.assign(tps)
        got, deadline = [], time.time() + WAIT_S
        while len(got) < 3 and time.time() < deadline:
            got += c.poll(0.2)
        c.beginning_offsets(tps, timeout=5)
        c.end_offsets(tps, timeout=5)
        c.offsets_for_times({tps[0]: int(time.time() * 1000) - 60_000}, timeout=5)
        c.position(tps[0], timeout=5)
        c.commit_sync({tps[0]: 1}, timeout=5)
        c.committed(tps, timeout=5)
        c.list_topics(timeout=5)
        c.partitions_for(TOPIC, timeout=5)
        c.client_instance_id(timeout=5)
        if len(got) < 3:
            raise RuntimeError(f"{len(got)} of 3 records")


def _ours_group(client, base: dict) -> None:
    with client.Consumer(_ours_consumer_config(base, "ours-group")) as c:
        c.subscribe([TOPIC])
        got, deadline = [], time.time() + WAIT_S
        while len(got) < 3 and time.time() < deadline:
            got += c.poll(0.2)
        end = time.time() + 1.0
        while time.time() < end:
            c.poll(0.2)
        c.commit_sync(timeout=5)
        if len(got) < 3:
            raise RuntimeError(f"{len(got)} of 3 records")


def ours_async(bootstrap: str, steps: Steps) -> str:
    import trio

    trio.run(_ours_async_session, bootstrap, steps)
    return _ours_version()


async def _ours_async_session(bootstrap: str, steps: Steps) -> None:
    import client

    base = {"bootstrap.servers": bootstrap, "client.id": client_id("ours-async")}
    for name, codec, acks, idem in PRODUCERS:
        await steps.arun(name, _ours_async_produce, client, _ours_producer_config(base, codec, acks, idem))
    await steps.arun("consume by assign", _ours_async_assign, client, base)
    await steps.arun("consume in a group", _ours_async_group, client, base)


async def _ours_async_produce(client, conf: dict) -> None:
    import trio

    async with client.open_producer(conf) as p:
        futures = [await p.send(TOPIC, _records(i)[1], key=_records(i)[0], partition=i, headers=[("h", b"1")])
                   for i in range(3)]
        with trio.fail_after(WAIT_S):
            for f in futures:
                await f.get()


async def _ours_async_poll(c, n: int) -> None:
    import trio

    got = []
    with trio.move_on_after(WAIT_S):
        while len(got) < n:
            got += await c.poll(0.2)
    if len(got) < n:
        raise RuntimeError(f"{len(got)} of {n} records")


async def _ours_async_assign(client, base: dict) -> None:
    tps = [client.TopicPartition(TOPIC, p) for p in range(3)]
    async with client.open_consumer(_ours_consumer_config(base, "ours-async-assign")) as c:
        c.assign(tps)
        await _ours_async_poll(c, 3)
        await c.beginning_offsets(tps, timeout=5)
        await c.end_offsets(tps, timeout=5)
        await c.offsets_for_times({tps[0]: int(time.time() * 1000) - 60_000}, timeout=5)
        await c.position(tps[0], timeout=5)
        await c.commit_sync({tps[0]: 1}, timeout=5)
        await c.committed(tps, timeout=5)
        await c.list_topics(timeout=5)
        await c.partitions_for(TOPIC, timeout=5)
        await c.client_instance_id(timeout=5)


async def _ours_async_group(client, base: dict) -> None:
    import trio

    async with client.open_consumer(_ours_consumer_config(base, "ours-async-group")) as c:
        c.subscribe([TOPIC])
        await _ours_async_poll(c, 3)
        await trio.sleep(1.0)  # heartbeats run in the background
        await c.poll(0.2)
        await c.commit_sync(timeout=5)


DRIVERS: dict[str, Callable[[str, Steps], str]] = {
    "confluent-kafka": confluent_kafka,
    "kafka-python": kafka_python,
    "aiokafka": aiokafka,
    "ours-blocking": ours_blocking,
    "ours-async": ours_async,
}


def main(argv: list[str]) -> None:
    client, bootstrap = argv
    steps = Steps()
    version = DRIVERS[client](bootstrap, steps)
    print(json.dumps({"client": client, "version": version, "steps": steps.results}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
