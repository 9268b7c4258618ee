"""The cluster's bootstrap address when it is an address of its own: a DNS name or a load balancer
in front of the cluster, leading to one broker at a time, which an operator can move (KIP-899,
KIP-1102: a client whose known brokers are all gone finds the cluster again only through it).

Only what the door is; ``broker_emu/broker_set.py`` opens it (a TCP listener, or in-memory
connections) and moves it. Connections through it are served by the broker it leads to, traced
``conn_open`` with ``via: bootstrap``, and matched by a fault rule's ``bootstrap`` selector."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio


@dataclass
class FrontDoor:
    target: int                    # the broker connections through the door reach now
    host: str
    port: int = 0                  # 0: in-memory connections only (a virtual-time cluster)
    scope: trio.CancelScope | None = None    # its TCP listener's, when it listens
    moves: list[tuple[float, int]] = field(default_factory=list)   # (cluster ms, new target)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"
