"""broker-emu's Kafka protocol client. ``client.protocol`` is the wire codec both sides share.

    async with client.open_producer({"bootstrap.servers": "127.0.0.1:9092"}) as p:   # trio
        meta = await (await p.send("orders", b"hello")).get()

    with client.Producer({"bootstrap.servers": "127.0.0.1:9092"}) as p:            # blocking
        p.send("orders", b"hello").result()

    async with client.open_consumer({"bootstrap.servers": ..., "group.id": "g"}) as c:  # trio
        c.assign([client.TopicPartition("orders", 0)])
        records = await c.poll(2.0)            # returns at its deadline, never raises a timeout
"""

from client.blocking_consumer import Consumer
from client.consumer import AsyncConsumer, ConsumerRecord, TopicPartition, open_consumer
from client.exceptions import (
    ConnectionClosedError,
    ConnectionSetupTimeoutException,
    DeliveryTimeoutException,
    MaxBlockTimeoutException,
    NetworkThreadDied,
    RequestTimeoutException,
)
from client.producer import (
    AsyncProducer,
    DeliveryFuture,
    Producer,
    RecordMetadata,
    open_producer,
)

__all__ = [
    "AsyncConsumer",
    "AsyncProducer",
    "ConnectionClosedError",
    "ConnectionSetupTimeoutException",
    "Consumer",
    "ConsumerRecord",
    "DeliveryFuture",
    "DeliveryTimeoutException",
    "MaxBlockTimeoutException",
    "NetworkThreadDied",
    "Producer",
    "RecordMetadata",
    "RequestTimeoutException",
    "TopicPartition",
    "open_consumer",
    "open_producer",
]
