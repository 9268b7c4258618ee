"""Kept for imports made before the consumer became a package: the blocking consumer lives in
``client.consumer.blocking``."""

from client.consumer.blocking import Consumer

__all__ = ["Consumer"]
