"""What a handler knows about the request it serves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker_emu.cluster import Broker, Cluster


@dataclass
class RequestContext:
    cluster: "Cluster"
    broker: "Broker"
    conn_id: int
    client_addr: str
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    connection: Any = None

    @property
    def broker_id(self) -> int:
        return self.broker.id

    @property
    def client_host(self) -> str:
        return self.client_addr.rsplit(":", 1)[0]

    def trace_fields(self) -> dict[str, Any]:
        from client.protocol import ApiKey

        return {"broker": self.broker.id, "conn": self.conn_id, "client_id": self.client_id,
                "client_addr": self.client_addr, "correlation_id": self.correlation_id,
                "api_key": self.api_key, "api": ApiKey(self.api_key).api_name, "api_version": self.api_version}
