"""broker-emu's Kafka protocol client. ``client.protocol`` is the wire codec both sides share.

    async with client.open_producer({"bootstrap.servers": "127.0.0.1:9092"}) as p:   # trio
        meta = await (await p.send("orders", b"hello")).get()

    with client.Producer({"bootstrap.servers": "127.0.0.1:9092"}) as p:            # blocking
        p.send("orders", b"hello").result()
"""

from client.blocking import Producer
from client.producer import AsyncProducer, RecordMetadata, open_producer

__all__ = ["AsyncProducer", "Producer", "RecordMetadata", "open_producer"]
