"""The cluster's brokers: which there are, which are alive, where they listen."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import trio

from broker_emu import cluster_shape


@dataclass
class Broker:
    id: int
    host: str = "127.0.0.1"
    port: int = 0
    alive: bool = True
    rack: str | None = None
    connections: set = field(default_factory=set)
    listener_scope: trio.CancelScope | None = None
    # the extra listeners' ports (emu.extra.listeners): security protocol -> port
    listeners: dict[str, int] = field(default_factory=dict)


class BrokerRoster:
    def __init__(self, ids: Iterable[int], host: str):
        self.by_id: dict[int, Broker] = {i: Broker(i, host) for i in ids}
        if not self.by_id:
            raise ValueError("a cluster needs at least one broker")

    def ids(self) -> set[int]:
        return set(self.by_id)

    def is_alive(self, broker_id: int) -> bool:
        b = self.by_id.get(broker_id)
        return b is not None and b.alive

    def live(self) -> list[Broker]:
        return [b for b in self.by_id.values() if b.alive]

    def all_alive(self) -> bool:
        return all(b.alive for b in self.by_id.values())

    def bootstrap(self, listener: str | None = None) -> str:
        """host:port of every broker, on its main listener or on the extra one named."""
        return ",".join(f"{b.host}:{b.port if listener is None else b.listeners[listener]}" for b in self.by_id.values())

    def mark_stopped(self, broker_id: int) -> Broker | None:
        """Mark a live broker stopped (``disconnect`` then closes its listener and connections);
        None if it was not running."""
        b = self.by_id[broker_id]
        if not b.alive:
            return None
        b.alive = False
        cluster_shape.changed()
        return b

    def mark_started(self, broker_id: int) -> Broker | None:
        b = self.by_id[broker_id]
        if b.alive:
            return None
        b.alive = True
        cluster_shape.changed()
        return b

    @staticmethod
    def disconnect(b: Broker) -> None:
        """Close a stopped broker's listener and every connection to it."""
        if b.listener_scope is not None:
            b.listener_scope.cancel()
        for conn in list(b.connections):
            conn.abort("broker stopped")
