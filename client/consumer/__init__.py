"""The consumer: a sans-io group membership state machine (``membership``) with its trio driver
(``group``), the coordinator client (``coordinator``), the fetcher (``fetcher``), one builder per
request body (``requests``), and two faces — ``open_consumer`` (trio) and ``Consumer`` (blocking,
with a network thread).

    async with open_consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "g"}) as c:
        c.subscribe(["orders"])
        records = await c.poll(2.0)       # returns at its deadline, never raises a timeout
"""

from client.consumer.async_consumer import AsyncConsumer, open_consumer
from client.consumer.blocking import Consumer
from client.consumer.records import ConsumerRecord, TopicPartition

__all__ = ["AsyncConsumer", "Consumer", "ConsumerRecord", "TopicPartition", "open_consumer"]
