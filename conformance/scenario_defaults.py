"""What the scenario catalogue's families share: Kafka's default timeouts (ms, as a Java client
has them; real-time runs divide them by the runner's scale) and the one-record produce step."""

from __future__ import annotations

from conformance.model import Operation

REQUEST_TIMEOUT, DELIVERY_TIMEOUT, API_TIMEOUT = 30_000, 120_000, 60_000

PRODUCE = Operation("produce", {"topic": "t", "partition": 0, "value": b"hello", "count": 1})
