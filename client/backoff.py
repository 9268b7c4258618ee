"""Exponential backoff with jitter, the shape every Kafka client timer uses.

backoff(n) = initial * 2**n * U(1 - jitter, 1 + jitter), never above ``max``; the exponent stops
growing once the un-jittered value reaches ``max``; if ``max`` <= ``initial`` the backoff is the
constant ``max`` (no jitter). Values are whole milliseconds, as Java's are, so virtual-time tests
can assert exact instants. Used for reconnect.backoff.ms (n = failures so far),
socket.connection.setup.timeout.ms (n = failed connection attempts, KIP-601) and
retry.backoff.ms (n = retries so far, KIP-580). The random source is injected (seeded in tests).
"""

from __future__ import annotations

import math
import random


class ExponentialBackoff:
    def __init__(self, initial_ms: float, max_ms: float, rng: random.Random, *, multiplier: int = 2,
                 jitter: float = 0.2):
        self.initial_ms = min(initial_ms, max_ms)
        self.max_ms = max_ms
        self.multiplier = multiplier
        self.jitter = jitter
        self.rng = rng
        grows = max_ms > self.initial_ms
        self._exp_max = math.log(max_ms / max(self.initial_ms, 1)) / math.log(multiplier) if grows else 0.0

    def backoff_ms(self, attempts: int, rng: random.Random | None = None) -> int:
        """``rng``: another random source than the one given at construction (a node's own)."""
        if self._exp_max == 0:
            return int(self.initial_ms)
        term = self.initial_ms * self.multiplier ** min(attempts, self._exp_max)
        factor = (rng or self.rng).uniform(1 - self.jitter, 1 + self.jitter) if self.jitter > 0 else 1.0
        return min(int(term * factor), int(self.max_ms))

    def backoff(self, attempts: int, rng: random.Random | None = None) -> float:
        """The same, in seconds (trio's unit)."""
        return self.backoff_ms(attempts, rng) / 1000.0
