"""broker-emu's Kafka protocol client. ``client.protocol`` is the wire codec both sides share.

    async with client.open_producer({"bootstrap.servers": "127.0.0.1:9092"}) as p:   # trio
        meta = await (await p.send("orders", b"hello")).get()

    with client.Producer({"bootstrap.servers": "127.0.0.1:9092"}) as p:            # blocking
        p.send("orders", b"hello").result()

    async with client.open_consumer({"bootstrap.servers": ..., "group.id": "g"}) as c:  # trio
        c.assign([client.TopicPartition("orders", 0)])
        records = await c.poll(2.0)            # returns at its deadline, never raises a timeout

    async with client.open_share_consumer({"bootstrap.servers": ..., "group.id": "sg"}) as c:  # KIP-932
        c.subscribe(["orders"])
        records = await c.poll(2.0)            # acquired for this member; each has its delivery_count

Importing ``client`` (or the codec, ``client.protocol``, which the emulator uses) loads none of the
client machinery: each public name is imported on first use (PEP 562), so ``import broker_emu``
stays free of producer, consumer and network code (tests/structure checks it). Type checkers
read the same public names from ``__init__.pyi``: typing imports here would put the package in an
import cycle with every module of it.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the module that defines it
_EXPORTS = {
    "Consumer": "client.consumer.blocking",
    "AsyncConsumer": "client.consumer.async_consumer", "open_consumer": "client.consumer.async_consumer",
    "ConsumerRecord": "client.consumer.records", "TopicPartition": "client.consumer.records",
    "ConnectionClosedError": "client.exceptions", "ConnectionSetupTimeoutException": "client.exceptions",
    "DeliveryTimeoutException": "client.exceptions", "MaxBlockTimeoutException": "client.exceptions",
    "NetworkThreadDied": "client.exceptions", "RequestTimeoutException": "client.exceptions",
    "AsyncProducer": "client.producer.async_producer", "open_producer": "client.producer.async_producer",
    "DeliveryFuture": "client.producer.batch", "RecordMetadata": "client.producer.batch",
    "Producer": "client.producer.blocking",
    "ShareConsumer": "client.share.blocking", "AsyncShareConsumer": "client.share.consumer",
    "open_share_consumer": "client.share.consumer", "AcknowledgeType": "client.share.acknowledgements",
    "ShareRecord": "client.share.acknowledgements",
    "Admin": "client.admin_blocking", "AsyncAdmin": "client.admin", "NewTopic": "client.admin", "open_admin": "client.admin",
    "ShareOffset": "client.admin_share",
}
__all__ = [
    "AcknowledgeType",
    "Admin",
    "AsyncAdmin",
    "AsyncConsumer",
    "AsyncProducer",
    "AsyncShareConsumer",
    "ConnectionClosedError",
    "ConnectionSetupTimeoutException",
    "Consumer",
    "ConsumerRecord",
    "DeliveryFuture",
    "DeliveryTimeoutException",
    "MaxBlockTimeoutException",
    "NetworkThreadDied",
    "NewTopic",
    "Producer",
    "RecordMetadata",
    "RequestTimeoutException",
    "ShareConsumer",
    "ShareOffset",
    "ShareRecord",
    "TopicPartition",
    "open_admin",
    "open_consumer",
    "open_producer",
    "open_share_consumer",
]

def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'client' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value   # once: later lookups do not come here
    return value
