"""The producer: accumulator (sans-io), sender (trio task), Java-compatible partitioner, and two
faces — ``async_producer.open_producer`` (trio) and ``blocking.Producer`` (blocking, with a
network thread); ``client.open_producer`` and ``client.Producer`` name them too.

    async with open_producer({"bootstrap.servers": "127.0.0.1:9092"}) as p:
        meta = await (await p.send("orders", b"hello")).get()

This ``__init__`` imports nothing: it runs before each module here, and the faces import the
rest of the package (a re-export made the package one import cycle).
"""
