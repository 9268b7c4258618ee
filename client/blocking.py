"""Kept for imports made before the producer became a package: the blocking producer lives in
``client.producer.blocking``; ``NetworkThreadDied`` in ``client.exceptions``."""

from client.exceptions import NetworkThreadDied
from client.producer.blocking import Producer

__all__ = ["NetworkThreadDied", "Producer"]
