"""Our client's share consumer (KIP-932), after Java's ``KafkaShareConsumer``: ``open_share_consumer``
(trio) and ``ShareConsumer`` (blocking), ``AcknowledgeType``, ``ShareRecord``. The parts: the
config (``config``), the acknowledgements of the records a poll handed out (``acknowledgements``),
the share sessions with each leader (``sessions``), the membership (``membership``), the fetches
and acknowledgement requests (``fetcher``), and the two faces (``consumer``, ``blocking``).

This ``__init__`` imports nothing (a re-export would make the package one import group).
"""
