"""The consumer: a sans-io group membership state machine (``membership``) with its trio driver
(``group``), the coordinator client (``coordinator``), the fetcher (``fetcher``), one builder per
request body (``requests``), and two faces — ``async_consumer.open_consumer`` (trio) and
``blocking.Consumer`` (blocking, with a network thread); ``client.open_consumer`` and
``client.Consumer`` name them too.

    async with open_consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "g"}) as c:
        c.subscribe(["orders"])
        records = await c.poll(2.0)       # returns at its deadline, never raises a timeout

This ``__init__`` imports nothing: it runs before each module here, and the faces import the
rest of the package (a re-export made the package one import cycle).
"""
