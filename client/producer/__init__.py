"""The producer: accumulator (sans-io), sender (trio task), Java-compatible partitioner, and two
faces — ``open_producer`` (trio) and ``Producer`` (blocking, with a network thread).

    async with open_producer({"bootstrap.servers": "127.0.0.1:9092"}) as p:
        meta = await (await p.send("orders", b"hello")).get()
"""

from client.producer.async_producer import AsyncProducer, open_producer
from client.producer.batch import DeliveryFuture, RecordMetadata
from client.producer.blocking import Producer
from client.producer.partitioner import murmur2, partition_for_key

__all__ = ["AsyncProducer", "DeliveryFuture", "Producer", "RecordMetadata", "murmur2", "open_producer",
           "partition_for_key"]
