"""The consumer's call deadlines (KIP-266) and the attempt-then-check loop.

Every call that waits takes ``timeout`` (seconds) or falls back to default.api.timeout.ms. The
call runs ``attempt(request_timeout)`` until it succeeds: at least one attempt goes out even with
timeout 0, the deadline is looked at only after an attempt fails, retriable failures are retried
with backoff (retry.backoff.ms ×2 up to retry.backoff.max.ms) while time is left, and each
attempt's request timeout is min(time left, request.timeout.ms), so nothing the call sent
outlives it (the rule of the seed design; Java keeps request.timeout.ms per request).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio

from client.errors import KafkaError, TimeoutException

Attempt = Callable[[float], Awaitable[Any]]
Retry = Callable[[str, float, Attempt, Callable[[], str]], Awaitable[Any]]


def api_deadline(config: Mapping[str, Any], timeout: float | None) -> float:
    """The absolute deadline of a call given ``timeout`` seconds (None: default.api.timeout.ms)."""
    t = config["default.api.timeout.ms"] / 1000 if timeout is None else max(timeout, 0.0)
    return trio.current_time() + t


async def attempt_then_check(config: Mapping[str, Any], call: str, deadline: float, attempt: Attempt,
                             waiting_for: Callable[[], str]) -> Any:
    """Run ``attempt(request_timeout)`` until it succeeds or, after a failure, the deadline has
    passed: then TimeoutException naming the call, the time spent, what it waited for
    (``waiting_for()``) and the last failure. Non-retriable errors are raised at once."""
    started = trio.current_time()
    backoff = config["retry.backoff.ms"] / 1000
    request_timeout = config["request.timeout.ms"] / 1000
    while True:
        left = deadline - trio.current_time()
        try:
            return await attempt(min(max(left, 0.001), request_timeout))   # min(remaining, request.timeout.ms)
        except KafkaError as exc:
            if not exc.retriable:
                raise
            last = exc
        if trio.current_time() >= deadline:
            elapsed = (trio.current_time() - started) * 1000
            raise TimeoutException(f"{call} gave up after {elapsed:.0f} ms: {waiting_for()}; last attempt: {last}")
        await trio.sleep(min(backoff, max(deadline - trio.current_time(), 0)))
        backoff = min(backoff * 2, config["retry.backoff.max.ms"] / 1000)
