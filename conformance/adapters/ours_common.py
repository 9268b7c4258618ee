"""What the adapters of our client's two faces share: the async face (ours.py, virtual time over
in-memory connections) and the blocking face (ours_blocking.py, real time over loopback TCP). The
client settings a step builds from the scenario's, the name an error is reported under, and the
steps whose logic does not depend on the face."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from client.config import CONSUMER, PRODUCER, ConfigException
from client.transport import Connect, sasl_connect
from conformance.adapters.base import RunEnv, scaled_ms
from conformance.model import Outcome


def secured(env: RunEnv, inner: Connect) -> Connect:
    """``inner`` (the adapter's own connect: in-memory connections) with the scenario's SASL
    settings around it, as the client's own TCP connect would have them."""
    c = env.config
    if str(c.get("security.protocol", "")).startswith("SASL_"):
        return sasl_connect(c["sasl.mechanism"], c["sasl.username"], c["sasl.password"], env.client_id, inner=inner)
    return inner


def error_name(exc: BaseException) -> str:
    """Kafka's name for each of the client's own timeouts (request, delivery, max.block.ms, an API
    deadline) is TimeoutException; any other error keeps its class name."""
    return "TimeoutException" if "Timeout" in type(exc).__name__ else type(exc).__name__


def real_time_backoffs(env: RunEnv) -> dict[str, Any]:
    """The backoffs a real-time run scales with every other time (the async face runs at full
    length in virtual time and keeps the client's defaults)."""
    return {"retry.backoff.ms": scaled_ms(100, env.scale), "reconnect.backoff.ms": scaled_ms(50, env.scale)}


def producer_settings(env: RunEnv, client_id: str | None = None) -> dict[str, Any]:
    """The scenario's producer settings, with the run's bootstrap and the client id."""
    config = {k: v for k, v in env.config.items() if k in PRODUCER}
    config.update({"bootstrap.servers": env.bootstrap, "client.id": client_id or env.client_id})
    return config


def plain_producer_settings(env: RunEnv, client_id: str) -> dict[str, Any]:
    """A producer beside a transaction: the scenario's settings without transaction.timeout.ms."""
    return {k: v for k, v in producer_settings(env, client_id).items() if k != "transaction.timeout.ms"}


def txn_settings(env: RunEnv, client_id: str) -> dict[str, Any]:
    """A transactional producer's: every instance of a run shares the transactional.id
    ``<client id>-tx`` (a restarted instance fences the one before it)."""
    return {**producer_settings(env, client_id), "transactional.id": f"{env.client_id}-tx"}


def consumer_settings(env: RunEnv, group: str | None, client_id: str | None = None) -> dict[str, Any]:
    """The scenario's consumer settings, with the group, the client id and auto.offset.reset=earliest."""
    config = {k: v for k, v in env.config.items() if k in CONSUMER}
    config.update({"bootstrap.servers": env.bootstrap, "client.id": client_id or env.client_id, "group.id": group,
                   "auto.offset.reset": "earliest"})
    return config


def configure_producer(env: RunEnv, make: Callable[[dict[str, Any]], Any]) -> Outcome:
    """``configure_producer``: ``make`` builds the face's producer (or its parsed config) from the
    scenario's settings; a refused config is the outcome. Anything it built is closed at once."""
    try:
        made = make(producer_settings(env))
    except ConfigException as exc:
        return Outcome("configure_producer", False, 0.0, "ConfigException", str(exc))
    close = getattr(made, "close", None)
    if callable(close):
        close(0)
    return Outcome("configure_producer", True, 0.0)


def transaction_failed(exc: BaseException, elapsed: float, committed_again: bool) -> Outcome:
    """The ``transaction`` step's outcome when a call failed (``committed_again``: a timed-out
    commit completed the same transaction when called again)."""
    return Outcome("transaction", False, elapsed, error_name(exc), str(exc),
                   value="committed when called again" if committed_again else None)


def first_visible(op: str, seen: list[Any], elapsed: float) -> Outcome:
    """``read_committed_behind_open_txn``: what the read_committed consumer saw first, if anything."""
    return Outcome(op, bool(seen), elapsed, None if seen else "TimeoutException",
                   None if seen else "no record became visible", value=seen)
